"""Generated attachments: repository map, diagrams drawn from this build's
experiment output, the acceptance record, plain-text copies and the bundle.
Independent of MkDocs; the hooks only place the results into the site."""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from collections import OrderedDict
from html import escape
from pathlib import PurePosixPath

from . import config, execute
from .errors import LessonError
from .parse import Block, parse_page
from .project import Project, Resolved
from .verify import Report

NOISE = re.compile(r"<(genexpr|listcomp|dictcomp|setcomp|lambda)>$")


# ---------------------------------------------------------------- repository map

def load_roles(project: Project) -> dict[str, str]:
    path = project.sourcemap / "roles.toml"
    if not (path.exists() or path.is_symlink()):
        return {}
    return config.read_roles(path, "sourcemap/roles.toml")  # every key and value checked


def repo_map(project: Project) -> str:
    """Every file of the pinned tree: lines and top-level symbols from the tree, role by hand."""
    roles = load_roles(project)
    missing = [f for f in project.pin.manifest if f not in roles]
    groups: "OrderedDict[str, list[str]]" = OrderedDict()
    for f in sorted(project.pin.manifest, key=lambda p: (p.count("/") > 0 and not p.startswith("autograd/"), p)):
        groups.setdefault(str(PurePosixPath(f).parent), []).append(f)
    out = [f"# 完整 Repository Map\n\n固定版本 autograd {project.pin.version}（`{project.pin.short}`）源码树中的全部 "
           f"{len(project.pin.manifest)} 个文件。文件列表、行数与顶层符号由构建从经过清单校验的源码树生成；"
           "「作用」一列是手写的说明（`sourcemap/roles.toml`）。`autograd/` 包内的文件可以点开在"
           "[源码浏览](../source/index.md)中阅读。\n"]
    if missing:
        out.append(f"!!! warning \"尚未写作用说明的文件：{len(missing)} 个\"\n")
    for folder, files in groups.items():
        out.append(f"\n## `{folder if folder != '.' else '（根目录）'}`\n\n| 文件 | 行数 | 顶层符号 | 作用 |\n|---|---|---|---|")
        for f in files:
            try:
                sf = project.pinned.file(f)
            except LessonError:  # a binary file (images, PDF): listed, not read as text
                out.append(f"| `{PurePosixPath(f).name}` | 二进制 | | {roles.get(f, '')} |")
                continue
            syms = ""
            if f.endswith(".py"):
                try:
                    names = [d.name for d in sf.definitions if d.kind in ("def", "class") and "." not in d.name]
                except LessonError:
                    names = []
                syms = ", ".join(f"`{n}`" for n in names[:12]) + (f" 等 {len(names)} 个" if len(names) > 12 else "")
            name = f"[`{PurePosixPath(f).name}`](../source/{f}.md)" if f.startswith("autograd/") and f.endswith(".py") \
                else f"`{PurePosixPath(f).name}`"
            role = roles.get(f, "").replace("|", "\\|")
            out.append(f"| {name} | {len(sf.lines)} | {syms} | {role} |")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- diagrams

def parse_calls(output: str) -> list[tuple[int, str]]:
    calls = []
    for line in output.splitlines():
        if line.startswith("CALL: "):
            depth, name = line[6:].split(" ", 1)
            calls.append((int(depth), name.strip()))
    return calls


def _short(name: str) -> str:
    return name.replace(".<locals>.", "›")


