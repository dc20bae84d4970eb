"""A small HTML scanner: tags with their attributes, elements, and the text a reader sees.

Enough of the HTML tokenizer's rules for a check of written pages (:mod:`lessonkit.site.shipped`)
that an imitation cannot slip past: attribute values may hold ``>`` and quotes, names and
classes are read after decoding character references (``class="lk&#45;block"`` is the class
``lk-block`` to a browser), comments and ``<!…>`` are skipped, and the contents of raw-text
elements (``script``, ``style``, ``noscript``, …) are not markup: they are kept apart, as
:attr:`Doc.raw`, for the caller to inspect. About 0.1 s for the 9 MB of this site's pages, where
:mod:`html.parser` takes 2.8 s.

Not a full parser: misnested end tags are matched by name and depth only (the engine's markup
is well-formed, and a page that is not fails the checks rather than passing them).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from html import unescape

# A tag, a comment, or a bogus comment (<!DOCTYPE …>, <?…>). Attribute values are quoted or run up
# to whitespace or `>`; possessive quantifiers keep the scan linear on any input.
TAG = re.compile(
    r"<(?:!--.*?(?:-->|\Z)"
    r"|[!?][^>]*+(?:>|\Z)"
    r"|(/?)([A-Za-z][^\s/>]*+)((?:[\s/]++|[^\s/>=][^\s/>=]*+(?:\s*+=\s*+(?:\"[^\"]*+\"|'[^']*+'|[^\s>]*+))?+)*+)>)",
    re.S,
)
ATTR = re.compile(r"""([^\s/>=][^\s/>=]*+)(?:\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s>]*+)))?+""")
RAW_START = re.compile(r"<(script|style|textarea|title|xmp|iframe|noembed|noframes|noscript|plaintext)(?=[\s/>])", re.I)
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
RAW = frozenset("script style textarea title xmp iframe noembed noframes noscript plaintext".split())
# HTML elements for which `<x/>` does not close the element (the slash is ignored); elsewhere
# (SVG, MathML) it does.
NOT_SELF_CLOSING = frozenset(
    "a article aside b button code details div em figcaption figure footer header i label li main nav ol p pre "
    "section span strong summary table tbody td th thead tr ul".split()
)


def attributes(raw: str) -> dict[str, str]:
    """A tag's attributes as a browser reads them: names in lower case, the first of repeated
    names wins, values with character references decoded."""
    out: dict[str, str] = {}
    for m in ATTR.finditer(raw):
        name = m[1].lower()
        if name not in out:
            value = m[2] if m[2] is not None else m[3] if m[3] is not None else m[4] or ""
            out[name] = unescape(value) if "&" in value else value
    return out


def _empty(m: re.Match) -> bool:
    """The tag opens no element that could hold content."""
    if m[1]:
        return True
    name = m[2].lower()
    if name in VOID:
        return True
    return m[3].rstrip().endswith("/") and name not in NOT_SELF_CLOSING


class Doc:
    """One page: its tags in order (match objects of :data:`TAG`: ``m[1]`` is ``/`` for an end
    tag, ``m[2]`` the name, ``m[3]`` the attributes), raw-text contents left out (see :attr:`raw`)."""

    def __init__(self, html: str):
        self.html = html
        self.raw: list[tuple[str, int, int]] = []  # (element name, start, end) of raw-text contents
        tags: list[re.Match] = []
        comments: list[re.Match] = []
        for m in TAG.finditer(html):
            (tags if m.lastindex else comments).append(m)  # comments and <!…>, <?…> apart
        starts = [m.start() for m in tags]
        pos = 0
        for r in RAW_START.finditer(html):  # raw-text elements: their contents are not markup
            if r.start() < pos:
                continue
            k = bisect.bisect_left(starts, r.start())
            if k == len(tags) or starts[k] != r.start() or tags[k][1]:
                continue  # not a tag (inside another tag's attribute value)
            close = re.compile(r"</" + re.escape(r[1]) + r"[\s/>]", re.I).search(html, tags[k].end())
            pos = close.start() if close else len(html)
            self.raw.append((r[1].lower(), tags[k].end(), pos))
        for name, a, b in reversed(self.raw):
            del tags[bisect.bisect_left(starts, a) : bisect.bisect_left(starts, b)]
            del starts[bisect.bisect_left(starts, a) : bisect.bisect_left(starts, b)]
        self.tags = tags
        # comments and bogus comments outside raw text (not <!DOCTYPE>): what the browser check compares
        kept, at = [], 0
        for c in comments:
            while at < len(self.raw) and self.raw[at][2] <= c.start():
                at += 1
            if at < len(self.raw) and self.raw[at][1] <= c.start():
                continue
            if c[0][:9].lower() != "<!doctype":
                kept.append(c)
        self.comments: list[re.Match] = kept
        self._attrs: dict[int, dict[str, str]] = {}
        self._close: list[int] | None = None
        self.memo: dict = {}  # what callers derive from the markup alone (shared by with_text)
        self._texts: dict = {}  # text() by range (shared by with_text, see there)
        self.changed: int | None = None

    def with_text(self, html: str, changed: int) -> "Doc":
        """This page with one character of text replaced (at offset ``changed``; the character is
        not part of a tag or a character reference, and the page keeps its length): the scan is
        reused, not made again, and so are the texts of ranges that do not hold ``changed``."""
        other = object.__new__(Doc)
        other.__dict__.update(self.__dict__)  # the memo is shared: it holds what the change cannot alter
        other.html, other.changed = html, changed
        return other

    def name(self, i: int) -> str:
        return self.tags[i][2].lower()

    def closing(self, i: int) -> bool:
        return bool(self.tags[i][1])

    def attrs(self, i: int) -> dict[str, str]:
        got = self._attrs.get(i)
        if got is None:
            got = self._attrs[i] = attributes(self.tags[i][3])
        return got

    def classes(self, i: int) -> list[str]:
        return self.attrs(i).get("class", "").split()

    def close_of(self, i: int) -> int:
        """The index of the tag that closes element ``i`` (``i`` itself for an empty element; the
        number of tags when it is never closed). End tags close the nearest open element of their
        name; the matches of the whole page are found in one pass, on first use."""
        return (self._close if self._close is not None else self._match())[i]

    def _match(self) -> list[int]:
        n = len(self.tags)
        close = list(range(n))
        open_: dict[str, list[int]] = {}
        for i, m in enumerate(self.tags):
            name = m[2].lower()
            if m[1]:
                stack = open_.get(name)
                if stack:
                    close[stack.pop()] = i
            elif name not in VOID:
                a = m[3]
                if a and a.rstrip().endswith("/") and name not in NOT_SELF_CLOSING:
                    continue  # <x/> in SVG or MathML
                close[i] = n  # until its end tag is found
                open_.setdefault(name, []).append(i)
        self._close = close
        return close

    def span(self, i: int) -> tuple[int, int]:
        """Offsets of element ``i`` from its start tag to the end of its end tag."""
        j = self.close_of(i)
        end = self.tags[j].end() if j < len(self.tags) else len(self.html)
        return self.tags[i].start(), end

    def inner(self, i: int) -> tuple[int, int]:
        """Offsets of the content of element ``i`` (between its tags)."""
        j = self.close_of(i)
        end = self.tags[j].start() if j < len(self.tags) else len(self.html)
        return self.tags[i].end(), max(end, self.tags[i].end())

    def text(self, start: int, end: int, skip: Sequence[tuple[int, int]] = ()) -> str:
        """The text a reader sees between two offsets: tags, comments and raw-text contents
        removed, ``skip`` ranges left out, character references decoded."""
        key = (start, end, tuple(skip))
        fresh = self.changed is not None and start <= self.changed < end
        if not fresh and key in self._texts:
            return self._texts[key]
        text = self._text(start, end, skip)
        if not fresh:
            self._texts[key] = text
        return text

    def _text(self, start: int, end: int, skip) -> str:
        cut = sorted([*skip, *((a, b) for _, a, b in self.raw if a < end and b > start)])
        parts, pos = [], start
        for a, b in cut:
            if b <= pos or a >= end:
                continue
            if a > pos:
                parts.append(self.html[pos:a])
            pos = max(pos, b)
        if pos < end:
            parts.append(self.html[pos:end])
        text = TAG.sub("", "".join(parts))
        return unescape(text) if "&" in text else text


# Elements the tree builder makes without a tag when the markup leaves them out.
IMPLIED = frozenset({"html", "head", "body", "tbody", "colgroup"})


def _comment_data(text: str) -> str:
    if text.startswith("<!--"):
        return text[4:-3] if text.endswith("-->") and len(text) >= 7 else text[4:]
    return text[1:-1] if text.startswith("<?") else text[2:-1] if text.endswith(">") else text[2:]


def browser_view(doc: Doc):
    """What a browser builds from the page (:mod:`lessonkit.util.markup`), aligned with this scan:
    ``(tree, pairs, None)`` where ``pairs`` lists ``(tag index, element)`` for every element the
    browser made from a start tag of :attr:`Doc.tags`, when the two agree on every element (its
    name and attributes), every comment (its text) and their order; else ``(tree, pairs so far,
    offset)`` with the offset in the page where they first differ (the elements after it are not
    paired: :func:`unpaired`). Kept in :attr:`Doc.memo` (a
    one-character change of text, :meth:`Doc.with_text`, changes neither)."""
    got = doc.memo.get("browser")
    if got is not None:
        return got
    from lessonkit.util import markup

    tree = markup.parse(doc.html)
    tags, comments = doc.tags, doc.comments
    opens = [i for i, m in enumerate(tags) if not m[1]]
    n_open, n_comm = len(opens), len(comments)
    pairs: list = []
    a = c = 0  # the next start tag (in opens) and the next comment of the scan
    bad = None
    for node in markup.nodes(tree):
        tag = node.tag or ""
        k = opens[a] if a < n_open else None
        com = comments[c] if c < n_comm else None
        if com is not None and (k is None or com.start() < tags[k].start()):
            if tag == "-comment":
                html = node.html or ""
                data = html[4:-3] if html.startswith("<!--") else html
                if _comment_data(com[0]) == data:
                    c += 1
                    continue
            bad = com.start()
            break
        if tag == "-comment":
            bad = tags[k].start() if k is not None else len(doc.html)
            break
        if k is not None:
            m = tags[k]
            if m[2] == tag or m[2].lower() == tag.lower():
                attrs = node.attributes
                raw = m[3]
                if not attrs:
                    same = not raw or not raw.strip(" \t\n\f\r/")
                else:
                    canon = "".join(f' {n}="{v}"' if v else f" {n}" for n, v in attrs.items())
                    same = raw == canon or raw.rstrip(" \t\n\f\r/") == canon
                if same or doc.attrs(k) == markup.attributes(node):
                    pairs.append((k, node))
                    a += 1
                    continue
        if tag.lower() in IMPLIED and not node.attributes:
            continue
        # an element one of them has and the other has not: the place is after the last one both have
        bad = min(tags[k].start() if k is not None else len(doc.html), tags[pairs[-1][0]].end() if pairs else 0)
        break
    if bad is None and (a < n_open or c < n_comm):
        rest = [tags[opens[a]].start()] if a < n_open else []
        bad = min(rest + ([comments[c].start()] if c < n_comm else []))
    got = doc.memo["browser"] = (tree, pairs, bad)
    return got


def unpaired(doc: Doc) -> list:
    """The elements of the browser's document that :func:`browser_view` could not pair with a tag
    of the scan (all after the first difference), in document order."""
    tree, pairs, _bad = browser_view(doc)
    from lessonkit.util import markup

    paired = {node.mem_id for _, node in pairs}
    return [n for n in markup.elements(tree) if n.mem_id not in paired]
