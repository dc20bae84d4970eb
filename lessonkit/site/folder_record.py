"""A written site folder against the record of the build that wrote it (:mod:`lessonkit.checks.record`),
which is checked, not trusted: the version of lessonkit and the project that built it, every file's
sha256, each file MkDocs copied against its source as it is now, each page's blocks against the
blocks verify expects, and the source browser's pages."""

from __future__ import annotations

from pathlib import Path

from lessonkit.checks import record as site_record
from lessonkit.errors import Problem
from lessonkit.site import active, listings
from lessonkit.util.store import code_version

REBUILD = listings.REBUILD


def compare(check) -> None:
    """The folder of ``check`` (a :class:`lessonkit.site.shipped.SiteCheck` of a recorded folder)
    against its record, and the record against what verify expects: each problem is added to
    ``check.problems``, each page whose blocks changed since to ``check.stale``."""
    rec, at = check.record, check.label
    assert rec is not None  # run(): only a recorded folder is compared
    if rec["engine"] != code_version():
        check.problems.append(
            Problem("it was built by another version of lessonkit than this verify", at, None, REBUILD)
        )
    if rec["root"] != str(check.project.root):
        check.problems.append(Problem(f"it was built from another project ({rec['root']})", at, None, REBUILD))
    for rel in sorted(set(check.hashes) | set(rec["files"])):  # every file: pages, scripts, styles, data
        where = f"{at}/{rel}"
        if rel not in rec["files"]:
            check.problems.append(Problem("the build did not write this file", where, None, REBUILD))
        elif rel not in check.hashes:
            check.problems.append(Problem("the build wrote this file; it is gone", where, None, REBUILD))
        elif check.hashes[rel] != rec["files"][rel]:
            check.problems.append(Problem("changed after the build that wrote the folder", where, None, REBUILD))
    _copies(check)
    emitted = site_record.emitted(check.project, check.report, check.results)
    for page in sorted(set(emitted) | set(rec["blocks"])):
        if page not in rec["blocks"]:  # a page MkDocs did not build (exclude_docs): fine without blocks
            if emitted[page] or check.report.inline.get(page):
                check.problems.append(Problem(f"the build that wrote {at}/ wrote no page for it", page, None, REBUILD))
            continue
        recorded, now = rec["blocks"].get(page) or [], emitted.get(page) or []
        for a, b in zip(recorded, now, strict=False):
            if a[:3] == b[:3] and a[3] != b[3] and b[3] is not None:  # (a missing run: the block says why)
                check.problems.append(
                    Problem(
                        f"the run of {a[1]} block #{a[0]} in the build cache is not the one the build that wrote "
                        f"{at}/ showed: its cache entry changed after the build",
                        check.pages_dest(page),
                        None,
                        REBUILD,
                    )
                )
        if [x[:3] for x in recorded] != [x[:3] for x in now] or page not in rec["pages"]:
            check.stale.add(page)
            check.problems.append(
                Problem(
                    f"the build that wrote {at}/ emitted other blocks for this page than its Markdown, the "
                    "pinned tree and the recorded runs give now",
                    page,
                    None,
                    REBUILD,
                )
            )
    from lessonkit.site.pages import browser_files

    pinned, repo = browser_files(check.project, check.cites)
    want = {("pinned", f) for f in pinned} | {("repo", f) for f in repo}
    have = {tuple(v) for v in rec["code_pages"].values()}
    for origin, file in sorted(want ^ have):
        check.problems.append(
            Problem(
                f"the source browser's page of {file} is {'missing' if (origin, file) in want else 'extra'}",
                at,
                None,
                REBUILD,
            )
        )


def _copies(check) -> None:
    """Each file MkDocs copied (from docs/, the theme, lessonkit's assets) against its source as
    it is now: a hook or plugin that changed a script, a stylesheet or an image between the copy
    and the record is caught here. The sources must be where copies come from."""
    rec, at, root = check.record, check.label, check.project.root
    assert rec is not None  # run() checks copies only of a recorded folder
    themes = [Path(d) for d in rec["theme"]]
    # the browser's Python comes from its checked copy in the build cache (lessonkit.source.pyodide)
    runtime = check.project.cache / "pyodide"
    origins = [check.project.docs, Path(__file__).parents[1] / "assets", runtime, *themes]
    for d in themes:
        if not active.theme_folder_ok(check, d):
            check.problems.append(
                Problem(
                    f"the build took theme files from {d}, outside the project and the installed themes",
                    at,
                    None,
                    REBUILD,
                )
            )
    for rel, source in sorted(rec["copied"].items()):
        src, where = Path(source), f"{at}/{rel}"
        shown = check.project.rel(src) if root in src.resolve().parents else str(src)
        if not any(o.resolve() in src.resolve().parents for o in origins):
            check.problems.append(
                Problem(
                    f"the build copied this file from {shown}, which is not a file of docs/, the theme or lessonkit",
                    where,
                    None,
                    REBUILD,
                )
            )
        elif rel in check.hashes and (
            not src.is_file() or src.is_symlink() or site_record.file_sha256(src) != check.hashes[rel]
        ):
            check.problems.append(
                Problem(
                    f"it is not the copy of {shown} it was (a hook or plugin changed it, or its source "
                    "changed after the build)",
                    where,
                    None,
                    REBUILD,
                )
            )
