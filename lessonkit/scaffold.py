"""``nox -s new -- NN "标题" [slug]``: a new lesson that builds and verifies as created."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import LessonError

LESSON = """# {nn} · {title}

## 本篇目标 {{#goal}}

读完本篇，你应该能说清楚：（用两三句话写下本篇要回答的问题。）

## 数学准备 {{#math}}

以 $f(x) = x^2$ 为例，导数是 $f'(x) = 2x$，在 $x = 3$ 处等于 $6$。

## 真实源码 {{#source}}

`backward_pass` 是反向传播的主循环：

```real-source
File: autograd/core.py
Symbol: backward_pass
Commit: {short}
```

## 实验 {{#experiment}}

```experiment
File: experiments/{script}
Purpose: 确认 grad(lambda x: x * x)(3.0) 等于 6.0
```

## 自测问题 {{#self-test}}

1. `backward_pass` 在哪一行把同一个父节点收到的多个贡献相加？

[← 首页](../index.md)
"""

SCRIPT = '''"""Experiment for lesson {nn}: the gradient of x*x at 3.0."""

from autograd import grad

from _provenance import announce


def main():
    announce()
    g = grad(lambda x: x * x)(3.0)
    print(f"grad(x*x)(3.0) = {{g:.1f}}")
    assert g == 6.0


if __name__ == "__main__":
    main()
'''


def new_lesson(root: Path, nn: str, title: str, slug: str | None, short: str) -> list[Path]:
    if not re.fullmatch(r"\d\d", nn):
        raise LessonError(f"lesson number `{nn}` is not two digits", hint='use e.g. nox -s new -- 15 "标题"')
    if not title.strip():
        raise LessonError("the title is empty", hint='use e.g. nox -s new -- 15 "标题"')
    slug = slug or f"lesson-{nn}"
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug):
        raise LessonError(f"slug `{slug}` is not lowercase-words-with-dashes", hint="e.g. my-topic")
    lessons = root / "docs" / "lessons"
    clash = sorted(lessons.glob(f"{nn}-*.md"))
    if clash:
        raise LessonError(f"lesson {nn} already exists: {clash[0].relative_to(root).as_posix()}",
                          hint="pick a free number")
    page = lessons / f"{nn}-{slug}.md"
    script = root / "experiments" / f"lesson{nn}_{slug.replace('-', '_')}.py"
    if script.exists():
        raise LessonError(f"{script.relative_to(root).as_posix()} already exists", hint="pick another slug")
    page.write_text(LESSON.format(nn=nn, title=title.strip(), short=short, script=script.name), encoding="utf-8")
    script.write_text(SCRIPT.format(nn=nn), encoding="utf-8")
    _add_to_nav(root / "mkdocs.yml", f"lessons/{page.name}", int(nn))
    return [page, script]


def _add_to_nav(config: Path, entry: str, number: int) -> None:
    """Insert the page after the last lesson entry of the stage it belongs to (≤ 08 or later)."""
    lines = config.read_text(encoding="utf-8").split("\n")
    stage_items = [i for i, l in enumerate(lines) if re.match(r"^\s+- lessons/\d\d-", l)]
    if not stage_items:
        raise LessonError("mkdocs.yml has no lessons in its nav", path="mkdocs.yml", hint="add the page to nav by hand")
    before = [i for i in stage_items if int(re.search(r"lessons/(\d\d)", lines[i]).group(1)) < number]
    anchor = before[-1] if before else stage_items[0] - 1
    indent = re.match(r"^(\s+)", lines[stage_items[0]]).group(1)
    lines.insert(anchor + 1, f"{indent}- {entry}")
    config.write_text("\n".join(lines), encoding="utf-8")
