"""The MkDocs adapter, lessonkit.integrations.mkdocs.hooks, on MkDocs' own configuration objects, without a site build.

A tiny project (a ``mkdocs.yml``, one page and the one-line hooks file a series writes) is loaded
with ``mkdocs.config.load_config``, as ``mkdocs build`` and each ``mkdocs serve`` rebuild do; the
Build is a recording stand-in, so these tests need no pinned tree. The real Build behind these
events is exercised by the site builds (tests/series/test_build.py, tests/e2e/test_examples.py,
tests/e2e/test_incremental_serve.py, tests/e2e/test_search_jieba_cache.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.config import load_config
from mkdocs.exceptions import Abort, PluginError

from lessonkit import build as lk_build
from lessonkit.errors import LessonError
from lessonkit.integrations.mkdocs import hooks as mkdocs_hooks

ROOT = Path(__file__).resolve().parents[2]
HOOKS_LINE = (ROOT / "hooks" / "lessonkit_hooks.py").read_text(encoding="utf-8")


class FakeBuild:
    """Records what the adapter asks of a Build."""

    made: list["FakeBuild"] = []
    fail: LessonError | None = None

    def __init__(self, root, command="build", log=print, log_info=print):
        self.root, self.command, self.cancelled, self.current = root, command, 0, None
        self.calls: list[str] = []
        pin = SimpleNamespace(
            version="1.0",
            short="abc1234",
            commit="abc1234" + "0" * 33,
            repo="https://forge.test/o/p",
            commit_known=True,
        )
        self.project = SimpleNamespace(
            pin=pin,
            site=SimpleNamespace(code=("experiments", "tiny"), teaching=("tiny",)),
            cache=Path(root) / ".cache",
        )
        FakeBuild.made.append(self)

    def start(self):
        self.calls.append("start")
        if FakeBuild.fail is not None:
            raise FakeBuild.fail
        return SimpleNamespace(cached=False, provider="a test tree", root=self.root / "pinned")

    def prestart(self, paths=None):
        self.calls.append("prestart")
        self.prestarted = paths

    def forget_site(self, site_dir):
        self.calls.append("forget_site")

    def cancel(self):
        self.cancelled += 1


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# 首页\n", encoding="utf-8")
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "lessonkit_hooks.py").write_text(HOOKS_LINE, encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nhooks:\n  - hooks/lessonkit_hooks.py\nmarkdown_extensions:\n  - lessonkit.pipeline.markdown\n",
        encoding="utf-8",
    )
    for name in ("SITE_URL", "LESSONKIT_REPO_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(lk_build, "Build", FakeBuild)
    monkeypatch.setattr(FakeBuild, "made", [])
    monkeypatch.setattr(FakeBuild, "fail", None)
    monkeypatch.setattr(mkdocs_hooks, "SESSION", mkdocs_hooks.Session())
    return tmp_path


def _load(project: Path):
    return load_config(config_file=str(project / "mkdocs.yml"), site_dir=str(project / "site"))


def test_the_one_line_hooks_file_registers_the_adapter():
    assert HOOKS_LINE.startswith("from lessonkit.integrations.mkdocs.hooks import *") and HOOKS_LINE.count("\n") == 1
    example = (ROOT / "examples" / "micrograd-lessons" / "mkdocs.yml").read_text(encoding="utf-8")
    assert "../" not in example and "hooks:" not in example  # the example uses the plugin
    assert "\n  - lessonkit:\n      course: true" in example and "lessonkit.pipeline" not in example


def _plugin_project(project: Path, extra: str = "") -> Path:
    (project / "mkdocs.yml").write_text(
        f"site_name: t\nplugins:\n  - lessonkit:\n      course: true{extra}\n", encoding="utf-8"
    )
    return project


def test_the_plugin_is_the_entry_point_and_the_same_code_path(project):
    from lessonkit.integrations.mkdocs.plugin import LessonkitPlugin

    config = _load(_plugin_project(project))
    plugin = config.plugins["lessonkit"]
    assert type(plugin) is LessonkitPlugin and plugin.config.add_extensions is True and plugin.config.course is True
    config.plugins.on_config(config)
    build = mkdocs_hooks.build_of(config)
    assert FakeBuild.made == [build] and build.calls == ["start", "prestart", "forget_site"]
    # the extensions lessonkit needs were added, its own two first
    names = config.markdown_extensions
    assert names[:2] == ["lessonkit.pipeline.markdown", "lessonkit.pipeline.mathml"]
    for name in ("attr_list", "md_in_html", "tables", "toc", "pymdownx.highlight", "pymdownx.superfences"):
        assert names.count(name) == 1, name
    assert config.mdx_configs["pymdownx.highlight"] == {
        "anchor_linenums": True,
        "line_spans": "__span",
        "pygments_lang_class": True,
    }
    assert config.mdx_configs["lessonkit.pipeline.markdown"]["root"] == str(project.resolve())
    names = ["pre_build", "files", "page_markdown", "page_content", "env", "page_context", "post_page"]
    events = config.plugins[mkdocs_hooks.PLUGIN]
    for name in names:
        assert any(getattr(m, "__self__", None) is events for m in config.plugins.events[name]), name


def test_without_course_the_plugin_is_a_guest_that_configures_nothing_else(project):
    """``plugins: - lessonkit`` on someone else's site (Material with web fonts, another docs_dir,
    no pin): no course is started, no site-wide stylesheet or script, no extension but the blocks'
    own, whose preprocessors leave a page without a block alone; the font and folder rules are the
    course's."""
    from lessonkit.integrations.mkdocs.guest import Guest

    (project / "pages").mkdir()
    (project / "pages" / "index.md").write_text("# Home\n", encoding="utf-8")
    (project / "mkdocs.yml").write_text(
        "site_name: t\ndocs_dir: pages\ntheme:\n  name: material\n"
        "markdown_extensions:\n  - pymdownx.highlight:\n      line_spans: __x\nplugins:\n  - lessonkit\n",
        encoding="utf-8",
    )
    config = _load(project)
    assert config.plugins["lessonkit"].config.course is False
    before = (list(config.markdown_extensions), list(config.extra_css), list(config.extra_javascript))
    config.plugins.on_config(config)
    config.plugins.on_config(config)  # a second on_config adds nothing twice
    events = config.plugins[mkdocs_hooks.PLUGIN]
    assert isinstance(events, Guest) and FakeBuild.made == []
    assert config.markdown_extensions == [*before[0], "lessonkit.pipeline.markdown"]
    assert (list(config.extra_css), list(config.extra_javascript)) == before[1:]
    assert config.mdx_configs["pymdownx.highlight"] == {"line_spans": "__x"}
    assert "lessonkit_pin" not in config.extra
    for name in ("files", "page_markdown", "page_content", "post_page"):
        assert [m for m in config.plugins.events[name] if getattr(m, "__self__", None) is events], name
    env = object()  # without a feature's pages, the guest has nothing to finish once pages are rendered
    assert events.on_env(env, config, None) is env and events.build is None


