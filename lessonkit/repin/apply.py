"""Apply a repin: rewrite the pin, its manifest, the pages' headers and the excerpt map in
one step, verify, and roll back on any problem. Where the target changed what a block shows, the
pin still moves and each such block is one located line for the author (:func:`author_lines`),
with the old and new text; the excerpt map is written once the author's edits verify."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from lessonkit.checks import verify
from lessonkit.config import files as config
from lessonkit.project import Project
from lessonkit.repin.acquire import Target, err
from lessonkit.repin.classify import RepinReport
from lessonkit.source import providers
from lessonkit.source.pin import Pin, PinnedTree, write_manifest
from lessonkit.util.fs import atomic_write, remove_owned, staging_dir
from lessonkit.util.text import lines as text_lines


def _sdist_record(target: Target) -> dict[str, str]:
    """The ``[sdist]`` record of the target; for a tree without a release archive, the names
    such an archive would have, with sha256 "none"."""
    n, v = target.name, target.version
    return target.sdist or {
        "filename": f"{n}-{v}.tar.gz",
        "sha256": "none",
        "requirement": f"{n}=={v}",
        "root": f"{n}-{v}",
    }


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def pin_text(old_text: str, pin: Pin, target: Target) -> str:
    """The new ``pin.toml``: the old leading comment, then the target's record (a release archive
    without a known commit: no ``commit``, the archive's sha256 identifies the tree)."""
    if target.version is None or (target.commit is None and not target.sdist):
        raise ValueError(f"{target.label}: a pin needs the target's commit and version (apply() checks them)")
    head = []
    for line in text_lines(old_text):
        if line.startswith("[") or (line.strip() and not line.startswith("#")):
            break
        head.append(line)
    out = head + ["[upstream]", f"repo = {_q(pin.repo)}"]
    if target.commit:
        out += [f"# commit: {target.commit_note}", f"commit = {_q(target.commit)}"]
    else:
        out.append("# commit: none recorded; the release archive's sha256 below identifies the tree")
    if target.kind == "sdist":
        out.append(f"version = {_q(target.version)}")
    else:
        out += [
            f"# version: as the tree's pyproject.toml declares it ({target.origin})",
            f"version = {_q(target.version)}",
        ]
    out += ["", "[sdist]"]
    if target.sdist:
        out += [
            "# The release archive on the Python package index; the default provider.",
            *(f"{k} = {_q(target.sdist[k])}" for k in ("filename", "sha256", "requirement", "root")),
        ]
    else:
        sdist = _sdist_record(target)
        out += [
            "# No release archive is known to hold this tree (it was pinned from "
            f"{'a local checkout' if target.kind == 'path' else 'a git commit'}),",
            f"# so no archive matches sha256 \"none\": provide the tree with {pin.source_env or config.SOURCE_ENV},",
            "# LESSONKIT_GIT_REMOTE or the build cache.",
            *(f"{k} = {_q(sdist[k])}" for k in ("filename", "sha256", "requirement", "root")),
        ]
    if pin.source_env:  # the checkout variable is the series', not the tree's: it stays
        out += [
            "",
            "[provider]",
            "# The variable that names a local checkout of the pinned tree, besides LESSONKIT_SOURCE.",
            f"source_env = {_q(pin.source_env)}",
        ]
    return "\n".join(out) + "\n"


# a header line, maybe in a blockquote (`> `)
HEADER_LINE = r"^(?P<pre>(?:[ \t]*>[ ]?)*[ \t]*{key}[ \t]*:[ \t]*)(?P<value>\S(?:.*\S)?)(?P<post>[ \t]*)$"


def _set_header(lines: list[str], n: int, key: str, old: str, new: str, where: str) -> None:
    m = re.match(HEADER_LINE.format(key=key), lines[n - 1])
    if not m or m["value"] != old:
        raise err(
            f"{where}:{n}: expected `{key}: {old}` there; the page changed while repinning", hint="run the repin again"
        )
    lines[n - 1] = m["pre"] + new + m["post"]


