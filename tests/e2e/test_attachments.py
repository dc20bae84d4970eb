"""Attachments as an extension point: the engine writes its own two (acceptance record,
repository map); a project registers its own pages and diagrams in sourcemap/attachments.toml,
as this series registers its call-sequence and nested-traces diagrams and Mini's README."""

from __future__ import annotations

import re
import textwrap
import zipfile

import pytest
from support import ROOT, block

from lessonkit.attachments import script_job
from lessonkit.checks import living, verify
from lessonkit.errors import LessonError
from lessonkit.site import pages

pytestmark = pytest.mark.warm_cache  # the builds' subject is not the cache: start from a warm one

EXT = textwrap.dedent(
    """\
    from lessonkit import Attachment, Diagram


    class BlockCount(Attachment):
        name = "block-count"
        uri = "attachments/block-count.md"

        def page(self, inputs):
            blocks = sum(len(rs) for rs in inputs.report.resolved.values())
            return f"# Blocks\\n\\n{blocks} block(s) on {len(inputs.report.resolved)} page(s).\\n"


    class Squares(Diagram):
        name = "squares"
        uri = "attachments/squares.md"

        def draw(self, inputs, result):
            rows = "".join(f"| {n} | {sq} |\\n" for n, sq in (line.split() for line in result.stdout.splitlines()))
            return f"# Squares\\n\\n| n | n² |\\n|---|---|\\n{rows}\\nrun {result.digest[:12]}\\n"

        def bundle(self, inputs):
            return {"squares.txt": inputs.result(self.source).stdout.encode()}


    ATTACHMENTS = [BlockCount(), Squares("experiments/squares.py")]
    """
)


@pytest.fixture
def series(monkeypatch):
    """This series' own attachment modules (lessonkit_ext/, in the repository root)."""
    monkeypatch.syspath_prepend(str(ROOT))
    import lessonkit_ext.diagrams

    return lessonkit_ext.diagrams


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text [^>]*>([^<]*)</text>", svg)


def test_the_diagrams_take_their_words_from_the_series(series):
    svg = series.nesting_svg([2, 1], "float", "ArrayBox · _trace = {level}", "嵌套")
    assert 'aria-label="嵌套"' in svg and _texts(svg)[:2] == ["ArrayBox · _trace = 2", "ArrayBox · _trace = 1"]
    assert _texts(series.nesting_svg([0]))[0] == "Box · trace 0" and "raw value" in series.nesting_svg([0])
    assert 'aria-label="调用"' in series.sequence_svg([(1, "m.f")], title="调用")


def test_a_call_line_of_another_shape_is_an_error_at_the_experiment(series):
    with pytest.raises(LessonError) as err:
        series.parse_calls("CALL: 1 core.f\nCALL: deep core.g\n", "experiments/debug_walkthrough.py")
    assert str(err.value) == (
        "experiments/debug_walkthrough.py: printed 'CALL: deep core.g', not `CALL: <depth> <name>` — print one "
        "line per call: `CALL: ` then its depth (a number) and its name"
    )


def test_the_series_registers_its_diagrams_and_readme(real_project):
    registered = real_project.attachments
    assert [(a.name, a.uri, a.reads) for a in registered] == [
        ("call-sequence", "attachments/call-sequence.md", ("experiments/debug_walkthrough.py",)),
        ("nested-traces", "attachments/nested-traces.md", ("experiments/higher_order.py",)),
        ("mini-readme", "attachments/mini-readme.md", ("mini-autograd/README.md", "mini-autograd/README.zh.md")),
    ]
    assert [registered.where(a) for a in registered] == [
        ("lessonkit_ext.diagrams", 3),
        ("lessonkit_ext.diagrams", 3),
        ("lessonkit_ext.readme", 3),
    ]
    assert pages.attachment_uris(real_project) == [
        "attachments/acceptance.md",  # the engine's own two first
        "attachments/repo-map.md",
        "attachments/call-sequence.md",
        "attachments/nested-traces.md",
        "attachments/mini-readme.md",
    ]
    assert [j.label for j in living.attachment_jobs(real_project)] == [
        "experiments/debug_walkthrough.py",
        "experiments/higher_order.py",
    ]


def test_without_attachments_toml_a_project_has_the_engines_own(site):
    project = site.project()
    assert list(project.attachments) == [] and living.attachment_jobs(project) == []
    assert pages.attachment_uris(project) == ["attachments/acceptance.md"]  # no roles.toml: no repository map
    (site.root / "sourcemap" / "roles.toml").write_text('[roles]\n"autograd/core.py" = "core"\n', encoding="utf-8")
    assert pages.attachment_uris(site.project()) == ["attachments/acceptance.md", "attachments/repo-map.md"]


