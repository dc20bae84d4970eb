"""Text out of code: every word the engine shows comes from the project's
``[labels]`` / ``[snapshots]`` of site.toml or from templates; the engine's defaults are English."""

from __future__ import annotations

import ast
import io
import re
import tokenize

import pytest
from support import ROOT

from lessonkit.config import labels
from lessonkit.config import site as siteconfig
from lessonkit.config.labels import LABELS, Labels
from lessonkit.errors import LessonError
from lessonkit.kinds.base import InlineKind, InlineRef, problems_of
from lessonkit.pipeline import svg as figures
from lessonkit.source import refs as sourceref

CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
ENGINE = sorted(p for p in (ROOT / "lessonkit").rglob("*.py") if "__pycache__" not in p.parts)


def _docstring_lines(source: str) -> set[int]:
    """Lines of module, class and function docstrings."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def cjk_in_code(source: str) -> list[tuple[int, str]]:
    """(line, token) of every string token outside docstrings that holds CJK text (comments
    and docstrings may give examples in the series' language)."""
    docs = _docstring_lines(source)
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT or tok.start[0] in docs:
            continue
        if CJK.search(tok.string):
            out.append((tok.start[0], tok.string))
    return out


def test_the_cjk_scan_finds_strings_and_skips_docstrings_and_comments():
    source = '"""模块说明"""\n# 注释\ndef f():\n    """函数说明"""\n    return "注解错误"  # 注释\nx = f"第 {1} 行"\n'
    assert cjk_in_code(source) == [(5, '"注解错误"'), (6, 'f"第 {1} 行"')]


@pytest.mark.parametrize("path", ENGINE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_cjk_text_in_engine_code(path):
    rel = path.relative_to(ROOT).as_posix()
    found = cjk_in_code(path.read_text(encoding="utf-8"))
    assert found == [], f"{rel}: move these words into lessonkit/config/labels.py (and the series' site.toml)"


def test_engine_templates_are_in_english():
    for t in sorted(p for p in (ROOT / "lessonkit" / "templates").rglob("*") if p.is_file()):
        assert not CJK.search(t.read_text(encoding="utf-8")), t.name


def test_engine_assets_name_no_series_and_no_language():
    """The stylesheets and scripts a site gets (lessonkit/assets/: the course's, the guest's scoped
    stylesheet, the exercise blocks' script, worker, test runner and snippet runner): no CJK, no project name."""
    texts = [p for p in (ROOT / "lessonkit" / "assets").rglob("*") if p.suffix in (".css", ".js", ".py")]
    assert sorted(p.name for p in texts) == [
        "exercise.js",
        "lessonkit-blocks.css",
        "lessonkit.css",
        "lessonkit.js",
        "lkcheck.py",
        "lkrun.py",
        "runner.js",
        "worker.js",
    ]
    for p in texts:
        text = p.read_text(encoding="utf-8")
        assert not CJK.search(text) and "autograd" not in text.lower(), p.name


def test_no_autograd_in_engine_code_outside_docstrings_and_comments():
    for path in ENGINE:
        source = path.read_text(encoding="utf-8")
        docs = _docstring_lines(source)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type != tokenize.COMMENT and tok.start[0] not in docs:
                assert "autograd" not in tok.string.lower(), (path.name, tok.start[0], tok.string)


def test_every_default_label_is_used_by_the_engine_and_translated_by_the_series():
    labels_py = ROOT / "lessonkit" / "config" / "labels.py"
    own = labels_py.read_text(encoding="utf-8").split("class Labels")[1]  # not the defaults
    code = own + "\n".join(p.read_text(encoding="utf-8") for p in ENGINE if p.name != "labels.py")
    unused = [k for k in LABELS if f'"{k}"' not in code and f"'{k}'" not in code]
    assert unused == []
    import tomllib

    own = tomllib.loads((ROOT / "sourcemap" / "site.toml").read_text(encoding="utf-8"))["labels"]
    assert [k for k in LABELS if k not in own] == []  # a Chinese series says every word itself


def test_the_series_and_the_example_keep_their_own_words():
    series = siteconfig.load(ROOT, "https://github.com/HIPS/autograd")
    assert series.labels["annotation-error"] == "注解错误"
    assert series.labels["line-ref"] == "第 {span} 行"
    assert series.badges == ("手算推演", "源码推演", "实验观察")
    assert "说明" in series.prose_columns and "下一步" in series.prose_columns
    example = siteconfig.load(ROOT / "examples" / "micrograd-lessons", "https://github.com/karpathy/micrograd")
    assert example.labels["real-source"] == "原样源码 REAL SOURCE"
    assert example.labels["snapshot"] == "STATE SNAPSHOT"  # not configured: the engine's default
    assert example.badges == siteconfig.BADGES


def _load(tmp_path, text: str):
    (tmp_path / "sourcemap").mkdir(exist_ok=True)
    (tmp_path / "sourcemap" / "site.toml").write_text(text, encoding="utf-8")
    return siteconfig.load(tmp_path, "https://github.com/o/p")


def test_a_label_missing_from_site_toml_is_a_located_error(tmp_path):
    conf = _load(tmp_path, '[upstream]\nname = "p"\n\n[labels]\nx-note = "注"\n')
    assert conf.labels["x-note"] == "注"  # a project's own label
    with pytest.raises(LessonError) as err:
        conf.labels["x-remark"]
    assert str(err.value) == (
        'sourcemap/site.toml:4: no label `x-remark` in `[labels]` — add `x-remark = "…"` under [labels]'
    )
    with pytest.raises(LessonError) as err:  # the same from a project's template
        (tmp_path / "templates").mkdir()
        (tmp_path / "templates" / "t.md").write_text('{{ site.labels["x-remark"] }}\n')
        conf.render("t.md")
    assert str(err.value).startswith("sourcemap/site.toml:4: no label `x-remark` in `[labels]`")
    assert not isinstance(err.value, KeyError)


def test_a_missing_label_without_site_toml_points_at_line_1(tmp_path):
    conf = siteconfig.load(tmp_path, "https://github.com/o/p")
    with pytest.raises(LessonError) as err:
        conf.labels["no-such-label"]
    assert str(err.value).startswith("sourcemap/site.toml:1: no label `no-such-label` in `[labels]` — labels of")


@pytest.mark.parametrize(
    "text, line, message, hint",
    [
        ('[labels]\nexperiment = "实验"\ncited-bye = "x"\n', 3, "unknown key `cited-bye` in `[labels]`", "cited-by"),
        ('[labels]\nline-ref = "第 {line} 行"\n', 2, "label `line-ref` has the placeholder {line}", "{span}"),
        ("[labels]\ntotal = 3\n", 2, "label `total` is not text", "EXPERIMENT"),
        ('[labels]\nfrom-index = "{detail} {x}"\n', 2, "label `from-index` has the placeholder {x}", "{detail}"),
        ('[labels]\ntotal = "a\\nb"\n', 2, "label `total` contains the control character U+000A", "one line"),
        ('[snapshots]\nbadges = "手算"\n', 2, "`badges` in `[snapshots]` is not a list of words", "badges ="),
        ('[snapshots]\nbadges = []\n', 2, "`badges` in `[snapshots]` is not a list of words", "badges ="),
        ('[snapshots]\ncolumns = ["a"]\n', 2, "unknown key `columns` in `[snapshots]`", "prose-columns"),
    ],
)
def test_wrong_labels_are_located_errors(tmp_path, text, line, message, hint):
    with pytest.raises(LessonError) as err:
        _load(tmp_path, text)
    p = err.value.problem
    assert (p.path, p.line) == ("sourcemap/site.toml", line)
    assert p.message.startswith(message) and hint in p.hint, (p.message, p.hint)


def test_a_key_that_only_begins_like_another_is_located_at_its_own_line(tmp_path):
    with pytest.raises(LessonError) as err:
        _load(tmp_path, '[labels]\ncited-by-aria = "a"\ncited-by = {}\n')
    assert (err.value.problem.line, err.value.problem.message) == (3, "label `cited-by` is not text")


def test_fill_and_html_replace_only_the_named_placeholders():
    words = Labels({**LABELS, "x-a": "<b>{file}</b> & {other}"})
    assert words.fill("x-a", file="a.py") == "<b>a.py</b> & {other}"
    assert words.fill("value-title", script="s.py", key="a.b") == "s.py, recorded by this build's run: a.b"
    assert words.html("x-a", file="<code>a.py</code>") == "&lt;b&gt;<code>a.py</code>&lt;/b&gt; &amp; {other}"
    assert words.fingerprint != Labels(LABELS).fingerprint


def test_every_default_names_only_the_placeholders_the_engine_fills():
    assert labels.problem("line-ref", "第 {span} 行") is None
    assert labels.problem("script-summary", "{script} {file} {start}-{end}") is None
    assert labels.PLACEHOLDER.findall(LABELS["truncated"]) == ["bytes", "limit"]


def test_line_references_render_in_the_projects_words(tiny):
    r = sourceref.resolve_text(tiny.project().pinned, '[[core.py::backward "node = stack.pop()"]]')
    assert (r.render(), r.render(line="第 {span} 行"), r.render("L")) == ("line 23", "第 23 行", "L23")
    with pytest.raises(LessonError):
        sourceref.parse('[[core.py::backward_pass +1 |行]]')  # the style names are not a language


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text [^>]*>([^<]*)</text>", svg)


def test_figures_take_their_words_from_the_caller():
    sums = [{"axis": 0, "keepdims": True, "out_shape": [1], "out": {"array": [3.0]}}]
    assert _texts(figures.broadcast_svg([1.0, 2.0], sums, "t")) == [
        "upstream g  shape=(2,)",
        "1",
        "2",
        "sum(axis=0, keepdims=True)",
        "gradient  shape=(1,)",
        "3",
    ]
    zh = _texts(figures.broadcast_svg([1.0, 2.0], sums, "t", "b 的梯度", "上游 g", "np.sum(axis={axis})"))
    assert zh[0] == "上游 g  shape=(2,)" and zh[3] == "np.sum(axis=0)" and zh[4] == "b 的梯度  shape=(1,)"
    assert _texts(figures.alive_svg({"N": [1]}, "t"))[1] == "after layer 1"
    assert _texts(figures.alive_svg({"N": [1]}, "t", layer="第 {n} 层后"))[1] == "第 1 层后"


class _Probe(InlineKind):
    name = "probe"

    def read(self, ref):
        if not ref.argument:
            raise LessonError("empty", path=ref.path, line=ref.line, hint="write something")

    def look_up(self, project, ref):
        raise LessonError(f"`{ref.argument}` names nothing", path=ref.path, line=ref.line, hint="h")


def test_inline_kinds_turn_read_and_look_up_into_problems():
    empty, named = InlineRef("probe", "", "docs/a.md", 3), InlineRef("probe", "x", "docs/a.md", 4)
    assert [str(p) for p in _Probe().validate(empty)] == ["docs/a.md:3: empty — write something"]
    assert [str(p) for p in _Probe().check(None, empty)] == ["docs/a.md:3: empty — write something"]
    assert [str(p) for p in _Probe().check(None, named)] == ["docs/a.md:4: `x` names nothing — h"]
    assert _Probe().validate(named) == [] and problems_of(len, "ab") == []
    assert InlineKind().check(None, named) == []  # a kind that overrides nothing finds nothing


def test_prose_columns_decide_what_counts_as_a_hand_value():
    from lessonkit.checks.living import count_table
    from lessonkit.pipeline.recording import build_snapshot, load

    rec = load({"xx": {"grad": 6.0}}, "experiments/x.py")
    table = build_snapshot(["对象 | 值 | 说明 | Note", "a | @xx.grad | 手写 | typed", "b | 7 | — | x"], rec)
    assert count_table(table, ("说明",)) == (1, 0, 3)  # "typed", "7" and "x" are values
    assert count_table(table, ("说明", "Note")) == (1, 0, 1)
    assert count_table(table) == (1, 0, 2)  # the English defaults know "Note", not "说明"


def test_readme_documents_the_new_configuration():
    readme = (ROOT / "docs" / "dev" / "engine-guide.md").read_text(encoding="utf-8")
    assert "[snapshots]" in readme and "lessonkit/config/labels.py" in readme
