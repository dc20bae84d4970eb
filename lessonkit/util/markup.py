"""HTML and CSS as a browser reads them: the one reader of every check that looks at markup.

HTML is parsed by lexbor (through ``selectolax``), an implementation of the HTML Standard's
tokenizer and tree construction, with scripting enabled as in a reader's browser (so the content
of ``<noscript>`` is text, as it is there). Comments end where the standard ends them (``<!-->``,
``<!--->``, ``--!>``), the content of ``<title>``, ``<style>`` or ``<noembed>`` inside ``<svg>`` or
``<math>`` is markup, CDATA sections exist only in foreign content, character references are decoded
in attribute values, and the content of every ``<template>`` is read too (a declarative shadow root
shows it). CSS (style sheets, ``<style>`` elements, ``style`` attributes) is tokenized by tinycss2,
which follows CSS Syntax Level 3: escapes are decoded and ``url()`` is found however it is written.

lexbor keeps no source positions. :func:`line_of` finds the line of an element by parsing
growing prefixes of the text (an element the tree builder has made from the first lines is made
from the whole text at the same place in document order): a handful of parses, and only for the
element a check refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: importing lessonkit loads neither
    from selectolax.lexbor import LexborHTMLParser, LexborNode

# Attributes whose value is one URL or a list of them, as browsers read them (HTML, SVG, MathML and
# the obsolete attributes browsers still honour). An attribute a reader never follows (cite,
# longdesc) is listed too: a lesson has no use for a URL there that runs code or carries a document.
URL_ATTRIBUTES = frozenset(
    "href src srcset imagesrcset poster background action formaction data xlink:href cite longdesc manifest "
    "icon ping lowsrc dynsrc codebase archive classid code usemap profile itemtype xml:base".split()
)
# What loads by itself (a request the page makes without the reader following a link).
NAVIGATION = {"a": {"href", "xlink:href", "ping"}, "area": {"href", "ping"}}
FOLLOWED_ONLY = frozenset({"action", "formaction", "cite", "longdesc", "usemap", "itemtype", "profile"})
ANIMATION = frozenset({"animate", "set", "animatemotion", "animatetransform", "animatecolor"})
ANIMATED_VALUES = ("to", "from", "values", "by")
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")
_VENDOR = re.compile(r"^-[a-z]+-")
_C0_EDGE = "".join(map(chr, range(0x21)))


def parse(html: str) -> LexborHTMLParser:
    """The document a browser builds from ``html`` (scripting enabled)."""
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(html, scripting=True)


def nodes(tree: LexborHTMLParser) -> Iterator[LexborNode]:
    """Every element and comment of the document in document order (the content of a ``<template>``
    right after the ``<template>``). A comment's :attr:`tag` is ``-comment``."""
    root = tree.root
    if root is None:
        return
    document = root.parent
    start = document if document is not None else root
    yield from _walk(start)


def _walk(top: LexborNode) -> Iterator[LexborNode]:
    for node in top.traverse(include_text=False):
        tag = node.tag
        if tag is None or tag == "-document" or tag == "-doctype" or tag == "!doctype":
            continue
        yield node
        if tag == "template":
            for fragment in node.template_fragments():
                yield from _walk(fragment)


def elements(tree: LexborHTMLParser) -> Iterator[LexborNode]:
    """Every element of the document in document order (template contents included)."""
    return (n for n in nodes(tree) if n.tag != "-comment")


def name(node: LexborNode) -> str:
    """An element's name in lower case (SVG keeps camelCase names such as ``foreignObject``)."""
    return (node.tag or "").lower()


def attributes(node: LexborNode) -> dict[str, str]:
    """An element's attributes, names in lower case, values decoded ("" for a bare attribute)."""
    return {k.lower(): (v if v is not None else "") for k, v in node.attributes.items()}


# Closes a start tag left open in a double-quoted, a single-quoted or an unquoted value (a line break
# ends an unquoted one), or between attributes; text anywhere else.
CLOSE_TAG = "\n\">'>"