def page_edits(project: Project, report: RepinReport, commit: str) -> dict[Path, str]:
    """New text of every page whose `Lines:` locators or `Commit:` headers name the old pin."""
    edits: dict[str, list[str]] = {}
    for i in report.items:
        b = i.block
        if i.kind != "real-source" or b is None:
            continue
        lines = edits.get(b.path)
        if lines is None:
            lines = edits[b.path] = project.read_page(project.root / b.path).split("\n")
        c = b.get("Commit")
        if c and not commit.lower().startswith(c.lower()):
            _set_header(lines, b.line_of("Commit"), "Commit", c, commit[: max(7, len(c))], b.path)
        if i.status == "moved" and (locator := b.get("Lines")) and i.new is not None:
            _set_header(lines, b.line_of("Lines"), "Lines", locator, f"{i.new[0]}-{i.new[1]}", b.path)
        if i.status == "moved" and (emphasis := b.get("Emphasize")) and i.emphasize:
            _set_header(lines, b.line_of("Emphasize"), "Emphasize", emphasis, i.emphasize, b.path)
    out = {}
    for rel, lines in edits.items():
        path = project.root / rel
        text = "\n".join(lines)
        if text != project.read_page(path):
            out[path] = text
    return out


def _write(path: Path, data: bytes) -> None:
    atomic_write(path, data, durable=True)  # a killed --apply leaves the old or the new file, never half


