"""A written page as the document a browser builds from it: its elements in document order, each
with the range of its descendants, and its text nodes, for the checks of what a page shows
(:mod:`lessonkit.site.shipped`).

The one reader is :mod:`lessonkit.util.markup` (lexbor, the HTML Standard's tokenizer and tree
construction): names and classes are those a browser sees (character references decoded, a
comment ends where the standard ends it, ``<svg><title>`` is an element), and what the checks
compare is what a browser shows. Elements are numbered in document order (the content of a
``<template>`` right after the ``<template>``); element ``i``'s descendants are the elements
``i + 1 … end(i) - 1``. Text is what a reader sees: the text nodes, less the content of raw-text
elements (``script``, ``style``, ``noscript``, …: kept apart, see :attr:`Doc.raw`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain

from lessonkit.util import markup

# Elements whose content a reader does not see as the page's text.
RAW = frozenset("script style textarea title xmp iframe noembed noframes noscript plaintext".split())
_SKIP = frozenset({"-document", "-doctype", "!doctype", "-comment", "#document-fragment", "-document-fragment"})


class Doc:
    """One page as a browser's document (see the module docstring)."""

    def __init__(self, html: str):
        self.html = html
        self.tree = markup.parse(html)
        self.nodes: list = []  # elements in document order
        self.names: list[str] = []
        self.parent: list[int] = []  # the element index of each element's parent (-1: none)
        self.ends: list[int] = []  # one past the last descendant of each element
        self.tstart: list[int] = []  # the text nodes of element i are tstart[i] … tend[i] - 1
        self.tend: list[int] = []
        self.texts: list[str] = []  # every text node, in document order
        self.tnodes: list = []
        self.hidden: list[bool] = []  # a text node inside a raw-text element
        self.first_text: list[tuple[int, int]] = []  # (element, its first child when that is text)
        self.raw: list[int] = []  # the raw-text elements, outermost ones
        self._walk()
        self._attrs: dict[int, dict[str, str]] = {}
        self.memo: dict = {}  # what callers derive from the markup alone (shared by with_text)
        self._texts: dict = {}  # text() by element and skip (shared by with_text, see there)
        self.changed: int | None = None  # the text node with_text replaced

    def _walk(self) -> None:
        root = self.tree.root
        if root is None:
            return
        top = root.parent if root.parent is not None else root
        iters: list[Iterator] = [top.traverse(include_text=True)]
        stack: list[tuple[int, int]] = []  # (mem_id, element index) of the open elements
        owner: dict[int, int] = {}  # a template's content fragment -> the template's index
        hid: list[bool] = []
        started: set[int] = set()  # elements whose first child has been seen
        while iters:
            node = next(iters[-1], None)
            if node is None:
                iters.pop()
                continue
            tag = node.tag or ""
            if tag in _SKIP or not tag:
                continue
            parent = node.parent
            pid = parent.mem_id if parent is not None else None
            if pid in owner:  # in a template's content: the template's child
                p = owner[pid]
                self._close(stack, lambda e, p=p: e[1] == p)
            else:
                self._close(stack, lambda e, pid=pid: e[0] == pid)
                p = stack[-1][1] if stack else -1
            if tag == "-text":
                if p >= 0 and p not in started:
                    started.add(p)
                    self.first_text.append((p, len(self.texts)))
                self.texts.append(node.text_content or "")
                self.tnodes.append(node)
                self.hidden.append(hid[p] if p >= 0 else False)
                continue
            started.add(p)
            i = len(self.nodes)
            name = tag.lower()
            self.nodes.append(node)
            self.names.append(name)
            self.parent.append(p)
            self.ends.append(-1)
            self.tstart.append(len(self.texts))
            self.tend.append(-1)
            hidden_here = name in RAW
            if hidden_here and not (p >= 0 and hid[p]):
                self.raw.append(i)
            hid.append(hidden_here or (p >= 0 and hid[p]))
            stack.append((node.mem_id, i))
            if name == "template":
                frags = node.template_fragments()
                for f in frags:
                    owner[f.mem_id] = i
                iters.append(chain.from_iterable(f.traverse(include_text=True) for f in frags))
        self._close(stack, lambda e: False)

    def _close(self, stack: list, keep) -> None:
        while stack and not keep(stack[-1]):
            _, j = stack.pop()
            self.ends[j], self.tend[j] = len(self.nodes), len(self.texts)

    def with_text(self, t: int, new: str) -> "Doc":
        """This page with text node ``t`` reading ``new``: the elements are kept, not parsed again, and
        so are the texts of elements that do not hold ``t`` (see :meth:`swapped`)."""
        other = object.__new__(Doc)
        other.__dict__.update(self.__dict__)  # the memo is shared: it holds what the change cannot alter
        other.texts = list(self.texts)
        other.texts[t] = new
        other.changed = t
        return other

    @contextmanager
    def swapped(self, t: int, new: str) -> Iterator["Doc"]:
        """This page with text node ``t`` reading ``new`` (:meth:`with_text`), the browser's document
        changed the same way while the block lasts (so :meth:`markup` serializes the change)."""
        old = self.texts[t]
        self._replace(t, new)
        try:
            other = self.with_text(t, new)
            other.html = self.tree.html or ""  # the page as the changed document writes it
            yield other
        finally:
            self._replace(t, old)

    def _replace(self, t: int, value: str) -> None:
        node = self.tnodes[t]
        before, parent = node.prev, node.parent
        node.replace_with(value)
        self.tnodes[t] = before.next if before is not None else parent.first_child

    def top(self) -> int:
        """The first element of the body (of a fragment of markup parsed as a page: its first element)."""
        body = next((i for i in range(len(self.nodes)) if self.names[i] == "body"), None)
        return body + 1 if body is not None and body + 1 < self.ends[body] else -1

    def __len__(self) -> int:
        return len(self.nodes)

    def name(self, i: int) -> str:
        return self.names[i]

    def end(self, i: int) -> int:
        """One past the index of element ``i``'s last descendant."""
        return self.ends[i]

    def attrs(self, i: int) -> dict[str, str]:
        got = self._attrs.get(i)
        if got is None:
            got = self._attrs[i] = markup.attributes(self.nodes[i])
        return got

    def classes(self, i: int) -> list[str]:
        return self.attrs(i).get("class", "").split()

    def has_class(self, i: int, cls: str) -> bool:
        return cls in self.classes(i)

    def children(self, i: int) -> Iterator[int]:
        """The child elements of element ``i``, in order."""
        k, stop = i + 1, self.ends[i]
        while k < stop:
            yield k
            k = self.ends[k]

    def text(self, i: int, skip: Iterable[int] = ()) -> str:
        """The text a reader sees in element ``i``, less that of the elements ``skip``."""
        skip = tuple(skip)
        key = (i, skip)
        fresh = self.changed is not None and self.tstart[i] <= self.changed < self.tend[i]
        if not fresh and key in self._texts:
            return self._texts[key]
        cuts = sorted((self.tstart[k], self.tend[k]) for k in skip)
        texts, hidden, parts, pos = self.texts, self.hidden, [], self.tstart[i]
        for a, b in [*cuts, (self.tend[i], self.tend[i])]:
            parts += [texts[t] for t in range(pos, max(pos, a)) if not hidden[t]]
            pos = max(pos, b)
        text = "".join(parts)
        if not fresh:
            self._texts[key] = text
        return text

    def raw_text(self, i: int) -> str:
        """The content of raw-text element ``i`` as written (a script's code, a style sheet)."""
        return "".join(self.texts[self.tstart[i] : self.tend[i]])

    def visible(self, i: int, skip: Iterable[int] = ()) -> list[int]:
        """The text nodes a reader sees in element ``i`` outside the elements ``skip``, in order."""
        cuts = sorted((self.tstart[k], self.tend[k]) for k in skip)
        out, pos = [], self.tstart[i]
        for a, b in [*cuts, (self.tend[i], self.tend[i])]:
            out += [t for t in range(pos, max(pos, a)) if not self.hidden[t]]
            pos = max(pos, b)
        return out

    def markup(self, i: int) -> str:
        """Element ``i`` as the browser's document serializes it (the HTML Standard's serialization)."""
        return self.nodes[i].html or ""

    def attribute_text(self, i: int) -> str:
        """Element ``i``'s attributes written as a serializer writes them (``name="value"``, a bare
        attribute by its name), in the order of the page."""
        return " ".join(f'{n}="{v}"' if v else n for n, v in self.attrs(i).items())

    def line(self, i: int, attr: str | None = None) -> int:
        """The line of the page where element ``i`` has its attribute ``attr`` (its name and first
        attribute when None): parsed again, only for what is refused."""
        if attr is None:
            attr = next(iter(self.attrs(i)), None)
        return markup.element_line(self.html, self.tree, self.nodes[i], attr)


def serialized(html: str) -> str:
    """A fragment of markup (a block as lessonkit writes it) as the browser's document of a page
    with it in its body serializes it."""
    doc = markup.parse(html)
    body = doc.body
    return (body.inner_html or "") if body is not None else ""
