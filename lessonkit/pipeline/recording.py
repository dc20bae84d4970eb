"""Recorded runs: load an experiment's recording, look up values, build snapshot tables.

An experiment writes one JSON object through lessonkit's record helper, ``lessonkit_record``
(which a series may wrap, as the autograd series' ``experiments/_record.py`` does; the
runner passes it back as ``Result.record``). This module is independent of
MkDocs: it turns a recording plus an author's table spec into a table model,
generating cells from the run and checking hand-written cells against it.

Snapshot spec (the body of a ``snapshot`` block; rows separated by ``|``)::

    对象 | 值 | 说明                            <- the first row names the columns
    `outgrads.get(R)` | @xx.calls.1.prev | 同一个 R 已在字典里
    `add_outgrads(...)` | @xx.calls.1.result = (6.0, True) | 汇合
    走到的分支 | `vs.add(prev_g, g)` | 源码推演，手写

A cell ``@key`` is generated from the recording; ``@key = text`` is hand-written
and checked against the recorded value; ``formula {@key = 3.0}`` shows the
formula and checks the number it stands for; any other cell is the author's
text. A cell in backticks (`` `@key` ``) renders the value as code.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass

from lessonkit.errors import LessonError
from lessonkit.util.formula import formula_text
from lessonkit.util.text import whole_number

LIMIT = 4 * 1024 * 1024
# How a recording is written in any series: lessonkit's own helper, in every experiment's box
# (lessonkit/run/box/lessonkit_record.py); a series may wrap it (the autograd series: _record.py).
RECORD_WITH = '`from lessonkit_record import record`, then `record.set("key", value)`'
KEY = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")
CELL_REF = re.compile(r"^(?P<tick>`?)@(?P<key>" + KEY.pattern + r")(?P=tick)(?:\s*=\s*(?P<hand>.+))?$")
CELL_NOTE = re.compile(r"^(?P<text>.*?)\s*\{@(?P<key>" + KEY.pattern + r")\s*=\s*(?P<hand>[^{}]+)\}$")


@dataclass(frozen=True)
class Recording:
    data: dict
    source: str  # the experiment, e.g. "experiments/multiple_paths.py"


def load(value, source: str) -> Recording:
    """A recording from a ``dict`` (``Result.record``) or JSON text, validated."""
    if isinstance(value, (str, bytes)):
        if len(value) > LIMIT:
            raise LessonError(
                f"the recording of {source} is larger than {LIMIT >> 20} MiB", hint="record less in the experiment"
            )
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise LessonError(
                f"the recording of {source} is not valid JSON ({str(exc)[:60]})",
                hint=f"write it with {RECORD_WITH}",
            ) from None
    if value is None:
        raise LessonError(f"{source} recorded nothing", hint=f"record values with {RECORD_WITH}")
    if not isinstance(value, dict):
        raise LessonError(
            f"the recording of {source} is a {type(value).__name__}, not an object",
            hint=f"write it with {RECORD_WITH}",
        )
    return Recording(value, source)


def lookup(rec: Recording, key: str | None):
    """The value under a dotted key; integers index lists and tuples (``xx.calls.1.result``)."""
    if key is None or not KEY.fullmatch(key):
        raise LessonError(
            f"`@{key}` is not a record key", hint="dotted names and list positions, such as result.items.0"
        )
    walked: list[str]
    node, walked = rec.data, []
    for part in key.split("."):
        items = items_of(node)
        if items is None and isinstance(node, dict) and part in node:
            node = node[part]
        elif items is not None and (k := whole_number(part)) is not None and k < len(items):
            node = items[k]
        else:
            where = ".".join(walked) or "the top level"
            if items is not None:
                kind = "list" if isinstance(node, list) else "tuple"
                avail = f"indexes 0–{len(items) - 1}" if items else f"an empty {kind}"
            elif isinstance(node, dict):
                avail = ", ".join(sorted(node)[:12]) or "nothing"
            else:
                avail = f"a value ({format_value(node)})"
            raise LessonError(f"{rec.source} recorded no `{key}` (no `{part}` under {where})", hint=f"there: {avail}")
        walked.append(part)
    return node


MAX_DEPTH = 50  # levels of nesting a shown value may have (a recording may nest up to JSON's limit)


def is_tuple(v) -> bool:
    """Whether ``v`` is a recorded tuple, ``{"tuple": [...]}`` (lessonkit_record's encoding)."""
    return isinstance(v, dict) and len(v) == 1 and isinstance(v.get("tuple"), list)


def items_of(v) -> list | None:
    """The items of a recorded list or tuple; ``None`` for any other value."""
    if isinstance(v, list):
        return v
    return v["tuple"] if is_tuple(v) else None


def as_lists(v, depth: int = 0):
    """``v`` with every recorded tuple a plain list, for a reader of the recording's shape (a
    figure draws a tuple's numbers as it draws a list's); a page that *shows* a value keeps the
    tuple (:func:`format_value`). Deeper than :data:`MAX_DEPTH` levels the value is left as it is
    (no shape reads that deep)."""
    if depth > MAX_DEPTH:
        return v
    items = items_of(v)
    if items is not None:
        return [as_lists(x, depth + 1) for x in items]
    if isinstance(v, dict):
        return {k: as_lists(x, depth + 1) for k, x in v.items()}
    return v


@dataclass(frozen=True)
class Format:
    precision: int = 6  # decimals of a non-integral float
    integral: str = "point"  # integral float scalars: "point" -> 3.0, "int" -> 3


def format_value(v, fmt: Format = Format(), depth: int = 0) -> str:
    """The value as the lesson would write it."""
    if depth > MAX_DEPTH:
        raise LessonError(
            f"the recorded value is nested more than {MAX_DEPTH} levels deep: too deep to show",
            hint="name a part of it with a longer key, or record a flatter value",
        )
    d = depth + 1
    if is_tuple(v):  # as Python writes it: (1, 2), a one-element tuple (1,), the empty one ()
        inner = ", ".join(_item(x, fmt, d) for x in v["tuple"])
        return f"({inner},)" if len(v["tuple"]) == 1 else f"({inner})"
    if isinstance(v, dict):
        if set(v) == {"scalar", "dtype"}:
            return format_value(v["scalar"], fmt, d)
        if set(v) == {"array", "shape", "dtype"}:
            return format_value(v["array"], fmt, d) if not v["shape"] else _array(v["array"], fmt, d)
        if set(v) == {"float"}:
            return str(v["float"])
        if set(v) == {"node"}:
            return str(v["node"])
        if "box" in v and "trace" in v:
            return f"{v['box']}(trace={v['trace']}, _value={format_value(v.get('value'), fmt, d)})"
        if not v:
            return "{}"
        return "{" + ", ".join(f"{k}: {_item(x, fmt, d)}" for k, x in v.items()) + "}"
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v, fmt, fmt.integral)
    if isinstance(v, list):
        return "[" + ", ".join(_item(x, fmt, d) for x in v) + "]"
    return str(v)


