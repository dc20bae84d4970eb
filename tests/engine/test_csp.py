"""The Content-Security-Policy every written page starts its head with (lessonkit.site.csp): what
it hashes (what a browser runs, read by an HTML-standard parser), where it goes, and what
`verify --site` reports about a page's policy. The policy in a real browser over the whole built
site is tests/e2e/test_browser_csp.py."""

from __future__ import annotations

import pytest

from lessonkit.errors import LessonError
from lessonkit.site import csp

ALERT = "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"  # sha256 of "alert(1)", base64
A_NL_B = "'sha256-fhj3NzEbLcOy8mndeDlrA1HxT7Zu+oefdoyyMYGIPHg='"  # of "a\nb"
X_GT_Y = "'sha256-A6GJU8fv+noTpGfkoIdOyuErkL6BKdC6DjReHSK81YM='"  # of "x>y"
BASE = (
    "default-src 'self'; script-src 'self'{scripts}; style-src 'self'{styles}; style-src-attr 'none'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src 'self'; object-src 'none'; "
    "frame-src 'none'; base-uri 'none'; form-action 'self'"
)


def page(head: str = "", body: str = "") -> str:
    start = '<!doctype html>\n<html lang="zh">\n  <head>\n    <meta charset="utf-8">'
    return f"{start}{head}\n  </head>\n  <body>{body}</body>\n</html>\n"


def content(html: str) -> str:
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(html).css_first("meta[http-equiv]").attributes["content"]


def test_the_policy_is_the_first_child_of_head_and_hashes_exactly_the_code_a_browser_runs():
    html = page(
        '<script>alert(1)</script><script src="a.js"></script>',
        '<script id="__config" type="application/json">{"a": 1}</script>'  # data: never runs
        "<script>a\r\nb</script>"  # the parser makes the line end one \n before the browser hashes it
        '<script type="module">alert(1)</script>'  # the same code: one hash
        "<svg><style>x&gt;y</style></svg>"  # in SVG a <style> holds text with references decoded
        "<noscript><style>n</style></noscript>"  # text to a browser that runs scripts
        "<template><script>t</script></template>",  # not in the document until a script copies it
    )
    out = csp.apply(html, "docs/x.md")
    assert out.startswith('<!doctype html>\n<html lang="zh">\n  <head><meta http-equiv="Content-Security-Policy" ')
    assert out.replace(csp.meta(csp.policy(csp.inline(csp._parse(html)))), "", 1) == html  # nothing else changes
    assert content(out) == BASE.format(scripts=f" {ALERT} {A_NL_B}", styles=f" {X_GT_Y}")
    assert csp.problems(out, "site/x/index.html") == []


def test_a_page_without_inline_code_allows_only_its_own_files():
    out = csp.apply(page(), "site/404.html")
    assert content(out) == BASE.format(scripts="", styles="")
    assert "&#x27;" not in out and "'self'" in out  # the sources keep their quotes as written


def test_a_per_page_extra_is_added_to_its_directive():
    out = csp.apply(page(), "site/x/index.html", {"script-src": ("'wasm-unsafe-eval'",)})
    assert "script-src 'self' 'wasm-unsafe-eval';" in content(out)
    assert csp.problems(out, "w", {"script-src": ("'wasm-unsafe-eval'",)}) == []
    assert [p.message for p in csp.problems(out, "w")] == [
        "`script-src` allows 'wasm-unsafe-eval', a source that lessonkit does not allow there"
    ]


@pytest.mark.parametrize(
    "html, message",
    [
        (
            page('<meta http-equiv="content-security-policy" content="default-src *">'),
            "the page already has a Content-Security-Policy",
        ),
        ('<!doctype html><html><head data-x="1"><title>t</title></head><body></body></html>', "plain `<head>`"),
        ("<!doctype html><html><!-- <head> --><head><title>t</title></head></html>", "plain `<head>`"),
    ],
)
def test_a_page_the_policy_cannot_go_first_in_is_a_located_error(html, message):
    with pytest.raises(LessonError) as exc:
        csp.apply(html, "site/x/index.html")
    assert str(exc.value).startswith("site/x/index.html: ") and message in str(exc.value)


def problems(html: str) -> list[str]:
    return [str(p) for p in csp.problems(html, "site/x/index.html")]


HINT = "a hook or plugin after lessonkit changed the page or its policy; remove it and rebuild"


