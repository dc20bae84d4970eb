"""The shipped math font, cut down to the glyphs the site's formulas use.

``lessonkit/assets/fonts/STIXTwoMath-Regular.woff2`` (STIX Two Math, OFL 1.1, no reserved font
name) holds about 6,000 glyphs in 403 KB; a course's formulas use a hundred or two characters.
Every page with a formula makes the browser fetch the font, the home page included, so the site
ships a subset instead (fontTools' subsetter, as WOFF2), made from the characters of the MathML
of every formula the site's pages hold:

* the text of every MathML element (``<mi>``, ``<mo>``, ``<mn>``, ``<mtext>`` …), and the
  radical sign where a formula has ``<msqrt>`` or ``<mroot>`` (the browser draws it from the font);
* with them, every glyph the font's ``MATH`` table reaches from those characters (the larger and
  stretched forms of brackets, braces, bars and big operators) and its layout features, so a
  formula is drawn exactly as with the whole font;
* all of the font's names and its ``MATH`` constants (spacing, script sizes) unchanged.

The subset is a pure function of the font's bytes, the characters and fontTools' version
(fontTools keeps the font's own timestamp): two builds write the same bytes. It is kept in the
build cache (``mathfont/``) under the digest of those three.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from lessonkit.pipeline import mathml
from lessonkit.util.store import Store, digest

FONT = "assets/fonts/STIXTwoMath-Regular.woff2"  # the site path; lessonkit/assets/… is its source
RADICAL = "\u221a"  # drawn by the browser for <msqrt> and <mroot>


@lru_cache(maxsize=1)
def _fonttools() -> str:
    from importlib.metadata import version

    return version("fonttools")


def formulas(text: str) -> list[tuple[str, str]]:
    """The formulas (``(tex, display)``) a page's Markdown holds, found as the page's rendering
    and :func:`lessonkit.pipeline.mathml.prewarm` find them."""
    out = [(tex, "block") for tex in mathml.BLOCK_TEX.findall(text)]
    out += [(m.group("tex"), "inline") for m in re.finditer(mathml.INLINE, mathml.BLOCK_TEX.sub("", text))]
    return out


def characters(markup: Iterable[str]) -> str:
    """The characters the browser draws with the math font for the MathML ``markup``: the text of
    its elements (white space aside), and the radical sign where there is a root. Sorted."""
    from lessonkit.util.markup import parse

    tree = parse("<body>" + "".join(markup) + "</body>")
    root = tree.body
    found = {ch for ch in (root.text(deep=True) if root is not None else "") if not ch.isspace()}
    if tree.css_first("msqrt, mroot") is not None:
        found.add(RADICAL)
    for mi in tree.css("mi"):
        text = mi.text(deep=True).strip()
        if len(text) == 1 and (mi.attributes.get("mathvariant") or "").strip().lower() != "normal":
            found.add(italic(text))
    return "".join(sorted(found))


# MathML Core's automatic italic (`text-transform: math-auto`): the browser draws an <mi> of one
# character as the character's Mathematical Italic form, which the font must hold.
_ITALIC = {
    **{chr(0x41 + i): chr(0x1D434 + i) for i in range(26)},
    **{chr(0x61 + i): chr(0x1D44E + i) for i in range(26)},
    "h": "\u210e",
    "\u0131": "\U0001d6a4",
    "\u0237": "\U0001d6a5",
    **{chr(0x391 + i): chr(0x1D6E2 + i) for i in range(25) if i != 0x11},
    "\u03f4": "\U0001d6f3",
    "\u2207": "\U0001d6fb",
    **{chr(0x3B1 + i): chr(0x1D6FC + i) for i in range(25)},
    "\u2202": "\U0001d715",
    "\u03f5": "\U0001d716",
    "\u03d1": "\U0001d717",
    "\u03f0": "\U0001d718",
    "\u03d5": "\U0001d719",
    "\u03f1": "\U0001d71a",
    "\u03d6": "\U0001d71b",
}


def italic(ch: str) -> str:
    """The character the browser draws for an <mi> holding only ``ch``."""
    return _ITALIC.get(ch, ch)


def site_characters(texts: Iterable[str], store: Store | None) -> str:
    """The characters of every formula of the pages ``texts`` (Markdown), converted as the pages
    convert them (``store``: the converted formulas' cache). A ``$`` that is no formula and does
    not convert adds nothing (the page reports a formula that does not convert, at its line)."""
    markup: list[str] = []
    for text in texts:
        for tex, display in formulas(text):
            try:
                html = mathml.to_mathml(tex, display, store=store)
            except Exception:  # reported where the page renders it
                continue
            if not html.startswith('<span class="lk-error">'):
                markup.append(html)
    return characters(markup)


def subset(font: bytes, chars: str) -> bytes:
    """``font`` (WOFF2) with only the glyphs of ``chars`` and what its layout and ``MATH`` tables
    reach from them, as WOFF2."""
    from fontTools import subset as fts

    options = fts.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]  # every feature (ssty script forms, dtls, flac …) of the kept glyphs
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.glyph_names = False
    options.recalc_timestamp = False
    loaded = fts.load_font(io.BytesIO(font), options, dontLoadGlyphNames=True)
    cutter = fts.Subsetter(options)
    cutter.populate(unicodes=[ord(ch) for ch in chars])
    cutter.subset(loaded)
    out = io.BytesIO()
    fts.save_font(loaded, out, options)
    return out.getvalue()


def site_font(source: Path, chars: str, store: Store | None) -> bytes:
    """The subset of the font at ``source`` for ``chars``, from ``store`` when it was made before."""
    font = source.read_bytes()
    key = digest("mathfont", _fonttools(), digest(font), chars)

    def make() -> str:
        return base64.b64encode(subset(font, chars)).decode("ascii")

    value = store.get_or_make(key, make) if store is not None else make()
    return base64.b64decode(value)


def source() -> Path:
    """The whole font lessonkit ships (``lessonkit/assets/…``), the subset's source."""
    from lessonkit.config.checks import ENGINE_ASSETS

    return ENGINE_ASSETS / FONT.removeprefix("assets/")


def project_font(cache: Path | None, texts: Iterable[str]) -> bytes:
    """The site's math font for the pages ``texts`` (Markdown), through the project's cache
    (``cache``: converted formulas in ``mathml/``, subsets in ``mathfont/``)."""
    chars = site_characters(texts, Store(cache, "mathml"))
    return site_font(source(), chars, Store(cache, "mathfont"))
