"""Runnable blocks in Debian's Chromium, on the built site served from 127.0.0.1: the self-test
snippets of lessons 04 (standard library) and 05 (Mini) wait for Run; Run loads the pinned Pyodide
from the site itself and prints exactly the answer the build recorded in the jail, folded under the
button; no request leaves 127.0.0.1 and the page's policy reports no violation. A page without a
runnable or exercise block loads none of it."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

# Records each violation the browser reports, before any script of the page runs.
RECORD = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(
  [e.effectiveDirective, e.blockedURI, (e.sample || "").slice(0, 60)]));
"""

SNIPPETS = {
    # page, a line of the snippet, the answer its build recorded
    "lessons/04-tracer-and-box/": (
        'print("异常穿出后 top =", stack.top)',
        "第一层 trace 的编号: 0\n正常退出后 top = -1\n异常穿出后 top = 0\n下一次 trace 的编号: 1\n",
    ),
    "lessons/05-reverse-mode/": ("print([node.name for node in toposort(end)])", "['add', 'mul', 'input']\n7.0\n"),
    "lessons/10-higher-order/": (
        "print(grad(grad(f))(2.0))",
        "12.0\n['Box(Box(2.0, node=input, trace=0), node=input, trace=1)']\n-1\n",
    ),
}


class Tab:
    """One page in its own context: every request counted, any other host refused, policy
    violations and console errors recorded."""

    def __init__(self, browser, url: str, page: str):
        self.external, self.local, self.errors = [], [], []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.add_init_script(RECORD)
        host = urlsplit(url).netloc

        def route(r):
            if urlsplit(r.request.url).netloc != host:
                self.external.append(r.request.url)
                return r.abort()
            self.local.append(r.request.url)
            return r.continue_()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.errors.append(m.text))
        self.page.goto(url + "/" + page, wait_until="load")
        self.page.wait_for_timeout(150)

    def violations(self) -> list:
        return self.page.evaluate("window.__csp")


@pytest.mark.parametrize("page", sorted(SNIPPETS))
def test_run_prints_exactly_the_recorded_answer_from_the_site_alone(browser, server, page):
    line, answer = SNIPPETS[page]
    tab = Tab(browser, server, page)
    try:
        block = tab.page.locator(".lk-block.lk-runnable").filter(has_text=line)
        assert block.count() == 1
        assert block.locator("details.lk-runnable-answer").get_attribute("open") is None  # folded
        recorded = block.locator("details.lk-runnable-answer pre.lk-output").text_content()
        assert recorded == answer
        assert not any("/assets/pyodide/" in u for u in tab.local)  # the runtime waits for Run
        assert any(u.endswith("/assets/exercise/exercise.js") for u in tab.local)
        size = block.get_attribute("data-lk-size")
        assert f"{size} MB" in block.locator("p.lk-ex-note").text_content()
        block.locator('[data-lk-action="run"]').click()
        tab.page.wait_for_function(
            "el => el.dataset.lkStatus !== undefined && !el.dataset.lkBusy",
            arg=block.element_handle(),
            timeout=240000,
        )
        assert block.get_attribute("data-lk-status") == "0"
        assert block.locator("pre.lk-runnable-stdout").text_content() == recorded
        assert block.locator("pre.lk-runnable-stderr").count() == 0
        assert any(u.endswith("/assets/pyodide/pyodide.asm.wasm") for u in tab.local)
        assert tab.external == [] and tab.violations() == [] and tab.errors == []
    finally:
        tab.context.close()


def test_a_page_without_a_runnable_block_loads_none_of_the_runtime(browser, server, built_site):
    html = (built_site / "lessons/03-grad-call-chain/index.html").read_text(encoding="utf-8")
    assert "lk-runnable" not in html and "lk-exercise" not in html and "wasm-unsafe-eval" not in html
    tab = Tab(browser, server, "lessons/03-grad-call-chain/")
    try:
        assert tab.local and not any("/assets/exercise/" in u or "/assets/pyodide/" in u for u in tab.local)
        assert tab.external == [] and tab.violations() == [] and tab.errors == []
    finally:
        tab.context.close()
