"""What runs, restyles or embeds in a written page: only what Material's templates and lessonkit
write (``verify --site``, :mod:`lessonkit.site.shipped`).

A page's text can be checked, but a script can rewrite it in the reader's browser, a stylesheet or
a ``style`` attribute can hide it or draw other text over it, and a frame embeds another document.
So every page of the folder may hold only:

* ``<script>`` elements that Material's templates write: an inline script whose code is one of
  theirs (a template's expression, such as the site's base URL, may stand for any text without
  quotes or markup), the JSON ``__config`` (data, not code: its search worker must be Material's
  own file), or a script whose ``src`` is a file of the folder copied from Material's theme or from
  lessonkit's assets (each copy is compared with its source by :mod:`lessonkit.site.folder_record`);
* ``<style>`` elements and ``style`` attributes of Material's templates (outside the engine's
  blocks, whose markup is compared whole), the style sheets of lessonkit's own diagrams and of
  the project's registered attachments (the ``<style>…</style>`` constants of :data:`DRAWINGS`
  and of the attachments' modules), and stylesheets that are files of the folder;
* no event attribute (``onclick=…``: none of Material's templates writes one), no frame, object
  or embedded document, no ``<base>``, no refresh, and no URL that runs code (``javascript:``,
  ``vbscript:``) or carries a document (``data:``, in an attribute that loads or links to one).

What is allowed is read from the installed theme's templates, not listed here: a new version of
Material that writes another script is allowed as it is, and a page that writes one more is not.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from lessonkit.checks.shown import inside
from lessonkit.checks.tree import Doc
from lessonkit.errors import Problem
from lessonkit.site.links import from_root
from lessonkit.util import markup

DRAWINGS = ("lessonkit.pipeline.svg", "lessonkit.site.attachments")  # where lessonkit draws diagrams
HINT = "something after lessonkit added it (a hook, plugin or extra_javascript); remove it and rebuild"
EMBEDS = frozenset("iframe frame frameset object embed applet portal".split())
URL_ATTRS = markup.URL_ATTRIBUTES | set(markup.ANIMATED_VALUES)
# The elements checked by name (whatever their attributes).
ELEMENTS = frozenset("script style link meta base".split()) | EMBEDS
SCRIPT_ELEMENT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.S | re.I)
STYLE_ELEMENT = re.compile(r"<style\b([^>]*)>(.*?)</style\s*>", re.S | re.I)
STYLE_ATTR = re.compile(r"""\sstyle\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
ATTRIBUTE = re.compile(r'\s([a-zA-Z][\w:-]*)\s*=\s*"([^"]*)"')
EVENT_ATTR = re.compile(r"""\s(on[a-z]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def _pattern(template_text: str) -> re.Pattern:
    """A template's text as a pattern: its expressions (``{{ … }}``) stand for one value (a URL, a
    name, a number): text without quotes, markup, backslashes, line breaks or the characters that
    end or open a statement, a rule or a list (``; { } ( ) [ ] ,``), the rest is literal. So an
    expression cannot stand for a script or a style of a contributor's own."""
    parts = JINJA.split(template_text.strip())
    return re.compile(r"[^\"'<>\\\n\r;{}()\[\],]*?".join(re.escape(p) for p in parts))


def _scheme(value: str, attr: str) -> str | None:
    from html import unescape

    text = re.sub(r"[\x00-\x20\x7f]+", "", unescape(value) if "&" in value else value).lower()
    for scheme in ("javascript", "vbscript", *(("data",) if attr in URL_ATTRS else ())):
        if text.startswith(scheme + ":") or (attr == "srcset" and f",{scheme}:" in text):
            return scheme
    return None


def _installed(name: str) -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec(name)
    return Path(spec.origin).parent.resolve() if spec is not None and spec.origin else None


