"""The offline edition's exercise runner: Pyodide carried by classic scripts and started in a classic
worker from a ``blob:`` URL, so that an exercise runs from a page opened from ``file://``.

Measured in Chromium 156 with a page of the edition (origin ``null``) and its policy: classic
``<script src>`` files load; ``import()``, a module worker (even one from a ``blob:`` URL whose text
imports nothing) and ``fetch`` of a ``file:`` URL are refused; a classic worker from a ``blob:`` URL
starts, and may compile WebAssembly given ``'wasm-unsafe-eval'``. Hence:

* :data:`PARTS` under ``assets/offline/pyodide/`` are classic scripts that put text into
  ``self.lkOfflineRuntime``: ``code.js`` the worker's whole text (:func:`worker_text`) and the
  package list, ``stdlib.js`` and ``wasm.js`` the standard library and the interpreter, base64.
  They are made at edition time from the written site's ``assets/pyodide/`` (the files the build
  took out of the hash-checked tarball, :mod:`lessonkit.source.pyodide`) and
  ``assets/exercise/`` (``runner.js``, ``lkcheck.py``), so ``verify --site`` makes them again
  byte for byte; nothing of them is in the repository.
* :data:`FACTORY` (``assets/offline/exercise.js``, on the edition's pages with an exercise block)
  defines ``window.lessonkitExerciseWorker``, which ``exercise.js`` calls on the first Run: it
  loads the parts, starts the worker from a ``blob:`` URL of ``code.js``'s text and posts it the
  carried bytes. A reader who does not press Run loads none of them.
* In the worker, ``fetch`` answers the loader's own requests (``pyodide.asm.wasm``,
  ``python_stdlib.zip``, ``pyodide-lock.json`` under the index URL the worker is given) from the
  carried bytes and refuses every other URL, so no request leaves the worker. Pyodide's classic
  loader (``pyodide.js``, in the package) refuses to run in a classic worker, which it detects by
  calling ``importScripts``; the worker's ``importScripts`` throws (the worker imports nothing), and
  the loader is handed the interpreter's factory (``createPyodideModule``) instead of importing
  ``pyodide.asm.mjs``.
* ``pyodide.asm.mjs`` is an ES module, which a classic worker cannot import: :func:`classic` makes
  it a classic script by two replacements that it checks first and that fail loudly (a
  :class:`ShapeError`) when a new Pyodide changes the file's shape.
"""

from __future__ import annotations

import base64
import json

RUNTIME = "assets/pyodide/"  # the site's copies (lessonkit.source.pyodide.SITE_DIR)
EXERCISE = "assets/exercise/"
OUT = "assets/offline/pyodide/"
FACTORY = "assets/offline/exercise.js"
LOADER, MODULE = "pyodide.js", "pyodide.asm.mjs"
CARRIED = ("pyodide-lock.json", "python_stdlib.zip", "pyodide.asm.wasm")  # bytes the worker's fetch answers with
NEEDED = (*(RUNTIME + n for n in (LOADER, MODULE, *CARRIED)), EXERCISE + "runner.js", EXERCISE + "lkcheck.py")
PARTS = ("code.js", "stdlib.js", "wasm.js")  # in the order the factory loads them

# pyodide.asm.mjs (Emscripten's output): one async function declaration, exported as the default at
# the very end; import.meta.url names the script (a classic worker's own URL is self.location.href).
MODULE_START = "async function _createPyodideModule("
MODULE_END = "export default _createPyodideModule;"
META = "import.meta"
META_URL = "import.meta.url"


class ShapeError(ValueError):
    """pyodide.asm.mjs is not of the shape :func:`classic` knows."""


def classic(text: str) -> str:
    """``pyodide.asm.mjs`` as a classic script that declares ``_createPyodideModule``: the final
    ``export default _createPyodideModule;`` removed and each ``import.meta.url`` read as
    ``self.location.href``. Anything else module-only in the text is a :class:`ShapeError`."""
    body = text.rstrip()
    if not body.startswith(MODULE_START):
        raise ShapeError(f"{MODULE} does not start with `{MODULE_START}`")
    if not body.endswith(MODULE_END) or body.count(MODULE_END) != 1:
        raise ShapeError(f"{MODULE} does not end with its one `{MODULE_END}`")
    if body.count(META) != body.count(META_URL):
        raise ShapeError(f"{MODULE} uses `{META}` for more than `{META_URL}`")
    out = body[: -len(MODULE_END)].replace(META_URL, "self.location.href")
    for line in out.splitlines():
        if line.lstrip().startswith(("import ", "import{", "export ", "export{")):
            raise ShapeError(f"{MODULE} has a static import or export besides its default export")
    return out + "\n"


