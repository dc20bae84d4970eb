"""A symbolic link under docs/ may lead only into docs/: the project holds files that are no part
of the site (``.git/config``, where a checkout may keep a token), and the build would publish what
a link leads to. The build and verify refuse it before anything is read, one line per link; an
include (``--8<--``) that reaches a file through a link out of docs/ is refused the same way."""

from __future__ import annotations

import pytest
from support import site  # noqa: F401 (fixture)

pytestmark = pytest.mark.warm_cache

SECRET = "[remote]\n\textraheader = AUTHORIZATION: basic SECRET-TOKEN-7\n"
DOCS_HINT = "replace the link with a copy of the file: the site publishes what a link under docs/ leads to"
NO_FILE_HINT = "name a file of docs/ (or of the project's folder) by a relative path"
INCLUDE_HINT = "include a regular file of docs/ (copy the text in): a link out of docs/ publishes what it leads to"


def _errors(stderr: str) -> list[str]:
    return [line.split("-  ", 1)[1] for line in stderr.splitlines() if line.startswith("ERROR")]


def _published(root) -> bool:
    out = root / "site"
    files = [f for f in out.rglob("*") if f.is_file()] if out.exists() else []
    return any("SECRET-TOKEN-7" in f.read_text(errors="replace") for f in files)


def test_a_link_under_docs_to_a_project_file_outside_docs_is_refused(site):  # noqa: F811
    (site.root / "vcs").mkdir()
    (site.root / "vcs" / "config").write_text(SECRET, encoding="utf-8")
    (site.root / "docs" / "assets" / "rt").mkdir(parents=True)
    (site.root / "docs" / "assets" / "rt" / "leak.txt").symlink_to("../../../vcs/config")
    (site.root / "docs" / "ok.txt").write_text("plain\n", encoding="utf-8")
    (site.root / "docs" / "alias.txt").symlink_to("ok.txt")  # a link inside docs/ stays allowed
    line = f"docs/assets/rt/leak.txt: is a link that leads out of docs/ (to `vcs/config`) — {DOCS_HINT}"
    verified = site.verify()
    assert verified.returncode == 1 and "Traceback" not in verified.stderr
    assert line in verified.stdout + verified.stderr, verified.stdout + verified.stderr
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr
    assert _errors(built.stderr) == [line], built.stderr[-3000:]
    assert not _published(site.root)


def test_an_include_through_a_link_out_of_docs_is_refused(site):  # noqa: F811
    (site.root / "vcs").mkdir()
    (site.root / "vcs" / "HEAD").write_text(SECRET, encoding="utf-8")
    (site.root / "head.txt").symlink_to("vcs/HEAD")  # beside docs/: snippets reads the project's folder too
    site.page("a.md", '# 页\n\n--8<-- "head.txt"\n')
    line = f"docs/a.md:3: includes 'head.txt', a symbolic link that leads out of docs/ (to `vcs/HEAD`) — {INCLUDE_HINT}"
    assert site.problems() == [line]
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr
    assert _errors(built.stderr) == [line], built.stderr[-3000:]
    assert not _published(site.root)


@pytest.mark.parametrize(
    "name",
    ["/etc/hostname", "../outside.txt", "nowhere.md"],
    ids=["absolute", "parent", "missing"],
)
def test_an_include_of_a_file_that_is_not_in_the_project_is_one_located_line(site, name):  # noqa: F811
    """Snippets refuses a name outside its base folders (or a missing file) by raising, which MkDocs
    shows as a traceback; the input check names the page's line first, and the build stops there."""
    (site.root.parent / "outside.txt").write_text("SECRET-TOKEN-7\n", encoding="utf-8")
    config = site.root / "mkdocs.yml"
    snippets = "  - pymdownx.snippets:\n      base_path: [docs, .]\n      check_paths: true\n"
    config.write_text(config.read_text(encoding="utf-8") + snippets, encoding="utf-8")
    site.page("a.md", f'# 页\n\n--8<-- "{name}"\n')
    line = f"docs/a.md:3: includes '{name}', which is no file of docs/ or of the project — {NO_FILE_HINT}"
    assert site.problems() == [line]
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr, built.stderr[-3000:]
    assert _errors(built.stderr) == [line], built.stderr[-3000:]
    assert not _published(site.root)
