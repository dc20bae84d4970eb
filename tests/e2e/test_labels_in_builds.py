"""Text out of code, in a whole build: a series without ``[labels]`` or templates builds in the
engine's English defaults (a throwaway site over the real pin; the unit checks of labels are in
tests/engine/test_labels.py)."""

from __future__ import annotations

import re

import pytest
from test_labels import CJK

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one


def test_a_series_without_labels_builds_in_the_engines_english(site):
    """No [labels], no templates: every word of the chrome and of the generated pages is a default."""
    from support import block

    (site.root / "sourcemap" / "site.toml").write_text('[upstream]\nname = "autograd"\n', encoding="utf-8")
    real = block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
    site.page("a.md", '# A\n\nSee [[line: core.py::backward_pass "outgrad = outgrads.pop(node)"]].\n\n' + real)
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    page = (site.root / "site" / "a" / "index.html").read_text(encoding="utf-8")
    badge = re.findall(r'<span class="lk-badge lk-badge-real"[^>]*>([^<]*)</span>', page)
    assert badge == ["REAL SOURCE"] and ">line 28</a>" in page and "View in the source browser" in page
    src = (site.root / "site" / "source" / "autograd" / "core.py" / "index.html").read_text(encoding="utf-8")
    assert (
        '<a class="lk-cite-mark" href="#cited-backward_pass" '
        'aria-label="Blocks that cite this line: A" title="Cited by: A">'
    ) in src and "Ranges cited by the lessons" in src
    pages = [page, src] + [
        (site.root / "site" / p / "index.html").read_text(encoding="utf-8")
        for p in ("symbols", "source", "attachments/acceptance")
    ]
    for html in pages:  # the page's own text (the lesson's title and prose are ASCII here)
        text = re.sub(r"<[^>]+>", " ", html.split('<article class="md-content__inner md-typeset">')[1])
        assert not CJK.search(text.split("</article>")[0]), CJK.search(text)
