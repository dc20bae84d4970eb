"""Active content in a page an author writes: raw HTML or Markdown that runs code, embeds another
document or restyles the page, read as a browser reads it (:mod:`lessonkit.util.markup`). Refused
with the code ENGINE_HTML, as an imitation of the engine's output is: the build and verify report both."""

from __future__ import annotations

import re

from lessonkit.errors import Problem
from lessonkit.pipeline.fences import blank_code, code_spans
from lessonkit.util import markup

ENGINE_HTML = "engine-html"  # Problem.code of raw HTML that imitates the engine's output

# The elements a page may not contain, and why.
ACTIVE_ELEMENTS = {
    "script": "runs code in the reader's browser",
    "style": "restyles the page (it can hide text or draw other text over a block)",
    "link": "loads a stylesheet or another resource into the page",
    "base": "changes where every link and resource of the page points",
    "meta": "can reload or redirect the page",
    **dict.fromkeys(
        ("iframe", "frame", "frameset", "object", "embed", "applet", "portal"),
        "embeds another document in the page (nothing checks what it shows)",
    ),
}
# URL schemes that run code (javascript, vbscript) or carry a whole document or image (data).
RUNS = ("javascript", "vbscript")
URL_ATTRS = frozenset(
    "href src srcset action formaction data poster background xlink:href codebase lowsrc dynsrc ping manifest".split()
)
ACTIVE_HINT = "remove it: a page shows code, output and figures through annotation blocks, which the build checks"
# A Markdown link or image destination `](url` and a reference definition `[id]: url`.
_MD_URL = re.compile(r"\]\([ \t]*<?(?P<inline>[^\s)>]+)|^[ \t]*(?:>[ \t]?)*[ \t]*\[[^\]]+\]:[ \t]*<?(?P<ref>\S+)")
# An attribute list `{: … }` (attr_list reads `{ … }` too) and a `key=value` in it.
_ATTR_LIST = re.compile(r"\{:?([^{}\n]*)\}")
_NAME = re.compile(r"[a-z_:][-a-z0-9_:.]*")  # an attribute name attr_list writes as it is
_LIST_PAIR = re.compile(r"""(?:^|\s)([^\s=#.{}'"]+)[ \t]*=[ \t]*(?:"([^"]*)"|'([^']*)'|(\S+))""")


