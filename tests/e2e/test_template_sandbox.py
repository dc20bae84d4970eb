"""``templates/`` is contributed content: it is rendered in a sandbox that reads plain data only.
A template that reaches for Python's internals, an engine object's method or a path gets one
located line and runs nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support import site  # noqa: F401 (fixture)

from lessonkit.config import site as site_config
from lessonkit.errors import LessonError

HINT = (
    "a template reads plain data only (values, fields, items, filters); it calls no method and reaches no "
    "object of the engine"
)


@dataclasses.dataclass(frozen=True)
class Record:
    name: str
    where: Path
    rows: list

    @property
    def count(self) -> int:
        return len(self.rows)

    def shout(self) -> str:
        return self.name.upper()


def render(tmp_path: Path, body: str, **data) -> str:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "t.md").write_text("# heading\n\n" + body + "\n", encoding="utf-8")
    env = site_config.environment(tmp_path)
    return site_config.render(env, "t.md", **data)


def data(tmp_path: Path) -> dict:
    return {"rec": Record("pin`x", tmp_path / "victim.txt", [{"a": 1}, {"a": 2}]), "names": ["b", "a"]}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{{ rec.name | code }} has {{ rec.count }} rows", "``pin`x`` has 2 rows"),
        ("{% for r in rec.rows %}{{ loop.index }}:{{ r.a }}{{ r['a'] }} {% endfor %}", "1:11 2:22 "),
        (
            "{{ names | sort | join(', ') }} {{ rec.name.upper() }} {{ {'k': 1}.items() | list }}",
            "a, b PIN`X [('k', 1)]",
        ),
        ("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", "6"),
        ("{% macro cell(x) %}[{{ x }}]{% endmacro %}{{ cell(rec.count) }}{{ cell('b') }}", "[2][b]"),
    ],
)
def test_plain_data_renders(tmp_path, body, expected):
    assert render(tmp_path, body, **data(tmp_path)) == f"# heading\n\n{expected}\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{{ rec.where.write_text('pwned') }}", "template `t.md`: Record attribute `where` is not plain data"),
        ("{{ rec.shout() }}", "template `t.md`: Record attribute `shout` is not plain data"),
        ("{{ rec.__init__.__globals__ }}", "template `t.md`: Record attribute `__init__` is not plain data"),
        (
            "{{ ''.__class__.__mro__[1].__subclasses__() }}",
            "template `t.md`: str attribute `__class__` is not plain data",
        ),
        ("{{ names.append('c') }}", "template `t.md`: list attribute `append` is not plain data"),
        ("{{ '{0.__class__}'.format(rec) }}", "template `t.md`: str attribute `format` is not plain data"),
        ("{{ rec | attr('__dict__') }}", "template `t.md`: Record attribute `__dict__` is not plain data"),
    ],
)
def test_anything_but_plain_data_is_one_located_line(tmp_path, body, message):
    with pytest.raises(LessonError) as err:
        render(tmp_path, body, **data(tmp_path))
    assert str(err.value) == f"templates/t.md:3: {message} — {HINT}"
    assert not (tmp_path / "victim.txt").exists()


def test_the_globals_gadget_runs_nothing(tmp_path):
    """Jinja's default globals (cycler, joiner, lipsum) reach Python's modules through their
    functions' globals; the sandbox offers none of them, and dunders are refused anyway."""
    marker = tmp_path / "marker"
    with pytest.raises(LessonError) as err:
        render(tmp_path, "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}")
    assert str(err.value) == (
        "templates/t.md:3: template `t.md`: UndefinedError: 'cycler' is undefined — "
        "check the template against the data the engine passes"
    )
    with pytest.raises(LessonError) as err:
        render(tmp_path, "{{ range.__init__.__globals__ }}")
    assert str(err.value).startswith("templates/t.md:3: template `t.md`: function attribute `__init__` is not plain")
    assert not marker.exists()


def test_a_hostile_project_template_fails_the_build_in_one_line(site):  # noqa: F811
    """The build renders the project's templates/source-index.md (the source browser's index) in
    the sandbox: the gadget is one located error line and nothing runs."""
    marker = site.root / "ran-id"
    (site.root / "templates").mkdir()
    (site.root / "templates" / "source-index.md").write_text(
        "# Source\n\n{{ cycler.__init__.__globals__.os.popen('id > " + str(marker) + "').read() }}\n",
        encoding="utf-8",
    )
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr
    errors = [line.split("-  ", 1)[1] for line in built.stderr.splitlines() if line.startswith("ERROR")]
    assert errors == [
        "templates/source-index.md:3: template `source-index.md`: UndefinedError: 'cycler' is undefined — "
        "check the template against the data the engine passes"
    ], built.stderr[-3000:]
    assert not marker.exists()