def line_of(html: str, found: Callable[[LexborHTMLParser], int], want: int) -> int:
    """The 1-based line where the ``want``-th thing ``found`` counts in a document first exists:
    the fewest first lines of ``html`` whose document holds ``want`` of them (binary search), each
    prefix with :data:`CLOSE_TAG` after it, so that a start tag counts on the line its last
    attribute is on, not where the tag ends."""
    lines = html.split("\n")
    lo, hi = 1, len(lines)
    while lo < hi:
        mid = (lo + hi) // 2
        if found(parse("\n".join(lines[:mid]) + CLOSE_TAG)) >= want:
            hi = mid
        else:
            lo = mid + 1
    return lo


def element_line(html: str, tree: LexborHTMLParser, target: LexborNode, attr: str | None = None) -> int:
    """The line of ``html`` where element ``target`` of ``tree`` (the document of ``html``) has its
    name and its attribute ``attr`` (all its attributes when None)."""
    name_ = name(target)
    own = attributes(target)
    key = sorted(own.items()) if attr is None else [(attr, own.get(attr, ""))]

    def same(n: LexborNode) -> bool:
        if name(n) != name_:
            return False
        a = attributes(n)
        return sorted(a.items()) == key if attr is None else a.get(attr) == key[0][1]

    matches = [n for n in elements(tree) if same(n)]
    want = next((i + 1 for i, n in enumerate(matches) if n.mem_id == target.mem_id), len(matches))
    return line_of(html, lambda t: sum(1 for n in elements(t) if same(n)), want)


# -- URLs


def url_values(element: str, attr: str, value: str, attrs: dict[str, str] | None = None) -> list[str]:
    """The URLs attribute ``attr`` of ``element`` holds: a ``srcset``'s candidates, a ``ping``'s or
    an ``archive``'s list, an animation's values when it animates a link; else the value."""
    if attr in ("srcset", "imagesrcset"):
        return srcset_urls(value)
    if attr in ("ping", "archive"):
        return [u for u in re.split(r"[\s,]+", value) if u]
    if attr in ANIMATED_VALUES and element in ANIMATION:
        target = (attrs or {}).get("attributename", "").strip().lower()
        if target in ("href", "xlink:href", "src"):
            return [u for u in value.split(";") if u.strip()]
        return []
    return [value] if attr in URL_ATTRIBUTES else []


def srcset_urls(value: str) -> list[str]:
    """The URLs of a ``srcset``, split as the HTML Standard's srcset parser splits candidates."""
    out, i, n = [], 0, len(value)
    while i < n:
        while i < n and (value[i] in " \t\n\f\r,"):
            i += 1
        start = i
        while i < n and value[i] not in " \t\n\f\r":
            i += 1
        url = value[start:i]
        if url.endswith(","):
            url = url.rstrip(",")
        elif url:  # descriptors: up to a comma outside parentheses
            depth = 0
            while i < n and (value[i] != "," or depth):
                depth += value[i] == "("
                depth -= value[i] == ")" and depth > 0
                i += 1
        if url:
            out.append(url)
    return out


def cleaned(url: str) -> str:
    """A URL as the URL parser starts reading it: leading and trailing C0 controls and spaces
    removed, tabs and line breaks anywhere removed."""
    return _TAB_NEWLINE.sub("", url.strip(_C0_EDGE))


def scheme(url: str) -> str | None:
    """The scheme of ``url`` in lower case, read leniently (every control character and space
    removed: ``java&#9;script:`` and ``\\x01javascript:`` are ``javascript``), or None."""
    m = _SCHEME.match(_CONTROL.sub("", url).lower())
    return m[1] if m else None


def other_host(url: str) -> bool:
    """``url`` (on a page of the site) names another host: it has a scheme other than ``data``,
    or starts with two slashes or backslashes (``//host``, ``\\\\host``, ``/\\host``)."""
    text = cleaned(url)
    if text[:2].replace("\\", "/") == "//":
        return True
    s = scheme(text)
    return s is not None and s not in ("data", "javascript", "vbscript", "mailto", "tel", "about")


# -- CSS


def css_urls(css: str, declarations: bool = False) -> list[tuple[int, str]]:
    """(line, URL) of every URL a style sheet (or, with ``declarations``, a ``style`` attribute)
    loads: ``url()`` however written, ``src()``, ``@import`` with a string, the strings of
    ``image-set()``/``image()``/``cross-fade()``."""
    import tinycss2

    tokens = (
        tinycss2.parse_blocks_contents(css, skip_comments=True, skip_whitespace=True)
        if declarations
        else tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
    )
    out: list[tuple[int, str]] = []
    _css_walk(tokens, out, False)
    return out


