"""Inline source references: name a line of the pinned source by its content.

Syntax in lesson prose (never inside code spans or fenced blocks)::

    [[core.py::backward_pass "outgrad = outgrads.pop(node)"]]          -> 第 28 行
    [[core.py::backward_pass "for parent, ingrad" .. "outgrads[parent]"]] -> 第 30–31 行
    [[core.py::backward_pass +3]]                                        -> 第 28 行 (def line is +0)
    [[core.py::backward_pass]]                                           -> 第 25–33 行
    [[core.py::backward_pass "outgrad = outgrads.pop(node)" |file]]     -> core.py:28
    [[core.py::backward_pass "outgrad = outgrads.pop(node)" |L]]        -> L28

The file is a path of the tree (``autograd/core.py``) or a base name that is
unique in it (``core.py``); the symbol uses the same selectors as ``Symbol:``
(``VJPNode.__init__``, ``defvjp(anp.multiply)``). A quoted fragment must occur
in exactly one line of the symbol; ``\\"`` is a quote inside it. ``[[ ]]`` is
not Markdown syntax, so the text survives any Markdown processor unchanged.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from lessonkit.errors import LessonError
from lessonkit.source.resolve import Tree
from lessonkit.util.text import line_span
from lessonkit.util.text import lines as text_lines

_Q = r'"(?:[^"\\]|\\.)*"'
REF = re.compile(
    r"\[\[(?P<file>[\w./-]+\.\w+)::(?P<symbol>[^\s\]\"]+(?:\([^)\]]*\))?)"
    r"(?:\s+(?P<a>" + _Q + r"|[+-][0-9]{1,9})(?:\s*\.\.\s*(?P<b>" + _Q + r"|[+-][0-9]{1,9}))?)?"
    r"(?:\s*\|(?P<style>file|L|line))?\s*\]\]"
)
LOOSE = re.compile(r"\[\[[^\[\]\n]*::[^\[\]\n]*\]\]")  # looks like a reference: must parse


@dataclass(frozen=True)
class SourceRef:
    raw: str
    file: str
    symbol: str
    first: str | None  # a quoted fragment ("...") or a relative offset ("+3"), or None: whole symbol
    last: str | None
    style: str = "line"


@dataclass(frozen=True)
class Resolved:
    ref: SourceRef
    file: str  # the tree path
    start: int
    end: int
    text: tuple[str, ...]  # the lines, for repin comparison

    def render(self, style: str | None = None, line: str = "line {span}") -> str:
        """The reference as the page shows it; ``line`` is the project's words for the default
        style (``[labels] line-ref``, e.g. ``第 {span} 行``)."""
        style = style or self.ref.style
        span = f"{self.start}" if self.start == self.end else f"{self.start}–{self.end}"
        if style == "file":
            return f"{self.file.rsplit('/', 1)[-1]}:{span}"
        if style == "L":
            return f"L{self.start}" if self.start == self.end else f"L{self.start}–L{self.end}"
        return line.replace("{span}", span)

    @property
    def anchor(self) -> str:
        """The source browser's line anchor: ``L28`` or ``L30-L31``."""
        return f"L{self.start}" if self.start == self.end else f"L{self.start}-L{self.end}"


def parse(raw: str) -> SourceRef:
    m = REF.fullmatch(raw.strip())
    if not m:
        raise LessonError(
            f"cannot read the source reference {raw[:80]!r}",
            hint='write [[FILE::SYMBOL "a fragment of the line"]], '
            "optionally .. a second fragment, or +N for an offset, and |file or |L",
        )
    if m["b"] and not m["a"]:
        raise LessonError(f"{raw!r}: a range needs a first end", hint='write "from" .. "to"')
    return SourceRef(raw, m["file"], m["symbol"], m["a"], m["b"], m["style"] or "line")