def test_the_hooks_file_reads_the_plugins_options_from_extra(project):
    """A series built through the hooks file is a course; it takes the plugin's typed options
    under ``extra: lessonkit:``, checked the same way."""
    yml = project / "mkdocs.yml"
    base = "site_name: t\ntheme:\n  name: material\nhooks:\n  - hooks/lessonkit_hooks.py\n"
    yml.write_text(base, encoding="utf-8")
    config = _load(project)
    with pytest.raises(PluginError) as err:  # a course refuses web fonts by default
        config.plugins.on_config(config)
    assert str(err.value).startswith("mkdocs.yml:2: theme.font: Material loads its fonts")
    yml.write_text(base + "extra:\n  lessonkit:\n    system_fonts: false\n", encoding="utf-8")
    config = _load(project)
    config.plugins.on_config(config)
    assert len(FakeBuild.made) == 1 and "lessonkit.pipeline.mathml" in config.markdown_extensions
    for options, message in (
        ("    course: false\n", "extra.lessonkit.course is false, but the lessonkit hooks file builds a course"),
        (
            "    system_fonts: 3\n",
            "extra.lessonkit.system_fonts: Expected type: <class 'bool'> but received: <class 'int'>",
        ),
        ("    fonts: false\n", "extra.lessonkit.fonts: not an option of lessonkit"),
        (
            "    bundle: false\n",
            "extra.lessonkit.bundle is false, but a course has every course feature (its generated pages "
            "and its checks rely on each other)",
        ),
    ):
        yml.write_text(base + "extra:\n  lessonkit:\n" + options, encoding="utf-8")
        config = _load(project)
        with pytest.raises(PluginError) as err:
            config.plugins.on_config(config)
        assert str(err.value).startswith(f"mkdocs.yml:6: {message} — "), str(err.value)
    assert len(FakeBuild.made) == 1


