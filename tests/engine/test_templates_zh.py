"""The Chinese copies of the engine's page templates (``lessonkit/cli/templates-zh/``, which ``init
--lang zh`` writes into a new series) stay in step with the engine's own (``lessonkit/templates/``).

A zh copy is a translation, so it may say a thing its own way, but it must use everything the engine
template shows: a value added to an engine template and forgotten in its copy would be missing from
every Chinese series' page. Where a copy words an English-only value itself, the table below says
which data it uses instead."""

from __future__ import annotations

from pathlib import Path

import jinja2
import jinja2.meta
import pytest
from jinja2 import nodes

from lessonkit.config.templates import environment

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "lessonkit" / "templates"
ZH = ROOT / "lessonkit" / "cli" / "templates-zh"

# engine template -> {a name it uses: the names the zh copy uses in its place}
WORDED_IN_ZH = {
    # `jail_text` is the engine's English sentence about the jail; the copy words it from the jail's
    # kind and reason and says how the build ran (`root_build`).
    "acceptance.md": {"jail_text": {"jail", "kind", "why", "root_build"}},
}


def _uses(path: Path) -> set[str]:
    """The data a template reads: its free variables, the attributes and string keys it looks up,
    and the filters it applies (as ``|name``)."""
    env = environment(ROOT)
    tree = env.parse(path.read_text(encoding="utf-8"))
    used = set(jinja2.meta.find_undeclared_variables(tree))
    used |= {n.attr for n in tree.find_all(nodes.Getattr)}
    used |= {n.arg.value for n in tree.find_all(nodes.Getitem) if isinstance(n.arg, nodes.Const)}
    used |= {f"|{n.name}" for n in tree.find_all(nodes.Filter)}
    return {u for u in used if isinstance(u, str)}


def test_every_engine_page_template_has_a_chinese_copy():
    generated = {p.name for p in ENGINE.glob("*.md") if not p.name.startswith("new-")}
    assert generated == {p.name for p in ZH.iterdir()}


@pytest.mark.parametrize("name", sorted(p.name for p in ZH.iterdir()))
def test_the_chinese_copy_uses_what_the_engine_template_shows(name):
    engine, zh = _uses(ENGINE / name), _uses(ZH / name)
    instead = WORDED_IN_ZH.get(name, {})
    missing = {u for u in engine - zh if not (u in instead and instead[u] <= zh)}
    assert not missing, f"lessonkit/cli/templates-zh/{name} does not use {sorted(missing)} (the engine's does)"
    # and uses nothing the engine does not pass (StrictUndefined would fail a zh series' build)
    extra = zh - engine - set().union(*instead.values())
    assert not extra, f"lessonkit/cli/templates-zh/{name} uses {sorted(extra)}, which the engine's does not"


def test_the_check_sees_a_forgotten_value(tmp_path):
    """The comparison is not vacuous: a value only the engine's template shows is found."""
    engine = tmp_path / "engine.md"
    engine.write_text("{{ site.name | code }} {{ count }}\n", encoding="utf-8")
    zh = tmp_path / "zh.md"
    zh.write_text("{{ site.name | code }}\n", encoding="utf-8")
    assert _uses(engine) - _uses(zh) == {"count"}
