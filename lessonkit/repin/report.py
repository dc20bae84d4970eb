"""The repin report: summary lines for the terminal and an HTML page (``templates/repin.html``)."""

from __future__ import annotations

import re
from collections import Counter

from lessonkit.config.templates import ENGINE_TEMPLATES
from lessonkit.repin.classify import RepinReport
from lessonkit.repin.model import ORDER, Item
from lessonkit.util.text import line_span


def _counts_text(c: Counter, order: tuple[str, ...]) -> str:
    parts = [f"{c[s]} {s}" for s in order if c[s]]
    return ", ".join(parts) or "none"


SRC_ORDER = ("unchanged", "moved", "changed", "missing", "error")
EXP_ORDER = ("unchanged", "differs", "fails", "error")


def summary_lines(report: RepinReport, diffs: bool = False) -> list[str]:
    pin, t = report.pin, report.target
    out = [f"repin: {pin.name} {pin.version} ({pin.short}) → {t.label}, from {t.origin}"]
    if t.sdist:
        out.append(f"  sdist {t.sdist['filename']}  sha256 {t.sdist['sha256']}")
    out.append(f"  commit: {t.commit or 'unknown'} ({t.commit_note})")
    f = report.files
    out.append(
        f"  tree: {len(t.manifest)} files; against the pin {len(f['changed'])} differ, "
        f"{len(f['only-pin'])} only in the pin, {len(f['only-target'])} only in the target"
    )
    out.append(f"real source: {_counts_text(report.counts(('real-source',)), SRC_ORDER)}")
    out.append(f"based-on:    {_counts_text(report.counts(('based-on',)), SRC_ORDER)}")
    out.append(f"experiments: {_counts_text(report.counts(('experiment',)), EXP_ORDER)}")
    out.append(f"prose refs:  {_counts_text(report.counts(('prose-ref',)), SRC_ORDER)}")
    out.append(f"recorded:    {_counts_text(report.counts(('snapshot', 'figure', 'value')), EXP_ORDER)}")
    page_errors = report.counts(("page",))
    if page_errors:
        out.append(f"pages:       {page_errors['error']} error(s) at the pin")
    out.append("")
    by_page: dict[str, list[Item]] = {}
    for i in report.items:
        by_page.setdefault(i.page, []).append(i)
    for page in report.titles:
        its = by_page.get(page, [])
        todo = [i for i in its if i.attention]
        moved = [i for i in its if i.status == "moved"]
        same = sum(1 for i in its if i.status == "unchanged")
        head = f"{page}  \"{report.titles[page]}\""
        if not todo and not moved:
            out.append(f"{head} — nothing to revisit ({same} unchanged)")
            continue
        verdict = f"revisit {len(todo)}" if todo else "nothing to revisit"
        out.append(f"{head} — {verdict}; {same} unchanged, {len(moved)} moved")
        for i in sorted(todo + moved, key=lambda i: (ORDER[i.status], i.line)):
            out.append(f"  :{i.line:<5} {i.status:<9} {i.kind:<11} {i.label}" + (f" — {i.detail}" if i.detail else ""))
            for c in i.candidates:
                out.append(f"{'':9}candidate: {c}")
            if diffs and i.diff:
                out += [f"{'':9}{l}" for l in i.diff]
    if report.prose:
        out.append("")
        out.append(f"prose naming {pin.name} {pin.version} or {pin.short} (revisit by hand if you repin):")
        for page, line, text in report.prose:
            out.append(f"  {page}:{line}: {text[:100]}")
    out.append("")
    a = report.attention
    if a:
        blocks = sum(
            1 for i in a if i.kind in ("real-source", "based-on", "page", "prose-ref", "snapshot", "figure", "value")
        )
        exps = sum(1 for i in a if i.kind == "experiment")
        out.append(
            f"repin: {blocks} block(s) and {exps} experiment(s) need attention "
            f"(in {len({i.page for i in a})} page(s)); {report.seconds:.1f} s"
        )
    else:
        n_moved = sum(1 for i in report.items if i.status == "moved")
        out.append(
            f"repin: nothing beyond moves ({n_moved} moved); every experiment prints the same; {report.seconds:.1f} s"
        )
    return out


def _diff_rows(lines: list[str]) -> list[tuple[str, str]]:
    """(css class, text) of each line of a unified diff."""
    return [
        ("hunk" if l.startswith("@@") else "add" if l.startswith("+") else "del" if l.startswith("-") else "", l)
        for l in lines
    ]


def _span(r: tuple[int, int] | None) -> str:
    return line_span(r[0], r[1]) if r else ""


def render_html(report: RepinReport) -> str:
    """The HTML report: data computed here, said by the engine template ``repin.html``."""
    import jinja2

    pin, t = report.pin, report.target
    rows = [
        ("target", t.spec),
        ("bytes from", t.origin),
        ("version", t.version or "unknown"),
        ("commit", f"{t.commit or 'unknown'} ({t.commit_note})"),
    ]
    if t.sdist:
        rows += [("sdist", t.sdist["filename"]), ("sdist sha256", t.sdist["sha256"])]
    f = report.files
    rows.append(
        (
            "tree",
            f"{len(t.manifest)} files; {len(f['changed'])} differ from the pin, "
            f"{len(f['only-pin'])} only in the pin, {len(f['only-target'])} only in the target",
        )
    )
    counts = []
    for kind, order in (("real-source", SRC_ORDER), ("based-on", SRC_ORDER), ("experiment", EXP_ORDER)):
        c = report.counts((kind,))
        counts.append((kind, [(s, c[s]) for s in order if c[s]]))
    files = [f"M {r}" for r in f["changed"]] + [f"- {r}" for r in f["only-pin"]] + [f"+ {r}" for r in f["only-target"]]
    by_page: dict[str, list[Item]] = {}
    for i in report.items:
        by_page.setdefault(i.page, []).append(i)
    pages = []
    for page, title in report.titles.items():
        its = by_page.get(page, [])
        pages.append(
            {
                "page": page,
                "title": title,
                "anchor": re.sub(r"[^\w-]", "-", page),
                "revisit": sum(1 for i in its if i.attention),
                "moved": sum(1 for i in its if i.status == "moved"),
                "unchanged": sum(1 for i in its if i.status == "unchanged"),
                "items": [
                    {"item": i, "old": _span(i.old), "new": _span(i.new), "diff": _diff_rows(i.diff)}
                    for i in sorted(its, key=lambda i: (ORDER[i.status], i.line))
                ],
            }
        )
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(ENGINE_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("repin.html").render(
        pin=pin,
        target=t,
        attention=len(report.attention),
        rows=rows,
        counts=counts,
        files=files,
        pages=pages,
        prose=report.prose,
    )
