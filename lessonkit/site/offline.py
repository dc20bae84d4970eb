"""The offline edition: the written site as one zip that works unzipped and opened from disk.

A build makes it from the site it has just written (no second MkDocs build), after the search
index is final, into :data:`PATH` of the site (``downloads/<name>-offline.zip``), and links it
from the pages that carry ``[[lessonkit:offline-edition]]``. Opened from ``file://``, a site
breaks in three ways, and the edition changes each, in its own copies only:

* **Links to folders** (``lessons/05/``) open a directory listing: every relative link of an
  ``<a>``, ``<area>`` or ``<link>`` that names a folder of the site gets ``index.html``; the
  search index's locations too.
* **Search** cannot fetch its index (``fetch`` of a ``file:`` URL is refused): the index is
  carried by ``search/search_index.js`` (``var __index = …``), which Material's own script
  loads with a ``<script>`` when the page is a ``file:`` one (as Material's ``offline`` plugin
  does). Chromium also refuses a worker script from a ``file:`` URL, where Material's plugin
  loads a shim from a CDN (``iframe-worker``, a request to another host); here
  ``assets/offline/search.js``, loaded before Material's script, carries the text of the search
  worker and of the lunr language files it imports, and starts the worker from a ``blob:`` URL
  of that text (its ``importScripts`` calls run the carried files).
* **Exercises** run their checks in a module worker that loads Pyodide with ``import`` and
  ``fetch``: Chromium refuses all three from ``file:``. The edition carries the runtime in classic
  scripts and runs it in a classic worker from a ``blob:`` URL (:mod:`lessonkit.site.offline_runtime`):
  the exercise blocks keep their editor and buttons, their note says how much the first run reads
  (label ``exercise-offline``, ``{size}`` in MB), and ``assets/offline/exercise.js`` is added to
  their pages. ``assets/pyodide/`` and the site's module worker are left out of the zip.
  Runnable blocks (of the class ``lk-exercise`` too) keep their code and their recorded answer,
  without the button or the note on the download (the edition's worker runs checks, not snippets).

Every page keeps its Content-Security-Policy, computed again for the changed page by
:mod:`lessonkit.site.csp`, with one source more: ``worker-src blob:`` (the search worker). A page
with an exercise block keeps the ``'wasm-unsafe-eval'`` its block asks for, and no page gets
``'unsafe-eval'``. Chromium matches ``'self'`` against the ``file:`` scripts of a page opened from
disk (measured with Chromium 156), so scripts stay ``'self'`` and hashes only.

The pages are changed on their parsed documents (Lexbor) and serialized again; the document the
written text parses into is compared with the changed one node by node (:func:`_same`), so that
a serialization a browser would read differently is an error, not a silent change. The zip is
reproducible (sorted entries, the build's ``SOURCE_DATE_EPOCH``): ``verify --site`` makes it
again from the written site and compares the bytes (:func:`problems`).
"""

from __future__ import annotations

import calendar
import io
import json
import posixpath
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from lessonkit.errors import Problem
from lessonkit.site import offline_runtime

INDEX_JSON = "search/search_index.json"
INDEX_JS = "search/search_index.js"
SHIM = "assets/offline/search.js"
WORKERS = "assets/javascripts/workers/"
LUNR = "assets/javascripts/lunr/"
# What a folder of the written site holds that the edition leaves out: the runtime of exercises as
# the site serves it and the site's module worker (the edition carries them in classic scripts,
# lessonkit.site.offline_runtime), the 404 page (its links start at the server's root), files
# for servers and crawlers, source maps.
LEFT_OUT_FOLDERS = ("assets/pyodide/",)
LEFT_OUT_FILES = frozenset(
    {
        "404.html",
        "sitemap.xml",
        "sitemap.xml.gz",
        "objects.inv",
        INDEX_JSON,
        "assets/exercise/worker.js",
        "assets/exercise/runner.js",
        "assets/exercise/lkcheck.py",
    }
)
LEFT_OUT_SUFFIXES = (".map",)
LINKS = (("a", "href"), ("area", "href"), ("link", "href"))
EXTRA: dict[str, tuple[str, ...]] = {"worker-src": ("blob:",)}  # the policy's one addition on every page of the edition
SIZE_CLASS = "lk-offline-size"  # the <data> the build fills with the zip's size (value: its bytes)
LINK_CLASS = "lk-offline"  # the span around the link, which the edition replaces with a note
# Not a <span>: Material's search parser matches an excluded element's end by its tag name, so a
# span inside the excluded span would end the exclusion early.
SIZE_PLACEHOLDER = f'<data class="{SIZE_CLASS}" value="0">?</data>'
HINT = "a hook or plugin after lessonkit changed the site or the offline edition; rebuild"


