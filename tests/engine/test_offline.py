"""The offline edition (lessonkit.site.offline) of a small written site, made in memory: what each
page, the search index and the worker shim become, that the policy stays strict, and that a
serialization a browser would read differently is caught."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from lessonkit.site import csp, offline, offline_runtime
from lessonkit.util import markup

WORKER = "assets/javascripts/workers/search.1234.min.js"
HEAD = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>t</title></head><body>'
BUNDLE = '<script src="{up}assets/javascripts/bundle.abcd.min.js"></script>'


def _page(body: str, up: str = "") -> bytes:
    html = HEAD + body + BUNDLE.format(up=up) + "<script>var a = 1;</script></body></html>"
    return csp.apply(html, "x").encode()


def _site() -> dict[str, bytes]:
    index = {
        "config": {"lang": ["zh"], "separator": "x"},
        "docs": [{"location": "", "title": "Home", "text": ""}, {"location": "a/#s", "title": "S", "text": ""}],
    }
    return {
        "index.html": _page(
            '<p><a href="a/">A</a> <a href="a/#s">S</a> <a href="a/x.txt">file</a> <a href="#top">top</a> '
            '<a href="https://example.org/">out</a> <span class="lk-offline" data-search-exclude="">'
            f'<a href="downloads/s-offline.zip">get</a> {offline.SIZE_PLACEHOLDER}</span></p>'
            "<pre>\n\ncode</pre>"
        ),
        "a/index.html": _page(
            '<p><a href="../">home</a> <a href=".">here</a></p>'
            '<div class="lk-block lk-exercise" id="e" data-lk-csp="wasm-unsafe-eval"><p class="lk-ex-note">run</p>'
            '<textarea class="lk-ex-code" aria-describedby="k">\nx = 1\n</textarea><p class="lk-ex-keys" id="k">k</p>'
            '<div class="lk-ex-bar"><button type="button">Run</button></div><div class="lk-ex-result"></div>'
            '<details class="lk-ex-reference" hidden><summary>ref</summary></details></div>',
            "../",
        ),
        "a/x.txt": b"x",
        "404.html": b"<p>gone</p>",
        "sitemap.xml": b"<urlset/>",
        **RUNTIME,
        "assets/javascripts/bundle.abcd.min.js": b"",
        "assets/javascripts/bundle.abcd.min.js.map": b"{}",
        WORKER: b'"use strict";(()=>{self.lunr={};})();',
        "assets/javascripts/lunr/min/lunr.stemmer.support.min.js": b"this.lunr.stemmerSupport = 1;",
        "assets/javascripts/lunr/min/lunr.zh.min.js": b"this.lunr.zh = 1;",
        "assets/javascripts/lunr/min/lunr.de.min.js": b"this.lunr.de = 1;",
        offline.INDEX_JSON: json.dumps(index).encode(),
        "downloads/s-offline.zip": b"old",
    }


# The files of the written site the edition's runner is made of (shaped as the real ones are).
MODULE = (
    b"async function _createPyodideModule(m={}){var n=import.meta.url;return m}export default _createPyodideModule;"
)
RUNTIME = {
    "assets/pyodide/pyodide.mjs": b"export{};",
    "assets/pyodide/pyodide.js": b"var loadPyodide = 1;",
    "assets/pyodide/pyodide.asm.mjs": MODULE,
    "assets/pyodide/pyodide.asm.wasm": b"\0asm",
    "assets/pyodide/python_stdlib.zip": b"PK\x05\x06",
    "assets/pyodide/pyodide-lock.json": b"{}",
    "assets/exercise/exercise.js": b"window.lessonkitExercise = {};",
    "assets/exercise/worker.js": b'import "./runner.js";',
    "assets/exercise/runner.js": b"self.lkExerciseRunner = function () {};",
    "assets/exercise/lkcheck.py": b"print('checks')\n",
}


def _links(html: bytes) -> list[str]:
    return [a.attributes.get("href") or "" for a in markup.parse(html.decode()).css("a")]


def test_the_edition_links_pages_as_files_and_leaves_out_what_cannot_work_from_disk():
    ed = offline.edition(_site(), "downloads/s-offline.zip", "HERE", "RUNS {size} MB")
    assert ed.problems == []
    assert sorted(ed.files) == [
        "a/index.html",
        "a/x.txt",
        "assets/exercise/exercise.js",
        "assets/javascripts/bundle.abcd.min.js",
        "assets/javascripts/lunr/min/lunr.de.min.js",
        "assets/javascripts/lunr/min/lunr.stemmer.support.min.js",
        "assets/javascripts/lunr/min/lunr.zh.min.js",
        WORKER,
        offline_runtime.FACTORY,
        *(offline_runtime.OUT + name for name in ("code.js", "stdlib.js", "wasm.js")),
        offline.SHIM,
        "index.html",
        offline.INDEX_JS,
    ]
    assert _links(ed.files["index.html"]) == [
        "a/index.html",
        "a/index.html#s",
        "a/x.txt",
        "#top",
        "https://example.org/",
    ]
    assert _links(ed.files["a/index.html"]) == ["../index.html", "./index.html"]
    home = markup.parse(ed.files["index.html"].decode())
    assert home.css_first("span.lk-offline").text() == "HERE"
    assert home.css_first("pre").text() == "\ncode"  # the newline after the one the parser drops
    scripts = [s.attributes.get("src") for s in home.css("script[src]")]
    assert scripts == [offline.SHIM, "assets/javascripts/bundle.abcd.min.js"]
    page = markup.parse(ed.files["a/index.html"].decode())
    assert [s.attributes.get("src") for s in page.css("script[src]")] == [
        "../" + offline_runtime.FACTORY,
        "../" + offline.SHIM,
        "../assets/javascripts/bundle.abcd.min.js",
    ]
    block = page.css_first("div.lk-block")
    # the block runs: as the site has it, with the note and the loading message giving what the first run reads
    assert block.attributes.get("class") == "lk-block lk-exercise"
    assert block.attributes.get("data-lk-csp") == "wasm-unsafe-eval"
    size = offline_runtime.size(ed.files)
    assert size == sum(len(ed.files[offline_runtime.OUT + n]) for n in ("code.js", "stdlib.js", "wasm.js"))
    assert block.attributes.get("data-lk-size") == f"{size / 1048576:.1f}" == "0.0"
    assert block.css_first("p.lk-ex-note").text() == "RUNS 0.0 MB"
    assert [n.tag for n in block.css("button, .lk-ex-bar, .lk-ex-result, .lk-ex-keys")] == ["p", "div", "button", "div"]
    area = block.css_first("textarea")
    assert "readonly" not in area.attributes and area.attributes.get("aria-describedby") == "k"
    assert "hidden" in block.css_first("details").attributes


def test_the_runtime_is_carried_as_classic_scripts_made_from_the_written_sites_files():
    ed = offline.edition(_site(), "downloads/s-offline.zip", "HERE", "RUNS {size} MB")
    prefix = "(self.lkOfflineRuntime = self.lkOfflineRuntime || { files: {} })"
    wasm = ed.files[offline_runtime.OUT + "wasm.js"].decode()
    assert wasm == prefix + '.files["pyodide.asm.wasm"] = "AGFzbQ==";\n'  # base64 of b"\0asm"
    stdlib = ed.files[offline_runtime.OUT + "stdlib.js"].decode()
    assert stdlib == prefix + '.files["python_stdlib.zip"] = "UEsFBg==";\n'
    code = ed.files[offline_runtime.OUT + "code.js"].decode()
    worker = json.loads(code.split(".worker = ", 1)[1].split(";\n(self.lkOfflineRuntime", 1)[0])
    assert code.endswith(prefix + '.files["pyodide-lock.json"] = "e30=";\n')
    loader, module, runner = (worker.index(t) for t in ("var loadPyodide = 1;", "async function _createP", "self.lkEx"))
    assert worker.index("self.fetch = function") < loader < module < runner < worker.index("print('checks')")
    assert "import.meta" not in worker and "export default" not in worker and "self.location.href" in worker
    factory = ed.files[offline_runtime.FACTORY].decode()
    assert 'PARTS = ["code.js", "stdlib.js", "wasm.js"]' in factory and 'location.protocol !== "file:"' in factory


def test_the_module_becomes_a_classic_script_only_in_the_shape_the_step_knows():
    assert offline_runtime.classic(MODULE.decode() + "\n") == (
        "async function _createPyodideModule(m={}){var n=self.location.href;return m}\n"
    )
    bad = {
        "no default export": "async function _createPyodideModule(){}",
        "two": "async function _createPyodideModule(){}export default _createPyodideModule;"
        "export default _createPyodideModule;",
        "other start": "var x=1;async function _createPyodideModule(){}export default _createPyodideModule;",
        "import.meta.resolve": "async function _createPyodideModule(){import.meta.resolve('a')}"
        "export default _createPyodideModule;",
        "static import": "async function _createPyodideModule(){}\nimport x from 'y';\n"
        "export default _createPyodideModule;",
    }
    for what, text in bad.items():
        with pytest.raises(offline_runtime.ShapeError):
            offline_runtime.classic(text)
            pytest.fail(what)


def test_exercise_blocks_without_the_runtime_are_reported_and_stay_to_read():
    site = _site()
    del site["assets/pyodide/pyodide.js"]
    ed = offline.edition(site, "downloads/s-offline.zip", "HERE", "RUNS {size} MB")
    assert [str(p) for p in ed.problems] == [
        "a/index.html: its exercise blocks cannot run in the offline edition: the site lacks "
        "assets/pyodide/pyodide.js — list pyodide.js among `files` of sourcemap/pyodide.toml (the edition carries "
        "the package's classic loader), or pin a Pyodide whose pyodide.asm.mjs lessonkit.site.offline_runtime knows"
    ]
    assert offline_runtime.FACTORY not in ed.files and not any(r.startswith(offline_runtime.OUT) for r in ed.files)
    block = markup.parse(ed.files["a/index.html"].decode()).css_first("div.lk-block")
    assert block.attributes.get("class") == "lk-block lk-exercise-offline" and "data-lk-csp" not in block.attributes
    assert block.css_first("p.lk-ex-note").text() == "RUNS ? MB"
    assert [n.tag for n in block.css("button, .lk-ex-bar, .lk-ex-result, .lk-ex-keys")] == []
    area = block.css_first("textarea")
    assert "readonly" in area.attributes and "aria-describedby" not in area.attributes and area.text() == "x = 1\n"
    assert "hidden" not in block.css_first("details").attributes


def test_every_page_of_the_edition_keeps_a_strict_policy_with_blob_workers_only():
    """Blob workers on every page; WebAssembly only on the page with an exercise block; never eval."""
    ed = offline.edition(_site(), "downloads/s-offline.zip", "HERE", "NO RUN")
    for rel, wasm in (("index.html", []), ("a/index.html", ["'wasm-unsafe-eval'"])):
        html = ed.files[rel].decode()
        tree = markup.parse(html)
        assert csp.problems(html, rel, offline._merge(csp.extras(tree), offline.EXTRA)) == []
        policy, _ = csp.parse_policy(tree.css_first("meta[http-equiv]").attributes["content"])
        assert policy["worker-src"] == ["'self'", "blob:"]
        assert policy["script-src"][0] == "'self'" and len(policy["script-src"]) == 2 + len(wasm)  # and one hash
        assert [s for s in policy["script-src"] if "wasm" in s] == wasm
        assert not any(s in csp.UNSAFE for s in policy["script-src"])


def test_the_search_index_becomes_a_script_and_the_worker_carries_the_languages_of_the_index():
    ed = offline.edition(_site(), "downloads/s-offline.zip", "HERE", "NO RUN")
    text = ed.files[offline.INDEX_JS].decode()
    assert text.startswith("var __index = ") and text.endswith(";\n")
    index = json.loads(text.removeprefix("var __index = ").removesuffix(";\n"))
    assert [d["location"] for d in index["docs"]] == ["index.html", "a/index.html#s"]
    shim = ed.files[offline.SHIM].decode()
    assert json.dumps("search.1234.min.js") in shim
    assert "this.lunr.zh = 1;" in shim and "this.lunr.stemmerSupport = 1;" in shim and "lunr.de" not in shim
    assert 'location.protocol !== \\"file:\\"' not in shim and 'location.protocol !== "file:"' in shim


def test_the_zip_is_reproducible_and_a_changed_entry_is_named():
    site = _site()
    ed = offline.edition(site, "downloads/s-offline.zip", "HERE", "NO RUN")
    data = offline.zipped(ed, "s-offline", 1764460800)
    assert data == offline.zipped(
        offline.edition(site, "downloads/s-offline.zip", "HERE", "NO RUN"), "s-offline", 1764460800
    )
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.namelist()[0].startswith("s-offline/") and len(zf.namelist()) == len(ed.files)
    home = offline.fill_size(site["index.html"].decode(), len(data)).encode()
    good = {**site, "index.html": home, "downloads/s-offline.zip": data}
    assert offline.check(good, "downloads/s-offline.zip", "HERE", "NO RUN", "site") == ([], len(ed.files))
    other = offline.zipped(offline.edition(good, "downloads/s-offline.zip", "THERE", "NO RUN"), "s-offline", 1764460800)
    found, _ = offline.check(
        {**good, "downloads/s-offline.zip": other}, "downloads/s-offline.zip", "HERE", "NO RUN", "site"
    )
    assert [p.message for p in found] == [
        "the offline edition is not this site's: s-offline/index.html differs from the edition of this site",
        f"the page gives the offline edition's size as {offline.size_text(len(data))!r}; it is "
        f"{offline.size_text(len(other))} ({len(other)} bytes)",
    ]


def test_a_copy_that_would_read_differently_is_an_error_not_a_silent_change():
    """A <pre> whose text starts with a newline, after the fix that writes the dropped one back,
    round-trips; without the fix the comparison reports it."""
    tree = markup.parse("<!doctype html><html><head></head><body><pre>\n\nx</pre></body></html>")
    want = tree.html or ""
    assert tree.css_first("pre").text() == "\nx" and markup.parse(want).css_first("pre").text() == "x"
    # serialized as it is, a newline is lost: the comparison says where
    at = want.index("<pre>") + len("<pre>")
    assert offline._same(want, markup.parse(want)) == f"it differs at {want[at - 30 : at + 30]!r}"
    offline._keep_first_newlines(tree)  # what the edition does before it serializes
    assert markup.parse(tree.html or "").css_first("pre").text() == "\nx"
    assert offline._same(want, markup.parse(tree.html or "")) is None