def test_serve_watches_the_inputs_of_the_build_beside_docs(project):
    for name in ("experiments", "sourcemap", "tiny"):
        (project / name).mkdir()
    yml = project / "mkdocs.yml"
    yml.write_text(yml.read_text(encoding="utf-8") + "watch:\n  - sourcemap\n", encoding="utf-8")
    config = _load(project)
    config.plugins.on_config(config)
    config.plugins.on_config(config)  # a second on_config adds nothing twice
    root = project.resolve()
    assert config.watch == [str(root / "sourcemap"), str(root / "experiments"), str(root / "tiny")]


def test_the_plugin_reports_what_the_site_configuration_lacks(project):
    from mkdocs.exceptions import PluginError

    _plugin_project(project, "\n      add_extensions: false")
    config = _load(project)
    with pytest.raises(PluginError) as err:
        config.plugins.on_config(config)
    assert str(err.value) == (
        "mkdocs.yml: markdown_extensions: lessonkit.pipeline.markdown is missing; without it lessonkit's pages "
        "show raw Markdown — add `- lessonkit.pipeline.markdown` under markdown_extensions, or leave "
        "the plugin's `add_extensions` on, which adds it"
    )
    yml = project / "mkdocs.yml"
    yml.write_text(
        "site_name: t\ntheme:\n  name: material\nplugins:\n  - lessonkit:\n      course: true\n"
        "markdown_extensions:\n  - pymdownx.highlight:\n      line_spans: __x\n",
        encoding="utf-8",
    )
    config = _load(project)
    with pytest.raises(PluginError) as err:
        config.plugins.on_config(config)
    assert str(err.value) == (
        "mkdocs.yml:7: markdown_extensions: pymdownx.highlight sets line_spans: '__x'; lessonkit's code blocks "
        "need '__span' — remove line_spans from pymdownx.highlight's options (or set it to '__span')"
    )
    yml.write_text(
        "site_name: t\ntheme:\n  name: material\nplugins:\n  - lessonkit:\n      course: true\n", encoding="utf-8"
    )
    config = _load(project)
    with pytest.raises(PluginError) as err:
        config.plugins.on_config(config)
    assert str(err.value) == (
        "mkdocs.yml:2: theme.font: Material loads its fonts from fonts.googleapis.com, and the site must make no "
        "request to another host — set `font: false` under `theme:` (system fonts), or serve the fonts from docs/"
    )
    assert FakeBuild.made == []  # nothing was started


def test_mkdocs_registers_the_exported_functions_and_loads_the_hooks_file_once(project):
    first, second = _load(project), _load(project)
    hooks = first.plugins["hooks/lessonkit_hooks.py"]
    # MkDocs 1.6.1 keeps the module (Hooks._load_hook is an lru_cache): its globals outlive every rebuild.
    assert second.plugins["hooks/lessonkit_hooks.py"] is hooks
    assert first.plugins is not second.plugins
    assert first.plugins.events["startup"] == [mkdocs_hooks.on_startup]
    assert first.plugins.events["shutdown"] == [mkdocs_hooks.on_shutdown]
    assert mkdocs_hooks.on_config in first.plugins.events["config"]
    assert mkdocs_hooks.PLUGIN not in first.plugins  # until on_config
    assert first.plugins.events["files"] == []  # search (MkDocs' default plugin) has no on_files


def test_on_config_gives_each_configuration_its_own_build_and_events(project):
    a, b = _load(project), _load(project)  # a build, then a serve rebuild
    a.plugins.on_config(a)
    b.plugins.on_config(b)
    build_a, build_b = mkdocs_hooks.build_of(a), mkdocs_hooks.build_of(b)
    assert FakeBuild.made == [build_a, build_b] and build_a.root == project.resolve()
    # the pages are checked in on_config; the record of the site folder is forgotten until the build succeeds
    assert build_a.calls == build_b.calls == ["start", "prestart", "forget_site"]
    for config, build in ((a, build_a), (b, build_b)):
        # first of the on_config handlers: the prewarm works while Material's search loads jieba
        assert config.plugins.events["config"][0] is mkdocs_hooks.on_config
        events = config.plugins[mkdocs_hooks.PLUGIN]
        assert events.build is build
        names = ["pre_build", "files", "page_markdown", "page_content", "env", "page_context", "post_page"]
        for name in [*names, "build_error", "post_build"]:
            assert [m for m in config.plugins.events[name] if getattr(m, "__self__", None) is events] == [
                getattr(events, f"on_{name}")
            ], name
        assert not any(getattr(m, "__self__", None) is events for m in config.plugins.events["config"])
        assert config.plugins.events["page_context"][-1].mkdocs_priority == -100  # after the search index
        assert config.plugins.events["post_page"][-1].mkdocs_priority == -100  # the HTML MkDocs writes
        assert config.mdx_configs["lessonkit.pipeline.markdown"]["context"]() is None  # the build's page: none yet
        build.current = "page"
        assert config.mdx_configs["lessonkit.pipeline.markdown"]["context"]() == "page"


