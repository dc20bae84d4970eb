"""A formula reaches the search index as one line of text (its MathML stays out): the teaser of a
result reads 「结果是 2x=6。」 where it read 「结果是 。」, and a reader can find it by what it says."""

from __future__ import annotations

import markdown
import pytest

from lessonkit.pipeline.mathml import TEXT_CLASS, formula_text, to_mathml


@pytest.mark.parametrize(
    ("tex", "text"),
    [
        ("2x = 6", "2x=6"),
        (r"\bar{v} = \frac{\partial L}{\partial v}", "v\u0304=\u2202L/\u2202v"),
        (r"x^2 + \sqrt{y_1} \cdot \sum_{i=1}^n a_i", "x^2 +\u221a(y_1)\u00b7\u2211_(i=1)^n a_i"),
        (r"\sin x + \frac{a+b}{2}", "sin x+(a+b)/2"),
        (r"\vec{a} \cdot \hat x", "a\u20d7\u00b7x\u0302"),
        (r"\begin{bmatrix}1 & 2\\ 3 & 4\end{bmatrix}", "[1, 2; 3, 4]"),
        (r"J^\top v", "J^\u22a4 v"),
    ],
)
def test_a_formula_as_text_keeps_its_symbols_in_order(tex, text):
    assert formula_text(to_mathml(tex, "inline")) == text


def test_what_is_not_mathml_has_no_text():
    assert formula_text('<span class="lk-error">$\\frac{$</span>') == ""


def test_the_page_shows_the_mathml_and_hides_the_text_it_gives_the_index():
    md = markdown.Markdown(extensions=["lessonkit.pipeline.mathml"])
    html = md.convert("它的结果是 $2x = 6$。\n\n$$\\frac{a}{b}$$\n\n$$[x_1 x_2][y]$$\n")
    assert html == (
        '<p>它的结果是 <span class="lk-math" data-search-exclude="math">'
        + to_mathml("2x = 6", "inline")
        + f'</span><span class="{TEXT_CLASS}">2x=6</span>。</p>\n'
        + '<div class="lk-math-block" data-search-exclude="math">'
        + to_mathml("\\frac{a}{b}", "block")
        + f'</div>\n<p class="{TEXT_CLASS}">a/b</p>\n'
        + '<div class="lk-math-block" data-search-exclude="math">'
        + to_mathml("[x_1 x_2][y]", "block")
        + f'</div>\n<p class="{TEXT_CLASS}">[x_1 x_2][y]</p>'  # text, not Markdown: no emphasis, no link
    )