def scan(markdown: str) -> list[tuple[int, str]]:
    """Every ``[[…::…]]`` in prose as (1-based line, raw text), skipping fences and code spans."""
    out, fence = [], None
    for n, line in enumerate(text_lines(markdown), 1):
        stripped = line.lstrip()
        mark = re.match(r"(`{3,}|~{3,})", stripped)
        if fence is None and mark:
            fence = mark.group(1)
            continue
        if fence is not None:
            if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                fence = None
            continue
        prose = re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line)
        out += [(n, m.group(0)) for m in LOOSE.finditer(prose)]
    return out


def _file(tree: Tree, name: str) -> str:
    if "/" in name or tree.allowed is None:
        return name
    hits = sorted(p for p in tree.allowed if p.rsplit("/", 1)[-1] == name)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        close = difflib.get_close_matches(name, sorted({p.rsplit('/', 1)[-1] for p in tree.allowed}), n=3)
        example = next((p for p in sorted(tree.allowed) if "/" in p and p.endswith(".py")), "package/module.py")
        raise LessonError(
            f"no file named `{name}` in {tree.label}",
            hint=("did you mean " + ", ".join(f"`{c}`" for c in close) + "?")
            if close
            else f"write the path, e.g. {example}",
        )
    raise LessonError(
        f"`{name}` names {len(hits)} files in {tree.label}",
        hint="write the path: " + ", ".join(f"`{h}`" for h in hits[:5]),
    )


def _unquote(q: str) -> str:
    return re.sub(r'\\(.)', r"\1", q[1:-1])


def _locate(part: str, region: list[str], lo: int, where: str) -> int:
    if part[0] in "+-":
        k = int(part)
        if not 0 <= k < len(region):
            raise LessonError(
                f"offset {part} is outside {where} (+0 to +{len(region) - 1})",
                hint="offsets count from the symbol's first line, +0",
            )
        return lo + k
    frag = _unquote(part)
    if not frag.strip():
        raise LessonError("an empty fragment names no line", hint="quote part of the line you mean")
    hits = [lo + i for i, l in enumerate(region) if frag in l]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        best = difflib.get_close_matches(frag.strip(), [l.strip() for l in region], n=3, cutoff=0.4)
        cands = [f"L{lo + i}: {region[i].strip()[:60]!r}" for i in range(len(region)) if region[i].strip() in best]
        raise LessonError(
            f"{frag!r} does not occur in {where}",
            hint=("closest lines: " + "; ".join(cands)) if cands else "quote the line verbatim",
        )
    listed = "; ".join(f"L{n}: {region[n - lo].strip()[:60]!r}" for n in hits[:6])
    raise LessonError(
        f"{frag!r} occurs in {len(hits)} lines of {where}", hint=f"quote more of the line you mean ({listed})"
    )


def resolve(tree: Tree, ref: SourceRef) -> Resolved:
    """The lines a reference names in ``tree`` (unlocated errors: the caller adds path:line)."""
    rel = _file(tree, ref.file)
    sf = tree.file(rel)
    d = sf.find(ref.symbol)
    region = sf.lines[d.start - 1 : d.end]
    where = f"`{ref.symbol}` ({sf.rel} {line_span(d.start, d.end)})"
    if ref.first is None:
        start, end = d.start, d.end
    else:
        start = _locate(ref.first, region, d.start, where)
        end = _locate(ref.last, region, d.start, where) if ref.last else start
        if end < start:
            raise LessonError(f"the range ends (L{end}) before it starts (L{start})", hint="swap the two ends")
    return Resolved(ref, sf.rel, start, end, tuple(sf.lines[start - 1 : end]))


def resolve_text(tree: Tree, raw: str, path: str | None = None, line: int | None = None) -> Resolved:
    try:
        return resolve(tree, parse(raw))
    except LessonError as exc:
        raise exc.at(path, line) from None


def classify(old: Resolved, new_tree: Tree) -> tuple[str, Resolved | None]:
    """What becomes of a reference under another tree: unchanged, moved, changed or missing."""
    try:
        new = resolve(new_tree, old.ref)
    except LessonError:
        return "missing", None
    if new.text != old.text:
        return "changed", new
    return ("unchanged" if (new.start, new.end) == (old.start, old.end) else "moved"), new