def test_the_experiments_start_on_the_pages_mkdocs_will_list(project):
    """``exclude_docs`` applied: else the plan in on_files sees other pages than on_config did,
    and reads, checks and plans every page a second time."""
    (project / "docs" / "includes").mkdir()
    (project / "docs" / "includes" / "abbreviations.md").write_text("*[AD]: x\n", encoding="utf-8")
    (project / "docs" / "b.md").write_text("# b\n", encoding="utf-8")
    (project / "docs" / "notes.txt").write_text("not a page\n", encoding="utf-8")
    yml = project / "mkdocs.yml"
    yml.write_text(yml.read_text(encoding="utf-8") + "exclude_docs: |\n  /includes/\n", encoding="utf-8")
    config = _load(project)
    config.plugins.on_config(config)
    docs = project.resolve() / "docs"
    assert sorted(mkdocs_hooks.build_of(config).prestarted) == [docs / "b.md", docs / "index.md"]


def test_every_site_gets_the_engine_stylesheet_script_and_font_once(project):
    from mkdocs.structure.files import get_files

    config = _load(project)
    config.plugins.on_config(config)
    mkdocs_hooks.on_config(config)  # a serve rebuild on the kept configuration: still listed once
    assert [str(x) for x in config.extra_css] == ["assets/lessonkit.css"]
    scripts = [str(x) for x in config.extra_javascript]  # MkDocs' search plugin adds its own
    assert scripts.count("assets/lessonkit.js") == 1, scripts
    files = get_files(config)
    mkdocs_hooks._add_assets(files, config)  # a docs/ file at one of these paths stops the build before
    sheet = files.get_file_from_path("assets/lessonkit.css")
    assert sheet.abs_src_path == str(mkdocs_hooks.ASSETS / "lessonkit.css")
    script = files.get_file_from_path("assets/lessonkit.js")
    font = files.get_file_from_path("assets/fonts/STIXTwoMath-Regular.woff2")
    assert script.abs_src_path == str(mkdocs_hooks.ASSETS / "lessonkit.js")
    assert font.abs_src_path == str(mkdocs_hooks.ASSETS / "fonts" / "STIXTwoMath-Regular.woff2")
    assert (font.url, font.is_documentation_page()) == ("assets/fonts/STIXTwoMath-Regular.woff2", False)