class Allowed:
    """What Material's templates (the installed theme) and lessonkit write that runs or styles a page."""

    def __init__(self, check):
        self.check = check
        material = _installed("material")
        self.templates = material / "templates" if material is not None else None
        self.assets = (Path(__file__).parents[1] / "assets").resolve()

    @cached_property
    def _texts(self) -> list[str]:
        """The templates: Material's, and those of the build's theme folders (a project's
        ``custom_dir`` overrides some) where copies may come from (:func:`theme_folder_ok`)."""
        folders = [self.templates] if self.templates is not None else []
        folders += [Path(d) for d in self.check.record["theme"] if theme_folder_ok(self.check, Path(d))]
        seen, out = set(), []
        for folder in folders:
            for path in sorted(folder.rglob("*.html")) if folder.is_dir() else ():
                if path.resolve() not in seen:
                    seen.add(path.resolve())
                    out.append(path.read_text(encoding="utf-8", errors="replace"))
        return out

    @cached_property
    def urls(self) -> list[tuple[str, re.Pattern]]:
        """(attribute, value) of the templates' URLs that run code or carry a document
        (Material's search share button is ``href="javascript:void(0)"``)."""
        out = []
        for text in self._texts:
            for m in ATTRIBUTE.finditer(text):
                if _scheme(m[2], m[1].lower()) is not None:
                    out.append((m[1].lower(), _pattern(m[2])))
        return out

    @cached_property
    def inline(self) -> list[tuple[re.Pattern, re.Pattern]]:
        """(attributes, code) of every inline ``<script>`` and ``<style>`` of the templates."""
        out = []
        for text in self._texts:
            for m in [*SCRIPT_ELEMENT.finditer(text), *STYLE_ELEMENT.finditer(text)]:
                if "src=" in m[1] or "{%" in m[2] or "tojson" in m[2]:
                    continue  # a script file (allowed by what it loads), or data
                out.append((_pattern(m[1]), _pattern(m[2])))
        return out

    @cached_property
    def styles(self) -> list[re.Pattern]:
        return [_pattern(m[1] if m[1] is not None else m[2]) for t in self._texts for m in STYLE_ATTR.finditer(t)]

    @cached_property
    def events(self) -> list[tuple[str, re.Pattern]]:
        return [
            (m[1].lower(), _pattern(m[2] if m[2] is not None else m[3]))
            for t in self._texts
            for m in EVENT_ATTR.finditer(t)
        ]

    @cached_property
    def scripts(self) -> set[str]:
        """The files of the folder a page may load as a script: copies of Material's theme files and
        of lessonkit's assets (the build's record says what was copied from where)."""
        roots = [r for r in (self.templates.resolve() if self.templates else None, self.assets) if r is not None]
        roots += [p for p in map(_installed, INSTALLED_THEMES[2:]) if p is not None]  # Zensical's theme
        out = set()
        for rel, source in self.check.record["copied"].items():
            src = Path(source).resolve()
            if rel.endswith((".js", ".mjs")) and any(r in src.parents for r in roots):
                out.add(rel)
        return out

    @cached_property
    def sheets(self) -> set[str]:
        """The style sheets lessonkit's own drawings write into a page (a diagram's ``<style>``):
        the module-level ``<style>…</style>`` constants of its drawing modules, and of the modules
        that register the project's own attachments (``sourcemap/attachments.toml``), whose pages
        the build writes."""
        import importlib
        import sys

        out = set()
        modules = [importlib.import_module(name) for name in DRAWINGS]
        for a in self.check.project.attachments:
            own = sys.modules.get(type(a).__module__)
            if own is not None:
                modules.append(own)
        for module in modules:
            for value in vars(module).values():
                if isinstance(value, str) and value.startswith("<style>") and value.endswith("</style>"):
                    out.add(value[len("<style>") : -len("</style>")])
        return out

    def inline_ok(self, attrs: str, code: str) -> bool:
        return any(a.fullmatch(attrs.strip()) and c.fullmatch(code.strip()) for a, c in self.inline)

    def style_ok(self, attrs: str, code: str) -> bool:
        return (not attrs.strip() and code in self.sheets) or self.inline_ok(attrs, code)


