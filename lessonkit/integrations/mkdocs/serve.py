"""Incremental serve: ``python -m lessonkit serve`` (``nox -s serve``), see docs/dev/incremental.md.

MkDocs' ``serve`` rebuilds the whole site on every change. This builder keeps the state of
the last build (configuration, files, navigation, Jinja environment, the plugins' state)
and, on a change, asks the :class:`lessonkit.build.Build` of the new state what changed
(:meth:`Build.graph <lessonkit.build.Build.graph>`, :func:`lessonkit.incremental.plan`). It
then renders only the outputs that read a changed input, with MkDocs' own page functions
(``_populate_page``, ``_build_page``), so a page is byte for byte what a full build writes;
it rewrites the search index from the kept entries in full-build order, and the bundle when
its bytes changed. It falls back to a full build (exactly what ``mkdocs serve`` does) when
the graph cannot tell: the configuration, the engine, the theme, the pin, the set of pages
or a page title (the navigation) changed, or the last build failed.

This module is the MkDocs adapter of the incremental core; the hooks are unchanged: the
partial build sends the same events to them (:func:`lessonkit.integrations.mkdocs.hooks.on_config` gives the
kept configuration a new Build, pages go through ``on_page_markdown`` / ``on_page_content`` /
``on_page_context``, ``on_env`` and ``on_post_build`` of its ``BuildEvents``).
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mkdocs import utils
from mkdocs.commands.build import _build_page, _populate_page, build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort, BuildError, ConfigurationError, MkDocsException, PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

from lessonkit import incremental
from lessonkit.build import API_ENTRY
from lessonkit.config import environment
from lessonkit.errors import LessonError
from lessonkit.integrations.mkdocs import hooks as mkdocs_hooks
from lessonkit.integrations.mkdocs import jiebacache
from lessonkit.integrations.mkdocs.watch import Watcher
from lessonkit.site import csp, mathfont

if TYPE_CHECKING:
    from jinja2 import Environment
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.nav import Navigation

log = logging.getLogger("mkdocs.lessonkit.integrations.mkdocs.serve")
SKIP = {".git", ".nox", ".venv", ".cache", "site", "__pycache__", "node_modules", ".pytest_cache", "tests", "tools"}
SEARCH_INDEX = "search/search_index.json"


class _Capture(BasePlugin):
    """Keeps what ``build()`` does not return: the final file list, the navigation, the environment."""

    files: Files | None = None
    nav: Navigation | None = None
    env: Environment | None = None
    paths: Sequence[Path] = ()  # replaced per build by on_files

    @event_priority(100)  # before the lessonkit hooks add the generated pages
    def on_files(self, files, config):
        self.paths = [Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path]
        return files

    @event_priority(-100)
    def on_nav(self, nav, config, files):
        self.files, self.nav = files, nav
        return nav

    @event_priority(-100)
    def on_env(self, env, config, files):
        self.env = env
        return env


def scan(root: Path) -> dict[str, str]:
    """Digest of every project file a build may read (docs, scripts, pin, theme, engine, configuration)."""
    out = {}
    for p in sorted(root.iterdir()):
        if p.name in SKIP or p.name.startswith("."):
            continue
        if p.is_file():
            out[p.name] = incremental.digest(p.read_bytes())
        elif p.is_dir():
            for q in sorted(p.rglob("*")):
                if q.is_file() and not SKIP.intersection(q.relative_to(root).parts) and not q.name.endswith(".pyc"):
                    out[q.relative_to(root).as_posix()] = incremental.digest(q.read_bytes())
    return out


def yaml_problem(exc: BaseException, config_file: str | Path) -> str | None:
    """``mkdocs.yml:LINE: what is wrong`` for a configuration MkDocs could not parse as YAML (the
    error PyYAML raised, which MkDocs wraps without its line), else None."""
    import yaml

    cause = exc.__cause__ or exc.__context__
    mark = getattr(cause, "problem_mark", None) or getattr(cause, "context_mark", None)
    if not isinstance(cause, yaml.MarkedYAMLError) or mark is None:
        return None
    what = ", ".join(str(part) for part in (cause.context, cause.problem) if part) or "not valid YAML"
    return f"{Path(config_file).name}:{mark.line + 1}: {what}"


def listen_warning(host: str, port: int) -> str | None:
    """The warning for a preview that other machines can reach (``dev_addr`` not a loopback
    address), else None."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(host)
    except ValueError:  # a name: "localhost" is this machine, any other may not be
        if host == "localhost":
            return None
        where = f"on {host}, a name other machines may reach"
    else:
        if ip.is_loopback:
            return None
        where = "on every network interface" if ip.is_unspecified else f"on {host}, an address of the network"
    return (
        f"lessonkit serve: dev_addr {host}:{port} listens {where}: other machines can reach this preview — "
        f"use 127.0.0.1:{port} to keep it on this machine"
    )