def sequence_svg(calls: list[tuple[int, str]], max_depth: int = 9) -> str:
    """A sequence diagram (SVG) of the recorded calls: one lifeline per module."""
    kept = [(d, n) for d, n in calls if not NOISE.search(n) and d <= max_depth]
    modules: list[str] = []
    for _, n in kept:
        mod = n.split(".")[0] if not n.startswith("numpy.") else ".".join(n.split(".")[:2])
        if mod not in modules:
            modules.append(mod)
    col, row, top = 190, 22, 60
    width = col * len(modules) + 40
    height = top + row * (len(kept) + 1) + 20
    x = {m: 20 + col * i + col // 2 for i, m in enumerate(modules)}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-diagram" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="grad 调用时序图" font-size="11" '
             f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace">',
             '<defs><marker id="lk-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>']
    for m in modules:
        parts.append(f'<rect x="{x[m] - 85}" y="10" width="170" height="28" rx="4" class="lk-actor"/>'
                     f'<text x="{x[m]}" y="29" text-anchor="middle" class="lk-actor-text">{escape(m)}</text>'
                     f'<line x1="{x[m]}" y1="38" x2="{x[m]}" y2="{height - 10}" class="lk-lifeline"/>')
    stack: list[str] = ["user"]
    for i, (depth, name) in enumerate(kept):
        mod = name.split(".")[0] if not name.startswith("numpy.") else ".".join(name.split(".")[:2])
        del stack[depth + 1:]
        caller = stack[-1] if stack else "user"
        y = top + row * (i + 1)
        x2 = x[mod]
        x1 = x.get(caller, 5)
        label = escape(_short(name.split(".", 1 if not name.startswith("numpy.") else 2)[-1]))
        if caller == mod:
            parts.append(f'<path d="M{x2},{y - 8} h24 v10 h-20" class="lk-msg" fill="none" marker-end="url(#lk-arrow)"/>'
                         f'<text x="{x2 + 28}" y="{y - 2}" class="lk-msg-text">{label}</text>')
        else:
            anchor = "start" if x2 > x1 else "end"
            tx = x1 + 6 if x2 > x1 else x1 - 6
            parts.append(f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" class="lk-msg" marker-end="url(#lk-arrow)"/>'
                         f'<text x="{tx}" y="{y - 4}" text-anchor="{anchor}" class="lk-msg-text">{label}</text>')
        stack.append(mod)
    parts.append("</svg>")
    return "".join(parts)


def parse_nesting(output: str) -> list[int]:
    for line in output.splitlines():
        if line.startswith("NESTING: "):
            return [int(t) for t in line[9:].split()]
    return []


def nesting_svg(levels: list[int], inner: str = "float（原始输入值）") -> str:
    """Nested boxes: the outermost trace's Box contains the next one, down to the raw value."""
    pad, h = 28, 46
    n = len(levels)
    width = 520
    height = h + 2 * pad * n + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-diagram" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="嵌套的 Box 与 trace 编号" font-size="13" '
             f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace">']
    for i, level in enumerate(levels):
        x, y = 10 + pad * i, 10 + pad * i
        w, hh = width - 2 * x, height - 2 * y
        parts.append(f'<rect x="{x}" y="{y}" width="{w}" height="{hh}" rx="6" class="lk-box lk-box-{i % 3}"/>'
                     f'<text x="{x + 8}" y="{y + 18}" class="lk-box-text">ArrayBox · _trace = {level}</text>')
    x = 10 + pad * n
    parts.append(f'<text x="{width / 2}" y="{height / 2 + 5}" text-anchor="middle" class="lk-box-text">'
                 f'{escape(inner)}</text></svg>')
    return "".join(parts)


# ---------------------------------------------------------------- acceptance record

def acceptance(project: Project, report: Report, results: dict[str, execute.Result]) -> str:
    v = execute.versions()
    rows = []
    for page, rs in sorted(report.resolved.items()):
        counts = {k: sum(1 for r in rs if r.block.kind == k)
                  for k in ("real-source", "teaching-simplification", "experiment")}
        if any(counts.values()):
            rows.append(f"| `{page}` | {counts['real-source']} | {counts['teaching-simplification']} | "
                        f"{counts['experiment']} |")
    exp_rows = []
    for page, rs in sorted(report.resolved.items()):
        for r in rs:
            if r.job is None:
                continue
            res = results.get(project.runner.key(r.job))
            status = "未运行" if res is None else (f"{res.exit_code}" + ("（超时）" if res.timed_out else ""))
            digest = res.digest[:16] if res else "—"
            exp_rows.append(f"| `{page}:{r.block.line}` | `{r.job.label}` | {status} | `{digest}` |")
    repo_excerpts = sum(1 for rs in report.resolved.values() for r in rs
                        if r.block.kind == "teaching-simplification" and r.excerpt is not None)
    based = sum(1 for rs in report.resolved.values() for r in rs if r.based_on is not None)
    return f"""# 本次构建验收记录

本页在每次构建时由构建自身的结果生成。它只陈述下面列出的检查，不多说一句。

## 固定版本 {{#pin}}

| 项目 | 值 |
|---|---|
| autograd 版本 | {project.pin.version} |
| commit | `{project.pin.commit}` |
| 源码来源 | {project.tree.provider} |
| sdist sha256（清单所记） | `{project.pin.sdist_sha256}` |
| 清单中的文件数 | {len(project.pin.manifest)} |
| 清单摘要 | `{project.pin.manifest_digest}` |
| Python | {v['python']} |
| NumPy | {v['numpy']} |

**已检查：** 源码树中清单列出的 {len(project.pin.manifest)} 个文件逐个比对了 sha256，且树中没有清单之外的文件。

## 摘录 {{#excerpts}}

**已检查：** {report.count('real-source')} 个 [REAL SOURCE] 块全部解析到固定版本中的文件与符号，commit 等于固定版本，正文（如有）逐字等于源码中连续的行，给出的 `Lines` 与真实位置一致；{report.count('teaching-simplification')} 个 [TEACHING SIMPLIFICATION] 块中，{repo_excerpts} 个逐字取自本仓库文件，{based} 个的 `Based-on` 解析成功；{report.count('experiment')} 个 [EXPERIMENT] 块的脚本存在且所示片段逐字取自脚本。构建中未发现问题（有问题时构建会失败，不会生成本页）。

| 页面 | REAL SOURCE | TEACHING | EXPERIMENT |
|---|---|---|---|
{chr(10).join(rows)}
| **合计** | **{report.count('real-source')}** | **{report.count('teaching-simplification')}** | **{report.count('experiment')}** |

## 实验 {{#experiments}}

**已检查：** 每个实验在本构建的环境中（固定源码树位于 `sys.path` 最前）运行并以退出码 0 结束；输出未变的实验复用了内容键相同的缓存结果（键包含脚本字节、清单摘要、Python 与 NumPy 版本）。输出摘要是页面所示输出的 sha256 前 16 位。

| 位置 | 脚本 | 退出码 | 输出 sha256 |
|---|---|---|---|
{chr(10).join(exp_rows)}

**未检查：** 课程中的文字论断本身。它们由各实验里的断言间接约束——断言失败时构建失败。
"""


# ---------------------------------------------------------------- plain text and bundle

def plain_markdown(project: Project, text: str, path: str, results: dict[str, execute.Result]) -> str:
    """The page with every annotation block replaced by an ordinary fence holding what it shows."""
    page = parse_page(text, path)
    lines = text.split("\n")
    for item in reversed(page.items):
        if not isinstance(item, Block):
            continue
        try:
            r = project.resolve(item)
        except LessonError:
            continue
        lines[item.start: item.end + 1] = _plain_block(project, r, results)
    return "\n".join(lines)


def _plain_block(project: Project, r: Resolved, results) -> list[str]:
    b, ex = r.block, r.excerpt
    if b.kind == "real-source":
        head = f"# [REAL SOURCE] {ex.file} · {ex.symbol or '片段'} · {project.pin.short} · L{ex.start}-L{ex.end}"
        return ["```python", head, *ex.lines, "```"]
    if b.kind == "teaching-simplification":
        body = list(ex.lines) if ex else list(b.body)
        return ["```python", "# [TEACHING SIMPLIFICATION] 以下不是 HIPS/autograd verbatim source。", *body, "```"]
    code = list(ex.lines) if ex else list(b.body)
    res = results.get(project.runner.key(r.job))
    out = (res.stdout if res else "").rstrip("\n").split("\n")
    return ["```python", f"# [EXPERIMENT] {r.job.label} — {b.get('Purpose')}", *code, "```", "", "输出：", "",
            "```text", *out, "```"]


def zip_bytes(entries: dict[str, bytes], epoch: int) -> bytes:
    """A reproducible zip: sorted entries, fixed timestamps and permissions."""
    import time as _time
    stamp = _time.gmtime(max(epoch, 315532800))[:6]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            zf.writestr(info, entries[name], compresslevel=9)
    return buf.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