# The installed packages whose templates a build's theme may come from: MkDocs and Material, and
# Zensical's theme (its templates and assets, for `lessonkit build --engine zensical`).
INSTALLED_THEMES = ("material", "mkdocs", "zensical_ui")


def theme_folder_ok(check, folder: Path) -> bool:
    """A theme folder copies may come from: inside the project (not its site folder or the cache),
    or inside the installed MkDocs, Material or Zensical's theme."""
    folder, root = folder.resolve(), check.project.root
    if root == folder or root in folder.parents:
        outside = [check.site_dir.resolve(), Path(check.project.cache).resolve()]
        return not any(o == folder or o in folder.parents for o in outside)
    return any(p is not None and (folder == p or p in folder.parents) for p in map(_installed, INSTALLED_THEMES))


def _resolve(page: str, url: str, base: str = "/") -> str | None:
    """The file of the folder that ``url`` on page ``page`` names, or None when it names none
    (another site, a scheme, a path from the root outside ``base``, the path the site is
    published under)."""
    url = url.strip().split("#", 1)[0].split("?", 1)[0]
    if not url or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//", url):
        return None
    if url.startswith("/"):
        inside = from_root(url, base)
        if inside is None:
            return None
        path = inside.lstrip("/")
    else:
        path = posixpath.join(posixpath.dirname(page), url)
    path = posixpath.normpath(path)
    if path.startswith("../") or path == "..":
        return None
    return path + "index.html" if url.endswith("/") else path


def line_at(html: str, pos: int) -> int:
    return html.count("\n", 0, pos) + 1


def problems(check, doc: Doc, rel: str, where: str, verified: list[int]) -> list[Problem]:
    """The scripts, styles, event attributes, frames and URLs of page ``rel`` that neither
    Material's templates nor lessonkit wrote (see the module docstring), read from the document a
    browser builds (:class:`lessonkit.checks.tree.Doc`: names and decoded attribute values from the
    standard's parser), each at its line. What the page holds is found once per page (a mutated
    copy shares it); which styles are inside the elements ``verified`` (an engine block's markup
    is compared whole) is decided per call."""
    memo = ("active", tuple(sorted(verified)))
    if memo in doc.memo:
        return doc.memo[memo]
    found = doc.memo.get("active-found")
    if found is None:
        found = doc.memo["active-found"] = _found(check, doc, rel, where)
    spans = sorted((i, doc.end(i)) for i in verified)
    out = [p for k, p, style in found if not (style and inside(spans, k))]
    doc.memo[memo] = out
    return out


_RISKY: dict[tuple, bool] = {}  # attribute names of an element -> may one of them run, load or restyle


def _risky(names: tuple) -> bool:
    got = _RISKY.get(names)
    if got is None:
        if len(_RISKY) > 4096:
            _RISKY.clear()
        got = _RISKY[names] = any(
            n[:2].lower() == "on" or n.lower() in ("style", "srcdoc", "http-equiv") or n.lower() in URL_ATTRS
            for n in names
        )
    return got


def _found(check, doc: Doc, rel: str, where: str) -> list[tuple[int, Problem, bool]]:
    """(element, problem, is a style: allowed inside a verified element) for everything of the page
    that runs, restyles or embeds and is not Material's or lessonkit's."""
    out: list[tuple[int, Problem, bool]] = []
    for k, node in enumerate(doc.nodes):
        given = node.attributes
        name = doc.name(k)
        if not (given and _risky(tuple(given))) and name not in ELEMENTS:
            continue
        found = [(replace(p, line=doc.line(k)), style) for p, style in _element(check, doc, k, rel, where)]
        found += [(replace(p, line=doc.line(k, attr)), style) for attr, p, style in _attributes(check, doc, k, where)]
        out += [(k, p, style) for p, style in found]
    out += _reserved_ids(doc, where)
    return out