def _search(config):
    for plugin in config.plugins.values():
        if hasattr(plugin, "search_index") and hasattr(plugin.search_index, "entries"):
            return plugin
    return None


def _page(f: File) -> Page:
    """The page of a documentation file (MkDocs gave every one a page when it built the navigation)."""
    if f.page is None:
        raise BuildError(f"docs/{f.src_uri}: MkDocs gave this file no page")
    return f.page


def _env_events(config, env, files) -> None:
    """``on_env`` for the rebuilt pages (autorefs, the lessonkit hooks), without mkdocstrings' handlers,
    which write site-wide files (its CSS, the inventory) from the pages they rendered: only the API
    reference, which a partial build never renders."""
    skip = config.plugins.get("mkdocstrings")
    for method in config.plugins.events["env"]:
        if skip is None or getattr(method, "__self__", None) is not skip:
            env = method(env, config=config, files=files) or env


class _Jieba:
    """Material's search plugin loads the user dictionary into jieba's process-wide tokenizer in
    every ``on_config``; loading it twice changes word frequencies (and so the search index).
    A full rebuild starts from the dictionary as it was before the first build loaded it."""

    def __init__(self, cache: Path):
        try:
            import jieba
        except ImportError:
            self.dt = None
            return
        jiebacache.use(cache)  # never the system's temporary folder (see jiebacache)
        self.dt = jieba.dt
        self.dt.check_initialized()
        self.saved = (dict(self.dt.FREQ), self.dt.total, dict(self.dt.user_word_tag_tab))

    def restore(self) -> None:
        if self.dt is not None:
            freq, total, tags = self.saved
            self.dt.FREQ.clear()  # in place: jieba's module keeps aliases of these dicts
            self.dt.FREQ.update(freq)
            self.dt.user_word_tag_tab.clear()
            self.dt.user_word_tag_tab.update(tags)
            self.dt.total = total


def _refill_generated(redo, plan) -> None:
    """The generated pages among ``redo`` get the content this build planned for them."""
    generated = {g.uri: g.content for g in plan.generated}
    for f in redo:
        if f.src_uri in generated:
            content = generated[f.src_uri]
            if isinstance(content, str):
                f.content_string = content
            else:
                f.content_bytes = content


def _refresh_font(files, b) -> None:
    """The math font's subset, made again: a formula added or removed may change it (the full
    build put the subset among the files in hooks.on_env)."""
    font = files.get_file_from_path(mathfont.FONT)
    if font is not None and font.abs_src_path is None:
        data = b.math_font()
        if data != font.content_bytes:
            font.content_bytes = data
            font.copy_file()


def _rebuild_pages(config, files, doc_files, redo, nav, env) -> None:
    """Render and write the pages of ``redo``; check every page's anchors; keep the search index
    in the full build's order (the pages' order, each page's entries in its order)."""
    search = _search(config)
    entries: dict[str, list] = {}
    for e in search.search_index.entries if search else []:
        entries.setdefault(e["location"].split("#", 1)[0], []).append(e)
    if search:
        search.search_index.entries = []
    for f in redo:
        n = len(search.search_index.entries) if search else 0
        _build_page(_page(f), config, doc_files, nav, env, excluded=f.inclusion.is_excluded())
        if search:
            entries[_page(f).url] = search.search_index.entries[n:]
    for f in doc_files:
        _page(f).validate_anchor_links(files=files, log_level=config.validation.links.anchors)
    if search:
        search.search_index.entries = [e for f in doc_files for e in entries.get(_page(f).url, [])]
        search.on_post_build(config=config)


