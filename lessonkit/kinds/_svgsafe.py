"""An SVG image an experiment recorded (``record.svg``), made safe and deterministic for a page.

:func:`clean` reads the text as XML (expat, namespace-aware, as a browser reads an ``.svg``
file) and writes it again, keeping only static drawing:

- refused, with the line of the SVG text (:class:`Refused`): markup that is not well-formed XML,
  a DOCTYPE with an internal subset, any entity declaration or reference to an undeclared
  entity, a processing instruction, an element outside the SVG namespace or outside the drawing
  list of :data:`lessonkit.util.markup.SVG_DRAWING` (outside a dropped element), ``xml:base``,
  CSS that loads anything (``url()`` other than ``#id``), an ``id`` that is not a plain name, a
  root other than ``<svg>``, more than :data:`MAX_BYTES` bytes, :data:`MAX_ELEMENTS` elements
  or :data:`MAX_DEPTH` levels;
- dropped: a DOCTYPE without internal subset (what plotting libraries write), comments,
  ``<metadata>``, ``<script>``, ``<foreignObject>`` and ``<style>`` elements with all they hold,
  event attributes (``on…``), references out of the image (``href`` other than ``#id``, except
  an ``<image>``'s ``data:image/…``), and every attribute not on :data:`ATTRIBUTES` (``class``,
  namespaced editor attributes, …);
- rewritten: ``style="a: b; …"`` becomes presentation attributes where the property is one
  (:data:`PRESENTATION`; the page's policy forbids style attributes), the rest is dropped;
  ``xlink:href`` becomes ``href``; every ``id`` is prefixed with the block's anchor, and
  ``url(#x)`` and ``href="#x"`` with it, so that two images on one page never share an id.

The result is the same text for the same input: attributes in a fixed order, text escaped.
"""

from __future__ import annotations

import re
from html import escape

from lessonkit.util import markup

MAX_BYTES = 2 * 1024 * 1024
MAX_ELEMENTS = 50_000
MAX_DEPTH = 64

SVG_NS = markup.SVG_NS
XLINK_NS = markup.XLINK_NS
XML_NS = markup.XML_NS
DROPPED = frozenset({"metadata", "script", "foreignObject", "style"})  # with everything inside
DRAWING = markup.SVG_DRAWING - DROPPED

# CSS properties that are SVG presentation attributes (a `style` declaration of one becomes it).
PRESENTATION = frozenset(
    "alignment-baseline baseline-shift clip clip-path clip-rule color color-interpolation "
    "color-interpolation-filters cursor direction display dominant-baseline fill fill-opacity fill-rule "
    "filter flood-color flood-opacity font-family font-size font-size-adjust font-stretch font-style "
    "font-variant font-weight image-rendering letter-spacing lighting-color marker-end marker-mid "
    "marker-start mask opacity overflow paint-order pointer-events shape-rendering stop-color stop-opacity "
    "stroke stroke-dasharray stroke-dashoffset stroke-linecap stroke-linejoin stroke-miterlimit "
    "stroke-opacity stroke-width text-anchor text-decoration text-rendering unicode-bidi vector-effect "
    "visibility word-spacing writing-mode".split()
)
# Geometry, structure and filter attributes kept as they are (with the presentation attributes,
# `id` and a local `href`).
GEOMETRY = frozenset(
    "x y x1 y1 x2 y2 cx cy r rx ry fx fy fr width height d points viewBox preserveAspectRatio transform "
    "gradientTransform gradientUnits patternTransform patternUnits patternContentUnits clipPathUnits "
    "maskUnits maskContentUnits filterUnits primitiveUnits offset spreadMethod pathLength dx dy rotate "
    "textLength lengthAdjust startOffset method spacing side refX refY markerWidth markerHeight markerUnits "
    "orient in in2 result stdDeviation mode operator k1 k2 k3 k4 values type tableValues slope intercept "
    "amplitude exponent baseFrequency numOctaves seed stitchTiles kernelMatrix order divisor bias targetX "
    "targetY edgeMode preserveAlpha surfaceScale diffuseConstant specularConstant specularExponent "
    "kernelUnitLength azimuth elevation z pointsAtX pointsAtY pointsAtZ limitingConeAngle scale "
    "xChannelSelector yChannelSelector radius requiredExtensions systemLanguage".split()
)
ATTRIBUTES = PRESENTATION | GEOMETRY | {"id", "href"}
ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,200}")
LOCAL_URL = re.compile(r"url\(\s*(['\"]?)#([^'\")\s]+)\1\s*\)")
ROOT_KEPT = ("viewBox", "width", "height", "preserveAspectRatio")


