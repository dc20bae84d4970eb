"""lessonkit.incremental: what an input change forces to be rebuilt."""

from __future__ import annotations

import pytest

from lessonkit.incremental import Graph, Plan, changed_inputs, digest, digest_of, plan

L5, L6 = "lessons/05-reverse-mode.md", "lessons/06-vjp.md"


def site() -> tuple[Graph, dict[str, str]]:
    """A small site shaped like the real one: two lessons, a source page, the symbol index,
    an attachment drawn from an experiment, the bundle (reads the attachment) and the search index."""
    g = Graph(global_inputs=frozenset({"config", "code", "nav"}))
    g.record("lessons/05-reverse-mode/index.html", ["doc:" + L5, "exp:experiments/trace.py"])
    g.record("lessons/06-vjp/index.html", ["doc:" + L6])
    g.record("source/autograd/core.py/index.html", ["pin:autograd/core.py", "cites:autograd/core.py"])
    g.record("symbols/index.html", ["cites:autograd/core.py", "cites:autograd/tracer.py"])
    g.record("attachments/trace/index.html", ["exp:experiments/trace.py"])
    g.record("downloads/autograd-resources.zip", ["out:attachments/trace/index.html", "doc:experiments/trace.py"])
    g.record(
        "search/search_index.json",
        [
            "out:lessons/05-reverse-mode/index.html",
            "out:lessons/06-vjp/index.html",
            "out:source/autograd/core.py/index.html",
            "out:symbols/index.html",
            "out:attachments/trace/index.html",
        ],
    )
    digests = {name: digest(name) for deps in g.deps.values() for name in deps} | {
        name: digest(name) for name in g.global_inputs
    }
    return g, digests


def test_digest_is_sha256_of_utf8():
    assert digest("a") == digest(b"a") == "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
    assert digest_of([["05", "b1", 3, 9]]) == digest('[["05","b1",3,9]]')


def test_changed_inputs_covers_added_removed_and_modified():
    assert changed_inputs({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "X", "d": "4"}) == {"b", "c", "d"}


def test_prose_edit_rebuilds_the_lesson_and_the_search_index_only():
    g, old = site()
    p = plan(g, old, {**old, "doc:" + L6: "edited"})
    assert p == Plan(
        False,
        frozenset({"lessons/06-vjp/index.html", "search/search_index.json"}),
        frozenset({"doc:" + L6}),
        "doc:" + L6,
    )


def test_citation_change_rebuilds_source_page_and_symbol_index():
    g, old = site()
    p = plan(g, old, {**old, "doc:" + L5: "edited", "cites:autograd/core.py": "new citations"})
    assert not p.full
    assert p.outputs == {
        "lessons/05-reverse-mode/index.html",
        "source/autograd/core.py/index.html",
        "symbols/index.html",
        "search/search_index.json",
    }


def test_experiment_key_change_reaches_the_bundle_through_the_attachment():
    g, old = site()
    p = plan(g, old, {**old, "exp:experiments/trace.py": "new key"})
    assert p.outputs == {
        "lessons/05-reverse-mode/index.html",
        "attachments/trace/index.html",
        "downloads/autograd-resources.zip",
        "search/search_index.json",
    }


@pytest.mark.parametrize(
    "name, why",
    [
        ("nav", "global input changed: nav"),
        ("config", "global input changed: config"),
        ("doc:lessons/15-new.md", "no output is recorded to read doc:lessons/15-new.md"),
    ],
)
def test_what_the_graph_cannot_tell_is_a_full_rebuild(name, why):
    g, old = site()
    p = plan(g, old, {**old, name: "changed"})
    assert (p.full, p.outputs, p.why) == (True, frozenset(), why)


def test_a_removed_input_nobody_reads_is_full_and_a_read_one_rebuilds_its_readers():
    g, old = site()
    stray = {**old, "doc:lessons/99-gone.md": "x"}
    assert plan(g, stray, old).full
    new = dict(old)
    del new["exp:experiments/trace.py"]
    assert plan(g, old, new).outputs == {
        "lessons/05-reverse-mode/index.html",
        "attachments/trace/index.html",
        "downloads/autograd-resources.zip",
        "search/search_index.json",
    }


def test_no_change_and_no_history():
    g, old = site()
    assert plan(g, old, dict(old)).nothing
    assert plan(None, None, old) == Plan(True, why="no recorded build")
    assert plan(g, None, old).full


def test_records_accumulate_and_round_trip_through_json():
    g = Graph(global_inputs=frozenset({"config"}))
    g.record("a.html", ["doc:a.md"])
    g.record("a.html", ["cites:x.py"])
    assert g.deps == {"a.html": frozenset({"doc:a.md", "cites:x.py"})}
    back = Graph.from_json(g.to_json())
    assert (back.deps, back.global_inputs) == (g.deps, g.global_inputs)


def test_output_cycles_terminate():
    g = Graph()
    g.record("a", ["doc:a", "out:b"])
    g.record("b", ["out:a"])
    assert plan(g, {"doc:a": "1"}, {"doc:a": "2"}).outputs == {"a", "b"}