def _css_walk(items, out: list[tuple[int, str]], strings: bool) -> None:
    for t in items or ():
        kind = getattr(t, "type", None)
        if kind == "url":
            out.append((t.source_line, t.value))
        elif kind == "string" and strings:
            out.append((t.source_line, t.value))
        elif kind == "function":
            fn = t.lower_name
            if fn in ("url", "src"):
                _css_walk(t.arguments, out, True)
            else:
                _css_walk(t.arguments, out, _VENDOR.sub("", fn) in ("image-set", "image", "cross-fade"))
        elif kind == "at-rule":
            _css_walk(t.prelude, out, t.lower_at_keyword == "import")
            _css_walk(t.content, out, False)
        elif kind in ("qualified-rule",):
            _css_walk(t.prelude, out, False)
            _css_walk(t.content, out, False)
        elif kind == "declaration":
            _css_walk(t.value, out, False)
        elif kind in ("() block", "[] block", "{} block"):
            _css_walk(t.content, out, strings)
        elif kind == "error":
            continue


# -- SVG files
#
# A browser reads a file served as ``image/svg+xml`` (an ``.svg`` file of the site) as XML, not as
# HTML: namespace prefixes (``<h:script>`` in the XHTML namespace is a script), entities declared in
# a DOCTYPE and processing instructions (``<?xml-stylesheet?>``) all count. Opened on its own (a
# link, a new tab) the file is a document of the site's origin, so it is read here as the browser
# reads it (expat, namespace-aware) and held to static drawing: SVG elements of the list below, no
# DOCTYPE, no processing instruction, no event attribute, and URLs that stay in the file or the site.

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
XML_NS = "http://www.w3.org/XML/1998/namespace"
SVG_DRAWING = frozenset(
    "svg g defs symbol use path rect circle ellipse line polyline polygon text tspan textPath title desc "
    "linearGradient radialGradient stop clipPath mask pattern marker image style metadata switch a view "
    "filter feBlend feColorMatrix feComponentTransfer feComposite feConvolveMatrix feDiffuseLighting "
    "feDisplacementMap feDistantLight feDropShadow feFlood feFuncA feFuncB feFuncG feFuncR feGaussianBlur "
    "feImage feMerge feMergeNode feMorphology feOffset fePointLight feSpecularLighting feSpotLight feTile "
    "feTurbulence".split()
)
SVG_IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp)[;,]", re.I)
SVG_HINT = "an SVG file of the site may only draw: keep static SVG elements and links inside the site"


class _SvgStop(Exception):
    """Reading stops: what follows (a DOCTYPE's entities) cannot be read safely."""


def _svg_url(url: str, element: str, attr: str) -> str | None:
    """Why URL ``url`` of attribute ``attr`` of an SVG element is refused, or None: only a fragment
    of the file, a relative file of the site (a link, an image) or an image carried as data."""
    text = cleaned(url)
    if text.startswith("#"):
        return None
    if element in ("image", "feImage") and SVG_IMAGE_DATA.match(_CONTROL.sub("", text)):
        return None
    if element not in ("a", "image", "feImage"):
        return f"`{attr}` of a <{element}> names {text!r}, not a part of this file (`#id`)"
    if text[:1] in ("/", "\\") or scheme(text) is not None or text[:2].replace("\\", "/") == "//":
        return f"`{attr}` of a <{element}> names {text!r}, not a relative file of the site"
    return None


def _css_local(url: str) -> bool:
    return url.startswith("#") or (scheme(url) is None and not url.startswith(("/", "\\")))


def _svg_css(css: str, declarations: bool) -> list[tuple[int, str]]:
    """(line offset from the CSS's first line, why) for each URL and ``@import`` of CSS in an SVG file."""
    import tinycss2

    out = [
        (line - 1, f"the CSS loads {url!r}, which is not a part of this file or the site")
        for line, url in css_urls(css, declarations)
        if other_host(url) or not _css_local(cleaned(url))
    ]
    if not declarations:
        for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
            if getattr(rule, "type", None) == "at-rule" and rule.lower_at_keyword == "import":
                out.append((rule.source_line - 1, "the CSS has an `@import`, which loads another style sheet"))
    return out


