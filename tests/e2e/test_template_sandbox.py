"""``templates/`` is contributed content: it is rendered in a sandbox that reads plain data only.
A template that reaches for Python's internals, an engine object's method or a path gets one
located line and runs nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support import site  # noqa: F401 (fixture)

from lessonkit.config import template_sandbox, templates
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
    env = templates.environment(tmp_path)
    return templates.render(env, "t.md", **data)


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


def test_a_template_reads_only_regular_files_inside_templates(tmp_path):
    """A symbolic link in templates/ (to a file anywhere on the build machine, or to a folder) is
    one located line at the template that names it, and nothing of its target is read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN-123\n", encoding="utf-8")
    (tmp_path / "templates" / "sub").mkdir(parents=True)
    (tmp_path / "templates" / "leak.txt").symlink_to(secret)
    (tmp_path / "templates" / "sub" / "out").symlink_to(tmp_path)
    (tmp_path / "templates" / "top.md").symlink_to(secret)
    with pytest.raises(LessonError) as err:
        render(tmp_path, "LEAK {% include 'leak.txt' %}")
    unsafe = "a template of templates/ is a regular file inside templates/, never a symbolic link: copy the text in"
    assert str(err.value) == f"templates/t.md:3: template `t.md`: `templates/leak.txt` is a symbolic link — {unsafe}"
    with pytest.raises(LessonError) as err:
        render(tmp_path, "{% include 'sub/out/secret.txt' %}")
    assert str(err.value) == f"templates/t.md:3: template `t.md`: `templates/sub/out` is a symbolic link — {unsafe}"
    with pytest.raises(LessonError) as err:
        templates.render(templates.environment(tmp_path), "top.md")
    assert str(err.value) == f"templates/top.md: template `top.md`: `templates/top.md` is a symbolic link — {unsafe}"
    (tmp_path / "templates" / "sub" / "part.md").write_text("inside\n", encoding="utf-8")
    assert render(tmp_path, "{% include 'sub/part.md' %}") == "# heading\n\ninside\n\n"


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("{% macro m(x) %}{{ m(x) }}{% endmacro %}\n{{ m(1) }}", 3),
        ("x\n{% import 't.md' as me %}", 4),
        ("{% include 't.md' %}", 3),
    ],
)
def test_a_template_that_reaches_itself_without_end_is_one_located_line(tmp_path, body, line):
    with pytest.raises(LessonError) as err:
        render(tmp_path, body)
    assert str(err.value) == (
        f"templates/t.md:{line}: template `t.md`: the template calls itself without end (a macro, an include or "
        "an import) — end the recursion: a macro, include or import must not reach itself again"
    )


def test_a_symlink_in_templates_fails_the_build_and_publishes_nothing(site):  # noqa: F811
    secret = site.root.parent / "host-secret.txt"
    secret.write_text("HOST-SECRET-42\n", encoding="utf-8")
    (site.root / "templates").mkdir()
    (site.root / "templates" / "leak.txt").symlink_to(secret)
    (site.root / "templates" / "source-index.md").write_text(
        "# Source\n\nLEAK {% include 'leak.txt' %}\n", encoding="utf-8"
    )
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr
    errors = [line.split("-  ", 1)[1] for line in built.stderr.splitlines() if line.startswith("ERROR")]
    assert errors == [
        "templates/source-index.md:3: template `source-index.md`: `templates/leak.txt` is a symbolic link — "
        "a template of templates/ is a regular file inside templates/, never a symbolic link: copy the text in"
    ], built.stderr[-3000:]
    verified = site.verify()
    assert verified.returncode == 1 and "Traceback" not in verified.stderr
    assert verified.stderr.splitlines()[:1] == [
        "templates/leak.txt: `templates/leak.txt` is a symbolic link — a template of templates/ is a regular file "
        "inside templates/, never a symbolic link: copy the text in"
    ], verified.stderr
    out = site.root / "site"
    assert not out.exists() or not any(
        "HOST-SECRET-42" in f.read_text(errors="replace") for f in out.rglob("*") if f.is_file()
    )


def test_raw_html_a_project_template_writes_is_checked_as_a_pages(site):  # noqa: F811
    """What the project's own template renders becomes a page: a `<script>` in it would be hashed
    into the page's CSP and run. It gets a page's input check: at the template's line when the
    rendered line reads as one of the template, else named by its line of the rendered output."""
    (site.root / "templates").mkdir()
    (site.root / "templates" / "source-index.md").write_text(
        "# Source\n\n<script>document.title='PWN'</script>\n\n{{ '<scr' ~ 'ipt>alert(1)</scr' ~ 'ipt>' }}\n",
        encoding="utf-8",
    )
    built = site.build()
    assert built.returncode == 1 and "Traceback" not in built.stderr
    errors = [line.split("-  ", 1)[1] for line in built.stderr.splitlines() if line.startswith("ERROR")]
    hint = "remove it: a page shows code, output and figures through annotation blocks, which the build checks"
    assert errors == [
        f"templates/source-index.md:3: raw HTML has a <script> element, which runs code in the reader's browser "
        f"— {hint}",
        "templates/source-index.md: line 5 of what it renders: raw HTML has a <script> element, which runs code in "
        f"the reader's browser — {hint}",
    ], built.stderr[-3000:]
    assert not (site.root / "site" / "source" / "index.html").exists()
    verified = site.verify()  # verify reads the template as written: what a value forms is the build's
    assert verified.returncode == 1 and "Traceback" not in verified.stderr
    assert verified.stderr.splitlines()[:1] == [errors[0]], verified.stderr


SIZE_HINT = "a generated page is the size of its data: check the template's loops and repetitions"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{{ 'x' * 100000000 }}", "templates/t.md:3: template `t.md`: a repetition longer than 16777216 items"),
        ("{{ 2 ** 100000000 }}", "templates/t.md:3: template `t.md`: a power above 100 (`** 100000000`)"),
        (
            "{% set ns = namespace(s=[1]) %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
            "templates/t.md:3: template `t.md`: a value longer than 16777216 items",
        ),
        (
            "{% for i in range(100000) %}{% for j in range(1000) %}xxxxxxxxxxxxxxxxxxxx{% endfor %}{% endfor %}",
            "templates/t.md: template `t.md`: renders more than 16777216 characters",
        ),
    ],
)
def test_a_template_renders_within_bounds(tmp_path, body, message):
    with pytest.raises(LessonError) as err:
        render(tmp_path, body)
    assert str(err.value) == f"{message} — {SIZE_HINT}"


def test_repetition_and_powers_within_bounds_render(tmp_path):
    assert render(tmp_path, "{{ 'ab' * 3 }} {{ 2 ** 10 }} {{ [1] * 2 }} {{ 'a' + 'b' }} {{ 1 + 2 }}") == (
        "# heading\n\nababab 1024 [1, 1] ab 3\n"
    )


def test_a_template_that_computes_without_end_is_one_located_line(tmp_path, monkeypatch):
    """Loops that write nothing (or little) still end: a template gets :data:`MAX_CPU` seconds of its
    thread's CPU, then one line at the template's line."""
    monkeypatch.setattr(template_sandbox, "MAX_CPU", 0.5)
    body = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(LessonError) as err:
        render(tmp_path, body)
    assert str(err.value) == f"templates/t.md:3: template `t.md`: takes more than 0.5 s of CPU to render — {SIZE_HINT}"
    assert render(tmp_path, "{% for i in range(1000) %}{% endfor %}done") == "# heading\n\ndone\n"