@dataclass
class Edition:
    files: dict[str, bytes] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def top(zip_path: str) -> str:
    """The folder the zip unpacks into: the zip's name without ``.zip``."""
    return posixpath.basename(zip_path).removesuffix(".zip")


def size_text(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def link(words_fill, path: str) -> str:
    """``[[lessonkit:offline-edition]]``: the label ``offline-edition`` (a Markdown link to ``path``
    and ``{size}``) in a span that the search index leaves out (the index is in the zip, so it
    cannot hold the zip's size); the size is a placeholder the build fills (:func:`fill_size`)."""
    inner = words_fill("offline-edition", path=path, size=SIZE_PLACEHOLDER)
    return f'<span class="{LINK_CLASS}" data-search-exclude="">{inner}</span>'


def _included(rel: str, zip_path: str) -> bool:
    if rel == zip_path or rel in LEFT_OUT_FILES or rel.endswith(LEFT_OUT_SUFFIXES):
        return False
    return not rel.startswith(LEFT_OUT_FOLDERS)


@lru_cache(maxsize=4096)
def _folder_link(value: str, page_dir: str, folders: frozenset[str]) -> str | None:
    """``value`` with ``index.html`` where it names a folder of the site, else None."""
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
        return None
    target = posixpath.normpath(posixpath.join(page_dir, parts.path))
    target = "" if target == "." else target
    if target.startswith("../") or target == ".." or target not in folders:
        return None
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunsplit(("", "", path + "index.html", parts.query, parts.fragment))


def _script_node(src: str):
    from lessonkit.util import markup

    return markup.parse(f'<script src="{src}"></script>').css_first("script")


def _keep_first_newlines(tree) -> None:
    """The HTML parser drops one newline right after ``<pre>``, ``<textarea>`` and ``<listing>``,
    and the serializer does not write it back: give a text that starts with one its extra newline."""
    for node in tree.css("pre, textarea, listing"):
        first = node.child
        if first is not None and first.is_text_node and (first.text_content or "").startswith("\n"):
            first.replace_with("\n" + (first.text_content or ""))


def _same(want: str, written) -> str | None:
    """None when the written text parses into the changed document: ``want`` is that document
    serialized before the newlines the parser drops after ``<pre>``, ``<textarea>`` and
    ``<listing>`` were written back, and the written text's document must serialize to it (the
    serializer writes each node, attribute and text; a difference a browser would read changes
    it). Else where they first differ."""
    got = written.html or ""
    if want == got:
        return None
    at = next((i for i, (x, y) in enumerate(zip(want, got, strict=False)) if x != y), min(len(want), len(got)))
    return f"it differs at {want[max(0, at - 30) : at + 30]!r}"


def _page(
    rel: str, html: str, folders: frozenset[str], note: str, exercise_note: str, runtime_mb: str | None
) -> tuple[str, str | None, int]:
    """The edition's copy of the page ``rel``, what went wrong (None: nothing) and how many exercise
    blocks it has. ``runtime_mb``: the size of the carried runtime (MB, as the note shows it), None
    when the edition has none."""
    from lessonkit.site import csp
    from lessonkit.util import markup

    tree = markup.parse(html)
    for node in csp._policies(tree):
        node.decompose()
    page_dir = posixpath.dirname(rel)
    for tag, attr in LINKS:
        for node in tree.css(f"{tag}[{attr}]"):
            new = _folder_link(node.attributes.get(attr) or "", page_dir, folders)
            if new is not None:
                node.attrs[attr] = new
    for node in tree.css(f"span.{LINK_CLASS}"):
        for child in list(_children(node)):
            child.decompose()
        node.insert_child(note)
    exercises = tree.css(".lk-block.lk-exercise")
    running = False  # an exercise block that runs its checks in the edition
    for node in exercises:
        if "lk-runnable" in (node.attributes.get("class") or "").split():
            _exercise(node, None)  # its code and the answer the build recorded, folded beneath
        elif runtime_mb is None:
            _exercise(node, exercise_note.replace("{size}", "?"))
        else:
            _runnable(node, exercise_note.replace("{size}", runtime_mb), runtime_mb)
            running = True
    up = "../" * rel.count("/")
    for node in tree.css("script[src]"):
        src = node.attributes.get("src") or ""
        if posixpath.normpath(posixpath.join(page_dir, src)).startswith("assets/javascripts/bundle."):
            if running:
                node.insert_before(_script_node(up + offline_runtime.FACTORY))
            node.insert_before(_script_node(up + SHIM))
            break
    want = tree.html or ""  # the changed document, as its serialization reads back when it does
    _keep_first_newlines(tree)
    body = tree.html or ""
    written = markup.parse(body)
    if _same(want, written):  # a document the parser cannot write back as it reads (`<plaintext>`):
        return html, None, len(exercises)  # the edition holds the verified page as it is (its links may need a server)
    extra = _merge(csp.extras(written), EXTRA)
    return csp.apply(body, rel, extra), None, len(exercises)


def _runnable(node, note: str, mb: str) -> None:
    """An exercise block of the edition that runs: as the site has it, with the note that says what
    the first run reads from the edition's folder, and that size for the loading message."""
    for p in node.css("p.lk-ex-note"):
        for child in list(_children(p)):
            child.decompose()
        p.insert_child(note)
    node.attrs["data-lk-size"] = mb


def _exercise(node, note: str | None) -> None:
    """An exercise block of an edition without the runtime (a site that lacks a file of
    :data:`lessonkit.site.offline_runtime.NEEDED`, which is reported): its files to read, the
    note; no buttons, no editor state, no class that makes lessonkit.js load the runner, no
    WebAssembly in the policy."""
    classes = (node.attributes.get("class") or "").split()
    node.attrs["class"] = " ".join("lk-exercise-offline" if c == "lk-exercise" else c for c in classes)
    for attr in ("data-lk-csp", "data-lk-code"):
        if attr in node.attributes:
            del node.attrs[attr]
    for p in node.css("p.lk-ex-note"):
        if note is None:  # a runnable block: the edition does not run it, and its note names the download
            p.decompose()
            continue
        for child in list(_children(p)):
            child.decompose()
        p.insert_child(note)
    for gone in node.css("div.lk-ex-bar, div.lk-ex-result, p.lk-ex-keys, pre.lk-ex-lines"):
        gone.decompose()
    for area in node.css("textarea.lk-ex-code"):
        area.attrs["readonly"] = ""
        if "aria-describedby" in area.attributes:
            del area.attrs["aria-describedby"]
    for folded in node.css("details.lk-ex-reference[hidden]"):
        del folded.attrs["hidden"]


def _children(node):
    child = node.child
    while child is not None:
        yield child
        child = child.next


def _merge(a: dict[str, tuple[str, ...]], b: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    out = dict(a)
    for name, sources in b.items():
        out[name] = (*out.get(name, ()), *(s for s in sources if s not in out.get(name, ())))
    return out


def _index(data: bytes, folders: frozenset[str]) -> tuple[bytes, list[str]]:
    """``search_index.js`` of the edition from the written index, and the lunr languages it names."""
    index = json.loads(data)
    for doc in index.get("docs", []):
        location = doc.get("location", "")
        parts = urlsplit(location)
        new = _folder_link(location, "", folders) if parts.path else None
        if not parts.path:
            new = urlunsplit(("", "", "index.html", parts.query, parts.fragment))
        if new is not None:
            doc["location"] = new
    langs = index.get("config", {}).get("lang", [])
    text = json.dumps(index, ensure_ascii=False, separators=(",", ":"))
    return f"var __index = {text};\n".encode(), [str(lang) for lang in langs]


def _lunr_files(langs: list[str]) -> list[str]:
    """The files Material's search worker imports for ``langs`` (what its ``importScripts`` asks for)."""
    out: list[str] = []
    for lang in langs:
        if lang == "ja":
            out.append("tinyseg.js")
        elif lang in ("hi", "th"):
            out.append("wordcut.js")
        if lang != "en":
            out.append(f"min/lunr.{lang}.min.js")
    if len(langs) > 1:
        out.append("min/lunr.multi.min.js")
    return ["min/lunr.stemmer.support.min.js", *out] if out else []


def _shim(worker_name: str, worker: str, imports: dict[str, str]) -> bytes:
    """``assets/offline/search.js``: the worker's text, and a ``Worker`` that starts it from a blob."""
    carried = "".join(
        f"self.__lkImports[{json.dumps(name)}] = function () {{\n{text}\n}};\n" for name, text in imports.items()
    )
    blob = (
        "self.__lkImports = {};\n" + carried + "self.importScripts = function () {\n"
        "  for (var i = 0; i < arguments.length; i++) {\n"
        '    var name = String(arguments[i]).split("/").pop(), run = self.__lkImports[name];\n'
        '    if (!run) throw new Error("offline edition: the search worker imports " + name + ", not carried");\n'
        "    run.call(self);\n"
        "  }\n"
        "};\n"
        "(function () {\n" + worker + "\n}).call(self);\n"
    )
    code = (
        "/* The offline edition of this site (lessonkit.site.offline): opened from disk, Chromium refuses\n"
        "   a worker script from a file: URL, so Material's search worker starts from a blob: URL of its\n"
        "   text, carried here with the lunr files it imports. Served over http(s) this does nothing. */\n"
        "(function () {\n"
        '  if (location.protocol !== "file:" || !window.Worker || !window.Blob) return;\n'
        "  var Native = window.Worker, NAME = " + json.dumps(worker_name) + ", CODE = " + json.dumps(blob) + ";\n"
        "  function OfflineWorker(url, options) {\n"
        '    if (String(url).split("?")[0].split("/").pop() !== NAME) return new Native(url, options);\n'
        '    var made = URL.createObjectURL(new Blob([CODE], { type: "text/javascript" }));\n'
        "    try { return new Native(made); } finally { URL.revokeObjectURL(made); }\n"
        "  }\n"
        "  OfflineWorker.prototype = Native.prototype;\n"
        "  window.Worker = OfflineWorker;\n"
        "})();\n"
    )
    return code.encode()


def edition(site: dict[str, bytes], zip_path: str, note: str, exercise_note: str) -> Edition:
    """The files of the offline edition of a written site (``site``: every file by its posix path)."""
    out = Edition()
    files = {rel: data for rel, data in site.items() if _included(rel, zip_path)}
    runtime_mb: str | None = None
    lacking = offline_runtime.missing(site)
    why = f"the site lacks {lacking[0]}" if lacking else ""
    if not lacking:
        try:
            runtime = offline_runtime.files(site)
        except offline_runtime.ShapeError as exc:
            why = str(exc)
        else:
            out.files.update(runtime)
            runtime_mb = f"{offline_runtime.size(runtime) / 1048576:.1f}"
    dirs = {posixpath.dirname(rel) for rel in files if rel.endswith("index.html")}
    folders = frozenset("" if f == "." else f for f in dirs)
    for rel, data in files.items():
        if not rel.endswith(".html"):
            out.files[rel] = data
            continue
        page, wrong, exercises = _page(rel, data.decode("utf-8"), folders, note, exercise_note, runtime_mb)
        if wrong:
            out.problems.append(Problem(wrong, rel, None, HINT))
        elif exercises and runtime_mb is None:
            out.problems.append(
                Problem(
                    f"its exercise blocks cannot run in the offline edition: {why}",
                    rel,
                    None,
                    "list pyodide.js among `files` of sourcemap/pyodide.toml (the edition carries the package's "
                    "classic loader), or pin a Pyodide whose pyodide.asm.mjs lessonkit.site.offline_runtime knows",
                )
            )
        out.files[rel] = page.encode("utf-8")
    if INDEX_JSON in site:
        out.files[INDEX_JS], langs = _index(site[INDEX_JSON], folders)
        workers = sorted(r for r in site if r.startswith(WORKERS) and r.endswith(".js"))
        imports: dict[str, str] = {}
        for name in _lunr_files(langs):
            rel = LUNR + name
            if rel not in site:
                out.problems.append(Problem(f"the search worker imports {rel}, which the site lacks", rel, None, HINT))
                continue
            imports[posixpath.basename(name)] = site[rel].decode("utf-8")
        if len(workers) == 1:
            worker = site[workers[0]].decode("utf-8")
            out.files[SHIM] = _shim(posixpath.basename(workers[0]), worker, imports)
        else:
            out.problems.append(
                Problem(
                    f"the site has {len(workers)} search workers under {WORKERS}; one expected", WORKERS, None, HINT
                )
            )
    return out


def read_site(site_dir: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    root = Path(site_dir)
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def zipped(ed: Edition, top: str, epoch: int) -> bytes:
    from lessonkit.site.attachments import zip_bytes

    return zip_bytes({f"{top}/{rel}": data for rel, data in ed.files.items()}, epoch)


def fill_size(html: str, n: int) -> str:
    """A written page with the edition's size in its size element (the placeholder the link wrote)."""
    return html.replace(SIZE_PLACEHOLDER, f'<data class="{SIZE_CLASS}" value="{n}">{size_text(n)}</data>')


def problems(site: dict[str, bytes], zip_path: str, note: str, exercise_note: str, label: str) -> list[Problem]:
    """``verify --site``: the offline edition in ``site`` (every file of the written site) is the
    edition of that site, byte for byte (made again with the date its entries carry), and every
    page that links it states its size. ``label``: the site folder, for the problems."""
    return check(site, zip_path, note, exercise_note, label)[0]


def check(
    site: dict[str, bytes], zip_path: str, note: str, exercise_note: str, label: str
) -> tuple[list[Problem], int]:
    """:func:`problems`, and how many files the edition has (0: none was checked)."""
    where = f"{label}/{zip_path}"
    data = site.get(zip_path)
    if data is None:
        return [Problem("the site has no offline edition", where, None, "rebuild with `lessonkit build`")], 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            have = {i.filename: zf.read(i) for i in infos}
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return [Problem(f"the offline edition is not a readable zip ({exc})", where, None, HINT)], 0
    epoch = calendar.timegm((*infos[0].date_time, 0, 0, 0)) if infos else 0
    ed = edition(site, zip_path, note, exercise_note)
    out = [Problem(p.message, f"{label}/{p.path}", p.line, p.hint) for p in ed.problems]
    if zipped(ed, top(zip_path), epoch) != data:
        want = {f"{top(zip_path)}/{rel}": b for rel, b in ed.files.items()}
        names = sorted(set(want) | set(have))
        first = next((n for n in names if want.get(n) != have.get(n)), None)
        what = (
            f"{first} differs from the edition of this site"
            if first in want and first in have
            else f"{first} is {'missing from' if first in want else 'not part of'} the edition of this site"
        )
        out.append(Problem(f"the offline edition is not this site's: {what}", where, None, HINT))
    size = size_text(len(data))
    for rel, page in sorted(site.items()):
        if not rel.endswith(".html") or f'class="{LINK_CLASS}"'.encode() not in page:
            continue
        from lessonkit.util import markup

        tree_ = markup.parse(page.decode("utf-8", "replace"))
        for span in tree_.css(f"data.{SIZE_CLASS}"):
            if (span.text(), span.attributes.get("value")) != (size, str(len(data))):
                what = f"the page gives the offline edition's size as {span.text()!r}; it is {size}"
                what += f" ({len(data)} bytes)"
                out.append(Problem(what, f"{label}/{rel}", None, HINT))
    return out, len(ed.files)