class Incremental:
    """The serve builder: :meth:`full` once, then :meth:`rebuild` on every change."""

    def __init__(
        self, config_file: str | Path, site_dir: str | Path, serve_url: str | None = None, dev_addr: str | None = None
    ):
        self.config_file = str(config_file)
        self.root = Path(self.config_file).resolve().parent
        self.site_dir = str(site_dir)
        self.dev_addr = dev_addr
        self.serve_url = serve_url
        self.graph: incremental.Graph | None = None  # None: no build, or the last one failed
        self.digests: dict[str, str] | None = None
        self.state: dict[str, str] = {}  # the digests of the project files at the last build
        self.config: MkDocsConfig | None = None  # these two: set by each full build
        self.capture: _Capture | None = None
        self.last: incremental.Plan | None = None  # what the last rebuild did (tests, log)
        self.started = False
        self.jieba: _Jieba | None = None

    def _load(self):
        kwargs = {"dev_addr": self.dev_addr} if self.dev_addr else {}
        try:
            config = load_config(config_file=self.config_file, site_dir=self.site_dir, **kwargs)
        except ConfigurationError as exc:  # a YAML mistake: its line, not PyYAML's traceback
            located = yaml_problem(exc, self.config_file)
            if located is None:
                raise
            raise ConfigurationError(located) from None
        if self.serve_url is None:
            from mkdocs.livereload import _serve_url

            host, port = config.dev_addr
            self.serve_url = _serve_url(host, port, urlsplit(config.site_url or "/").path)
        config.site_url = self.serve_url
        if not self.started:  # as mkdocs serve: once, for the first configuration
            config.plugins.on_startup(command="serve", dirty=False)
            self.started = True
        capture = _Capture()
        config.plugins["lessonkit/integrations/mkdocs/serve.py"] = capture
        return config, capture

    # ------------------------------------------------------------------ full build
    def full(self, why: str = "first build") -> None:
        """A complete build with a fresh configuration (as ``mkdocs serve``), then record the graph."""
        t0 = time.perf_counter()
        self.graph = None  # until this build succeeded
        self.last = incremental.Plan(True, why=why)
        state = scan(self.root)
        config, capture = self._load()
        if self.jieba is None:
            self.jieba = _Jieba(environment.cache_dir(self.root))
        self.jieba.restore()
        build(config, serve_url=self.serve_url)
        b = mkdocs_hooks.build_of(config)
        self.graph, self.digests = b.graph()
        self.config, self.capture, self.state, self.urls = config, capture, state, dict(b.urls)
        log.info(f"lessonkit serve: full build ({why}) in {time.perf_counter() - t0:.2f} s")

    # ------------------------------------------------------------------ a change
    def rebuild(self) -> None:
        if self.graph is None or self.config is None or self.capture is None:  # set together by full()
            return self.full("the last build failed")
        t0 = time.perf_counter()
        state = scan(self.root)
        changed = sorted(k for k in state.keys() | self.state.keys() if state.get(k) != self.state.get(k))
        if not changed:
            self.last = incremental.Plan(False, why="no file changed")
            log.info("lessonkit serve: no file changed")
            return None
        known = {p.relative_to(self.root).as_posix() for p in self.capture.paths if p.is_relative_to(self.root)}
        code = tuple(d.rstrip("/") + "/" for d in mkdocs_hooks.build_of(self.config).project.site.code)
        outside = [k for k in changed if k not in known and not k.startswith(code)]
        if outside:  # configuration, engine, theme, pin, includes, or a page added or removed
            return self.full(f"{outside[0]} changed")
        if any(k not in state or k not in self.state for k in changed):  # a script added or removed
            return self.full(f"{changed[0]} added or removed")
        try:
            return self._partial(state, t0)
        except Exception as exc:
            self.graph = None  # the next change builds everything
            self.config.plugins.on_build_error(error=exc)
            raise

    def rebuild_or_report(self) -> None:
        """:meth:`rebuild` for the server: a problem in the project is reported as the lines the build
        already logged plus one summary line, not a traceback; the next change builds everything."""
        try:
            self.rebuild()
        except ConfigurationError as exc:  # mkdocs.yml: nothing was built; the last site stays served
            self.graph = None
            text = str(exc).strip()
            if not text.startswith(f"{Path(self.config_file).name}:"):
                text = f"{Path(self.config_file).name}: {text}"
            log.error(f"{text} — fix it and save again; the preview keeps serving the last good site")
        except (Abort, PluginError, BuildError) as exc:
            self.graph = None
            log.error(f"lessonkit serve: not rebuilt: {exc} — fix the problem and save again")
        except (MkDocsException, LessonError, Exception) as exc:  # never leave the server waiting on a build
            self.graph = None
            what = (str(exc).strip().splitlines() or [""])[0][:300]
            log.error(f"lessonkit serve: not rebuilt ({type(exc).__name__}: {what}) — fix the problem and save again")

    def _partial(self, state: dict[str, str], t0: float) -> None:
        config, capture = self.config, self.capture
        assert config is not None and capture is not None  # rebuild(): after a full build
        files, nav, env = capture.files, capture.nav, capture.env
        assert files is not None and nav is not None and env is not None  # the full build captured them
        counter = utils.CountHandler()
        counter.setLevel(logging.WARNING)
        logging.getLogger("mkdocs").addHandler(counter)
        try:
            mkdocs_hooks.on_config(config)  # a new Build for the new state of the project
            b = mkdocs_hooks.build_of(config)
            api = files.get_file_from_path(b.project.site.api)
            try:
                plan = b.plan(
                    list(capture.paths), Path(api.abs_src_path) if api is not None and api.abs_src_path else None
                )
                graph, digests = b.graph()
            except LessonError as exc:
                for p in exc.problems:
                    log.error(str(p))
                b.cancel()
                raise Abort(f"lessonkit: {len(exc.problems)} problem(s); see the lines above") from None
            todo = incremental.plan(self.graph, self.digests, digests)
            if todo.full:
                b.cancel()
                return self.full(todo.why)
            if todo.nothing:
                self.state, self.last = state, todo
                log.info(f"lessonkit serve: nothing to rebuild ({todo.why})")
                return None
            inclusion = InclusionLevel.is_in_serve
            doc_files = files.documentation_pages(inclusion=inclusion)
            redo = [f for f in doc_files if f.src_uri in todo.outputs]
            if any(f.abs_src_path and API_ENTRY.search(b.texts.get(f"docs/{f.src_uri}", "")) for f in redo):
                b.cancel()  # mkdocstrings tore its handlers down after the last build
                return self.full("the API reference changed")
            b.urls = dict(self.urls)
            _refill_generated(redo, plan)
            titles = {f.src_uri: _page(f).title for f in redo}
            for f in redo:
                _populate_page(_page(f), config, files)
            retitled = [f.src_uri for f in redo if _page(f).title != titles[f.src_uri]]
            if retitled:  # the navigation of every page shows it
                b.cancel()
                return self.full(f"the title of {retitled[0]} changed")
            bundle = files.get_file_from_path(b.project.site.bundle)
            if bundle is None:  # the lessonkit hooks add it on every build
                raise BuildError(f"{b.project.site.bundle}: a plugin removed the bundle from the site's files")
            _env_events(config, env, Files([*redo, bundle]))
            if bundle.src_uri in todo.outputs:
                bundle.copy_file()
            _refresh_font(files, b)
            _rebuild_pages(config, files, doc_files, redo, nav, env)
            config.plugins[mkdocs_hooks.PLUGIN].on_post_build(config=config)
            if config.strict and (counts := counter.get_counts()):
                raise Abort("Aborted with " + ", ".join(f"{v} {k.lower()}s" for k, v in counts) + " in strict mode!")
        finally:
            logging.getLogger("mkdocs").removeHandler(counter)
        self.graph, self.digests, self.state, self.last = graph, digests, state, todo
        log.info(
            f"lessonkit serve: rebuilt {len(redo)} page(s){' and the bundle' if bundle.src_uri in todo.outputs else ''}"
            f" in {time.perf_counter() - t0:.2f} s ({todo.why})"
        )
        return None


