"""``Recall: yes`` on real-source: a block that shows only the lines under discussion of
a symbol an earlier page showed in full, with a link to that first full showing and an expandable,
verified full version. One small project: page 01 shows ``backward_pass`` in full, page 02 recalls
it (and recalls it again on the same page after a second full showing elsewhere would not matter).
"""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from support import TmpSite, block

from lessonkit.checks import mutation, recall, verify

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

FULL = block("real-source", "File: autograd/core.py", "Symbol: backward_pass")
RECALL = block(
    "real-source",
    "File: autograd/core.py",
    "Symbol: backward_pass",
    "Recall: yes",
    body="""\
    ...
            for parent, ingrad in zip(node.parents, ingrads):
                outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
    …
    """,
)
PAGE1 = "# 一\n\n" + FULL + "\n正文。\n\n" + block("real-source", "File: autograd/core.py", "Symbol: VJPNode.__init__")
PAGE2 = (
    "# 二\n\n"
    + RECALL
    + "\n正文。\n\n"
    + block(
        "real-source", "File: autograd/core.py", "Symbol: VJPNode.__init__", "Recall: yes", "Start-at: self.parents"
    )
)


@pytest.fixture(scope="module")
def recalled(tmp_path_factory, pinned_root):
    site = TmpSite(tmp_path_factory.mktemp("recall") / "proj", pinned_root)
    site.page("lessons/01-full.md", PAGE1)
    site.page("lessons/02-recall.md", PAGE2)
    r = site.run("-m", "lessonkit", "verify", "--update-map")
    assert r.returncode == 0, r.stdout + r.stderr
    b = site.build()
    assert b.returncode == 0, b.stderr[-3000:]
    return site


def _html(site, page: str) -> str:
    return (site.root / "site" / "lessons" / page / "index.html").read_text(encoding="utf-8")


def _block(html: str, anchor: str) -> str:
    start = html.rindex("<div", 0, html.index(f'id="{anchor}"'))
    depth = 0
    for m in re.finditer(r"<div\b|</div>", html[start:]):
        depth += 1 if m[0] == "<div" else -1
        if depth == 0:
            return html[start : start + m.end()]
    raise AssertionError(f"no end of #{anchor}")


def _numbers(html: str, anchor: str) -> list[int]:
    return [int(n) for n in re.findall(rf'<a (?:tabindex="-1" )?href="#{re.escape(anchor)}-L(\d+)">', html)]


def test_the_short_form_shows_the_lines_under_discussion_and_links_to_the_first_full_showing(recalled):
    html = _block(_html(recalled, "02-recall"), "src-backward_pass")
    short = html.split("<details", 1)[0]
    assert _numbers(short, "src-backward_pass") == [30, 31]
    links = re.findall(r'<a class="lk-link" href="([^"]*)">([^<]*)</a>', short)
    assert links[0] == ("../01-full/#src-backward_pass", "完整源码见第 01 篇")


def test_the_full_version_is_a_details_with_the_whole_symbol(recalled):
    html = _block(_html(recalled, "02-recall"), "src-backward_pass")
    details = re.search(
        r'<details class="lk-recall-full" id="src-backward_pass-full"[^>]*><summary>(.*?)</summary>(.*)</details>',
        html,
        re.S,
    )
    assert unescape(details[1]) == "展开完整的 backward_pass"
    assert _numbers(details[2], "src-backward_pass-full") == list(range(25, 33))
    assert "lk-elided" not in details[2]


def test_a_full_showing_has_no_recall_link_and_no_details(recalled):
    html = _block(_html(recalled, "01-full"), "src-backward_pass")
    assert "<details" not in html and "完整源码见" not in html


def test_verify_resolves_the_targets_and_the_map_records_the_short_form(recalled):
    report = verify.check(recalled.project())
    assert report.problems == []
    two = "docs/lessons/02-recall.md"
    assert {k: (v.page, v.anchor) for k, v in report.recalls[two].items()} == {
        0: ("docs/lessons/01-full.md", "src-backward_pass"),
        1: ("docs/lessons/01-full.md", "src-VJPNode-__init__"),
    }
    full = recall.full_showings(report)
    assert [s.page for s in full[("autograd/core.py", "backward_pass")]] == ["docs/lessons/01-full.md"]
    data = json.loads((recalled.root / "sourcemap" / "excerpts.json").read_text())
    entry = next(e for e in data["excerpts"] if e["page"] == two and e["block"] == 0)
    assert (entry["lines"], entry["elided"]) == ([30, 31], [[25, 29], [32, 32]])


def test_checking_the_recalling_page_alone_still_finds_the_earlier_page(recalled):
    report = verify.check(recalled.project(), [recalled.root / "docs/lessons/02-recall.md"])
    assert report.problems == []
    assert report.recalls["docs/lessons/02-recall.md"][0].page == "docs/lessons/01-full.md"


def test_mutation_of_the_recalled_lines_is_caught(recalled, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(recalled.pinned_root))
    report = mutation.run(recalled.project(), {"docs/lessons/02-recall.md"})
    assert report.problems == [] and report.ok, [o.detail for o in report.outcomes if not o.caught]
    lines = sorted((o.block, o.mutation.line) for o in report.outcomes)
    assert [b for b, _ in lines] == [0, 1] and 30 <= lines[0][1] <= 31


def test_a_recall_of_a_symbol_never_shown_in_full_before_is_a_located_error(site):
    site.page("lessons/01-late.md", "# 一\n\n" + RECALL)
    site.page("lessons/02-full.md", "# 二\n\n" + FULL)
    assert site.problems() == [
        "docs/lessons/01-late.md:6: `Recall: yes`: `backward_pass` of autograd/core.py is not shown in full "
        "before this block — show the whole symbol once (`Symbol` and no body) on an earlier page, or drop `Recall`"
    ]


def test_recall_header_errors(site):
    site.page(
        "lessons/01-bad.md",
        "# 一\n\n"
        + block(
            "real-source", "File: autograd/core.py", "Symbol: backward_pass", "Recall: no", body="    return outgrad[0]"
        )
        + "\n"
        + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Recall: yes"),
    )
    assert site.problems() == [
        "docs/lessons/01-bad.md:6: `Recall: no` is not `yes` — write `Recall: yes`",
        "docs/lessons/01-bad.md:14: `Recall: yes` shows the whole symbol again — quote only the lines under "
        "discussion as a body (`...` for the rest), or give `Start-*`/`End-*`",
    ]
