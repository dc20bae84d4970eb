"""Generated attachments: repository map, diagrams drawn from this build's
experiment output, the acceptance record, plain-text copies and the bundle.
Independent of MkDocs; the hooks only place the results into the site."""

from __future__ import annotations

import hashlib
import io
import os
import re
import zipfile
from collections import OrderedDict
from html import escape
from pathlib import PurePosixPath

from lessonkit.config import maps
from lessonkit.run import runner as execute
from lessonkit.errors import LessonError
from lessonkit.config.labels import provider_text
from lessonkit.pipeline.parse import Block, blank_line, parse_page
from lessonkit.project import Project, Resolved
from lessonkit.checks.verify import Report
from lessonkit.util.text import lines as text_lines
from lessonkit.util.text import md_code

NOISE = re.compile(r"<(genexpr|listcomp|dictcomp|setcomp|lambda)>$")


# ---------------------------------------------------------------- repository map


def load_roles(project: Project) -> dict[str, str]:
    path = project.sourcemap / "roles.toml"
    if not (path.exists() or path.is_symlink()):
        return {}
    return maps.read_roles(path, "sourcemap/roles.toml")  # every key and value checked


def repo_map(project: Project) -> str:
    """Every file of the pinned tree: lines and top-level symbols from the tree, role by hand."""
    roles = load_roles(project)
    package = project.site.package
    missing = [f for f in project.pin.manifest if f not in roles]
    groups: "OrderedDict[str, list[dict]]" = OrderedDict()
    for f in sorted(project.pin.manifest, key=lambda p: (p.count("/") > 0 and not p.startswith(package), p)):
        row = {
            "file": f,
            "name": PurePosixPath(f).name,
            "role": roles.get(f, "").replace("|", "\\|"),
            "browsable": f.startswith(package) and f.endswith(".py"),
            "lines": None,
            "symbols": [],
        }
        groups.setdefault(str(PurePosixPath(f).parent), []).append(row)
        try:
            sf = project.pinned.file(f)
        except LessonError:  # a binary file (images, PDF): listed, not read as text
            continue
        row["lines"] = len(sf.lines)
        if f.endswith(".py"):
            try:
                row["symbols"] = [d.name for d in sf.definitions if d.kind in ("def", "class") and "." not in d.name]
            except LessonError:
                pass
    return project.site.render(
        "repo-map.md",
        pin=project.pin,
        files=len(project.pin.manifest),
        missing=len(missing),
        groups=list(groups.items()),
    )


# ---------------------------------------------------------------- diagrams


CALL = re.compile(r"CALL: ([0-9]{1,4}) (\S.*)")
NESTING = re.compile(r"NESTING:(?: [0-9]{1,4}){0,64}")


def parse_calls(output: str, source: str | None = None) -> list[tuple[int, str]]:
    """The ``CALL: <depth> <name>`` lines of the calls diagram's source experiment (a located
    error at the experiment for a line of another shape)."""
    calls = []
    for line in text_lines(output):
        if line.startswith("CALL: "):
            m = CALL.fullmatch(line.rstrip())
            if not m:
                raise LessonError(
                    f"printed {line[:60]!r}, not `CALL: <depth> <name>`",
                    path=source,
                    hint="print one line per call: `CALL: ` then its depth (a number) and its name",
                )
            calls.append((int(m[1]), m[2].strip()))
    return calls


def _short(name: str) -> str:
    return name.replace(".<locals>.", "›")


def _module(name: str) -> str:
    return name.split(".")[0] if not name.startswith("numpy.") else ".".join(name.split(".")[:2])


def call_tree(calls: list[tuple[int, str]], max_depth: int = 9) -> list[tuple[int, int | None, str]]:
    """The recorded calls that are drawn, in call order: ``(level, caller, name)``, where
    ``caller`` is the index of the calling row (None for a call from the user's code) and
    ``level`` its depth in the drawn tree.

    Filtered frames (``<lambda>``, comprehensions) and calls deeper than ``max_depth`` are not
    drawn but still end the calls above them: a call's caller is the nearest *kept* call on the
    stack at a smaller depth, so ``unbroadcast`` called from a VJP lambda inside ``backward_pass``
    hangs under ``backward_pass``, not under ``toposort``, which returned before."""
    rows: list[tuple[int, int | None, str]] = []
    frames: dict[int, int] = {}  # recorded depth -> row of the kept call open at that depth
    for d, n in calls:
        for k in [k for k in frames if k >= d]:
            del frames[k]
        if NOISE.search(n) or d > max_depth:
            continue
        caller = frames[max(frames)] if frames else None
        rows.append((0 if caller is None else rows[caller][0] + 1, caller, n))
        frames[d] = len(rows) - 1
    return rows