def _in_content(doc: Doc, k: int) -> bool:
    """Element ``k`` is inside the page's ``<article>``, where the theme puts the page's content
    (a style there is allowed only inside an engine block whose markup is compared whole)."""
    p = doc.parent[k]
    while p >= 0:
        if doc.name(p) == "article":
            return True
        p = doc.parent[p]
    return False


def _element(check, doc: Doc, k: int, rel: str, where: str) -> list[tuple[Problem, bool]]:
    """What element ``k`` is, when that runs, embeds or restyles (by its name)."""
    name, attrs = doc.name(k), doc.attrs(k)

    def refuse(message: str, style: bool = False) -> list[tuple[Problem, bool]]:
        return [(Problem(message, where, None, HINT), style)]

    if name == "script" and _in_content(doc, k):  # the theme writes its own in the head and body, never here
        return refuse("a <script> inside the page's content (its <article>), where the theme writes none")
    if name == "script":
        return [(p, False) for p in _script(check, rel, where, doc.attrs(k), doc.attribute_text(k), doc.raw_text(k))]
    if name == "style":
        if check.allowed.style_ok(doc.attribute_text(k), doc.raw_text(k)):
            return []
        return refuse("a <style> element that neither Material's templates nor lessonkit write", True)
    if name in EMBEDS:
        return refuse(f"a <{name}> element, which embeds another document in the page")
    if name == "base":
        return refuse("a <base> element, which changes where the page's links point")
    if name == "meta" and attrs.get("http-equiv", "").strip().lower() == "refresh":
        return refuse("a <meta> refresh, which replaces the page with another")
    if name == "meta" and "http-equiv" in attrs and (doc.parent[k] < 0 or doc.name(doc.parent[k]) != "head"):
        return refuse("a <meta http-equiv> outside the page's head, which a browser ignores with a warning")
    if name == "link":
        return [(p, False) for p in _link(check, attrs, rel, where)]
    return []


def _attributes(check, doc: Doc, k: int, where: str) -> list[tuple[str, Problem, bool]]:
    """The attributes of element ``k`` that run code, restyle it, embed a document or carry a URL
    that runs code or is a document, which Material's templates do not write."""
    allowed, name, attrs = check.allowed, doc.name(k), doc.attrs(k)
    out: list[tuple[str, str, bool]] = []
    for attr, value in attrs.items():
        if attr.startswith("on") and len(attr) > 2:
            if not any(e == attr and p.fullmatch(value.strip()) for e, p in allowed.events):
                why = f"an event attribute `{attr}` on a <{name}>, which runs code in the reader's browser"
                out.append((attr, why, False))
        elif attr == "style":
            if not any(p.fullmatch(value.strip()) for p in allowed.styles):
                out.append((attr, f"a `style` attribute on a <{name}> that Material's templates do not write", True))
        elif attr == "srcdoc":
            out.append((attr, f"a `srcdoc` attribute on a <{name}>, which embeds another document in the page", False))
        elif attr in URL_ATTRS:
            scheme = _url_scheme(name, attr, value, attrs)
            if scheme is not None and not any(a == attr and p.fullmatch(value.strip()) for a, p in allowed.urls):
                out.append((attr, f"a `{scheme}:` URL in `{attr}` of a <{name}>", False))
    return [(attr, Problem(message, where, None, HINT), style) for attr, message, style in out]


def _url_scheme(name: str, attr: str, value: str, attrs: dict[str, str]) -> str | None:
    """The first scheme that runs code or carries a document among the URLs of an attribute."""
    for url in markup.url_values(name, attr, value, attrs):
        scheme = markup.scheme(url)
        if scheme in ("javascript", "vbscript", "data"):
            return scheme
    return None


