"""The site's math font is the shipped STIX Two Math cut down to the characters of the site's
formulas, with every larger and stretched form the font's MATH table gives them, made the same
way every time and kept in the build cache."""

from __future__ import annotations

import io

import pytest
from fontTools.ttLib import TTFont

from lessonkit.site import mathfont
from lessonkit.util.store import Store

CHARS = "(+x∑√⟨"


@pytest.fixture(scope="module")
def whole() -> bytes:
    return mathfont.source().read_bytes()


@pytest.fixture(scope="module")
def cut(whole) -> bytes:
    return mathfont.subset(whole, CHARS)


def _font(data: bytes) -> TTFont:
    return TTFont(io.BytesIO(data))


def test_the_characters_are_the_text_of_the_formulas_and_the_radical_of_a_root():
    assert mathfont.characters(["<math><mi>y</mi><mo>+</mo><mn>1</mn></math>"]) == "+1y𝑦"
    root = '<math><msqrt><mi>x</mi></msqrt><mo>&#x02061;</mo><mtext>值 a</mtext></math>'
    assert mathfont.characters([root]) == "ax\u2061√值𝑥"
    assert mathfont.characters(["<math><mroot><mi>b</mi><mn>3</mn></mroot></math>"]) == "3b√𝑏"
    assert mathfont.characters([]) == ""


def test_a_one_letter_identifier_brings_the_italic_form_the_browser_draws():
    # MathML Core: an <mi> of one character is drawn in its Mathematical Italic form, unless normal
    one = '<math><mi>h</mi><mi>δ</mi><mi>∂</mi><mi mathvariant="normal">d</mi><mi>sin</mi></math>'
    assert mathfont.characters([one]) == "dhinsδℎ∂𝛿𝜕"
    assert [mathfont.italic(c) for c in "AzΩϕ∇1"] == ["𝐴", "𝑧", "𝛺", "𝜙", "𝛻", "1"]


def test_the_site_characters_come_from_inline_and_block_formulas_only(tmp_path):
    text = "价格 $5 和 `code` 里的 $x^2$。\n\n$$\n\\sqrt{a} \\le b\n$$\n"
    assert mathfont.site_characters([text], Store(tmp_path, "mathml")) == "2abx√≤𝑎𝑏𝑥"
    assert mathfont.site_characters(["没有公式，只有 $ 符号。"], None) == ""


def test_the_subset_maps_exactly_the_asked_characters_the_font_has(whole, cut):
    before, after = _font(whole), _font(cut)
    assert after.flavor == "woff2"
    assert set(CHARS) <= {chr(c) for c in before.getBestCmap()}
    mapped = {chr(c) for c in after.getBestCmap()}
    assert mapped - set(CHARS) == {")", "⟩"}  # the closing half of each bracket pair: fontTools adds it
    assert len(after.getGlyphOrder()) < len(before.getGlyphOrder()) / 20
    assert len(cut) < len(whole) / 20, len(cut)


def test_the_subset_keeps_the_math_table_and_every_size_of_a_stretchy_bracket(whole, cut):
    before, after = _font(whole), _font(cut)

    def sizes(font: TTFont, ch: str) -> int:
        variants = font["MATH"].table.MathVariants
        glyph = font.getBestCmap()[ord(ch)]
        at = variants.VertGlyphCoverage.glyphs.index(glyph)
        return len(variants.VertGlyphConstruction[at].MathGlyphVariantRecord)

    for ch in "(⟨∑√":
        assert sizes(after, ch) == sizes(before, ch) > 1, ch
    constants = after["MATH"].table.MathConstants
    assert constants.AxisHeight.Value == before["MATH"].table.MathConstants.AxisHeight.Value
    assert after["name"].getDebugName(1) == before["name"].getDebugName(1)


def test_the_subset_is_the_same_bytes_every_time_and_comes_from_the_cache(whole, cut, tmp_path):
    store = Store(tmp_path, "mathfont")
    made = mathfont.site_font(mathfont.source(), CHARS, store)
    assert made == cut and store.misses == 1
    again = mathfont.site_font(mathfont.source(), CHARS, Store(tmp_path, "mathfont"))
    assert again == cut
    assert len([p for p in (tmp_path / "mathfont").iterdir() if not p.name.startswith(".")]) == 1