SEQ_STYLE = (
    "<style>"
    ".lk-seq{color:var(--md-default-fg-color,#222)}"
    ".lk-seq-fun{fill:currentColor}"
    ".lk-seq-mod{fill:var(--lk-ln-fg,#5c5f66)}"
    ".lk-seq-edge{stroke:currentColor;stroke-width:1;fill:none}"
    ".lk-seq-arrow{fill:currentColor}"
    "</style>"
)


def sequence_svg(calls: list[tuple[int, str]], max_depth: int = 9, title: str = "call sequence diagram") -> str:
    """The recorded calls as a figure that reads from top to bottom: one row per call, in the
    order the calls happened, indented under its caller (:func:`call_tree`), with an arrow from
    the caller's line to the callee; each row names the function, then its module. Narrow enough
    for the text column (the depth is bounded by ``max_depth``). ``title`` is the figure's
    accessible name and ``<title>`` (``[labels] calls-diagram``)."""
    rows = call_tree(calls, max_depth)
    indent, row, top, left, char = 18, 24, 14, 14, 7.3  # char: the width of one character at 12 px
    labels = []
    for level, _, name in rows:
        mod = _module(name)
        fun = _short(name[len(mod) + 1 :] if name.startswith(mod + ".") else name)
        labels.append((fun, mod))
    width = left + max(
        (lv * indent + (len(f) + len(m) + 2) * char for (lv, _, _), (f, m) in zip(rows, labels)), default=0
    )
    width = int(width) + 16
    height = top + row * max(len(rows), 1) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-diagram lk-seq" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" font-size="12" '
        f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace"><title>{escape(title)}</title>{SEQ_STYLE}',
        '<defs><marker id="lk-seq-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="lk-seq-arrow"/></marker></defs>',
    ]
    ys = [top + row * i + row // 2 for i in range(len(rows))]
    xs = [left + level * indent for level, _, _ in rows]
    for i, (level, caller, _) in enumerate(rows):  # caller's stem down to the row, then across to it
        if caller is None:
            continue
        x0 = xs[caller] + 4
        parts.append(
            f'<path d="M{x0},{ys[caller] + 6} V{ys[i]} H{xs[i] - 3}" class="lk-seq-edge" '
            'marker-end="url(#lk-seq-arrow)"/>'
        )
    for i, (fun, mod) in enumerate(labels):
        parts.append(
            f'<text x="{xs[i] + 2}" y="{ys[i] + 4}"><tspan class="lk-seq-fun">{escape(fun)}</tspan>'
            f'<tspan class="lk-seq-mod" dx="{2 * char:.1f}">{escape(mod)}</tspan></text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def parse_nesting(output: str, source: str | None = None) -> list[int]:
    """The trace numbers of the ``NESTING: 2 1 0`` line of the nesting diagram's source experiment."""
    for line in text_lines(output):
        if line.startswith("NESTING: "):
            if not NESTING.fullmatch(line.rstrip()):
                raise LessonError(
                    f"printed {line[:60]!r}, not `NESTING: ` and up to 64 trace numbers",
                    path=source,
                    hint="print the trace numbers from the outermost box in, e.g. `NESTING: 2 1 0`",
                )
            return [int(t) for t in line[9:].split()]
    return []


def nesting_svg(
    levels: list[int],
    inner: str = "raw value",
    box: str = "Box · trace {level}",
    title: str = "nested boxes and their trace numbers",
) -> str:
    """Nested boxes: the outermost level's box contains the next one, down to the raw value.
    The words come from the project (``[labels] nesting-inner``, ``nesting-box`` with ``{level}``,
    ``nesting-diagram``)."""
    pad, h = 28, 46
    n = len(levels)
    width = 520
    height = h + 2 * pad * n + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-diagram" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" font-size="13" '
        f'font-family="ui-monospace, SFMono-Regular, Menlo, monospace"><title>{escape(title)}</title>'
    ]
    for i, level in enumerate(levels):
        x, y = 10 + pad * i, 10 + pad * i
        w, hh = width - 2 * x, height - 2 * y
        parts.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{hh}" rx="6" class="lk-box lk-box-{i % 3}"/>'
            f'<text x="{x + 8}" y="{y + 18}" class="lk-box-text">{escape(box.replace("{level}", str(level)))}</text>'
        )
    x = 10 + pad * n
    parts.append(
        f'<text x="{width / 2}" y="{height / 2 + 5}" text-anchor="middle" class="lk-box-text">'
        f'{escape(inner)}</text></svg>'
    )
    return "".join(parts)