def _reserved_ids(doc: Doc, where: str) -> list[tuple[int, Problem, bool]]:
    """The theme's scripts find their elements by ids that start with ``__`` (``__config``, whose
    JSON names the search worker's file; ``__code_…``, the copy buttons' targets): each such id is on
    one element of the page, and ``__config`` on a JSON ``<script>``. A second element with one of
    them, placed before the theme's, is the one its scripts would read."""
    seen: dict[str, int] = {}
    out: list[tuple[int, Problem, bool]] = []
    for k in range(len(doc)):
        value = doc.attrs(k).get("id", "").strip(" \t\n\f\r")
        if not value.startswith("__"):
            continue
        seen[value] = seen.get(value, 0) + 1
        name = doc.name(k)
        wrong = value == "__config" and not (
            name == "script" and doc.attrs(k).get("type", "").strip().lower() == "application/json"
        )
        if seen[value] > 1 or wrong:
            why = (
                f"a second element with the id `{value}`, which the theme's scripts find their elements by"
                if seen[value] > 1
                else f"a <{name}> with the id `__config`, where the theme keeps its configuration"
            )
            out.append((k, Problem(why, where, doc.line(k), HINT), False))
    return out


def _script(check, rel: str, where: str, attrs: dict[str, str], attr_text: str, code: str) -> list[Problem]:
    allowed = check.allowed
    if "src" in attrs:
        target = _resolve(rel, attrs["src"], check.base)
        extra = set(attrs) - {"src", "defer", "async", "type"}
        if (
            target in allowed.scripts
            and not extra
            and not code.strip()
            and attrs.get("type", "module") in ("module", "text/javascript")
        ):
            return []
        what = f"a file of the folder ({target})" if target in check.hashes else f"{attrs['src']!r}"
        return [
            Problem(f"a <script> that loads {what}, which is neither Material's nor lessonkit's", where, None, HINT)
        ]
    if attrs == {"id": "__config", "type": "application/json"}:  # Material's configuration: data
        try:
            config = json.loads(code)
        except ValueError:
            config = None
        worker = config.get("search") if isinstance(config, dict) else None
        if isinstance(config, dict) and (
            worker is None or (isinstance(worker, str) and _resolve(rel, worker, check.base) in allowed.scripts)
        ):
            return []
        return [
            Problem("Material's configuration script names a search worker that is not Material's", where, None, HINT)
        ]
    if allowed.inline_ok(attr_text, code):
        return []
    return [Problem("an inline <script> that Material's templates do not write", where, None, HINT)]


def _link(check, attrs: dict[str, str], rel: str, where: str) -> list[Problem]:
    kinds = set(attrs.get("rel", "").lower().split())
    if not kinds & {"stylesheet", "preload", "modulepreload", "prefetch", "import"}:
        return []
    target = _resolve(rel, attrs.get("href", ""), check.base)
    if "modulepreload" in kinds and target not in check.allowed.scripts:
        return [
            Problem(
                f"a <link rel=modulepreload> of {attrs.get('href', '')!r}, which is neither Material's nor lessonkit's",
                where,
                None,
                HINT,
            )
        ]
    if target is None or target not in check.hashes:
        return [
            Problem(
                f"a <link rel={attrs.get('rel')}> to {attrs.get('href', '')!r}, which is not a file of the folder",
                where,
                None,
                HINT,
            )
        ]
    return []


def svg_problems(data: bytes, where: str) -> list[Problem]:
    """What an SVG file of the folder holds that is not static drawing, read as a browser reads
    ``image/svg+xml`` (:func:`lessonkit.util.markup.svg_file_problems`): opened on its own (a link
    to it, a new tab), it is a document of the site and its scripts run there. The engine's own
    drawings are written into pages, not files: every SVG file is checked."""
    return [Problem(why, where, line, markup.SVG_HINT) for line, why in markup.svg_file_problems(data)]
