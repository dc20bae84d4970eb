"""Text, one definition each: what a line is, what a safe number is, how text is shown in a
problem line, and how text is written into Markdown (a code span, literal text, a link).

Standard library only, and no other lessonkit module: :mod:`lessonkit.errors` uses it.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

# ---------------------------------------------------------------- lines


_LINE_WITH_END = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of ``text`` as Python's ``ast``, Pygments and Markdown count them: split at
    ``\\n`` (``\\r\\n`` and a lone ``\\r`` are line ends too), nothing else. ``str.splitlines``
    also splits at ``\\v``, ``\\f``, ``\\x1c``–``\\x1e``, ``\\x85``, U+2028 and U+2029, so a form
    feed in a file would shift every line number after it. A final line end ends the last line
    (it does not start an empty one): ``lines("a\\nb\\n") == ["a", "b"]``, as ``splitlines``;
    ``keepends`` keeps each line's end, so ``"".join(lines(t, True)) == t``."""
    if keepends:
        return _LINE_WITH_END.findall(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    out = text.split("\n")
    if out[-1] == "":
        out.pop()
    return out


# ---------------------------------------------------------------- numbers

MAX_DIGITS = 12  # any count, size or line number lessonkit reads fits (int() refuses > 4300 digits)


def line_span(start: int, end: int) -> str:
    """Lines of a file as a message names them: ``L662-676``, and ``L662`` for one line."""
    return f"L{start}" if start == end else f"L{start}-{end}"


def whole_number(text: str | None, max_digits: int = MAX_DIGITS) -> int | None:
    """``text`` as a whole number when it is 1 to ``max_digits`` ASCII digits, else None
    (no sign, no spaces, no other digits such as ``²`` or ``١``; never an exception)."""
    if not text or len(text) > max_digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


# ---------------------------------------------------------------- problem lines

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f", "\v": "\\v"}


def _escape_char(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _hidden(c: str) -> bool:
    """A character a terminal or log viewer would act on or hide rather than show: controls,
    format characters (bidi overrides, zero-width characters), line and paragraph separators,
    unpaired surrogates (undecodable file names)."""
    return unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")


# Scripts whose letters include look-alikes of ASCII ones (Cyrillic `о`, Greek `ο`, Armenian `օ`,
# Cherokee `Ꭺ`): in a problem line a value typed with one reads as the ASCII name it imitates.
_LOOKALIKE_SCRIPTS = ("CYRILLIC ", "GREEK ", "ARMENIAN ", "CHEROKEE ", "COPTIC ")


def _lookalike(c: str) -> bool:
    """A non-ASCII letter or digit that can pass for an ASCII one: of a script with look-alikes
    (above), or one whose compatibility form is ASCII (fullwidth `ｇ`, mathematical `𝐠`, `ﬁ`).
    Chinese text, accented Latin letters and symbols such as `∂` are shown as they are."""
    if c.isascii() or not c.isalnum():
        return False
    if unicodedata.normalize("NFKC", c).isascii():
        return True
    return unicodedata.name(c, "").startswith(_LOOKALIKE_SCRIPTS)


def visible(text: str) -> str:
    """``text`` safe to print on one line: every control, bidi, separator or surrogate character
    written as an escape (``\\f``, ``\\x85``, ``\\u202e``), and every letter that looks like an ASCII
    one but is not (``differential_\\u043eperators.py``, a Cyrillic ``о``); anything else unchanged."""
    if text.isprintable() and text.isascii():
        return text
    return "".join(_escape_char(c) if _hidden(c) or _lookalike(c) else c for c in text)


def quoted(text: str, limit: int = 70) -> str:
    """``text`` in quotes for a problem line (``repr``, so ``\\f`` shows as ``\\x0c``), cut short."""
    return repr(text[:limit])


# ---------------------------------------------------------------- Markdown


def md_code(text: str) -> str:
    """``text`` as one Markdown code span showing exactly ``text``: the fence is a run of backticks
    longer than any run inside, with a space on each side where the text starts or ends with a
    backtick or a space (Markdown strips the spaces around a code span's content, so text cannot
    start or end with one there). Markdown shows a
    code span's content literally, so ``<img onerror=…>`` inside one is text, never HTML. Line
    ends become spaces (a code span is one line here)."""
    text = text.replace("\r", " ").replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+\-.!|])")


def md_text(text: str) -> str:
    """``text`` as literal Markdown text (link text, a table cell): Markdown's punctuation
    backslash-escaped, ``<`` and ``&`` as entities (so no HTML tag or entity forms), line ends as
    spaces. ``__init__`` stays ``__init__``, not a bold ``init``."""
    text = text.replace("\r", " ").replace("\n", " ")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?=/|$)")


def md_url(url: str) -> str:
    """``url`` (a relative link, or an http(s) address, maybe with ``#fragment``) as a Markdown link
    destination: after the origin, everything but unreserved characters, ``/`` and one ``#``
    percent-encoded, so no space, parenthesis, ``<`` or quote can end the link or start markup,
    and no colon can make a relative link another scheme."""
    origin = _ORIGIN.match(url)
    head, rest = (origin[0], url[origin.end() :]) if origin else ("", url)
    path, hash_, fragment = rest.partition("#")
    out = head + quote(path, safe="/-._~")
    return out + (hash_ + quote(fragment, safe="-._~") if hash_ else "")
