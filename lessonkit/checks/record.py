"""The build's record of the site folder it wrote, for ``verify --site`` (:mod:`lessonkit.site.shipped`).

A successful ``mkdocs build`` (not ``serve``) records, in the build cache (a sealed entry of the
``site`` store, keyed by the site folder's absolute path), what it wrote, with a digest of the
lessonkit that wrote it (``engine``):

* ``files``: the sha256 of every file of the folder (pages, scripts, stylesheets, images, the
  search index, the bundle), read back once MkDocs and every plugin have written them;
* ``copied``: each file MkDocs copied into the folder and the file it copied (of docs/, the theme or
  lessonkit's assets), and ``theme``: the theme's folders, so that verify can compare each copy with
  its source as it is now;
* ``pages``: each page written from a file of ``docs/`` and the HTML file it became;
* ``blocks``: each page's engine blocks in order, ``[id, kind, sha256 of the code shown, digest
  of the run shown]`` (:func:`emitted`);
* ``code_pages``: each source-browser or script page and the file it shows;
* ``provider``: where the build's pinned tree came from, as the provenance lines say it. The
  bytes are hash-checked whichever provider gave them, so a verify run in another environment
  (say, with ``LESSONKIT_SOURCE`` set where the build had none) expects the build's provider,
  not its own;
* ``base``: the path the site is published under (of ``site_url``, ``/`` without one), where the
  links MkDocs writes from the root start (the 404 page's).

The record is not trusted by itself: ``verify --site`` recomputes every block from the Markdown,
the pinned tree and the recorded runs and reads every HTML file; it uses the record to know that
the folder is the one a build of this project wrote (files, pages, where each page went) and
that the build emitted exactly the blocks verify expects. A build forgets the record of its site
folder when it starts, so a failed or interrupted build leaves none.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from lessonkit.util.store import Store, code_version

FORMAT = "3"
KIND = "site"


def _key(site_dir: Path) -> str:
    """By the folder alone (not lessonkit's source, unlike other entries): a verify of another
    lessonkit finds the record and says that the engine changed (``engine``), not that nothing
    recorded the folder."""
    return hashlib.sha256(f"site-record\0{FORMAT}\0{Path(site_dir).resolve()}".encode()).hexdigest()


def html_files(site_dir: Path) -> dict[str, bytes]:
    """Every HTML file under ``site_dir`` (links are not followed), by its posix path in the folder."""
    out: dict[str, bytes] = {}
    root = Path(site_dir)
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".html"):
                path = Path(folder) / name
                if not path.is_symlink():
                    out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def site_files(site_dir: Path) -> dict[str, str]:
    """The sha256 of every file under ``site_dir`` by its posix path in the folder (a link, not
    followed, as ``link`` and the sha256 of where it points)."""
    out: dict[str, str] = {}
    root = Path(site_dir)
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        links = [d for d in dirs if (Path(folder) / d).is_symlink()]  # os.walk does not enter them
        for name in sorted(files + links):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            out[rel] = f"link {sha256(os.readlink(path))}" if path.is_symlink() else file_sha256(path)
    return out


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data).hexdigest()


def emitted(project, report, results: dict) -> dict[str, list[list]]:
    """Each page's blocks as the build renders them: ``[id, kind, sha256 of the code shown (None
    for a block without code), digest of its run's result (None without a run, or when the run
    is not in ``results``)]``."""
    from lessonkit.pipeline.render import code_of

    out: dict[str, list[list]] = {}
    for page, resolved in sorted(report.resolved.items()):
        rows = []
        for r, anchor in zip(resolved, report.anchors(page), strict=True):
            code = sha256(code_of(r)[0]) if r.kind.citation is not None else None
            run = None
            if r.job is not None:
                result = results.get(project.runner.key(r.job))
                run = result.digest if result is not None and result.ok else None
            rows.append([anchor, r.block.kind, code, run])
        out[page] = rows
    return out


def write(
    project,
    site_dir: Path,
    report,
    results: dict,
    dests: dict[str, str],
    code_pages: dict,
    copied: dict[str, str] | None = None,
    theme: list[str] | None = None,
    base: str = "/",
) -> None:
    """Record a successful build's site folder (see the module docstring)."""
    site_dir = Path(site_dir)
    pages = {}
    for page in report.resolved:
        uri = page.removeprefix("docs/")
        if uri in dests:
            pages[page] = dests[uri]
    data = {
        "format": FORMAT,
        "engine": code_version(),
        "root": str(project.root),
        "site": str(site_dir.resolve()),
        "pages": pages,
        "blocks": emitted(project, report, results),
        "code_pages": {dests[uri]: list(code) for uri, code in sorted(code_pages.items()) if uri in dests},
        "files": site_files(site_dir),
        "copied": dict(sorted((copied or {}).items())),
        "theme": list(theme or []),
        "provider": project.tree.provider,
        "base": base,  # the path of site_url, where the links from the root start
    }
    Store(project.cache, KIND).put(_key(site_dir), json.dumps(data, sort_keys=True, ensure_ascii=False))


def forget(project, site_dir: Path) -> None:
    """A build of ``site_dir`` starts: its old record no longer describes the folder."""
    Store(project.cache, KIND).drop(_key(site_dir))


def read(project, site_dir: Path) -> dict | None:
    """The record of ``site_dir``, or None when no successful build of this lessonkit recorded it
    (or its entry is damaged or not sealed by this cache)."""
    raw = Store(project.cache, KIND).get(_key(site_dir))
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    keys = {"format", "engine", "root", "site", "pages", "blocks", "code_pages", "files", "copied", "theme"}
    keys |= {"provider", "base"}
    if not isinstance(data, dict) or set(data) != keys or data["format"] != FORMAT:
        return None
    if not isinstance(data["provider"], str) or not isinstance(data["copied"], dict):
        return None
    if not isinstance(data["base"], str):
        return None
    if not isinstance(data["theme"], list) or not all(isinstance(d, str) for d in data["theme"]):
        return None
    return data
