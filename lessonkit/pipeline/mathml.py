"""Python-Markdown extension: ``$…$`` and ``$$…$$`` rendered to MathML at build time.

No JavaScript and no CDN: browsers draw MathML natively. A formula that the
converter cannot read is an author error, located by the page and its text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from functools import lru_cache
from html import escape

from latex2mathml.converter import convert
from markdown import Extension
from markdown.blockprocessors import BlockProcessor
from markdown.inlinepatterns import InlineProcessor
from markdown.util import AtomicString

from lessonkit.errors import LessonError
from lessonkit.util.formula import formula_text
from lessonkit.util.store import Store, digest

INLINE = r"(?<![\\$])\$(?!\s)(?P<tex>[^$\n]+?)(?<![\s\\])\$(?!\d)"


@lru_cache(maxsize=1)
def _converter() -> str:
    from importlib.metadata import version

    return version("latex2mathml")


# Named functions (``\sin``, ``\log`` …) come out of latex2mathml as a bare ``<mi>sin</mi>``
# followed by the argument, which browsers draw as "sinx". TeX puts a thin space between an
# operator name and an ordinary argument, and none before a parenthesis; so do we, and mark
# the application with U+2061 (FUNCTION APPLICATION) as MathML expects.
FUNCTIONS = (
    "arccos",
    "arcsin",
    "arctan",
    "cosh",
    "coth",
    "sinh",
    "tanh",
    "cos",
    "cot",
    "csc",
    "det",
    "exp",
    "lg",
    "ln",
    "log",
    "max",
    "min",
    "sec",
    "sin",
    "tan",
    "sup",
    "inf",
    "lim",
    "dim",
    "ker",
    "deg",
    "arg",
    "gcd",
    "Pr",
)
_FUNCTION_MI = re.compile(
    r"(?<!<msub>)(?<!<msup>)(?<!<msubsup>)(?<!<munder>)(?<!<munderover>)<mi>(%s)</mi>(?!<mo>&#x02061;)"
    r"(?P<next><mo stretchy=\"false\">&#x00028;)?" % "|".join(FUNCTIONS)
)


def _polish(html: str) -> str:
    """Post-process latex2mathml output: space after named functions (``\\sin x`` → sin x)."""

    def fix(m: re.Match) -> str:
        space = "" if m.group("next") else '<mspace width="0.1667em"></mspace>'
        return f"<mi>{m.group(1)}</mi><mo>&#x02061;</mo>{space}{m.group('next') or ''}"

    return _FUNCTION_MI.sub(fix, html)


def _store(md) -> Store | None:
    """Converted formulas by content: the cache of the project whose page ``md`` converts, if any."""
    from lessonkit.pipeline.markdown import page_context

    ctx = page_context(md) if md is not None else None
    return ctx.project.store("mathml") if ctx is not None and ctx.project is not None else None


def to_mathml(tex: str, display: str, md=None, store: Store | None = None) -> str:
    """MathML for ``tex``; a formula that cannot be converted is reported on the page ``md`` converts.
    Converted formulas are kept in ``store`` (default: the cache of the page's project)."""
    store = store if store is not None else _store(md)
    if store is None:
        return _convert(tex, display, md)
    key = digest("mathml", _converter(), display, tex.strip())
    html = store.get(key)
    if html is not None:
        try:
            _drawing_only(html)  # what the store holds is what this code would have stored
        except UnsafeMathML:
            html = None
    if html is None:
        html = _convert(tex, display, md)
        if not html.startswith('<span class="lk-error">'):  # problems are reported every build
            store.put(key, html)
    return html


BLOCK_TEX = re.compile(r"^[ \t]*\$\$(.*?)\$\$[ \t]*$", re.S | re.M)


def prewarm(text: str, store: Store) -> None:
    """Convert the formulas ``text`` appears to hold into ``store`` ahead of rendering.
    A best effort (a page may use ``$`` otherwise): what does not convert is left for the
    rendering pass, which reports it at its line."""
    for tex in BLOCK_TEX.findall(text):
        _prewarm_one(tex, "block", store)
    for m in re.finditer(INLINE, BLOCK_TEX.sub("", text)):
        _prewarm_one(m.group("tex"), "inline", store)


def _prewarm_one(tex: str, display: str, store: Store) -> None:
    key = digest("mathml", _converter(), display, tex.strip())
    if store.get(key) is None:
        try:
            store.put(key, _drawing_only(_polish(convert(tex.strip(), display=display))))
        except Exception:  # reported, with its line, when the page renders
            pass


# What the converter may write: MathML's presentation elements and their drawing attributes. It
# also passes on `\href` (an `href`), `\style`, `\class`, and the text of `\text{…}` unescaped (a
# `<script>` there is one in the page): a formula whose MathML holds anything else is refused.
_ELEMENTS = frozenset(
    "math mrow mi mn mo mtext ms mspace msup msub msubsup mfrac msqrt mroot mover munder munderover "
    "mtable mtr mtd mlabeledtr mstyle menclose mpadded mphantom merror semantics annotation mfenced".split()
)
_REFUSED_ATTRIBUTES = frozenset("href style class id src xlink:href".split())


class UnsafeMathML(ValueError):
    """The converter's MathML holds markup that is not drawing (see :data:`_ELEMENTS`)."""


def _drawing_only(html: str) -> str:
    """``html`` when it is well-formed MathML of drawing elements and attributes only."""
    try:
        root = etree.fromstring(html)
    except etree.ParseError:
        raise UnsafeMathML("`\\text{…}` holds `<`, `>` or `&`, which would be markup in the page") from None
    for el in root.iter():
        name = el.tag.rpartition("}")[2]
        if name not in _ELEMENTS:
            raise UnsafeMathML(f"it makes a <{name}> element, which is not MathML drawing")
        bad = next((a for a in el.attrib if a.lower() in _REFUSED_ATTRIBUTES or a.lower().startswith("on")), None)
        if bad:
            raise UnsafeMathML(f"it gives a <{name}> the attribute `{bad}` (`\\href`, `\\style`, `\\class`)")
    return html


def _convert(tex: str, display: str, md=None) -> str:
    try:
        return _drawing_only(_polish(convert(tex.strip(), display=display)))
    except Exception as exc:  # latex2mathml raises many types for bad input
        why = str(exc) if isinstance(exc, UnsafeMathML) else f"{exc.__class__.__name__}: {exc}"
        err = LessonError(
            f"cannot render formula ${tex.strip()[:60]}$: {why}",
            hint="check the LaTeX; only standard math commands are supported (`\\lt`, not `<` in `\\text{}`)",
        )
        from lessonkit.pipeline.markdown import page_context

        ctx = page_context(md) if md is not None else None
        if ctx is None or ctx.problems is None:
            raise err from None
        ctx.problems.extend(err.at(ctx.path, ctx.locate(tex.strip())).problems)
        return f'<span class="lk-error">{escape(tex)}</span>'


# The MathML stays out of the search index: its text nodes joined ("v¯=∂L∂v") match no query a
# reader types and read as noise in a result's teaser. Material drops the attribute from the page.
# In its place the index gets the formula as a line of text (:func:`formula_text`, "v̄=(∂L)/(∂v)"),
# in an element no reader sees (``lk-math-text``: ``display: none``, so no screen reader either),
# so that a result's teaser reads 「它的结果是 2x=6。」 instead of 「它的结果是 。」.
NO_SEARCH = "math"
TEXT_CLASS = "lk-math-text"


def _page_math(tex: str, display: str, md) -> tuple[str, str]:
    """The formula's MathML and its text (:func:`formula_text`); on a page whose code waits for the
    search index (``Deferred``), the MathML waits too (its wrapper keeps it out of the index, so the
    page carries nothing in its place meanwhile): a lesson's formulas are most of its tags, and
    parsing tags is most of the index's work."""
    html = to_mathml(tex, display, md)
    if html.startswith('<span class="lk-error">'):
        return html, ""
    text = formula_text(html)
    from lessonkit.pipeline.markdown import page_context

    ctx = page_context(md) if md is not None else None
    deferred = ctx.deferred if ctx is not None else None
    if deferred is not None:
        return deferred.slot_text("", html), text
    return html, text


class InlineMath(InlineProcessor):
    # InlineProcessor's handleMatch takes `data` where Pattern's does not (markdown's stubs ignore it too)
    def handleMatch(self, m, data):  # type: ignore[override]
        html, text = _page_math(m.group("tex"), "inline", self.md)
        shown = f'<span class="lk-math" data-search-exclude="{NO_SEARCH}">{html}</span>'
        said = f'<span class="{TEXT_CLASS}">{escape(text, quote=False)}</span>' if text else ""
        return self.md.htmlStash.store(shown + said), m.start(0), m.end(0)


class BlockMath(BlockProcessor):
    RE = re.compile(r"^\s*\$\$(?P<tex>.*?)\$\$\s*$", re.S)

    def test(self, parent, block):
        return bool(self.RE.match(block))

    def run(self, parent, blocks):
        m = self.RE.match(blocks.pop(0))
        tex = m.group("tex") if m else ""  # test() matched the block
        div = etree.SubElement(parent, "div", {"class": "lk-math-block", "data-search-exclude": NO_SEARCH})
        html, text = _page_math(tex, "block", self.parser.md)
        div.text = self.parser.md.htmlStash.store(html)
        if text:
            etree.SubElement(parent, "p", {"class": TEXT_CLASS}).text = AtomicString(text)  # not Markdown: `x_1 x_2`


class MathMLExtension(Extension):
    def extendMarkdown(self, md):
        md.inlinePatterns.register(InlineMath(INLINE, md), "lessonkit_math", 185)
        md.parser.blockprocessors.register(BlockMath(md.parser), "lessonkit_math_block", 95)


def makeExtension(**kwargs):
    return MathMLExtension(**kwargs)
