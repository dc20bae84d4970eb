"""A formula's MathML as one line of text: what the search index holds in its place
(:mod:`lessonkit.pipeline.mathml`), and what a snapshot cell's formula shows when the cell is
checked against the number it stands for (:mod:`lessonkit.pipeline.recording`)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree

# Accents over a letter (`\bar v`, `\hat x`, `\vec a`): the combining mark that writes them in text.
_ACCENTS = {
    "\u00af": "\u0304",
    "^": "\u0302",
    "\u02c6": "\u0302",
    "~": "\u0303",
    "\u02dc": "\u0303",
    "\u02d9": "\u0307",
    "\u00a8": "\u0308",
    "\u2192": "\u20d7",
    "\u20d7": "\u20d7",
}
_OPERATORS = set("+-\u2212=\u00b7\u00d7/<>\u2264\u2265\u2248\u2260, ")


def _grouped(text: str) -> str:
    """``text`` as one operand of ``/``, ``^`` or ``_``: in parentheses when it holds an operator."""
    text = text.strip()
    return f"({text})" if len(text) > 1 and _OPERATORS.intersection(text) else text


def _text_of(el) -> str:
    """The text of one MathML element (see :func:`formula_text`)."""
    tag = el.tag.rpartition("}")[2]
    kids = [_text_of(k) for k in el]  # a script ends in a space: `∑_(i=1)^n a_i`, not `^na_i`
    if tag in ("mi", "mn", "mo", "mtext", "ms"):
        return (el.text or "").replace("\u2061", "").strip() if tag != "mtext" else (el.text or "")
    if tag == "mspace":
        return " "
    if tag == "mphantom" or not kids:
        return ""
    if tag == "mfrac" and len(kids) == 2:
        return f"{_grouped(kids[0])}/{_grouped(kids[1])}"
    if tag in ("msup", "msub") and len(kids) == 2:
        return kids[0] + ("^" if tag == "msup" else "_") + _grouped(kids[1]) + " "
    if tag == "msubsup" and len(kids) == 3:
        return f"{kids[0]}_{_grouped(kids[1])}^{_grouped(kids[2])} "
    if tag == "mover" and len(kids) == 2 and kids[1] in _ACCENTS:
        return kids[0] + _ACCENTS[kids[1]]
    if tag in ("mover", "munder") and len(kids) == 2:
        return kids[0] + ("^" if tag == "mover" else "_") + _grouped(kids[1]) + " "
    if tag == "munderover" and len(kids) == 3:
        return f"{kids[0]}_{_grouped(kids[1])}^{_grouped(kids[2])} "
    if tag == "msqrt":
        return f"\u221a({''.join(kids).strip()})"
    if tag == "mroot" and len(kids) == 2:
        return f"\u221a[{kids[1]}]({kids[0]})"
    if tag == "mtr":
        return ", ".join(kids)
    if tag == "mtable":
        return "; ".join(kids)
    if tag == "semantics":
        return kids[0]
    return "".join(kids)


def formula_text(mathml: str) -> str:
    """A formula's MathML as one line of text for the search index: its letters, numbers and
    operators in order, ``a/b`` for a fraction, ``x^2`` and ``a_i`` for scripts, ``√(x)``, an
    accent as its combining mark; operands with operators in parentheses. Empty when it is not
    MathML (a formula that did not convert)."""
    try:
        root = etree.fromstring(mathml)
    except etree.ParseError:
        return ""
    return re.sub(r" ([)\]},;])", r"\1", " ".join(_text_of(root).split()))  # `(y_1)`, not `(y_1 )`