def test_paths_read_from_the_working_folder_become_the_projects(project, monkeypatch, tmp_path_factory):
    """`mkdocs build -f path/mkdocs.yml` from another folder: snippets and jieba's dictionaries
    are found in the project (pymdownx and Material read them relative to the working folder)."""
    (project / "docs" / "words.txt").write_text("反向传播 3 n\n", encoding="utf-8")
    (project / "mkdocs.yml").write_text(
        "site_name: t\nhooks:\n  - hooks/lessonkit_hooks.py\n"
        "theme:\n  name: material\n  font: false\n"
        "plugins:\n  - search:\n      jieba_dict_user: docs/words.txt\n"
        "markdown_extensions:\n  - lessonkit.pipeline.markdown\n"
        "  - pymdownx.snippets:\n      base_path: [docs, /abs/place]\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    config = _load(project)
    config.plugins.on_config(config)  # ours first (priority 100), then Material's search, which checks the file
    assert config.mdx_configs["pymdownx.snippets"]["base_path"] == [str(project / "docs"), "/abs/place"]
    assert config.plugins["material/search"].config.jieba_dict_user == str(project / "docs" / "words.txt")


def test_a_second_on_config_on_the_same_configuration_replaces_its_build(project):
    config = _load(project)
    config.plugins.on_config(config)
    events = config.plugins[mkdocs_hooks.PLUGIN]
    registered = {name: list(methods) for name, methods in config.plugins.events.items()}
    mkdocs_hooks.on_config(config)  # the incremental serve, on the kept configuration
    assert config.plugins[mkdocs_hooks.PLUGIN] is events and events.build is FakeBuild.made[1]
    assert {name: list(methods) for name, methods in config.plugins.events.items()} == registered


def test_a_build_error_cancels_the_build_of_its_own_configuration_only(project):
    a, b = _load(project), _load(project)
    a.plugins.on_config(a)
    b.plugins.on_config(b)
    a.plugins.on_build_error(error=RuntimeError("a page failed"))
    assert [x.cancelled for x in FakeBuild.made] == [1, 0]


def test_the_command_comes_from_the_mkdocs_session(project):
    commands = []
    for startup in (None, "build", "serve", "gh-deploy"):
        config = _load(project)
        if startup is not None:
            config.plugins.on_startup(command=startup, dirty=False)
        config.plugins.on_config(config)
        commands.append(mkdocs_hooks.build_of(config).command)
        if startup == "serve":  # a rebuild of that session: no on_startup, same command
            again = _load(project)
            again.plugins.on_config(again)
            commands.append(mkdocs_hooks.build_of(again).command)
        config.plugins.on_shutdown()
        assert mkdocs_hooks.SESSION.command is None
    assert commands == ["build", "build", "serve", "serve", "build"]


def test_a_project_problem_in_on_config_is_one_mkdocs_error_line(project, caplog):
    FakeBuild.fail = LessonError("no pin", path="sourcemap/pin.toml", line=1, hint="write one")
    config = _load(project)
    with pytest.raises(PluginError) as err:
        config.plugins.on_config(config)
    assert str(err.value) == "sourcemap/pin.toml:1: no pin — write one"
    assert mkdocs_hooks.PLUGIN not in config.plugins
    config.plugins.on_build_error(error=err.value)  # nothing was started: nothing to cancel
    with pytest.raises(Abort, match="hooks are not configured"):
        mkdocs_hooks.build_of(config)


def test_on_config_logs_where_the_pinned_tree_came_from(project, caplog):
    config = _load(project)
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.lessonkit"):
        config.plugins.on_config(config)
    assert caplog.messages == ["lessonkit: pinned 1.0 (abc1234) from a test tree"]
    # the pin, for the theme's templates (the licence link of the footer names its commit)
    assert config.extra["lessonkit_pin"] == {
        "repo": "https://forge.test/o/p",
        "commit": "abc1234" + "0" * 33,
        "version": "1.0",
    }


def test_a_page_rewritten_before_its_code_and_formulas_are_put_back_is_one_located_error():
    from lessonkit.pipeline.render import Deferred

    held = Deferred("n", {})
    early = "<p>" + held.slot_text("x2", "<math><msup><mi>x</mi><mn>2</mn></msup></math>") + "</p>"
    events = mkdocs_hooks.BuildEvents(SimpleNamespace(deferred={"a.md": held}))
    page = SimpleNamespace(file=SimpleNamespace(src_uri="a.md"), content=early)
    events.on_page_context({}, page, None, None)
    assert page.content == "<p><math><msup><mi>x</mi><mn>2</mn></msup></math></p>"  # put back
    held = Deferred("n", {})
    held.slot_text("x2", "<math><mi>x</mi></math>")
    events = mkdocs_hooks.BuildEvents(SimpleNamespace(deferred={"a.md": held}))
    page = SimpleNamespace(file=SimpleNamespace(src_uri="a.md"), content="<p>rewritten by another plugin</p>")
    with pytest.raises(PluginError) as caught:
        events.on_page_context({}, page, None, None)
    assert str(caught.value) == (
        "docs/a.md: 1 highlighted code block(s) or formula(s) could not be put back into the page"
        " — a plugin changed the page HTML after lessonkit"
    )


def test_a_jieba_dictionary_left_half_written_by_a_killed_process_is_removed(tmp_path):
    """jieba writes its cache through a temporary file of its folder (``tmpXXXXXXXX``, then renamed):
    a process killed meanwhile (the first command's background ``jiebacache.prepare``, a build)
    leaves up to 9 MB there that nothing else removes. The next use removes one older than an hour;
    a recent one may be another build's write in progress, and stays."""
    import os
    import time

    from lessonkit.integrations.mkdocs import jiebacache

    folder = jiebacache.use(tmp_path / "cache")
    assert folder is not None and folder.parent.parent == tmp_path / "cache"
    old, recent, kept = folder / "tmpk1lled0", folder / "tmpwr1ting", folder / "notes.txt"
    legacy = folder / "jieba.cache"  # what jieba kept here before the dictionary was sealed: never read now
    for f in (old, recent, kept, legacy):
        f.write_bytes(b"\0" * 100)
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    os.utime(kept, (hours_ago, hours_ago))
    assert jiebacache.use(tmp_path / "cache") == folder
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "tmpwr1ting"]
