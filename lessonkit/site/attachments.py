"""The engine's own attachments (:data:`ENGINE`: the acceptance record and the repository map),
plain-text copies of pages and the bundle's zip. A project adds attachments of its own
(:mod:`lessonkit.attachments`). Independent of MkDocs; the hooks only place the results into
the site."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from collections import OrderedDict
from pathlib import PurePosixPath

from lessonkit.attachments import Attachment, Inputs
from lessonkit.checks.verify import Report
from lessonkit.config import maps
from lessonkit.config.labels import provider_text
from lessonkit.errors import LessonError
from lessonkit.pipeline.blocks import Block
from lessonkit.pipeline.fences import blank_line
from lessonkit.pipeline.parse import parse_page
from lessonkit.project import Project, Resolved
from lessonkit.run import runner as execute
from lessonkit.util.text import md_code

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
            if r.job is None or r.spec.name in ("snapshot", "figure"):  # their runs are listed with the blocks
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
        sdist_checked=project.tree.sdist_checked,  # compared with the archive's own (providers.check_sdist)
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


class Acceptance(Attachment):
    """The acceptance record: what this build checked and ran (every project has it)."""

    name = "acceptance"
    uri = "attachments/acceptance.md"

    def page(self, inputs: Inputs) -> str:
        return acceptance(inputs.project, inputs.report, inputs.results)


class RepoMap(Attachment):
    """Every file of the pinned tree with its role (a project with ``sourcemap/roles.toml``)."""

    name = "repo-map"
    uri = "attachments/repo-map.md"

    def enabled(self, project) -> bool:
        return (project.sourcemap / "roles.toml").is_file()

    def page(self, inputs: Inputs) -> str:
        return repo_map(inputs.project)


ENGINE: tuple[Attachment, ...] = (Acceptance(), RepoMap())  # before the project's own, in this order


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
    return r.spec.plain(r, project, result)


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