# ---------------------------------------------------------------- acceptance record


def acceptance(project: Project, report: Report, results: dict[str, execute.Result]) -> str:
    v = execute.versions(project.site.tools)
    labels = project.site.labels
    kinds = list(project.kinds.fenced.values())
    rows = []
    for page, rs in sorted(report.resolved.items()):
        counts = [sum(1 for r in rs if r.kind is k) for k in kinds]
        if any(counts):
            rows.append(f"| {md_code(page)} | " + " | ".join(map(str, counts)) + " |")
    head = f"| {labels['col-page']} | " + " | ".join(k.label for k in kinds) + " |\n|---|" + "---|" * len(kinds)
    totals = f"| **{labels['total']}** | " + " | ".join(f"**{report.count(k.name)}**" for k in kinds) + " |"
    exp_rows = []
    for page, rs in sorted(report.resolved.items()):
        for r in rs:
            if r.job is None or r.kind.name in ("snapshot", "figure"):  # their runs are listed with the blocks
                continue
            res = results.get(project.runner.key(r.job))
            status = (
                labels["not-run"]
                if res is None
                else f"{res.exit_code}" + (labels["timed-out"] if res.timed_out else "")
            )
            digest = res.digest[:16] if res else "—"
            where = md_code(f"{page}:{r.block.line}")
            exp_rows.append(f"| {where} | {md_code(r.job.label)} | {status} | {md_code(digest)} |")
    repo_excerpts = sum(
        1
        for rs in report.resolved.values()
        for r in rs  # quoted from this repository
        if r.job is None and r.excerpt is not None and r.excerpt.origin == "repo"
    )
    based = sum(1 for rs in report.resolved.values() for r in rs if r.based_on is not None)
    count = {k.name: report.count(k.name) for k in kinds}
    # snapshots, figures, inline values and references, from this build's runs
    from lessonkit.checks.living import check_recorded

    facts = check_recorded(project, report, results)
    return project.site.render(
        "acceptance.md",
        living=facts,
        pin=project.pin,
        provider=project.tree.provider,  # as pin.py says it (English), and in the project's words:
        provider_text=provider_text(project.tree.provider, labels),
        manifest_files=len(project.pin.manifest),
        sdist_checked=project.tree.sdist_checked,  # compared with the archive's own (pin.check_sdist)
        jail=project.runner.jail,  # the jail every experiment of this build ran in (box.jail)
        jail_text=project.runner.jail.describe(),
        root_build=os.geteuid() == 0,
        versions=v,
        count=count,
        repo_excerpts=repo_excerpts,
        based=based,
        head=head,
        rows=rows,
        totals=totals,
        exp_rows=exp_rows,
    )


# ---------------------------------------------------------------- plain text and bundle


def plain_markdown(project: Project, text: str, path: str, results: dict[str, execute.Result]) -> str:
    """The page with every annotation block replaced by an ordinary fence holding what it shows."""
    page = parse_page(text, path, kinds=project.kinds)
    lines = text.split("\n")
    for ref in reversed(page.inline):  # inline references become their plain text
        try:
            plain = project.kinds.inline[ref.ref.kind].plain(project, ref.ref)
        except LessonError:
            continue
        line = lines[ref.index]
        lines[ref.index] = line[: ref.col] + plain + line[ref.end_col :]
    for item in reversed(page.items):
        if not isinstance(item, Block):
            continue
        try:
            r = project.resolve(item)
        except LessonError:
            continue
        empty = blank_line(item.indent)  # the block stays in its list item or blockquote
        lines[item.start : item.end + 1] = [item.indent + l if l else empty for l in _plain_block(project, r, results)]
    return "\n".join(lines)


def _plain_block(project: Project, r: Resolved, results) -> list[str]:
    result = results.get(project.runner.key(r.job)) if r.job is not None else None
    return r.kind.plain(r, project, result)


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
