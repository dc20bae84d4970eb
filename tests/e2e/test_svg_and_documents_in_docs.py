"""Files of docs/ that MkDocs copies into the site as they are: an SVG file is read as a browser
reads ``image/svg+xml`` (XML with namespaces, entities and processing instructions) and may only
draw; a document a browser runs scripts in (XHTML, XML, HTML not named .html, ...) is refused. Both the build and
``lessonkit verify`` say so, one line per mistake at its line."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import TmpSite

from lessonkit.config import checks
from lessonkit.util import markup

SVG_NS = 'xmlns="http://www.w3.org/2000/svg"'
HINT = markup.SVG_HINT
DOC = f"{checks.DOCUMENT_WHY} — {checks.DOCUMENT_HINT}"

# name -> (file text, the problems of docs/ it gives)
PAYLOADS = {
    "s1.svg": (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:h="http://www.w3.org/1999/xhtml">\n'
        "<h:script>document.title='PWN'</h:script></svg>\n",
        [
            "docs/s1.svg:2: a <script> element in the namespace http://www.w3.org/1999/xhtml, "
            f"which is not static SVG drawing — {HINT}"
        ],
    ),
    "s2.svg": (
        '<?xml version="1.0"?>\n<!DOCTYPE svg [<!ENTITY e "<script '
        "xmlns='http://www.w3.org/2000/svg'>document.title='PWN'</script>\">]>\n"
        f"<svg {SVG_NS}>&e;</svg>\n",
        [f"docs/s2.svg:2: a DOCTYPE, whose entities can put any markup (a script) into the file — {HINT}"],
    ),
    "s6.svg": (
        f"<svg {SVG_NS}>\n<g/>\n"
        '<x:script xmlns:x="http://www.w3.org/2000/svg">document.title=\'PWN\'</x:script></svg>\n',
        [f"docs/s6.svg:3: a <script> element, which is not static SVG drawing — {HINT}"],
    ),
    "s3.svg": (
        f'<?xml-stylesheet href="https://evil.example/s3.css"?>\n<svg {SVG_NS}><circle r="1"/></svg>\n',
        [
            "docs/s3.svg:1: a processing instruction `<?xml-stylesheet …?>`, which can load a style sheet "
            f"or transform the file — {HINT}"
        ],
    ),
    "s4.svg": (
        f'<svg {SVG_NS} xmlns:xl="http://www.w3.org/1999/xlink">\n'
        '<a xl:href="javascript:document.title=1"><text onclick="x">t</text></a>\n'
        '<image href="https://evil.example/p.png"/>\n'
        '<rect fill="url(//evil.example/x#a)"/>\n'
        "<style>\n@import 'x.css';\n</style>\n"
        "<foreignObject/><animate attributeName=\"href\" to=\"javascript:x\"/></svg>\n",
        [
            "docs/s4.svg:2: `xlink:href` of a <a> names 'javascript:document.title=1', not a relative file of "
            f"the site — {HINT}",
            "docs/s4.svg:2: an event attribute `onclick` on a <text>, which runs code in the reader's browser "
            f"— {HINT}",
            "docs/s4.svg:3: `href` of a <image> names 'https://evil.example/p.png', not a relative file of the "
            f"site — {HINT}",
            "docs/s4.svg:4: the CSS loads '//evil.example/x#a', which is not a part of this file or the site "
            f"(`fill` of a <rect>) — {HINT}",
            f"docs/s4.svg:6: the CSS has an `@import`, which loads another style sheet — {HINT}",
            f"docs/s4.svg:8: a <foreignObject> element, which is not static SVG drawing — {HINT}",
            f"docs/s4.svg:8: a <animate> element, which is not static SVG drawing — {HINT}",
        ],
    ),
    "s7.svg": (
        f'<svg {SVG_NS}>\n<g xml:base="https://evil.example/"><a href="x.html"><text>t</text></a></g></svg>\n',
        [f"docs/s7.svg:2: an `xml:base` on a <g>, which makes its relative URLs point elsewhere — {HINT}"],
    ),
    "s8.svg": (
        f'<?xml version="1.0" encoding="utf-7"?>\n<svg {SVG_NS}/>\n',
        [
            "docs/s8.svg:1: an encoding the check cannot read (multi-byte encodings are not supported); save the "
            f"file as UTF-8 — {HINT}"
        ],
    ),
    "x1.xhtml": (
        '<html xmlns="http://www.w3.org/1999/xhtml"><script>document.title="PWN"</script></html>\n',
        [f"docs/x1.xhtml: {DOC}"],
    ),
    "h2.htm": ('<script>document.title="PWN"</script>\n', [f"docs/h2.htm: {DOC}"]),
    "h3.shtml": ('<script>document.title="PWN"</script>\n', [f"docs/h3.shtml: {DOC}"]),
    "d.XML": ("<x/>\n", [f"docs/d.XML: {DOC}"]),
}
# Suffixes a browser opens as a document though no list of "documents" names them (from disk or a
# static host): not among the suffixes docs/ may hold, so refused whatever they are.
XHTML = '<html xmlns="http://www.w3.org/1999/xhtml"><body><script>document.title="PWN"</script></body></html>\n'
OTHER = f"a browser may open as a document — {checks.SUFFIX_HINT}"
for _name in ("n1.xhtm", "n2.XHTM", "n3.shtm", "n4.rss", "n5.atom", "n6.xsd", "n7.xbl", "n8.xpdl"):
    PAYLOADS[_name] = (XHTML, [f"docs/{_name}: a `{Path(_name).suffix}` file, which {OTHER}"])
PAYLOADS["n9.Html"] = (XHTML, ["docs/n9.Html: `.Html` in capitals — name it `.html`"])
PAYLOADS["n10"] = (XHTML, [f"docs/n10: has no suffix and holds markup a browser may run — {checks.SUFFIX_HINT}"])
HARMLESS = (
    f'<svg {SVG_NS} viewBox="0 0 10 10">\n<title>一个圆</title>\n'
    '<defs><linearGradient id="g"><stop offset="0" stop-color="#08c"/></linearGradient></defs>\n'
    '<circle cx="5" cy="5" r="4" fill="url(#g)" style="stroke: #333"/>\n<use href="#g"/>\n'
    '<image href="data:image/png;base64,iVBORw0KGgo=" width="1" height="1"/>\n</svg>\n'
)


def _docs(tmp_path, names):
    for name in names:
        (tmp_path / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "docs" / name).write_text(PAYLOADS[name][0], encoding="utf-8")


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_a_file_of_docs_that_runs_or_loads_is_refused_at_its_line(tmp_path, name):
    _docs(tmp_path, [name])
    assert [str(p) for p in checks.docs_problems(tmp_path)] == PAYLOADS[name][1]


def test_files_a_browser_shows_as_images_text_or_downloads_pass(tmp_path):
    (tmp_path / "docs").mkdir()
    for name in ("a.png", "b.JPG", "c.woff2", "d.txt", "e.csv", "f.zip", "g.pdf", "CNAME", "h.md", "i.html"):
        (tmp_path / "docs" / name).write_text("example.org\n", encoding="utf-8")
    assert checks.docs_problems(tmp_path) == []


def test_a_static_drawing_passes(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "c.svg").write_text(HARMLESS, encoding="utf-8")
    assert checks.docs_problems(tmp_path) == []


def test_an_svg_that_is_not_well_formed_xml_is_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.svg").write_text(f"<svg {SVG_NS}>\n<g></svg>\n", encoding="utf-8")
    assert [str(p) for p in checks.docs_problems(tmp_path)] == [
        f"docs/b.svg:2: not well-formed XML (mismatched tag): a browser shows an error — {HINT}"
    ]


@pytest.mark.warm_cache
def test_the_build_and_verify_refuse_every_payload_and_pass_a_drawing(site: TmpSite):
    _docs(site.root, list(PAYLOADS))
    expected = [line for name in sorted(PAYLOADS, key=lambda n: f"docs/{n}") for line in PAYLOADS[name][1]]
    r = site.build()
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "Traceback" not in out
    for line in expected:
        assert line in out, line
    v = site.verify()
    assert v.returncode != 0
    assert [line for line in v.stdout.splitlines() + v.stderr.splitlines() if line.startswith("docs/")] == expected
    for name in PAYLOADS:
        (site.root / "docs" / name).unlink()
    (site.root / "docs" / "c.svg").write_text(HARMLESS, encoding="utf-8")
    site.page("a.md", "# 图\n\n![一个圆](c.svg)\n")
    r = site.build()
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    v = site.verify("--site", "site")
    assert v.returncode == 0, (v.stdout + v.stderr)[-3000:]


def test_verify_site_reads_an_svg_of_the_folder_as_xml_too():
    from lessonkit.site import active

    text, want = PAYLOADS["s1.svg"]
    assert [str(p) for p in active.svg_problems(text.encode(), "site/s1.svg")] == [
        w.replace("docs/", "site/") for w in want
    ]
    assert active.svg_problems(HARMLESS.encode(), "site/c.svg") == []


def test_the_refused_svg_files_run_or_load_in_chromium_and_the_drawing_does_not(tmp_path, browser):
    """What the check refuses is what a browser runs: opened on its own, each SVG payload sets the
    document's title or asks another host for a style sheet; the static drawing does neither."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    for name in ("s1.svg", "s2.svg", "s6.svg", "s3.svg", "n9.Html"):
        (tmp_path / name).write_text(PAYLOADS[name][0], encoding="utf-8")
    (tmp_path / "c.svg").write_text(HARMLESS, encoding="utf-8")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    seen = {}
    try:
        for name in ("s1.svg", "s2.svg", "s6.svg", "s3.svg", "n9.Html", "c.svg"):
            page = browser.new_page()
            other: list[str] = []
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())
            page.on("request", lambda q, other=other: None if q.url.startswith(base) else other.append(q.url))
            page.goto(f"{base}/{name}")
            page.wait_for_timeout(200)
            seen[name] = (page.title(), other)
            page.close()
    finally:
        httpd.shutdown()
    assert seen == {
        "s1.svg": ("PWN", []),
        "s2.svg": ("PWN", []),
        "s6.svg": ("PWN", []),
        "s3.svg": ("", ["https://evil.example/s3.css"]),
        "n9.Html": ("PWN", []),
        "c.svg": ("一个圆", []),
    }