def test_verify_reports_each_way_a_written_policy_is_wrong_on_one_located_line():
    good = csp.apply(page("<script>alert(1)</script>"), "x")
    assert problems(good) == []
    meta = good[good.index("<meta http-equiv") : good.index(">", good.index("<meta http-equiv")) + 1]
    assert problems(good.replace(meta, "")) == [
        f"site/x/index.html: the page has no Content-Security-Policy <meta> — {HINT}"
    ]
    later = good.replace(meta, "").replace("<script>alert(1)</script>", "<script>alert(1)</script>" + meta)
    assert problems(later) == [
        "site/x/index.html: the Content-Security-Policy <meta> is not the first child of <head>: a script before it "
        f"is not covered — {HINT}"
    ]
    added = good.replace("<body>", "<body><script>a\nb</script>")
    assert problems(added) == [
        f"site/x/index.html: an inline <script> of the page (hash {A_NL_B}) is not allowed by the policy: the browser "
        f"refuses it — {HINT}"
    ]
    removed = good.replace("<script>alert(1)</script>", "")
    assert problems(removed) == [
        f"site/x/index.html: `script-src` allows {ALERT}, an inline element the page does not have that lessonkit "
        f"does not allow there — {HINT}"
    ]
    unsafe = good.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'")
    assert problems(unsafe) == [
        "site/x/index.html: `script-src` allows 'unsafe-inline', which lets code or styles the build did not emit "
        f"run — {HINT}"
    ]
    assert problems(good.replace("frame-src 'none'; ", "")) == [
        f"site/x/index.html: the policy has no `frame-src` directive — {HINT}"
    ]
    assert problems(good.replace("form-action 'self'", "form-action 'self'; form-action *; sandbox")) == [
        f"site/x/index.html: the policy names `form-action` twice (the browser ignores the second) — {HINT}",
        f"site/x/index.html: the policy has a directive `sandbox` that lessonkit does not write — {HINT}",
    ]
    assert problems(good.replace("img-src 'self' data:", "img-src 'self'")) == [
        f"site/x/index.html: `img-src` does not allow data: — {HINT}"
    ]


def test_a_policy_that_pushes_the_encoding_past_the_first_1024_bytes_is_reported():
    scripts = "".join(f"<script>s{n}()</script>" for n in range(14))  # 14 hashes: the <meta charset> moves past 1 KiB
    out = csp.apply(page(scripts), "x")
    assert out.encode().index(b"<meta charset") > 1024
    assert problems(out) == [
        "site/x/index.html: the character encoding (<meta charset>) is no longer within the page's first 1024 "
        "bytes, where browsers look for it — keep the policy short: fewer distinct inline scripts and styles on the "
        "page"
    ]


def test_serve_allows_its_live_reload_script_on_the_page_it_serves_and_nowhere_else():
    """MkDocs' live-reload server adds a script with the request's numbers to each page it serves:
    lessonkit's serve allows exactly that script in that response's policy; the file keeps its own."""
    from mkdocs.livereload import LiveReloadServer

    from lessonkit.integrations.mkdocs import serve

    written = csp.apply(page("<script>alert(1)</script>"), "x")
    plain = object.__new__(LiveReloadServer)._inject_js_into_html(written.encode(), 1234).decode()
    assert [p.message.split(" (hash")[0] for p in csp.problems(plain, "x")] == ["an inline <script> of the page"]
    served = object.__new__(serve._server_class())._inject_js_into_html(written.encode(), 1234)
    served_text = served.decode()
    assert "livereload(1234," in served_text and csp.problems(served_text, "x") == []
    assert served_text.count("'sha256-") == 2 and written.count("'sha256-") == 1


def test_an_exercise_block_asks_for_webassembly_and_a_blob_worker_and_nothing_else():
    """What an engine block's `data-lk-csp` asks for; an element that is no engine block asks for nothing."""
    block = '<div class="lk-block lk-exercise" data-lk-csp="wasm-unsafe-eval"></div>'
    imitation = '<div class="lk-exercise" data-lk-csp="wasm-unsafe-eval"></div>'
    out = csp.apply(page(body=block), "site/x/index.html")
    assert "script-src 'self' 'wasm-unsafe-eval';" in content(out)
    assert "worker-src 'self' blob:;" in content(out)
    assert csp.problems(out, "site/x/index.html") == []
    other = csp.apply(page(body=imitation), "site/y/index.html")
    assert "wasm-unsafe-eval" not in content(other) and "blob:" not in content(other)