def _svg_attribute(local: str, key: str, value: str) -> list[str]:
    """Why attribute ``key`` (``namespace name`` as expat writes it) of SVG element ``local`` is
    refused: a base, an event, a URL outside the file or the site, CSS that loads something."""
    ans, _, name = key.rpartition(" ")
    shown = f"xlink:{name}" if ans == XLINK_NS else name if not ans else key
    if ans == XML_NS and name == "base":
        return [f"an `xml:base` on a <{local}>, which makes its relative URLs point elsewhere"]
    if name.lower().startswith("on"):
        return [f"an event attribute `{shown}` on a <{local}>, which runs code in the reader's browser"]
    if name == "href" and ans in ("", XLINK_NS):
        why = _svg_url(value, local, shown)
        return [why] if why is not None else []
    if name == "style" and not ans:
        return [f"{why} (a `style` on a <{local}>)" for _, why in _svg_css(value, True)]
    if "(" in value and not ans:  # a presentation attribute: fill="url(#g)"
        return [f"{why} (`{name}` of a <{local}>)" for _, why in _svg_css(f"x:{value}", True)]
    return []


class _SvgReader:
    """The handlers of one expat parse of an SVG file (:func:`svg_file_problems`)."""

    def __init__(self, parser) -> None:
        self.parser = parser
        self.out: list[tuple[int | None, str]] = []
        self.styles: list[tuple[int, list[str]]] = []  # open <style> elements: their line, their text
        parser.StartDoctypeDeclHandler = self.doctype
        parser.EntityDeclHandler = self.entity
        parser.ProcessingInstructionHandler = self.instruction
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CharacterDataHandler = self.chars

    def refuse(self, why: str) -> None:
        self.out.append((self.parser.CurrentLineNumber, why))

    def doctype(self, name, *_rest) -> None:
        self.refuse("a DOCTYPE, whose entities can put any markup (a script) into the file")
        raise _SvgStop

    def entity(self, name, *_rest) -> None:  # declared without a DOCTYPE handler seeing it
        self.refuse(f"an entity declaration `{name}`, which can put any markup into the file")
        raise _SvgStop

    def instruction(self, target, _data) -> None:
        self.refuse(f"a processing instruction `<?{target} …?>`, which can load a style sheet or transform the file")

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        ns, _, local = tag.rpartition(" ")
        if self.styles:
            self.styles[-1][1].append("\0")  # markup inside a <style>: not CSS
        if ns != SVG_NS or local not in SVG_DRAWING:
            where = f" in the namespace {ns}" if ns and ns != SVG_NS else " (no namespace)" if not ns else ""
            self.refuse(f"a <{local}> element{where}, which is not static SVG drawing")
            return
        for key, value in attrs.items():
            for why in _svg_attribute(local, key, value):
                self.refuse(why)
        if local == "style":
            self.styles.append((self.parser.CurrentLineNumber, []))

    def end(self, tag: str) -> None:
        if tag == f"{SVG_NS} style" and self.styles:
            line, parts = self.styles.pop()
            text = "".join(parts)
            if "\0" in text:
                self.out.append((line, "a <style> element holding markup, not only CSS"))
            for offset, why in _svg_css(text, False):
                self.out.append((line + offset, why))

    def chars(self, text: str) -> None:
        if self.styles:
            self.styles[-1][1].append(text)


def svg_file_problems(data: bytes) -> list[tuple[int | None, str]]:
    """(line, why) for everything of an SVG file (its bytes) that is not static drawing, read as a
    browser reads ``image/svg+xml``: XML with namespaces (see the section's comment)."""
    from xml.parsers import expat

    parser = expat.ParserCreate(namespace_separator=" ")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    reader = _SvgReader(parser)
    out = reader.out
    try:
        parser.Parse(data, True)
    except _SvgStop:
        pass
    except expat.ExpatError as exc:
        out.append((exc.lineno, f"not well-formed XML ({expat.ErrorString(exc.code)}): a browser shows an error"))
    except (ValueError, LookupError) as exc:  # a declared encoding expat cannot read (utf-7, an unknown name)
        out.append((1, f"an encoding the check cannot read ({exc}); save the file as UTF-8"))
    return sorted(out, key=lambda item: item[0] or 0)