def _install_target(project: Project, new_pin: Pin, target: Target) -> PinnedTree:
    """Put a copy of the target tree in the build cache under the new commit (checked by the manifest)."""
    cached = providers.cached_tree(new_pin, project.cache)
    if cached is not None:
        return cached
    area = providers.staging(project.cache)
    staged = staging_dir(area, "repin-")
    staged.rmdir()
    try:
        shutil.copytree(target.root, staged, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return providers.install_tree(new_pin, project.cache, staged, target.origin)
    finally:
        remove_owned(area, staged.name)


def apply(project: Project, report: RepinReport, say=print) -> list[str]:
    """Rewrite pin, manifest, page headers and excerpt map in one step; roll back on any problem."""
    target = report.target
    if not target.commit and not target.sdist:
        raise err(
            f"--apply needs the commit of {target.label}: the pin, its permalinks and every "
            f"`Commit:` header name it, and it is {target.commit_note}",
            hint="give --commit <the full 40-digit id this tree was released or checked out at>",
        )
    if not target.version:
        raise err(
            f"--apply needs the version of {target.origin}, and its pyproject.toml declares none",
            hint="repin to a released version, or to a checkout that declares its version",
        )
    old = project.pin
    sdist = _sdist_record(target)
    # a release archive without a known commit: its sha256 is the tree's id (as `init` pins one)
    commit = target.commit or sdist["sha256"][:40]
    new_pin = Pin(
        repo=old.repo,
        commit=commit,
        version=target.version,
        sdist_filename=sdist["filename"],
        sdist_sha256=sdist["sha256"],
        sdist_requirement=sdist["requirement"],
        sdist_root=sdist["root"],
        manifest=dict(target.manifest),
        source=old.source,
        source_env=old.source_env,
        commit_known=target.commit is not None,
    )
    pages = page_edits(project, report, commit)
    installed = _install_target(project, new_pin, target)
    sm = project.sourcemap
    toml_path, manifest_path, map_path = sm / "pin.toml", sm / "manifest.sha256", sm / verify.MAP_NAME
    touched = [toml_path, manifest_path, map_path, sm / "prose-refs.json", *pages]
    backup = {p: (p.read_bytes() if p.exists() else None) for p in touched}
    try:
        _write(toml_path, pin_text(toml_path.read_text(encoding="utf-8"), old, target).encode())
        write_manifest(installed.root, manifest_path)  # atomic
        for path, text in pages.items():
            _write(path, text.encode("utf-8"))
        fresh = Project(project.root, cache=project.cache, provided=installed)
        if fresh.pin.manifest != target.manifest or fresh.pin.commit != commit:
            raise err("the rewritten pin does not read back as written", hint="nothing was changed")
        checked = verify.check(fresh)
        if checked.problems and not report.attention:
            raise err(
                f"after the rewrite verify finds {len(checked.problems)} problem(s), so nothing was "
                f"changed; the first: {checked.problems[0]}",
                hint="repin reports no such problem: please report this as a lessonkit bug",
            )
        if not checked.problems:  # else the author's edits come first, then `verify --update-map`
            verify.write_map(fresh, checked)
            from lessonkit.checks.living import write_ref_map  # prose references: same content, new numbers

            write_ref_map(fresh, checked)
            stale = verify.stale_map(fresh, checked)
            if stale:
                raise err(f"the rewritten excerpt map is stale: {stale[0]}", hint="nothing was changed")
    except BaseException:
        for p, data in backup.items():
            if data is None:
                p.unlink(missing_ok=True)
            else:
                _write(p, data)
        raise
    source_env = old.source_env or config.SOURCE_ENV
    mapped = [] if checked.problems else [map_path]
    written = [project.rel(p) for p in (toml_path, manifest_path, *pages, *mapped)]
    moved = sum(
        1 for i in report.items if i.kind == "real-source" and i.status == "moved" and i.block and i.block.get("Lines")
    )
    what = target.commit or f"no commit: the archive's sha256 {commit[:7]}… identifies the tree"
    say(
        f"applied: pinned to {target.label} ({what}); rewrote {', '.join(written)} "
        f"({moved} `Lines:` locator(s), `Commit:` headers → {commit[:7]})"
    )
    say(f"applied: the tree is in the build cache ({project.rel(installed.root)}, from {target.origin})")
    if not target.sdist:
        say(
            f"note: no release archive holds this tree; a fresh machine needs {source_env} or "
            "LESSONKIT_GIT_REMOTE to build"
        )
    if os.environ.get(source_env):
        say(
            f"note: {source_env} names the old tree; unset it (the build cache has the new one) or point it "
            "at the new tree"
        )
    if report.prose:
        say(
            f"note: {len(report.prose)} line(s) of prose still name {old.name} {old.version} or {old.short} "
            "(listed above); revise them by hand"
        )
    for line in author_lines(report, checked.problems):
        say(line)
    return written


# What the author does about each status of an item that needs attention.
TODO = {
    "changed": "the code it shows changed: make its body (or selection) and the prose around it say what the "
    "new code says (old → new below)",
    "missing": "what it names is gone at the target: name what replaced it, or remove the block",
    "differs": "the script prints differently at the target: check the prose that reads its output (old → new below)",
    "fails": "the script fails at the target: fix it",
    "error": "it does not resolve at the target: fix it as the message says",
}


def author_lines(report: RepinReport, problems) -> list[str]:
    """After an applied repin: one located line per block that needs the author (with the old and
    new text as a diff), verify's own lines for what still fails at the new pin, and what to run
    once the edits are made. Nothing when every item was unchanged or moved."""
    todo = sorted(report.attention, key=lambda i: (i.page, i.line))
    if not todo and not problems:
        return []
    t = report.target
    out = [f"for the author: {len(todo)} item(s) need an edit or a review at {t.label}:"]
    for i in todo:
        detail = f" ({i.detail})" if i.detail else ""
        out.append(f"{i.page}:{i.line}: {i.kind} {i.label} is {i.status} at {t.label}{detail} — {TODO[i.status]}")
        out += [f"    candidate: {c}" for c in i.candidates]
        out += [f"    {d}" for d in i.diff]
    if problems:
        out.append(f"verify at {t.label} finds {len(problems)} problem(s) until then:")
        out += [str(p) for p in problems]
    out.append(
        "then: `lessonkit verify --update-map` records the new excerpts, and `lessonkit build` and "
        "`lessonkit verify` end green"
    )
    return out