def _blank_paragraph_code(rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``rows`` (consecutive indices are one paragraph) with the code spans that go on from one
    line to the next blanked out (the line breaks kept)."""
    out, k = [], 0
    while k < len(rows):
        j = k + 1
        while j < len(rows) and rows[j][0] == rows[j - 1][0] + 1:
            j += 1
        text = "\n".join(line for _, line in rows[k:j])
        if "`" in text:
            text = _blank_spans(text)
        out += list(zip([i for i, _ in rows[k:j]], text.split("\n"), strict=True))
        k = j
    return out


def _blank_spans(text: str) -> str:
    for a, b in reversed(code_spans(text)):
        text = text[:a] + re.sub(r"[^\n]", " ", text[a:b]) + text[b:]
    return text


# The elements raw HTML in a lesson may make: text-level and structural HTML (the tree builder's own
# html, head and body included), and names no standard gives (`grad_of_<lambda>`: an unknown element,
# inert). Every other element of HTML, SVG and MathML (a form, a frame, media, SVG or MathML written by
# hand, an element that changes how the rest of the page is parsed) is refused: the engine draws
# figures, formulas and diagrams itself.
LESSON_ELEMENTS = frozenset(
    "html head body a abbr address article aside b bdi bdo blockquote br caption cite code col colgroup dd del "
    "details dfn div dl dt em figcaption figure footer h1 h2 h3 h4 h5 h6 header hr i img ins kbd li mark ol p "
    "pre q rp rt ruby s samp section small span strong sub summary sup table tbody td tfoot th thead time tr u "
    "ul var wbr".split()
)
STANDARD_ELEMENTS = LESSON_ELEMENTS | frozenset(
    "area audio base button canvas data datalist dialog embed fieldset form hgroup iframe input label legend link "
    "main map menu meta meter nav noscript object optgroup option output picture portal progress script search "
    "select slot source style template textarea title track video acronym applet basefont bgsound big blink "
    "center dir font frame frameset image isindex keygen listing marquee menuitem multicol nextid nobr noembed "
    "noframes param plaintext rb rtc spacer strike tt xmp svg math".split()
)
# The attributes they may carry: on any of them, and on some.
GLOBAL_ATTRIBUTES = frozenset("id class title lang dir role markdown".split())
LESSON_ATTRIBUTES = {
    "a": frozenset("href name rel target hreflang".split()),
    "img": frozenset("src alt width height loading decoding".split()),
    "ol": frozenset("start reversed type".split()),
    "li": frozenset({"value"}),
    "td": frozenset("colspan rowspan align".split()),
    "th": frozenset("colspan rowspan align scope abbr".split()),
    "col": frozenset({"span"}),
    "colgroup": frozenset({"span"}),
    "details": frozenset({"open"}),
    "time": frozenset({"datetime"}),
    "blockquote": frozenset({"cite"}),
    "q": frozenset({"cite"}),
    "del": frozenset("cite datetime".split()),
    "ins": frozenset("cite datetime".split()),
}


# What an attribute list (`{: … }`, whose element Markdown chooses) may set: what raw HTML may carry on
# some element of a lesson.
LIST_ATTRIBUTES = GLOBAL_ATTRIBUTES | frozenset(a for names in LESSON_ATTRIBUTES.values() for a in names)
# Classes the theme and the highlighter style as boxes of their own (an admonition, a code block, its
# line numbers, content tabs): raw HTML or an attribute list with one draws, beside the engine's blocks,
# a box a reader takes for one Markdown or the engine wrote, holding text nothing checks. Markdown
# writes them (`!!! note`, a fence, `=== "tab"`).
THEME_BOXES = ("admonition", "highlight", "codehilite", "linenos", "linenodiv", "tabbed-", "md-typeset")


def theme_box(cls: str) -> bool:
    """``cls`` is a class of :data:`THEME_BOXES` (or starts with one)."""
    return cls.startswith(THEME_BOXES)


def _scheme(value: str, attr: str) -> str | None:
    """The scheme of a URL that runs code (any attribute) or carries a document (a URL
    attribute), as a browser reads it (:func:`lessonkit.util.markup.scheme`: spaces and control
    characters gone; character references are decoded by the caller or the HTML parser)."""
    from html import unescape

    scheme = markup.scheme(unescape(value) if "&" in value else value)
    if scheme in RUNS or (scheme == "data" and attr in URL_ATTRS):
        return scheme
    return None


# Ids the theme finds elements by: Material's all start with `__` (`__config`, the JSON its scripts
# read, naming the search worker's file; `__code_<id>`, the copy buttons' targets; `__drawer`,
# `__search`, `__palette_0`, …). An element of a page with such an id comes before the theme's own
# and is the one its scripts find.
RESERVED_ID = "__"


def reserved_id(value: str) -> bool:
    """An id the theme reserves (see :data:`RESERVED_ID`), as a browser reads it (spaces trimmed)."""
    return value.strip(" \t\n\f\r").startswith(RESERVED_ID)


def _attribute_problem(name: str, value: str, element: str | None = None, attrs: dict | None = None) -> str | None:
    """Why an attribute written in a page is refused, or None (``element``: the element it is on,
    None for an attribute list, whose element Markdown chooses)."""
    if name == "id" and reserved_id(value):
        return (
            f"the id `{value.strip()}`, which the theme's scripts find elements by (its configuration, "
            "the copy buttons' targets)"
        )
    if name.startswith("on") and len(name) > 2:
        return f"an event attribute `{name}`, which runs code in the reader's browser"
    if name == "style":
        return "a `style` attribute, which can hide text or draw other text over a block"
    if name == "srcdoc":
        return "a `srcdoc` attribute, which embeds another document in the page"
    if name == "class":
        box = next((c for c in value.split() if theme_box(c)), None)
        if box is not None:
            return f"the theme's class `{box}`, {BOX}"
    urls = markup.url_values(element or "", name, value, attrs) if element is not None else [value]
    for url in urls or [value]:
        scheme = _scheme(url, name if urls else "")
        if scheme is not None:
            what = "runs code in the reader's browser" if scheme in RUNS else "shows content that nothing checks"
            return f"a `{scheme}:` URL in `{name}`, which {what}"
    if element is not None and name not in markup.FOLLOWED_ONLY and name not in markup.NAVIGATION.get(element, ()):
        far = next((u for u in urls if markup.other_host(u)), None)
        if far is not None:
            return f"a URL of another host in `{name}` ({far.strip()}), which the page would load"
    elif element is not None and name == "ping" and any(markup.other_host(u) for u in urls):
        return "a `ping` URL of another host, which the reader's click would send a request to"
    if element is not None and name not in GLOBAL_ATTRIBUTES and name not in LESSON_ATTRIBUTES.get(element, ()):
        if not name.startswith("aria-"):
            return f"an attribute `{name}` on a <{element}>, {NOT_USED}"
    return None


NOT_USED = "which lessons do not use (text and structure only)"
BOX = "which draws a box like those Markdown and the engine write (text in it nothing checks)"


def _element_problem(name: str) -> str | None:
    if name in ACTIVE_ELEMENTS:
        return f"raw HTML has a <{name}> element, which {ACTIVE_ELEMENTS[name]}"
    if name in STANDARD_ELEMENTS and name not in LESSON_ELEMENTS:
        return f"raw HTML has a <{name}> element, {NOT_USED}"
    return None


# Markdown writes markup after the prose (`</p>`): a tag the prose leaves open is closed there, with
# its attributes. Read as if it were (markup.CLOSE_TAG).
CLOSE_TAG = markup.CLOSE_TAG


def html_problems(text: str) -> list[tuple[int, str]]:
    """(1-based line of ``text``, what is wrong) for every element of the document a browser
    builds from ``text`` (:mod:`lessonkit.util.markup`) that a lesson may not carry, or whose
    attributes it may not carry; the first problem of each element."""
    tree = markup.parse(text + CLOSE_TAG)
    found = []
    for node in markup.elements(tree):
        name = markup.name(node)
        why, where = _element_problem(name), None
        if why is None and node.attributes:
            attrs = markup.attributes(node)
            for attr, value in attrs.items():
                what = _attribute_problem(attr, value, name, attrs)
                if what is not None:
                    why, where = f"raw HTML has {what}", attr
                    break
        if why is not None:
            found.append((node, why, where))
    return [(markup.element_line(text, tree, node, attr), why) for node, why, attr in found]


def active_html(prose: list[tuple[int, str]], path: str, offset: int = 0) -> list[Problem]:
    """Problems for active content in the prose of a page (``prose``: (0-based index, text) of the
    lines Markdown shows as prose): the elements of :data:`ACTIVE_ELEMENTS`, event attributes,
    ``style`` attributes and URLs that run code or carry a document, in raw HTML (a tag may span
    lines), attribute lists and Markdown links. One problem per line; code spans are text."""
    if not any("<" in line or "{" in line or "]" in line for _, line in prose):
        return []
    rows = [(i, blank_code(line)) for i, line in prose]
    if any("`" in line for _, line in rows):  # a code span may go on over the lines of its paragraph
        rows = _blank_paragraph_code(rows)
    found: dict[int, str] = {}  # 0-based index -> what is wrong there (the first one)
    text = "\n".join(line for _, line in rows)
    if "<" in text or "&" in text:
        found_html = html_problems(text)  # on a line with several, what runs or embeds is named first
        for at, message in sorted(found_html, key=lambda p: p[1].endswith(NOT_USED)):
            found.setdefault(rows[at - 1][0], message)
    for i, line in rows:
        for m in _MD_URL.finditer(line) if "]" in line else ():
            url = m["inline"] or m["ref"]
            scheme = _scheme(url, "href")
            if scheme is not None:
                what = "runs code in the reader's browser" if scheme in RUNS else "shows content that nothing checks"
                found.setdefault(i, f"a Markdown link or image to a `{scheme}:` URL, which {what}")
        for m in _ATTR_LIST.finditer(line) if "{" in line and ("=" in line or "#" in line or "." in line) else ():
            why = _attr_list_problem(line, m)
            if why is not None:
                found.setdefault(i, f"an attribute list `{{: … }}` sets {why}")
    return [Problem(msg, path, offset + i + 1, ACTIVE_HINT, code=ENGINE_HTML) for i, msg in sorted(found.items())]


def _attr_list_problem(line: str, m: re.Match) -> str | None:
    """What attribute list ``m`` of ``line`` sets that a lesson may not: what raw HTML may not carry
    (an event, a style, a URL that runs code, a reserved id, a theme box's class) and, where it is an
    attribute list for certain (``{:``, after a link or image, or ending a line after a space), an
    attribute outside :data:`LIST_ATTRIBUTES` (`_{i=1}` in a formula is no attribute list)."""
    sure = (
        not m[1].lstrip().startswith("@")
        and (  # `{@name = value}`: a checked value, the engine's
            m[0].startswith("{:")
            or line[: m.start()].endswith(")")
            or (not line[m.end() :].strip() and line[: m.start()].endswith((" ", "\t")))
        )
    )
    for token in m[1].split():
        if token.startswith("#") and reserved_id(token[1:]):
            return _attribute_problem("id", token[1:])
        if token.startswith(".") and theme_box(token[1:]):
            return _attribute_problem("class", token[1:])
    for pair in _LIST_PAIR.finditer(m[1]):
        name = pair[1].lower()
        value = next((v for v in pair.groups()[1:] if v is not None), "")
        why = _attribute_problem(name, value)
        if why is not None:
            return why
        if sure and _NAME.fullmatch(name) and name not in LIST_ATTRIBUTES and not name.startswith("aria-"):
            return f"an attribute `{name}`, {NOT_USED}"
    return None


# -- what Markdown made: the rendered HTML of an author's text (a page's content, a block's caption
# or table cell), read as a browser reads it. Text no check of the source takes for a tag can come
# out of Markdown as a real element (`<b<style>`: one tag `b<style` to the HTML parser; Markdown
# escapes `<b` and passes `<style>` on).
RENDERED_ACTIVE = frozenset("script iframe frame frameset object embed applet base meta link portal".split())
_RASTER = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,", re.I)


def rendered_active(html: str, styles: bool = False) -> list[tuple[str, str]]:
    """What ``html`` (Markdown's output for an author's text) holds that no lesson's content may: an
    element that runs, loads or embeds (and, with ``styles``, a ``<style>`` or a ``style``
    attribute), an event attribute, a URL that runs code or carries a document (a raster image an
    SVG ``<image>`` draws excepted). Per finding, in document order: (what it is, the text that
    writes it in the source: ``<name``, the attribute's name or ``scheme:``)."""
    out: list[tuple[str, str]] = []
    for node in markup.elements(markup.parse(html)):
        name, attrs = markup.name(node), markup.attributes(node)
        if name in RENDERED_ACTIVE or (styles and name == "style"):
            out.append((f"a <{name}> element", f"<{name}"))
        for attr, value in attrs.items():
            if attr.startswith("on") and len(attr) > 2:
                out.append((f"an event attribute `{attr}` on a <{name}>", attr))
            elif styles and attr == "style":
                out.append((f"a `style` attribute on a <{name}>", "style"))
            elif attr in markup.URL_ATTRIBUTES:
                for url in markup.url_values(name, attr, value, attrs):
                    scheme = markup.scheme(url)
                    if scheme == "data" and name == "image" and _RASTER.match(markup.cleaned(url)):
                        continue
                    if scheme in ("javascript", "vbscript", "data"):
                        out.append((f"a `{scheme}:` URL in `{attr}` of a <{name}>", f"{scheme}:"))
                        break
    return out
