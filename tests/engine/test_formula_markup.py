"""A formula draws and does nothing else: latex2mathml passes `\\href`, `\\style` and `\\class` on
as attributes and the text of `\\text{…}` unescaped, so a formula whose MathML holds anything but
drawing is refused (one located line on its page, where its TeX shows as text)."""

from __future__ import annotations

import pytest

from lessonkit.errors import LessonError
from lessonkit.pipeline.mathml import to_mathml

HINT = "check the LaTeX; only standard math commands are supported (`\\lt`, not `<` in `\\text{}`)"


@pytest.mark.parametrize(
    ("tex", "why"),
    [
        (r"\href{javascript:alert(1)}{x}", "it gives a <mrow> the attribute `href` (`\\href`, `\\style`, `\\class`)"),
        (r"\style{color:red}{x}", "it gives a <mrow> the attribute `style` (`\\href`, `\\style`, `\\class`)"),
        (r"\class{lk-block}{x}", "it gives a <mrow> the attribute `class` (`\\href`, `\\style`, `\\class`)"),
        (r"\text{<sc<script>ript>x</script>}", "`\\text{…}` holds `<`, `>` or `&`, which would be markup in the page"),
        (r"\text{a < b}", "`\\text{…}` holds `<`, `>` or `&`, which would be markup in the page"),
    ],
)
def test_a_formula_that_would_be_more_than_drawing_is_refused(tex, why):
    with pytest.raises(LessonError) as exc:
        to_mathml(tex, "inline")
    assert str(exc.value) == f"<markdown>: cannot render formula ${tex}$: {why} — {HINT}"


@pytest.mark.parametrize("tex", [r"x \lt y", r"\color{red} x", r"\begin{bmatrix}1 & 2\end{bmatrix}", r"\text{a b}"])
def test_drawing_passes(tex):
    assert to_mathml(tex, "inline").startswith("<math")
