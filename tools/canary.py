"""Zensical canary: build the lessons with Zensical and report what renders there.

Material for MkDocs reaches end of life in 2027 and MkDocs 1.x is no longer developed;
Zensical builds `mkdocs.yml` projects and runs Python-Markdown extensions, but not
`hooks:`. This script copies the project into a temporary folder, builds it with the
installed `zensical` (strict mode off: links to hook-generated pages are expected to
fail), and checks every page under docs/ that has lessonkit blocks:

- every [REAL SOURCE], [TEACHING SIMPLIFICATION] and [EXPERIMENT] block of the Markdown
  appears in the HTML, no block rendered as an error, every experiment has output;
- formulas are MathML;
- which hook-made things are missing: generated pages (source browser, script pages,
  symbol index, generated attachments), the `[[lessonkit:…]]` placeholders, the
  per-lesson cited-source list.

Prints a report and exits 1 when a lesson block does not render (hook-generated pages
missing is reported, not a failure). Usage: python tools/canary.py [--keep]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPY = [
    *("docs", "overrides", "experiments", "mini-autograd", "sourcemap", "lessonkit_ext"),
    *("mkdocs.yml", "pyproject.toml"),
]
OPEN = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w-]*)")


def blocks_in(text: str) -> dict[str, int]:
    """lessonkit blocks of a page: fences of those kinds that are not inside another fence
    (the authoring guide shows examples inside ```` fences), indented ones included."""
    counts = dict.fromkeys(CLASS, 0)
    fence = None
    for line in text.splitlines():
        m = OPEN.match(line)
        if fence is None and m:
            fence = m.group(1)
            if m.group(2) in counts:
                counts[m.group(2)] += 1
        elif fence is not None and line.strip() == fence:
            fence = None
    return counts


CLASS = {"real-source": "lk-real-source", "teaching-simplification": "lk-teaching", "experiment": "lk-experiment"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
MISSING_PAGE = re.compile(r"Warning: page does not exist")
HOOK_PAGES = (
    "source/",
    "code/",
    "symbols.md",
    "attachments/repo-map.md",
    "attachments/call-sequence.md",
    "attachments/nested-traces.md",
    "attachments/mini-readme.md",
    "attachments/acceptance.md",
)


def html_of(site: Path, md: Path) -> Path:
    rel = md.relative_to(ROOT / "docs").with_suffix("")
    return site / ("index.html" if rel.name == "index" and rel.parent == Path(".") else rel / "index.html")


def excluded() -> Callable[[str], bool]:
    """Whether a docs-relative path is left out of the site by ``exclude_docs`` of mkdocs.yml (read
    by MkDocs' own loader: the includes, docs/dev/ …), as neither MkDocs nor Zensical builds it."""
    from mkdocs.config import load_config

    spec = load_config(config_file=str(ROOT / "mkdocs.yml")).exclude_docs
    return (lambda rel: bool(spec.match_file(rel))) if spec is not None else (lambda rel: False)


def check(site: Path) -> tuple[list[str], list[str]]:
    rows, failures = [], []
    left_out = excluded()
    for md in sorted((ROOT / "docs").rglob("*.md")):
        if left_out(md.relative_to(ROOT / "docs").as_posix()):
            continue
        text = md.read_text(encoding="utf-8")
        want = blocks_in(text)
        has_math = "$" in text
        page = html_of(site, md)
        rel = md.relative_to(ROOT).as_posix()
        if not page.is_file():
            failures.append(f"{rel}: no page in the Zensical build")
            continue
        html = page.read_text(encoding="utf-8")
        got = {k: len(re.findall(rf'<div class="lk-block {CLASS[k]}"', html)) for k in CLASS}
        outputs = len(re.findall(r'<pre class="lk-output"><code>(?!（无输出）)', html))
        errors = html.count('class="lk-error') + html.count('class="lk-block lk-error')
        maths = html.count("<math")
        placeholders = len(re.findall(r"\[\[lessonkit:[a-z0-9-]+\]\]", html))
        ok = got == want and errors == 0 and outputs >= want["experiment"] and (maths > 0 or not has_math)
        if sum(want.values()) or has_math or placeholders:
            rows.append(
                f"| {rel} | {got['real-source']}/{want['real-source']} | {got['teaching-simplification']}/"
                f"{want['teaching-simplification']} | {got['experiment']}/{want['experiment']} "
                f"({outputs} outputs) "
                f"| {maths} | {placeholders} | {'ok' if ok else 'FAIL'} |"
            )
        if not ok:
            failures.append(f"{rel}: blocks {got} of {want}, {outputs} outputs, {errors} errors, {maths} formulas")
    return rows, failures


def main(argv: list[str]) -> int:
    zensical = shutil.which("zensical")
    if zensical is None:
        print("canary: zensical is not installed (nox -s canary installs the pinned version)")
        return 2
    version = subprocess.run([zensical, "--version"], capture_output=True, text=True).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="lessonkit-canary-"))
    try:
        for name in COPY:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / name)
        cfg = tmp / "mkdocs.yml"
        text = re.sub(r"(?m)^strict: true$", "strict: false", cfg.read_text(encoding="utf-8"))
        cfg.write_text(text, encoding="utf-8")
        env = dict(os.environ, LESSONKIT_CACHE=os.environ.get("LESSONKIT_CACHE", str(ROOT / ".cache")))
        proc = subprocess.run([zensical, "build", "-f", str(cfg)], cwd=tmp, env=env, capture_output=True, text=True)
        log = ANSI.sub("", proc.stdout + proc.stderr)
        site = tmp / "site"
        print(f"# Zensical canary ({version}; exit code {proc.returncode})\n")
        if not (site / "index.html").is_file():
            print("the build produced no site; last lines of its log:\n")
            print("\n".join(log.splitlines()[-30:]))
            return 1
        rows, failures = check(site)
        print("| page | REAL SOURCE | TEACHING | EXPERIMENT | formulas | placeholders left | result |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(rows))
        generated = [p for p in HOOK_PAGES if not (site / p.removesuffix(".md")).exists()]
        print(f"\nlinks to missing pages (hook-generated pages are not built): {len(MISSING_PAGE.findall(log))}")
        print("hook-generated pages absent: " + (", ".join(generated) or "none"))
        cited = sum("本篇引用的源码" in p.read_text(encoding="utf-8") for p in (site / "lessons").rglob("index.html"))
        print(
            f"lessons with the generated cited-source list: {cited} of "
            f"{len(list((ROOT / 'docs' / 'lessons').glob('*.md')))}"
        )
        if failures:
            print("\nFAILED:\n" + "\n".join(f"- {f}" for f in failures))
            return 1
        print("\nlesson blocks, experiment outputs and formulas: all rendered")
        return 0
    finally:
        if "--keep" in argv:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
