"""Where the link check reports a problem: at the source line an author wrote, once per target."""

from lessonkit.site.links import LinkProblem, check_site, located


def _site(tmp_path):
    site = tmp_path / "site"
    for page, html in {
        "index.html": '<nav><a href="gone/">x</a></nav><a href="a/">a</a>',
        "a/index.html": '<nav><a href="../gone/">x</a></nav><a href="../b.md">b</a> <a href="#top">t</a>',
        "c/index.html": '<nav><a href="../gone/">x</a></nav><a href="../">home</a><img src="https://cdn.example/i.png">',
    }.items():
        (site / page).parent.mkdir(parents=True, exist_ok=True)
        (site / page).write_text(html, encoding="utf-8")
    return site


def test_each_problem_is_at_the_line_that_names_it_and_a_shared_one_is_one_line(tmp_path):
    found = check_site(_site(tmp_path))
    assert [(p.page, p.what, p.target, p.resolved) for p in found] == [
        ("a/index.html", "broken link", "../gone/", "gone/index.html"),
        ("a/index.html", "broken link", "../b.md", "b.md"),
        ("a/index.html", "broken anchor", "#top", "a/index.html#top"),
        (
            "c/index.html",
            "loads a resource from another host",
            "https://cdn.example/i.png",
            "https://cdn.example/i.png",
        ),
        ("c/index.html", "broken link", "../gone/", "gone/index.html"),
        ("index.html", "broken link", "gone/", "gone/index.html"),
    ]
    sources = {
        "a/index.html": ("docs/a.md", "# A\n\nSee [b](b.md).\n\n[top](#top)\n"),
        "c/index.html": ("docs/c.md", "# C\n"),
    }
    config = ("mkdocs.yml", "site_name: t\nnav:\n  - a.md\n  - gone.md\n")
    assert [str(p) for p in located(found, sources, config)] == [
        "mkdocs.yml:4: broken link: ../gone/ (on 3 pages) — link to a page or file the site has (a page's .md "
        "path, relative to the page)",
        "docs/a.md:3: broken link: ../b.md — link to a page or file the site has (a page's .md path, relative "
        "to the page)",
        "docs/a.md:5: broken anchor: #top — link to a heading or block anchor the target page has",
        "site/c/index.html: loads a resource from another host: https://cdn.example/i.png — ship the file with "
        "the site (readers may not reach that host)",
    ]
    # without the configuration, the shared link is at the first page that has it, still once
    assert str(located(found, sources)[0]) == (
        "site/a/index.html: broken link: ../gone/ (on 3 pages) — link to a page or file the site has (a "
        "page's .md path, relative to the page)"
    )


def test_a_link_to_the_site_root_names_no_line():
    """``../..`` names nothing an author typed: it is not matched to a line holding two dots."""
    p = LinkProblem("a/b/index.html", "../..", "broken link", "")
    assert [str(x) for x in located([p], {"a/b/index.html": ("docs/a/b.md", "x..y\n")})] == [
        "site/a/b/index.html: broken link: ../.. — link to a page or file the site has (a page's .md path, "
        "relative to the page)"
    ]


def test_the_line_that_links_wins_over_an_earlier_mention():
    """Prose that names a file before the line that links to it: the link's line is reported."""
    p = LinkProblem("a/index.html", "../b.md", "broken link", "b.md")
    text = "# A\n\nThe file b.md holds the rest.\n\nSee [b](b.md).\n"
    assert [str(x).split(" — ")[0] for x in located([p], {"a/index.html": ("docs/a.md", text)})] == [
        "docs/a.md:5: broken link: ../b.md"
    ]
    # a nav entry in mkdocs.yml, after a comment that mentions the page
    shared = [LinkProblem(page, "gone/", "broken link", "gone/index.html") for page in ("index.html", "a/index.html")]
    config = ("mkdocs.yml", "# gone.md is planned\nnav:\n  - Gone: gone.md\n")
    assert str(located(shared, {}, config)[0]).split(" — ")[0] == "mkdocs.yml:3: broken link: gone/ (on 2 pages)"
