"""Check a built site: every internal link and anchor resolves, and no page loads
anything from another host (scripts, styles, images, fonts, frames).

Scanning the pages (their ids, links and resources) is most of the work. A build hands it
to a :class:`SiteScanner`, another process that scans each page as soon as MkDocs has
written it, so the scan overlaps the rest of MkDocs' second pass instead of following it;
:meth:`SiteScanner.finish` then scans what it was not told about, or what changed since,
and resolves the links. Anything wrong with that process only costs time: the check then
runs here, in full."""

from __future__ import annotations

import json
import os
import posixpath
import re
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lessonkit.errors import Problem
from lessonkit.util import markup
from lessonkit.util.fs import Signature, signature
from lessonkit.util.store import Store, digest

SCAN_FORMAT = "2"  # bump when _scan changes what it finds
RANGE = re.compile(r"^L(\d+)-L\d+$")
TAG = re.compile(r"<(a|link|script|img|iframe|source|video|audio|embed|object)\b([^>]*)>", re.I)
ATTR = re.compile(r"""\b(href|src|data|rel)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
IDS = re.compile(r"""\s(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
STYLE_URL = re.compile(r"""url\(\s*['"]?([^'")]+)""")
RESOURCE = {
    "link": "href",
    "script": "src",
    "img": "src",
    "iframe": "src",
    "source": "src",
    "video": "src",
    "audio": "src",
    "embed": "src",
    "object": "data",
}


@dataclass(frozen=True)
class LinkProblem:
    page: str
    target: str
    what: str
    resolved: str = ""  # what the link names, from the site's root (the same on every page that has it)

    def __str__(self) -> str:
        return f"site/{self.page}: {self.what}: {self.target}"


HINTS = {
    "broken link": "link to a page or file the site has (a page's .md path, relative to the page)",
    "broken anchor": "link to a heading or block anchor the target page has",
    "link leaves the site": "link inside the site, or to a full https:// address",
    "loads a resource from another host": "ship the file with the site (readers may not reach that host)",
}


def located(
    problems: list[LinkProblem], sources: dict[str, tuple[str, str]], config: tuple[str, str] | None = None
) -> list[Problem]:
    """The link problems where an author can fix them. ``sources`` maps a written page
    (``lessons/a/index.html``) to its source (``docs/lessons/a.md``) and that source's text;
    ``config`` is the MkDocs configuration (its path and text). A link its page's source names is
    reported at that line. One that is not there (a nav entry, a theme's or template's link) is
    one line for all the pages that have it: at the configuration's line that names it, else at
    the first written page, with how many other pages have it."""
    out: dict[str, tuple[int, Problem]] = {}  # by its line: (where the first of it came, it)
    rest: dict[tuple[str, str], list[tuple[int, LinkProblem]]] = {}
    for n, p in enumerate(problems):
        src = sources.get(p.page)
        line = _line_naming(src[1], p.target) if src is not None else None
        if src is not None and line is not None:
            found = Problem(f"{p.what}: {p.target}", src[0], line, HINTS.get(p.what))
            out.setdefault(str(found), (n, found))
        else:
            rest.setdefault((p.what, p.resolved or f"{p.page}#{p.target}"), []).append((n, p))
    for (what, _), group in rest.items():
        first, where, line = group[0][1], f"site/{group[0][1].page}", None
        if config is not None:
            for _, p in group:  # the pages may name it differently (../x, /x)
                line = _line_naming(config[1], p.target)
                if line is not None:
                    first, where = p, config[0]
                    break
        more = f" (on {len(group)} pages)" if len(group) > 1 else ""
        found = Problem(f"{what}: {first.target}{more}", where, line, HINTS.get(what))
        out.setdefault(str(found), (group[0][0], found))
    return [p for _, p in sorted(out.values(), key=lambda item: item[0])]


def _line_naming(text: str, href: str) -> int | None:
    """The first line of ``text`` that links to ``href`` (else the first that mentions it): its
    path without ``./``, ``../`` and ``/`` (a page's address ``x/`` is also its source ``x.md``),
    or the whole ``#anchor``."""
    path = unquote(href.split("#")[0].split("?")[0])
    while path.startswith(("./", "../", "/")):
        path = path[path.index("/") + 1 :]
    if path and not path.strip("./"):
        return None  # the site's root ("../.."): names nothing an author wrote
    needles = [path or href] + ([path[:-1] + ".md"] if path.endswith("/") and len(path) > 1 else [])
    lines = text.splitlines()
    for needle in needles:  # a line that links to it (`](x`, `href="x`, a nav entry `: x`) first
        linking = re.compile(r"""(?:\]\(|\b(?:href|src)=["']|:\s+)[./]*""" + re.escape(needle))
        n = next((n for n, ln in enumerate(lines, 1) if linking.search(ln)), None)
        if n is not None:
            return n
    for needle in needles:  # else any line that mentions it
        n = next((n for n, ln in enumerate(lines, 1) if needle in ln), None)
        if n is not None:
            return n
    return None


@dataclass
class _Page:
    ids: set
    links: list
    resources: list


SCHEME_HOST = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:)?//")


def _text(value: str) -> str:
    return unescape(value) if "&" in value else value  # most values have no entity: skip the call


def _scan(html: str) -> _Page:
    """A page's ids, links and resources, read from the document a browser builds from it
    (:mod:`lessonkit.util.markup`): every URL-bearing attribute of every element (``srcset``,
    ``poster``, ``background``, SVG ``href``/``xlink:href``, ``ping``, …) and every URL of its
    CSS (``<style>`` elements and ``style`` attributes). A link is an ``<a>``'s or ``<area>``'s
    ``href``; a URL the reader only follows (a form's ``action``, ``cite``) is neither."""
    tree = markup.parse(html)
    ids: set[str] = set()
    links: list[str] = []
    resources: list[str] = []
    for node in markup.elements(tree):
        name = markup.name(node)
        if name == "style":
            resources += [u for _, u in _css_urls(node.text(deep=True), False)]
        if not node.attributes:
            continue
        attrs = markup.attributes(node)
        ids.update(v for k, v in attrs.items() if k in ("id", "name"))
        nav = markup.NAVIGATION.get(name, ())
        rel = set(attrs.get("rel", "").lower().split())
        for attr, value in attrs.items():
            if attr == "style":
                resources += [u for _, u in _css_urls(value, True)]
            elif attr in nav and attr != "ping":
                if name == "a" and attr == "href":
                    links.append(value)
            elif attr in markup.FOLLOWED_ONLY or (name == "link" and rel & {"canonical", "alternate"}):
                continue
            else:
                resources += markup.url_values(name, attr, value, attrs)
    return _Page(ids, links, resources)


def _css_urls(css: str, declarations: bool) -> list[tuple[int, str]]:
    return markup.css_urls(css, declarations) if "(" in css or "@" in css else []


def _scan_asset(path: Path) -> list[tuple[int, str]]:
    """(line, URL) of what a style sheet or an SVG file of the site loads."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".css":
        return _css_urls(text, False)
    tree = markup.parse(text)
    page = _scan(text)
    found = [u for u in page.resources if markup.other_host(u)]
    out = []
    for url in found:
        target = next(
            (n for n in markup.elements(tree) if url in n.attributes.values() or url in (n.text() or "")), None
        )
        out.append((markup.element_line(text, tree, target) if target is not None else 1, url))
    return out


def _scan_cached(data: bytes, store: Store | None) -> _Page:
    if store is None:
        return _scan(data.decode("utf-8", errors="replace"))
    key = digest("links", SCAN_FORMAT, data)
    cached = store.get(key)
    if cached is not None:
        try:
            ids, links, resources = json.loads(cached)
            return _Page(set(ids), links, resources)
        except (ValueError, TypeError):
            pass
    page = _scan(data.decode("utf-8", errors="replace"))
    store.put(key, json.dumps([sorted(page.ids), page.links, page.resources]))
    return page


def _external(url: str) -> bool:
    """Has a host: ``https://x/…``, ``//x/…`` (what ``urlsplit(url).netloc`` finds)."""
    return SCHEME_HOST.match(url) is not None


def _anchor_missing(fragment: str, ids: set) -> bool:
    """A fragment the page does not have; a range ``#L12-L20`` needs its first line."""
    frag = unquote(fragment)
    m = RANGE.match(frag)
    return bool(frag) and (f"L{m.group(1)}" if m else frag) not in ids


def _scan_file(path: Path, store: Store | None) -> tuple[Signature | None, _Page]:
    """The scan of the file at ``path`` and its signature (None when the file changed while read)."""
    before = os.stat(path)
    page = _scan_cached(path.read_bytes(), store)
    after = os.stat(path)
    return (signature(after) if signature(before) == signature(after) else None), page


def site_base(path: str) -> str:
    """The path a site is published under, as links from the root start: ``/my-series/`` for a
    ``site_url`` of ``https://example.net/my-series`` (its path), ``/`` for none."""
    return "/" + path.strip("/") + "/" if path.strip("/") else "/"


def from_root(path: str, base: str) -> str | None:
    """A link path from the root (``/my-series/source/``) as a path inside the site published under
    ``base`` (``source/``); None when it is not under ``base`` (it leaves the site)."""
    return path[len(base) :] if (path + "/").startswith(base) else None


def check_site(
    site: Path,
    cache: Path | None = None,
    scanned: dict[str, tuple[Signature | None, _Page]] | None = None,
    base: str = "/",
) -> list[LinkProblem]:
    """Every problem of the built ``site``. With ``cache``, each page's scan (its ids,
    links and resources) is reused while the page's bytes are unchanged. ``scanned`` holds
    scans made earlier (:class:`SiteScanner`): one is used while its file still has the
    size, modification time and inode it had when it was scanned. ``base`` is the path the site
    is published under (of ``site_url``: ``/my-series/``), where a link from the root such as
    MkDocs writes on the 404 page (``/my-series/source/``) starts."""
    base = site_base(base)
    store = Store(cache, "links") if cache is not None else None
    scanned = scanned or {}
    files: set[str] = set()
    dirs: set[str] = {""}
    for dirpath, dirnames, filenames in os.walk(site):
        rel = Path(dirpath).relative_to(site).as_posix()
        rel = "" if rel == "." else rel
        dirs.update(posixpath.join(rel, d) for d in dirnames)
        files.update(posixpath.join(rel, f) for f in filenames)
    pages = {}
    for page in sorted(f for f in files if f.endswith(".html")):
        sig, early = scanned.get(page, (None, None))
        if early is not None and sig is not None and signature(os.stat(site / page)) == sig:
            pages[page] = early
        else:
            pages[page] = _scan_cached((site / page).read_bytes(), store)
    problems = []
    for asset in sorted(f for f in files if f.endswith((".css", ".svg"))):
        for _line, url in _scan_asset(site / asset):
            if markup.other_host(url):
                problems.append(LinkProblem(asset, url, "loads a resource from another host", url))
    for page, c in pages.items():
        for res in c.resources:
            if markup.other_host(res):
                problems.append(LinkProblem(page, res, "loads a resource from another host", res))
        for href in c.links:
            problems += _link_problems(page, href, pages, files, dirs, base)
    return problems


def _link_problems(
    page: str, href: str, pages: dict[str, _Page], files: set[str], dirs: set[str], base: str
) -> list[LinkProblem]:
    """What is wrong with link ``href`` of ``page``: a target that is not a file of the site, an
    anchor its page does not have, a path out of the site."""
    if href.startswith("#") and "?" not in href:  # this page: most links of a source page (#L12)
        return (
            [LinkProblem(page, href, "broken anchor", page + href)]
            if _anchor_missing(href[1:], pages[page].ids)
            else []
        )
    if not href or href.startswith(("mailto:", "javascript:", "data:")) or _external(href):
        return []
    parts = urlsplit(href) if ("#" in href or "?" in href or ":" in href) else None
    path, fragment = (parts.path, parts.fragment) if parts else (href, "")
    target = page
    if path:
        named = _target(page, path, base)
        if named is None or named.startswith(".."):
            return [LinkProblem(page, href, "link leaves the site", href if named is None else named)]
        target = named
        if target in dirs or href.endswith("/"):
            target = posixpath.join(target, "index.html")
        if target not in files:
            return [LinkProblem(page, href, "broken link", target)]
    if target.endswith(".html") and _anchor_missing(fragment, pages[target].ids if target in pages else set()):
        return [LinkProblem(page, href, "broken anchor", f"{target}#{fragment}")]
    return []


def _target(page: str, path: str, base: str) -> str | None:
    """The file or folder of the site a link's path names from ``page`` ("" for the root; it may
    start with ``..``, out of the site), or None when a path from the root is not under ``base``."""
    folder = posixpath.dirname(page)
    if path.startswith("/"):  # "/my-series/x/": from the site root (the published path)
        inside = from_root(path, base)
        if inside is None:
            return None
        folder, path = "", inside
    target = posixpath.normpath(posixpath.join(folder, unquote(path).lstrip("/")))
    return "" if target == "." else target


# ---------------------------------------------------------------- scanning in another process


def _scanner_worker(conn, site: str, cache: str | None, base: str = "/") -> None:
    """The scanning process: a page's name → its scan; ``finish`` → every problem of the site."""
    from lessonkit.run.box.sandbox import helper_process

    helper_process()  # a build that dies leaves no scanner behind
    root = Path(site)
    store = Store(Path(cache), "links") if cache is not None else None
    scanned: dict[str, tuple[Signature | None, _Page]] = {}
    while True:
        try:
            what, value = conn.recv()
        except (EOFError, OSError):  # the build has gone
            return
        if what == "page":
            try:
                scanned[value] = _scan_file(root / value, store)
            except OSError:
                pass  # finish() looks again
        elif what == "finish":
            try:
                found = check_site(root, Path(cache) if cache is not None else None, scanned, base)
            except Exception:  # noqa: BLE001 - the build checks again, itself, and reports it there
                found = None
            conn.send(found)
            return


class SiteScanner:
    """Scans the written pages of ``site`` in another process while the build goes on.

    :meth:`written` names a page whose file is complete; :meth:`finish` returns what
    :func:`check_site` would. A scanner that cannot start, stops, or fails makes
    :meth:`finish` run :func:`check_site` here; :meth:`close` ends the process."""

    def __init__(self, site: Path, cache: Path | None = None, base: str = "/"):
        import multiprocessing

        from lessonkit.run.box.sandbox import start_helper

        self.site, self.cache, self.base = Path(site), cache, base
        self._conn = self._proc = None
        ctx = multiprocessing.get_context("spawn")
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(
            target=_scanner_worker,
            args=(theirs, str(self.site), str(cache) if cache is not None else None, base),
            daemon=True,
            name="lessonkit-links",
        )
        started = start_helper(proc)
        theirs.close()
        if not started:  # finish() does the work here
            ours.close()
            return
        self._conn, self._proc = ours, proc

    def written(self, page: Path) -> None:
        """``page`` (a file under the site) is written and will not change."""
        if self._conn is None:
            return
        try:
            rel = Path(page).resolve().relative_to(self.site.resolve()).as_posix()
        except ValueError:  # not a file of this site
            return
        try:
            self._conn.send(("page", rel))
        except OSError:  # the scanner has stopped: finish() checks here
            self.close()

    def finish(self, timeout: float = 120.0) -> list[LinkProblem]:
        conn = self._conn
        try:
            if conn is not None:
                conn.send(("finish", None))
                if conn.poll(timeout):
                    found = conn.recv()
                    if isinstance(found, list) and all(isinstance(p, LinkProblem) for p in found):
                        return found
        except (EOFError, OSError):
            pass
        finally:
            self.close()
        return check_site(self.site, self.cache, base=self.base)

    def close(self) -> None:
        conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
        if conn is not None:
            conn.close()
        if proc is not None:
            proc.join(timeout=1)
            if proc.is_alive():
                proc.kill()
                proc.join()