def _item(x, fmt: Format, depth: int) -> str:
    """A value inside a list, tuple or dict: a string in quotes, as Python writes it (``['a', 'b']``);
    alone, a recorded string is shown as its text."""
    return repr(x) if isinstance(x, str) else format_value(x, fmt, depth)


def _float(v: float, fmt: Format, integral: str) -> str:
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return f"{int(v)}" if integral == "int" else f"{v:.1f}"
    return f"{v:.{fmt.precision}f}"


def _array(data, fmt: Format, depth: int = 0) -> str:
    if isinstance(data, list):
        if depth > MAX_DEPTH:
            return format_value(data, fmt, depth)  # says it is too deep
        return "[" + ", ".join(_array(x, fmt, depth + 1) for x in data) + "]"
    if isinstance(data, float):
        return _float(data, fmt, "int")
    return format_value(data, fmt, depth)


@dataclass(frozen=True)
class Cell:
    text: str  # what the table shows
    key: str | None = None  # the record key it comes from or is checked against
    mode: str = "hand"  # "generated", "checked" or "hand"
    code: bool = False  # render as inline code


@dataclass(frozen=True)
class SnapshotTable:
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    source: str

    def counts(self) -> dict[str, int]:
        """How many cells are generated, checked against the run, or hand-written (header excluded)."""
        out = {"generated": 0, "checked": 0, "hand": 0}
        for row in self.rows:
            for cell in row:
                out[cell.mode] += 1
        return out

    def markdown(self) -> str:
        """The table as Markdown (a value cell's ``|`` escaped)."""

        def show(c: Cell) -> str:
            text = f"`{c.text}`" if c.code else c.text
            return text.replace("|", "\\|") if c.mode != "hand" else text

        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(show(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"


def split_row(line: str) -> list[str]:
    """Cells of one spec row: ``|`` separates, ``\\|`` is a literal bar, outer bars optional."""
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    from lessonkit.pipeline.blocks import INLINE

    cells, cur, i = [], [], 0
    while i < len(text):
        ref = INLINE.match(text, i) if text.startswith("[[", i) else None
        if ref:  # an inline reference ([[line: …|file]], [[value: …|3]]): its bars stay in the cell
            cur.append(ref.group(0))
            i = ref.end()
            continue
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if text[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(text[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


def _normal(text: str) -> str:
    return re.sub(r"\s+", "", text.strip().strip("`")).replace("−", "-")


def build_snapshot(
    lines: list[str], rec: Recording, *, path: str | None = None, first_line: int | None = None, fmt: Format = Format()
) -> SnapshotTable:
    """The table model from a spec (header row first); problems located at ``path:line`` per row."""
    rows = [(i, l) for i, l in enumerate(lines) if l.strip() and not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", l)]

    def at(i):
        return None if first_line is None else first_line + i

    if not rows:
        raise LessonError(
            "a snapshot needs a header row and at least one row",
            path=path,
            line=first_line,
            hint="write `column 1 | column 2`, then rows such as `R | @xx.seed`",
        )
    columns = tuple(split_row(rows[0][1]))
    problems, out = [], []
    for i, line in rows[1:]:
        cells = split_row(line)
        if len(cells) != len(columns):
            problems.append(
                LessonError(
                    f"row has {len(cells)} cells but the header has {len(columns)}",
                    path=path,
                    line=at(i),
                    hint="separate cells with | (a literal bar is \\|)",
                ).problem
            )
            continue
        row = []
        for text in cells:
            try:
                row.append(_cell(text, rec, fmt))
            except LessonError as exc:
                problems += exc.at(path, at(i)).problems
        out.append(tuple(row))
    if problems:
        raise LessonError.collect(problems)
    return SnapshotTable(columns, tuple(out), rec.source)


def _cell(text: str, rec: Recording, fmt: Format) -> Cell:
    note = CELL_NOTE.match(text)
    if note:  # a formula or prose, with the number it stands for checked against the run
        _check(note["hand"], note["key"], rec, fmt)
        _shows_what_it_checks(note["text"], note["hand"], note["key"])
        return Cell(note["text"], note["key"], "checked")
    m = CELL_REF.match(text)
    if not m:
        return Cell(text)
    key, hand, code = m["key"], m["hand"], bool(m["tick"])
    if hand is None:
        return Cell(format_value(lookup(rec, key), fmt), key, "generated", code)
    _check(hand, key, rec, fmt)
    shown = hand.strip()
    if shown.startswith("`") and shown.endswith("`") and len(shown) > 1:
        shown, code = shown[1:-1], True
    return Cell(shown, key, "checked", code)


VALUE_LIKE = re.compile(r"^[\s`()\[\],;+\-−.0-9eE]*[0-9][\s`()\[\],;+\-−.0-9eE]*$")
NUMBER = re.compile(r"[-+−]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


# What a checked cell's text may not hold: markup whose text a reader sees differently from the
# Markdown (raw HTML and comments, character references, links), and characters that are not seen.
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_HIDDEN_MARKUP = re.compile(r"<[A-Za-z!/?]|&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);|\]\(|\]\[")
_TEX = re.compile(r"\$([^$]+)\$")


def _seen(text: str) -> str:
    """The text a reader sees in a checked cell, near enough to compare its numbers: code spans as
    their code, formulas as their text (:func:`lessonkit.util.formula.formula_text`), digits of any
    width as ASCII (NFKC)."""
    from latex2mathml.converter import convert

    def formula(m: re.Match) -> str:
        try:
            return formula_text(convert(m[1].strip()))
        except Exception:  # noqa: BLE001 - latex2mathml raises many types; the page's formula check reports it
            return m[0]

    return unicodedata.normalize("NFKC", _TEX.sub(formula, text.replace("`", "")))


def _ascii_digits(text: str) -> str:
    """Digits of any script (``٩``, ``９``) as ASCII ones: a reader reads them as the same number."""
    return "".join(str(unicodedata.digit(c)) if unicodedata.category(c) == "Nd" else c for c in text)


# A number as a reader reads it in prose: not part of a name (`Y0`, `float64`, `x_1`).
_PROSE_NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?(?![\w])")


def _shows_what_it_checks(text: str, hand: str, key: str) -> None:
    """A checked cell (``text {@key = hand}``: the number ``text`` stands for, checked against the
    run) shows no number but those it checks, where a reader would take it for the checked value:
    * it is plain Markdown: no raw HTML, comment, character reference, link or invisible character
      (each can show a reader other numbers than the text says);
    * a number written in its prose (outside code and formulas, not part of a name) is one it checks
      (``**999.0** {@g = 1.0}``, ``结果 999.0 {@g = 1.0}`` are refused; ``计数减为 1 {@c = 1}`` is not);
    * when all it shows is a value (no letters: numbers, brackets, signs, formulas and code included)
      it shows the numbers it checks (``$1$ {@g = 1.0}`` does, ``$999$ {@g = 1.0}`` does not).
    Numbers inside code spans and formulas next to words are the author's (``$\\sin 1$``)."""
    plain = _CODE_SPAN.sub("", text)
    hidden = _HIDDEN_MARKUP.search(plain)
    invisible = next((c for c in plain if unicodedata.category(c) in ("Cf", "Cc", "Co", "Cs")), None)
    if hidden or invisible:
        what = repr(hidden[0]) if hidden else f"U+{ord(invisible or ' '):04X}"
        raise LessonError(
            f"snapshot cell {text.strip()!r} checks `{key}` but holds {what}: a checked cell is plain Markdown, "
            "shown as it is written",
            hint="write the cell's text without HTML, character references, links or invisible characters",
        )
    checked = {float(x) for x in NUMBER.findall(hand.replace("−", "-"))}
    prose = _ascii_digits(unicodedata.normalize("NFKC", _TEX.sub(" ", plain))).replace("−", "-")
    other = next((x for x in _PROSE_NUMBER.findall(prose) if float(x) not in checked), None)
    if other is not None:
        raise LessonError(
            f"snapshot cell {text.strip()!r} checks `{key}` = {hand.strip()} but shows {other} in its text: a "
            "checked cell shows no other number where a reader would take it for the checked value",
            hint=f"show {hand.strip()}, put other numbers in code or a formula, or write `@{key}` (the recorded value)",
        )
    seen = _ascii_digits(_seen(text))
    if any(unicodedata.category(c).startswith("L") for c in seen) or _normal(seen) == _normal(hand):
        return
    shown = [float(x) for x in NUMBER.findall(seen.replace("−", "-"))]
    missing = [x for x in NUMBER.findall(hand.replace("−", "-")) if float(x) not in shown]
    if missing:
        raise LessonError(
            f"snapshot cell shows {seen.strip()!r} but checks `{key}` = {hand.strip()}: a checked cell that "
            f"shows a value shows the numbers it checks, and {missing[0]} is not among them",
            hint=f"show {hand.strip()}, or write `@{key}` to show the recorded value",
        )


def _check(hand: str, key: str, rec: Recording, fmt: Format) -> None:
    recorded = format_value(lookup(rec, key), fmt)
    if _normal(hand) != _normal(recorded):
        raise LessonError(
            f"snapshot cell says {hand.strip()!r} but {rec.source} recorded `{key}` = {recorded}",
            hint="fix the hand-written value, or write `@" + key + "` to show the recorded one",
        )


VALUE_REF = re.compile(r"\[\[@(?P<exp>[\w-]+):(?P<key>" + KEY.pattern + r")(?:\s*\|(?P<prec>\d))?\]\]")


@dataclass(frozen=True)
class ValueRef:
    """An inline recorded value in prose: ``[[@multiple_paths:xx.grad]]`` or
    ``[[@lesson01_ad_and_graph:steps.2.local|3]]``."""

    raw: str
    experiment: str  # experiments/<name>.py
    key: str
    precision: int | None = None


def parse_value_ref(raw: str) -> ValueRef:
    m = VALUE_REF.fullmatch(raw.strip())
    if not m:
        raise LessonError(
            f"cannot read the recorded value {raw[:80]!r}",
            hint="write [[@experiment_name:key.path]] or [[@experiment_name:key.path|3]] (3 decimals)",
        )
    return ValueRef(raw, f"experiments/{m['exp']}.py", m["key"], int(m["prec"]) if m["prec"] else None)


def render_value_ref(ref: ValueRef, rec: Recording) -> str:
    """The value as text (the caller adds the provenance, e.g. a title naming the experiment and key)."""
    fmt = Format() if ref.precision is None else Format(precision=ref.precision)
    return format_value(lookup(rec, ref.key), fmt)