class Refused(Exception):
    """Why the SVG cannot be shown: ``line`` (of the SVG text, 1-based) and ``why``."""

    def __init__(self, line: int, why: str):
        super().__init__(f"line {line}: {why}")
        self.line, self.why = line, why


class _Stop(Exception):
    pass


class _Node:
    __slots__ = ("name", "attrs", "children", "line")

    def __init__(self, name: str, attrs: dict[str, str], line: int):
        self.name, self.attrs, self.line = name, attrs, line
        self.children: list[_Node | str] = []


def clean(text: str, prefix: str, title: str) -> str:
    """The SVG ``text`` as inline markup for a page (see the module docstring); ``prefix`` starts
    every id (the block's anchor), ``title`` is the image's accessible name. Raises :class:`Refused`."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: no text a file can hold
        raise Refused(1, f"the SVG holds a character that is not text ({exc.reason})") from None
    if len(data) > MAX_BYTES:
        raise Refused(1, f"the SVG is {len(data)} bytes, more than {MAX_BYTES}: record a smaller image")
    return _write(_Reader(prefix).read(data), title)


class _Reader:
    """One pass of expat over an SVG: the tree of what it keeps, or the first :class:`Refused`."""

    def __init__(self, prefix: str):
        from xml.parsers import expat

        self.prefix = prefix
        self.parser = p = expat.ParserCreate(namespace_separator=" ")
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self.refused: list[Refused] = []
        self.stack: list[_Node] = []
        self.root: list[_Node] = []
        self.skip = 0  # depth inside a dropped element
        self.count = 0
        p.StartDoctypeDeclHandler = self.doctype
        p.EntityDeclHandler = self.entity
        p.ProcessingInstructionHandler = self.instruction
        p.SkippedEntityHandler = self.skipped
        p.StartElementHandler = self.start
        p.EndElementHandler = self.end
        p.CharacterDataHandler = self.chars

    def read(self, data: bytes) -> _Node:
        from xml.parsers import expat

        try:
            self.parser.Parse(data, True)
        except _Stop:
            pass
        except expat.ExpatError as exc:
            raise Refused(exc.lineno, f"not well-formed XML ({expat.ErrorString(exc.code)})") from None
        except RecursionError:
            raise Refused(1, f"elements nested more than {MAX_DEPTH} deep") from None
        if self.refused:
            raise self.refused[0]
        if not self.root:
            raise Refused(1, "no <svg> element")
        return self.root[0]

    def refuse(self, why: str) -> None:
        self.refused.append(Refused(self.parser.CurrentLineNumber, why))
        raise _Stop

    def doctype(self, name, sysid, pubid, has_internal_subset) -> None:
        if has_internal_subset:
            self.refuse("a DOCTYPE with declarations of its own, whose entities can put any markup into the image")

    def entity(self, name, *_rest) -> None:
        self.refuse(f"an entity declaration `{name}`, which can put any markup into the image")

    def skipped(self, name, _is_parameter) -> None:  # a reference to an entity of a DTD never read
        self.refuse(f"a reference to the entity `{name}`, which the image does not declare")

    def instruction(self, target, _data) -> None:
        self.refuse(f"a processing instruction `<?{target} …?>`, which can load a style sheet")

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        ns, _, local = tag.rpartition(" ")
        self.count += 1
        if self.count > MAX_ELEMENTS:
            self.refuse(f"more than {MAX_ELEMENTS} elements: record a smaller image")
        if self.skip:
            self.skip += 1
            return
        if ns == SVG_NS and (local in DROPPED or local == "foreignObject"):
            self.skip = 1
            return
        self._check_element(ns, local)
        node = _Node(local, _attributes(local, attrs, self.prefix, self.refuse), self.parser.CurrentLineNumber)
        (self.stack[-1].children if self.stack else self.root).append(node)
        self.stack.append(node)

    def _check_element(self, ns: str, local: str) -> None:
        if ns != SVG_NS or local not in DRAWING:
            where = f" in the namespace {ns}" if ns else " (no namespace)"
            self.refuse(f"a <{local}> element{where}, which is not static SVG drawing")
        if len(self.stack) >= MAX_DEPTH:
            self.refuse(f"elements nested more than {MAX_DEPTH} deep")
        if not self.stack and (self.root or local != "svg"):
            self.refuse(f"a <{local}> at the top: an image is one <svg> element")

    def end(self, tag: str) -> None:
        if self.skip:
            self.skip -= 1
            return
        self.stack.pop()

    def chars(self, data: str) -> None:
        if self.stack and not self.skip:
            self.stack[-1].children.append(data)


def _local_ref(value: str) -> str | None:
    """The id a ``#id`` reference names, or None."""
    v = markup.cleaned(value)
    return v[1:] if v.startswith("#") and len(v) > 1 else None