def _server_class() -> "type[LiveReloadServer]":
    """MkDocs' live-reload server, whose script (added to each page as it is served, with that
    request's numbers in it) the page's policy allows by its hash: the one exemption of ``serve``,
    made per response; the files of the site keep the policy the build wrote."""

    from mkdocs.livereload import LiveReloadServer

    class Server(LiveReloadServer):
        def _inject_js_into_html(self, content: bytes, epoch: int) -> bytes:
            out = super()._inject_js_into_html(content, epoch)
            at = content.rfind(b"</body>")  # where MkDocs puts its <script>…</script>
            at = len(content) if at < 0 else at
            added = out[at : at + len(out) - len(content)]
            if not (added.startswith(b"<script>") and added.endswith(b"</script>")) or out[:at] != content[:at]:
                return out  # another MkDocs: served as it is (the browser refuses the script, the page works)
            code = added[len(b"<script>") : -len(b"</script>")].decode("utf-8")
            return csp.with_script(out.decode("utf-8"), code).encode("utf-8")

    return Server


def serve(config_file: str = "mkdocs.yml", dev_addr: str | None = None, livereload: bool = True) -> None:
    """Build once, then watch, serve and rebuild incrementally (the loop of ``mkdocs serve``)."""
    import shutil

    logger = logging.getLogger("mkdocs")
    if not logger.handlers:  # as the mkdocs command line: INFO and above on stderr
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    problems = mkdocs_hooks.SERVE_LOG  # the pages' problems: the same lines, never counted by strict mode
    if not problems.handlers:
        for each in logger.handlers:
            problems.addHandler(each)
        problems.propagate = False
    from os.path import isfile, join

    terminated: list[int] = []

    def on_term(signum, frame):  # as Ctrl-C: stop serving, clean up, then end as SIGTERM ends a process
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the clean-up short
        terminated.append(signum)
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_term) if main else None
    site_dir = tempfile.mkdtemp(prefix="lessonkit_serve_")
    builder = Incremental(config_file, site_dir, dev_addr=dev_addr)
    try:
        builder.full()
        config = builder.config
        assert config is not None  # full() set it
        host, port = config.dev_addr
        warning = listen_warning(host, port)
        if warning:
            log.warning(warning)
        server = _server_class()(
            builder=builder.rebuild_or_report,
            host=host,
            port=port,
            root=site_dir,
            mount_path=urlsplit(config.site_url or "/").path,
            polling_interval=0.1,
        )
        # the system's notifications (see .watch), else polling; the server only calls what both have
        server.observer = Watcher(server.observer)  # type: ignore[assignment]
        server.build_delay = 0.05

        def error_handler(code):
            page = join(site_dir, f"{code}.html")
            if code in (404, 500) and isfile(page):
                with open(page, "rb") as f:
                    return f.read()
            return None

        server.error_handler = error_handler
        if livereload:
            server.watch(config.docs_dir)
            server.watch(config.config_file_path)
            for item in config.watch:
                server.watch(item)
        try:
            server.serve()
        except KeyboardInterrupt:
            log.info("Shutting down...")
        finally:
            server.shutdown()
    finally:
        try:
            if builder.config is not None:
                builder.config.plugins.on_shutdown()
        finally:
            shutil.rmtree(site_dir, ignore_errors=True)  # the temporary site, also after SIGTERM
            if main:
                signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
            if terminated:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