def _register(site, module: str = EXT) -> None:
    (site.root / "lk_pages.py").write_text(module, encoding="utf-8")
    (site.root / "sourcemap" / "attachments.toml").write_text('modules = ["lk_pages"]\n', encoding="utf-8")


def test_a_project_registers_its_own_attachment_and_diagram(site, monkeypatch):
    """One plain attachment and one diagram, neither of the series': each is a page of the
    built site, the diagram's script runs with the experiments, its bundle file is in the zip,
    and verify --site accepts the site."""
    _register(site)
    site.script("squares.py", "for n in range(1, 4):\n    print(n, n * n)\n")
    site.page("a.md", "# a\n\n" + block("experiment", "Purpose: p", body="print(6 * 7)\n"))
    r = site.build()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "lessonkit: 2 experiment(s)" in r.stderr  # the block and the diagram's script
    out = site.root / "site"
    count = (out / "attachments" / "block-count" / "index.html").read_text(encoding="utf-8")
    assert "<p>1 block(s) on 2 page(s).</p>" in count
    squares = (out / "attachments" / "squares" / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"<td>([^<]*)</td>", squares) == ["1", "1", "2", "4", "3", "9"]
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    project = site.project()
    digest = project.runner.cached(script_job(project, "experiments/squares.py")).digest
    assert f"<p>run {digest[:12]}</p>" in squares
    with zipfile.ZipFile(out / "downloads" / "autograd-resources.zip") as z:
        assert z.read("autograd-resources/attachments/squares.txt") == b"1 1\n2 4\n3 9\n"
        assert z.read("autograd-resources/attachments/block-count.md").startswith(b"# Blocks\n\n1 block(s)")
    shipped = site.verify("--site", "site")
    assert shipped.returncode == 0, shipped.stderr[-3000:]


def _pages_of(site, monkeypatch):
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(site.pinned_root))
    project = site.project()
    report = verify.check(project)
    results = project.runner.run_all(living.build_jobs(project, report))
    return pages.attachment_pages(project, report, results)


def test_an_exception_of_an_attachment_is_one_line_at_its_code(site, monkeypatch):
    broken = EXT.replace("        blocks = sum(", "        blocks = 1 / 0\n        blocks = sum(")
    _register(site, broken.replace('Squares("experiments/squares.py")]', "]"))
    line = broken.split("\n").index("        blocks = 1 / 0") + 1
    with pytest.raises(LessonError) as err:
        _pages_of(site, monkeypatch)
    assert str(err.value) == (
        f"lk_pages.py:{line}: attachment `block-count` failed in page(): ZeroDivisionError: division by zero — "
        "a mistake in module `lk_pages` (sourcemap/attachments.toml:1 registers it)"
    )


def test_a_diagram_whose_experiment_fails_is_an_error_at_the_experiment(site, monkeypatch):
    _register(site, EXT.replace("[BlockCount(), ", "["))  # one diagram alone
    site.script("squares.py", "raise SystemExit('no squares today')\n")
    with pytest.raises(LessonError) as err:
        _pages_of(site, monkeypatch)
    assert str(err.value).startswith("experiments/squares.py: experiment experiments/squares.py ")
    assert "no squares today" in str(err.value)


def test_a_bundle_file_that_is_not_a_file_name_is_an_error_at_the_registration(site, monkeypatch):
    _register(site, EXT.replace('{"squares.txt":', '{"../squares.txt":'))
    site.script("squares.py", "print(1, 1)\n")
    with pytest.raises(LessonError) as err:
        _pages_of(site, monkeypatch)
    assert str(err.value) == (
        "sourcemap/attachments.toml:1: attachment `squares` (module `lk_pages`) adds '../squares.txt' to the "
        'bundle, not a file name with bytes — return `{"name.txt": b"…"}` from bundle()'
    )


def test_a_registration_mistake_is_one_located_line(site):
    """The same line verify, build and the prefill give: here a diagram whose script is missing."""
    _register(site)
    (site.root / "sourcemap" / "attachments.toml").write_text(
        '# pages of our own\n\nmodules = [\n  "lk_pages",\n]\n', encoding="utf-8"
    )
    r = site.verify()
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "sourcemap/attachments.toml:4: attachment `squares` (module `lk_pages`) reads 'experiments/squares.py', "
        "which does not exist — name a file of the project, relative to its root"
    )


def test_a_site_toml_of_the_old_shape_says_where_diagrams_went(site):
    toml = site.root / "sourcemap" / "site.toml"
    toml.write_text('[diagrams]\ncalls = "experiments/a.py"\n' + toml.read_text(encoding="utf-8"), encoding="utf-8")
    r = site.verify()
    assert r.returncode == 1
    assert (
        "sourcemap/site.toml:1: unknown table `[diagrams]` — diagrams are attachments of the project's own now: "
        "register them in sourcemap/attachments.toml (see the engine guide, 'Attachments of your own')"
    ) in r.stderr