def _urls(value: str, prefix: str) -> str:
    return LOCAL_URL.sub(lambda m: f"url(#{prefix}-{m[2]})", value)


def _attributes(element: str, attrs: dict[str, str], prefix: str, refuse) -> dict[str, str]:
    out: dict[str, str] = {}
    styled: dict[str, str] = {}
    for key, value in attrs.items():
        ns, _, name = key.rpartition(" ")
        if ns == XML_NS and name == "base":
            refuse(f"an `xml:base` on a <{element}>, which makes its references point elsewhere")
        if name.lower().startswith("on"):
            continue  # an event attribute: dropped
        if name == "href" and ns in ("", XLINK_NS):
            ref = _local_ref(value)
            if ref is not None:
                out["href"] = f"#{prefix}-{_id(ref, element, refuse)}"
            elif element == "image" and markup.SVG_IMAGE_DATA.match(markup.cleaned(value)):
                out["href"] = markup.cleaned(value)
            continue  # a reference out of the image: dropped
        if ns:
            continue  # another namespace's attribute (an editor's): dropped
        if name == "style":
            styled.update(_declarations(value, element, refuse))
            continue
        if name == "id":
            out["id"] = f"{prefix}-{_id(value, element, refuse)}"
            continue
        if name not in ATTRIBUTES:
            continue
        out[name] = _checked_value(value, name, element, prefix, refuse)
    for name, value in styled.items():  # a style declaration wins over the attribute, as in CSS
        out[name] = _checked_value(value, name, element, prefix, refuse)
    return out


def _id(value: str, element: str, refuse) -> str:
    if not ID.fullmatch(value):
        refuse(f"the id {value[:40]!r} of a <{element}> is not a plain name (letters, digits, _ . : -)")
    return value


def _checked_value(value: str, name: str, element: str, prefix: str, refuse) -> str:
    if "(" in value or "\\" in value:
        for _, url in markup.css_urls(f"x:{value}", True):
            if _local_ref(url) is None:
                refuse(f"`{name}` of a <{element}> loads {url[:60]!r}, which is not a part of the image (`#id`)")
            else:
                _id(_local_ref(url) or "", element, refuse)
        value = _urls(value, prefix)
    return value


def _declarations(css: str, element: str, refuse) -> dict[str, str]:
    """The presentation attributes of a ``style`` attribute's declarations (the rest dropped)."""
    import tinycss2

    out: dict[str, str] = {}
    for decl in tinycss2.parse_blocks_contents(css, skip_comments=True, skip_whitespace=True):
        if getattr(decl, "type", None) != "declaration" or decl.lower_name not in PRESENTATION:
            continue
        value = tinycss2.serialize(decl.value).strip()
        if value:
            out[decl.lower_name] = value
    return out


def _write(root: _Node, title: str) -> str:
    attrs = {k: root.attrs[k] for k in ROOT_KEPT if k in root.attrs}
    head = "".join(f' {k}="{escape(v)}"' for k, v in attrs.items())
    rest = {k: v for k, v in root.attrs.items() if k not in ROOT_KEPT}
    head += "".join(f' {k}="{escape(v)}"' for k, v in sorted(rest.items()))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lk-fig"{head} role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title, quote=False)}</title>"
    ]
    for child in root.children:
        if not (isinstance(child, _Node) and child.name == "title"):  # the block's Title names the image
            _write_node(child, out)
    out.append("</svg>")
    return "".join(out)


def _write_node(node: _Node | str, out: list[str]) -> None:
    if isinstance(node, str):
        out.append(escape(node, quote=False))
        return
    attrs = "".join(f' {k}="{escape(v)}"' for k, v in sorted(node.attrs.items()))
    if not node.children:
        out.append(f"<{node.name}{attrs}/>")
        return
    out.append(f"<{node.name}{attrs}>")
    for child in node.children:
        _write_node(child, out)
    out.append(f"</{node.name}>")
