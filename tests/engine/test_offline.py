"""The offline edition (lessonkit.site.offline) of a small written site, made in memory: what each
page, the search index and the worker shim become, that the policy stays strict, and that a
serialization a browser would read differently is caught."""

from __future__ import annotations

import io
import json
import zipfile

from lessonkit.site import csp, offline
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
        "assets/pyodide/pyodide.asm.wasm": b"\0asm",
        "assets/exercise/worker.js": b"",
        "assets/javascripts/bundle.abcd.min.js": b"",
        "assets/javascripts/bundle.abcd.min.js.map": b"{}",
        WORKER: b'"use strict";(()=>{self.lunr={};})();',
        "assets/javascripts/lunr/min/lunr.stemmer.support.min.js": b"this.lunr.stemmerSupport = 1;",
        "assets/javascripts/lunr/min/lunr.zh.min.js": b"this.lunr.zh = 1;",
        "assets/javascripts/lunr/min/lunr.de.min.js": b"this.lunr.de = 1;",
        offline.INDEX_JSON: json.dumps(index).encode(),
        "downloads/s-offline.zip": b"old",
    }


def _links(html: bytes) -> list[str]:
    return [a.attributes.get("href") or "" for a in markup.parse(html.decode()).css("a")]


def test_the_edition_links_pages_as_files_and_leaves_out_what_cannot_work_from_disk():
    ed = offline.edition(_site(), "downloads/s-offline.zip", "HERE", "NO RUN")
    assert ed.problems == []
    assert sorted(ed.files) == [
        "a/index.html",
        "a/x.txt",
        "assets/javascripts/bundle.abcd.min.js",
        "assets/javascripts/lunr/min/lunr.de.min.js",
        "assets/javascripts/lunr/min/lunr.stemmer.support.min.js",
        "assets/javascripts/lunr/min/lunr.zh.min.js",
        WORKER,
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
    block = page.css_first("div.lk-block")
    assert block.attributes.get("class") == "lk-block lk-exercise-offline" and "data-lk-csp" not in block.attributes
    assert block.css_first("p.lk-ex-note").text() == "NO RUN"
    assert [n.tag for n in block.css("button, .lk-ex-bar, .lk-ex-result, .lk-ex-keys")] == []
    area = block.css_first("textarea")
    assert "readonly" in area.attributes and "aria-describedby" not in area.attributes and area.text() == "x = 1\n"
    assert "hidden" not in block.css_first("details").attributes


def test_every_page_of_the_edition_keeps_a_strict_policy_with_blob_workers_only():
    ed = offline.edition(_site(), "downloads/s-offline.zip", "HERE", "NO RUN")
    for rel in ("index.html", "a/index.html"):
        html = ed.files[rel].decode()
        assert csp.problems(html, rel, offline.EXTRA) == []
        policy, _ = csp.parse_policy(markup.parse(html).css_first("meta[http-equiv]").attributes["content"])
        assert policy["worker-src"] == ["'self'", "blob:"]
        assert policy["script-src"][0] == "'self'" and len(policy["script-src"]) == 2  # and one hash
        assert not any(s in csp.UNSAFE or "wasm" in s for s in policy["script-src"])


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
