"""The Content-Security-Policy of every page a build writes, and its check (``verify --site``).

Every HTML file of the site starts its ``<head>`` with
``<meta http-equiv="Content-Security-Policy" content="…">``: the reader's browser itself then
refuses any script, style, frame, plugin or connection the page did not come with. The policy
(:data:`BASE`) allows the site's own files (``'self'``) and, by SHA-256 hash, exactly the inline
``<script>`` and ``<style>`` elements of the page as it is written (Material's inline scripts,
the ``<style>`` of lessonkit's diagrams, the inline scripts of a project's own ``overrides/``
templates); no ``'unsafe-inline'``, no ``'unsafe-eval'``, no ``style`` attribute
(``style-src-attr 'none'``). ``img-src`` allows ``data:`` because Material's and lessonkit's
stylesheets draw their icons from ``data:image/svg+xml`` URLs (CSS masks and backgrounds).

The hashes are computed from the final page (:func:`apply`, the build's last step for each page)
by a parser that follows the HTML standard (Lexbor, through selectolax), with scripting enabled
as in a reader's browser, so that what is hashed is what the browser runs: an element's child
text, after the parser's newline normalisation and, inside SVG, its character references.
``<script>`` data blocks (a ``type`` that is not JavaScript, such as Material's
``<script id="__config" type="application/json">``) never run and need no hash.

A page that needs more than the base policy names it in :func:`extras` (one place for it: both
the build and the check read it), for instance ``'wasm-unsafe-eval'`` in ``script-src`` for a
page that runs Python in the browser with WebAssembly.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from html import escape

from lessonkit.errors import LessonError, Problem
from lessonkit.kinds.exercise import CSP_NEEDS

HTTP_EQUIV = "Content-Security-Policy"
# The policy's directives, in the order they are written; the hashes of a page's inline code are
# added to script-src and style-src. `frame-ancestors`, `report-uri` and `sandbox` are ignored in
# a <meta> policy, so they are not written.
BASE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("default-src", ("'self'",)),
    ("script-src", ("'self'",)),
    ("style-src", ("'self'",)),
    ("style-src-attr", ("'none'",)),
    ("img-src", ("'self'", "data:")),
    ("font-src", ("'self'",)),
    ("connect-src", ("'self'",)),
    ("worker-src", ("'self'",)),
    ("object-src", ("'none'",)),
    ("frame-src", ("'none'",)),
    ("base-uri", ("'none'",)),
    ("form-action", ("'self'",)),
)
HASHED = {"script": "script-src", "style": "style-src"}  # inline element → the directive its hashes go in
# Sources a policy of this site never holds, whatever a page's extras say.
UNSAFE = frozenset({"'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*", "http:", "https:", "blob:"})
# The JavaScript MIME types of the HTML standard: a <script> of one of these types (or of none) runs.
JS_TYPES = frozenset(
    f"{prefix}/{name}"
    for prefix in ("application", "text")
    for name in (
        "ecmascript javascript x-ecmascript x-javascript".split()
        + (
            "javascript1.0 javascript1.1 javascript1.2 javascript1.3 javascript1.4 javascript1.5 jscript "
            "livescript x-ecmascript x-javascript".split()
            if prefix == "text"
            else []
        )
    )
)
# Other <script> types that are inline code to a browser's policy (not data blocks).
CODE_TYPES = frozenset({"module", "importmap", "speculationrules"})
HINT_BUILD = "a hook or plugin after lessonkit changed the page or its policy; remove it and rebuild"


NEEDS = CSP_NEEDS  # what an engine block may ask its page's policy for (the one mapping, of its kind)


def extras(tree) -> dict[str, tuple[str, ...]]:
    """Sources a parsed page needs beyond :data:`BASE`, by directive: what its engine blocks ask
    for (:data:`NEEDS`). The one place a per-page addition is made; the build writes it and
    ``verify --site`` expects it, both from the page itself."""
    out: dict[str, tuple[str, ...]] = {}
    for node in tree.css("[data-lk-csp]"):
        if "lk-block" not in (node.attributes.get("class") or "").split():
            continue
        for directive, source in NEEDS.get((node.attributes.get("data-lk-csp") or "").strip(), ()):
            if source not in out.get(directive, ()):
                out[directive] = (*out.get(directive, ()), source)
    return out


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _runs(node) -> bool:
    """Whether a ``<script>`` element is code (runs, or is an import map): not a data block."""
    attrs = node.attributes
    kind = attrs.get("type")
    if kind is None:
        language = attrs.get("language")
        return language is None or language == "" or f"text/{language.strip().lower()}" in JS_TYPES
    kind = kind.strip().lower()
    return kind == "" or kind in JS_TYPES or kind in CODE_TYPES


def _parse(html: str):
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(html, scripting=True)


@dataclass
class Inline:
    """The inline code of a page, as a browser finds it: each hash by directive, in page order."""

    hashes: dict[str, list[str]] = field(default_factory=lambda: {d: [] for d in HASHED.values()})


def inline(tree) -> Inline:
    """The hashes of the inline ``<script>`` (code, not data) and ``<style>`` elements of a parsed
    page, in HTML or SVG (a ``<template>``'s content is not the document's: it runs only once a
    script copies it into the page, and then that script's own policy applies)."""
    out = Inline()
    for node in tree.css("script, style"):
        if node.tag == "script" and ("src" in node.attributes or not _runs(node)):
            continue
        text = node.text(deep=False) or ""
        digest = _hash(text)
        directive = out.hashes[HASHED[node.tag]]
        if digest not in directive:
            directive.append(digest)
    return out


def policy(found: Inline, extra: dict[str, tuple[str, ...]] | None = None) -> dict[str, list[str]]:
    """The directives of a page's policy: :data:`BASE`, the page's hashes (sorted, so that the text
    depends only on which elements the page has), and its :func:`extras`."""
    out: dict[str, list[str]] = {}
    for name, sources in BASE:
        out[name] = [*sources, *sorted(found.hashes.get(name, []))]
    for name, sources in (extra or {}).items():
        out.setdefault(name, [])
        out[name] += [s for s in sources if s not in out[name]]
    return out


def text(directives: dict[str, list[str]]) -> str:
    return "; ".join(" ".join([name, *sources]) for name, sources in directives.items())


def meta(directives: dict[str, list[str]]) -> str:
    content = escape(text(directives), quote=False).replace('"', "&quot;")  # sources keep their quotes '…'
    return f'<meta http-equiv="{HTTP_EQUIV}" content="{content}">'


def apply(html: str, where: str, extra: dict[str, tuple[str, ...]] | None = None) -> str:
    """``html`` with its policy as the first child of ``<head>`` (the page must have none yet).

    The element is put right after the ``<head>`` start tag that Material's template writes, and
    the start of the result is parsed again: the parser, not the search for the tag, says whether
    it landed as the head's first child. ``where``: the page, for the error."""
    tree = _parse(html)
    head = tree.head
    if head is None or _policies(tree):
        raise LessonError(
            "the page has no <head>" if head is None else "the page already has a Content-Security-Policy",
            path=where,
            hint="the theme's template must write one <head> and no policy of its own; lessonkit writes the policy",
        )
    tag = meta(policy(inline(tree), extras(tree) if extra is None else extra))
    at = html.find("<head>")
    done = html[: at + len("<head>")] + tag if at >= 0 else ""
    if at < 0 or not _first_in_head(_parse(done + "</head>")):
        raise LessonError(
            "the page's <head> does not start with a plain `<head>` tag, so its policy cannot go first in it",
            path=where,
            hint="write `<head>` without attributes in the theme's main template (overrides/main.html)",
        )
    return done + html[at + len("<head>") :]


def with_script(html: str, code: str) -> str:
    """``html`` whose policy also allows the inline script ``code`` (by its hash). Only for ``serve``:
    MkDocs' live-reload server adds a script of its own to every page it serves (its text changes
    with every request), never to a file of the site; a page without the policy written by
    :func:`apply` is returned as it is."""
    first = _first_in_head(_parse(html))
    if first is None:
        return html
    directives, _ = parse_policy(first.attributes.get("content") or "")
    old = meta(directives)
    if old not in html:
        return html
    directives.setdefault("script-src", [])
    directives["script-src"].append(_hash(code))
    return html.replace(old, meta(directives), 1)


def _policies(tree) -> list:
    return [
        n
        for n in tree.css("meta[http-equiv]")
        if (n.attributes.get("http-equiv") or "").strip().lower() == HTTP_EQUIV.lower()
    ]


def _first_in_head(tree):
    """The head's first element when it is a policy <meta>, else None."""
    first = tree.head.child if tree.head is not None else None
    while first is not None and not first.is_element_node:  # text (white space), comments
        first = first.next
    if first is None or first.tag != "meta":
        return None
    return first if (first.attributes.get("http-equiv") or "").strip().lower() == HTTP_EQUIV.lower() else None


def parse_policy(content: str) -> tuple[dict[str, list[str]], list[str]]:
    """A policy's directives (names in lower case, sources as written) and the names written twice
    (a browser uses the first and ignores the others)."""
    out: dict[str, list[str]] = {}
    twice: list[str] = []
    for part in content.split(";"):
        words = part.split()
        if not words:
            continue
        name = words[0].lower()
        if name in out:
            twice.append(name)
        else:
            out[name] = words[1:]
    return out, twice


def _directive(name: str, have: list[str], sources) -> list[str]:
    """What directive ``name`` of a page's policy (``have``) allows beyond ``sources``, the
    sources lessonkit writes for it, and what of those it does not allow."""
    out = []
    bad = [s for s in have if s.lower() in UNSAFE and s not in sources]  # blob: workers, asked for
    for s in bad:
        out.append(f"`{name}` allows {s}, which lets code or styles the build did not emit run")
    for s in have:
        if s not in sources and s not in bad:
            kind = "an inline element the page does not have" if s.startswith("'sha256-") else "a source"
            out.append(f"`{name}` allows {s}, {kind} that lessonkit does not allow there")
    for s in sources:
        if s not in have:
            if s.startswith("'sha256-"):
                element = "<script>" if name == "script-src" else "<style>"
                out.append(
                    f"an inline {element} of the page (hash {s}) is not allowed by the policy: the browser refuses it"
                )
            else:
                out.append(f"`{name}` does not allow {s}")
    return out


def problems(html: str, where: str, extra: dict[str, tuple[str, ...]] | None = None) -> list[Problem]:
    """What is wrong with the policy of a written page (``verify --site``): it must be there, once,
    as the head's first child, say exactly what the build writes (:data:`BASE` and :func:`extras`),
    hash every inline script and style of the page and no other, and leave the character encoding
    where the browser looks for it. One problem per finding."""
    tree = _parse(html)
    out: list[Problem] = []

    def add(what: str, hint: str = HINT_BUILD) -> None:
        out.append(Problem(what, where, None, hint))

    found = _policies(tree)
    if not found:
        add("the page has no Content-Security-Policy <meta>")
        return out
    if len(found) > 1:
        add(f"the page has {len(found)} Content-Security-Policy <meta> elements; it must have one")
    first = _first_in_head(tree)
    if first is None or first.mem_id != found[0].mem_id:
        add("the Content-Security-Policy <meta> is not the first child of <head>: a script before it is not covered")
    have, twice = parse_policy(found[0].attributes.get("content") or "")
    for name in twice:
        add(f"the policy names `{name}` twice (the browser ignores the second)")
    want = policy(inline(tree), extras(tree) if extra is None else extra)
    for name in sorted(set(have) - set(want)):
        add(f"the policy has a directive `{name}` that lessonkit does not write")
    for name, sources in want.items():
        if name not in have:
            add(f"the policy has no `{name}` directive")
        else:
            for what in _directive(name, have[name], sources):
                add(what)
    # Browsers look for the encoding in the first 1024 bytes: the <meta charset> must still be there.
    if tree.css_first("meta[charset]") is not None:
        start = html.encode("utf-8")[:1024].decode("utf-8", "ignore")
        if _parse(start).css_first("meta[charset]") is None:
            add(
                "the character encoding (<meta charset>) is no longer within the page's first 1024 bytes, where "
                "browsers look for it",
                "keep the policy short: fewer distinct inline scripts and styles on the page",
            )
    return out