WORKER_HEAD = """/* The offline edition's exercise worker (lessonkit.site.offline_runtime): a classic worker
   started from a blob: URL of this text. What follows: this head, Pyodide's classic loader
   (pyodide.js), its pyodide.asm.mjs as a classic script, runner.js, and the start. */
var lkOffline = { files: null, index: null };
/* Pyodide's loader will not run in a classic worker, where it would import() pyodide.asm.mjs; here it
   is handed that module's function (createPyodideModule) and imports nothing, and nothing here uses
   importScripts. */
self.importScripts = function () {
  throw new TypeError("importScripts is not available in the offline edition's worker");
};
/* The loader fetches pyodide-lock.json, python_stdlib.zip and pyodide.asm.wasm under its index URL:
   they are answered from the bytes the page posted; any other URL is refused, never requested. */
self.fetch = function (input) {
  var url = String((input && input.url) || input);
  var index = lkOffline.index || "";
  var name = index && url.indexOf(index) === 0 ? url.slice(index.length) : "";
  if (!name || !lkOffline.files || !Object.prototype.hasOwnProperty.call(lkOffline.files, name)) {
    return Promise.reject(new TypeError("offline edition: " + url + " is not carried"));
  }
  var text = atob(lkOffline.files[name]), bytes = new Uint8Array(text.length);
  for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  var type = /\\.wasm$/.test(name) ? "application/wasm"
    : /\\.json$/.test(name) ? "application/json" : "application/zip";
  return Promise.resolve(new Response(bytes, { status: 200, headers: { "Content-Type": type } }));
};
"""

WORKER_START = """
self.lkExerciseRunner(
  function () {
    return loadPyodide({ indexURL: lkOffline.index, createPyodideModule: _createPyodideModule });
  },
  function (name) { return Promise.resolve(name === "lkcheck.py" ? LKCHECK : ""); }  // the edition runs no snippet
);
(function () {
  var checks = self.onmessage;
  self.onmessage = function (ev) {
    if (ev.data && ev.data.lkRuntime) {  // the page's first message: the carried bytes
      lkOffline.files = ev.data.lkRuntime;
      lkOffline.index = ev.data.index;
      return;
    }
    return checks.call(self, ev);
  };
})();
"""

FACTORY_TEXT = """/* The offline edition of this site (lessonkit.site.offline_runtime): opened from disk, Chromium
   refuses module scripts, module workers and fetch, so an exercise's worker is a classic one started
   from a blob: URL of text that the <script> files under pyodide/ carry, with the runtime's bytes.
   They load on the first Run only. Served over http(s) this does nothing. */
(function () {
  if (location.protocol !== "file:" || !window.Worker || !window.Blob) return;
  var here = document.currentScript.src, PARTS = %s, ready = null;
  function load(name) {
    return new Promise(function (ok, fail) {
      var s = document.createElement("script");
      s.src = new URL("pyodide/" + name, here).href;
      s.onload = ok;
      s.onerror = function () { fail(new Error("the offline edition lacks " + name)); };
      document.head.appendChild(s);
    });
  }
  window.lessonkitExerciseWorker = function () {
    if (!ready) {
      ready = PARTS.reduce(function (p, name) {
        return p.then(function () { return load(name); });
      }, Promise.resolve());
      ready.catch(function () { ready = null; });
    }
    return ready.then(function () {
      var runtime = self.lkOfflineRuntime;
      var url = URL.createObjectURL(new Blob([runtime.worker], { type: "text/javascript" }));
      var worker;
      try { worker = new Worker(url); } finally { URL.revokeObjectURL(url); }
      worker.postMessage({ lkRuntime: runtime.files, index: new URL("pyodide/", here).href });
      return worker;
    });
  };
})();
"""


def _js(value: str) -> str:
    return json.dumps(value, ensure_ascii=True)


def _assign(key: str, value: str) -> str:
    return f"(self.lkOfflineRuntime = self.lkOfflineRuntime || {{ files: {{}} }}){key} = {_js(value)};\n"


def worker_text(site: dict[str, bytes]) -> str:
    """The worker's text: head, Pyodide's classic loader, the interpreter's module as a classic
    script, runner.js, the start (with lkcheck.py's text)."""
    return (
        WORKER_HEAD
        + site[RUNTIME + LOADER].decode("utf-8")
        + "\n;\n"
        + classic(site[RUNTIME + MODULE].decode("utf-8"))
        + ";\n"
        + site[EXERCISE + "runner.js"].decode("utf-8")
        + ";\n"
        + WORKER_START.replace("LKCHECK", _js(site[EXERCISE + "lkcheck.py"].decode("utf-8")))
    )


def missing(site: dict[str, bytes]) -> list[str]:
    """The files of the written site the runner needs and the site lacks."""
    return [rel for rel in NEEDED if rel not in site]


def files(site: dict[str, bytes]) -> dict[str, bytes]:
    """The edition's files of the runner, by path (:data:`FACTORY` and :data:`PARTS` under
    :data:`OUT`), from the written site (which has every file of :data:`NEEDED`)."""

    def b64(name: str) -> str:
        return base64.b64encode(site[RUNTIME + name]).decode("ascii")

    code = _assign(".worker", worker_text(site)) + _assign('.files["pyodide-lock.json"]', b64("pyodide-lock.json"))
    return {
        FACTORY: (FACTORY_TEXT % json.dumps(list(PARTS))).encode(),
        OUT + "code.js": code.encode(),
        OUT + "stdlib.js": _assign('.files["python_stdlib.zip"]', b64("python_stdlib.zip")).encode(),
        OUT + "wasm.js": _assign('.files["pyodide.asm.wasm"]', b64("pyodide.asm.wasm")).encode(),
    }


def size(runtime: dict[str, bytes]) -> int:
    """What the first Run reads: the bytes of :data:`PARTS`."""
    return sum(len(runtime[OUT + name]) for name in PARTS)
