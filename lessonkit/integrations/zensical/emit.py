"""``lessonkit build --engine zensical``: a series built by Zensical, checked as MkDocs' build is.

Zensical reads ``mkdocs.yml`` and runs Python-Markdown extensions, but runs no MkDocs plugin or
hook of its own accord. So this emitter does, around one ``zensical build``, what the MkDocs
adapter (:mod:`lessonkit.integrations.mkdocs.hooks`) does inside MkDocs' events, with the same
:class:`lessonkit.build.Build`:

1. **Before**: the pinned tree, the pages' check, the experiments, the plan (source browser,
   symbol index, attachments, bundle). Every page's annotation blocks and inline references are
   rendered here, with the whole site's links, exactly as MkDocs' build renders them, and each is
   replaced in the page by a marker word (:func:`lessonkit.pipeline.markdown.fragment_marker`).
   The pages, the generated pages, the bundle and lessonkit's assets are staged in a temporary
   folder with a copy of ``mkdocs.yml`` that points Zensical at it; ``docs/`` is never written.
2. **Zensical** builds the staged project (``--strict``); its folder becomes the project's site folder. The
   blocks' extension, configured with the fragments file, swaps each marker for its HTML.
3. **After**: the source-browser listings are filled in, every HTML file gets its
   Content-Security-Policy (hashes of exactly its inline scripts and styles), every link of the
   written site is checked, and the record for ``verify --site`` is written.

Problems are located lines, as in a MkDocs build; the command's exit status is 1 when there is any.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from markdown import Markdown
from markdown.util import HTML_PLACEHOLDER

from lessonkit import build as lk_build
from lessonkit.checks import includes
from lessonkit.config import checks as lk_checks
from lessonkit.config import environment as lk_env
from lessonkit.errors import LessonError
from lessonkit.pipeline import markdown as blocks
from lessonkit.site import csp
from lessonkit.source import pyodide

BLOCKS = "lessonkit.pipeline.markdown"
THEME = "zensical_ui"  # the package of Zensical's theme (templates and assets)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STASHED = re.compile(re.escape(HTML_PLACEHOLDER).replace("%s", "([0-9]+)"))


def url_of(uri: str) -> str:
    """The URL of a site file (docs-relative ``uri``) with directory URLs, as MkDocs and Zensical write it."""
    if not uri.endswith(".md"):
        return uri
    stem = uri[:-3]
    if stem == "index" or stem.endswith("/index"):
        return stem[:-5]
    return stem + "/"


def dest_of(uri: str) -> str:
    url = url_of(uri)
    return url + "index.html" if uri.endswith(".md") else url


def theme_folder() -> Path:
    """The installed theme's templates: what Zensical copies its assets from."""
    import importlib.util

    spec = importlib.util.find_spec(THEME)
    if spec is None or not spec.origin:
        raise LessonError(
            f"{THEME} is not installed; Zensical builds with its theme",
            hint="pip install -r requirements-test.txt (zensical and zensical-ui, pinned)",
        )
    return Path(spec.origin).parent.resolve() / "templates"


@dataclass
class Staged:
    """A page's text as Zensical will read it (:meth:`lessonkit.build.Build.finish` fills its tokens)."""

    content: str | None


class Emitter:
    """One Zensical build of the project whose configuration is ``config_file``."""

    def __init__(self, config_file: Path, log=print, log_info=print):
        from mkdocs.config import load_config

        self.config_file = config_file.resolve()
        self.root = self.config_file.parent
        self.log, self.log_info = log, log_info
        try:
            self.config = load_config(config_file=str(self.config_file))
        except Exception as exc:  # MkDocs' own validation: one line
            raise LessonError(f"{exc}", path=self.config_file.name) from None
        self.site_dir = Path(self.config.site_dir).resolve()
        self.b = lk_build.Build(self.root, "build", log=log, log_info=log_info)
        self.fragments: dict[str, str] = {}  # marker -> the HTML of a block or inline reference
        self.nonce = secrets.token_hex(8)  # markers an author cannot write ahead of time
        self.current: blocks.PageContext | None = None

    # -- 1. before
    def prepare(self) -> None:
        import importlib.util

        from lessonkit.integrations.mkdocs import setup

        config, root = self.config, self.root
        if importlib.util.find_spec("zensical") is None:
            raise LessonError(
                "zensical is not installed",
                hint="pip install -r requirements-test.txt (zensical and zensical-ui, pinned), or build with MkDocs",
            )
        theme_folder()  # its theme, before anything runs
        if Path(config.docs_dir).resolve() != root / "docs":
            raise LessonError(
                f"docs_dir is {config.docs_dir!r}; lessonkit reads a series' pages from docs/ beside mkdocs.yml",
                path="mkdocs.yml",
                hint="set `docs_dir: docs` (or leave it out) and keep the lessons in docs/",
            )
        setup.prepare(config, str(root))  # the extensions the blocks' HTML needs, the fonts
        lk_env.site_urls()
        lk_env.source_date_epoch()
        lk_checks.check_docs(root)
        # a file of docs/ where the engine or the theme writes one is an error, as in a MkDocs build
        from lessonkit.attachments import ENGINE_PAGE_OWNERS
        from lessonkit.project import Project

        site = Project(root).site
        engine = {site.bundle: "the engine's bundle"}
        custom = getattr(config.theme, "_custom_dir", None)  # the project's overrides, before the theme's files
        dirs = [Path(custom)] if custom else []
        dirs.append(theme_folder())
        written = lk_checks.written_files(root, dirs, ("404.html", "sitemap.xml"), engine)
        replaced = lk_checks.replaced_files(root, written, ENGINE_PAGE_OWNERS)
        if replaced:
            raise LessonError.collect(replaced)

    def files(self) -> tuple[list[str], dict[str, Path]]:
        """The pages (docs-relative) and the other files of docs/ MkDocs would build (``exclude_docs``
        applied), the latter with their source."""
        from mkdocs.structure.files import get_files

        files = get_files(self.config)
        pages = [f.src_uri for f in files.documentation_pages()]
        media = {f.src_uri: Path(f.abs_src_path) for f in files if not f.is_documentation_page() and f.abs_src_path}
        return pages, media

    def stage(self, staging: Path) -> Path:
        """Write the staged docs folder and configuration; return the configuration's path."""
        b, docs = self.b, staging / "docs"
        pages, media = self.files()
        paths = [self.root / "docs" / uri for uri in pages]
        b.start()
        b.prestart(paths)
        b.start_experiments()
        api = self.root / "docs" / b.project.site.api
        plan = b.plan(paths, api if api.is_file() else None)
        if includes.unusable(b.report):  # reported by plan(); rendering would raise on them
            return staging / "mkdocs.yml"
        site = b.project.site
        generated = {g.uri: g.content for g in plan.generated}
        copied: dict[str, Path] = dict(media)
        assets = lk_checks.ENGINE_ASSETS
        for path in sorted(assets.rglob("*")):
            rel = path.relative_to(assets)
            if path.is_file() and rel.parts[0] != "scoped":
                copied.setdefault("assets/" + rel.as_posix(), path)
        copied |= self._runtime()
        late = list(plan.late)
        uris = [*pages, *generated, *late, site.bundle, *copied]
        # While the pages render, a link names its target's file (a page's Markdown): Zensical turns
        # the links of a page's HTML into URLs as it does its Markdown links, and checks them.
        b.urls = {uri: uri for uri in uris}
        b.dests = {uri: dest_of(uri) for uri in uris}
        md = self._markdown()
        texts: dict[str, Staged] = {}
        for uri in [*pages, *(u for u in generated if u.endswith(".md")), *late]:
            page_file = self.root / "docs" / uri if uri in pages else None
            raw = page_file.read_text(encoding="utf-8") if page_file else generated.get(uri, "")
            raw = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            head, body = _front_matter(raw)
            links = lk_build.SiteLinks(b, uri.rpartition("/")[0] + "/" if "/" in uri else "", _relative)
            body = b.page(uri, str(page_file) if page_file else None, body, links)
            texts[uri] = Staged(head + self._render(md, body))
            b.page_done()
        bundle = b.finish(list(texts.items()))
        b.urls = {uri: url_of(uri) for uri in uris}  # the written site's, for the listings and the link check
        if b.problems:
            return staging / "mkdocs.yml"
        for uri, staged in texts.items():
            _write(docs / uri, (staged.content or "").encode("utf-8"))
        for uri, content in generated.items():
            if not uri.endswith(".md"):
                _write(docs / uri, content if isinstance(content, bytes) else content.encode("utf-8"))
        _write(docs / site.bundle, bundle)
        for uri, src in copied.items():
            _write(docs / uri, src.read_bytes())
        b.copied = {b.dests[uri]: str(src) for uri, src in copied.items()}
        theme = theme_folder()
        b.theme = [str(theme)]
        fragments = staging / "fragments.json"
        fragments.write_text(json.dumps(self.fragments, ensure_ascii=False), encoding="utf-8")
        config = staging / "mkdocs.yml"
        config.write_text(yaml.safe_dump(self._config(docs, fragments), allow_unicode=True), encoding="utf-8")
        return config

    def _runtime(self) -> dict[str, Path]:
        """The browser's Python under ``assets/pyodide/`` when a page has an exercise or runnable block."""
        report = self.b.report  # plan() made it
        if report is None or not (report.count("exercise") or report.count("runnable")):
            return {}
        lock = pyodide.read_lock(self.root)
        if lock is None:
            return {}
        folder = pyodide.provide(lock, self.b.project.cache)
        pyodide.check(lock, folder)
        return {f"{pyodide.SITE_DIR}/{name}": folder / name for name in lock.files}

    def _markdown(self) -> Markdown:
        """A Markdown converter with the site's extensions, as MkDocs makes one for each page; its
        blocks' extension reads :attr:`current`."""
        configs = {name: self._options(name) for name in self.config.mdx_configs}
        configs.setdefault(BLOCKS, {})["context"] = lambda: self.current
        return Markdown(extensions=list(self.config.markdown_extensions), extension_configs=configs)

    def _options(self, name: str) -> dict[str, Any]:
        """An extension's options from mkdocs.yml; snippets' ``base_path`` made the project's (it is
        read relative to the working folder, and Zensical works in the staged copy)."""
        options = {k: v for k, v in self.config.mdx_configs.get(name, {}).items() if not callable(v)}
        if name == "pymdownx.snippets" and "base_path" in options:
            paths = options["base_path"]
            options["base_path"] = [str(self.root / p) for p in ([paths] if isinstance(paths, str) else paths)]
        return options

    def _render(self, md: Markdown, text: str) -> str:
        """``text`` with every block and inline reference rendered (as MkDocs' build renders them)
        and replaced by the marker of its fragment."""
        ctx = self.b.current
        if ctx is None:
            return text
        ctx.deferred = None  # the fragment is the finished HTML: nothing is filled in later
        md.reset()
        if blocks.RAW_FENCES in md.preprocessors:
            raise LessonError(
                "pymdownx.superfences sets preserve_tabs, which the Zensical emitter does not support",
                path="mkdocs.yml",
                hint="remove preserve_tabs from pymdownx.superfences' options",
            )
        self.current = ctx
        lines = text.split("\n")
        try:
            for prep in md.preprocessors:
                lines = prep.run(lines)
                if isinstance(prep, blocks._Pre) and not prep.early:
                    break
        finally:
            self.current = None
        stash = md.htmlStash.rawHtmlBlocks

        def marker(m: re.Match) -> str:
            key = blocks.fragment_marker(self.nonce, len(self.fragments))
            self.fragments[key] = str(stash[int(m.group(1))])
            return key

        return "\n".join(STASHED.sub(marker, line) for line in lines)

    def _config(self, docs: Path, fragments: Path) -> dict[str, Any]:
        """The staged copy of mkdocs.yml: the staged docs, the project's site folder, the extensions
        with their options (the blocks' one swapping the fragments in), lessonkit's stylesheet and
        script; MkDocs plugins and hooks, which Zensical does not run, left out."""
        from mkdocs.utils.yaml import yaml_load

        with open(self.config_file, encoding="utf-8") as fh:
            raw = yaml_load(fh) or {}
        config = self.config
        raw.pop("hooks", None)
        raw.pop("watch", None)  # serve's folders, relative to the project: a build watches nothing
        plugins = raw.get("plugins")
        if isinstance(plugins, list):
            raw["plugins"] = [p for p in plugins if (next(iter(p)) if isinstance(p, dict) else p) != "lessonkit"]
        raw["docs_dir"] = docs.name  # beside this copy of mkdocs.yml
        raw["site_dir"] = "site"  # Zensical writes only inside its project: moved to the site folder after
        extensions = []
        for name in config.markdown_extensions:
            if name == BLOCKS:
                options = {"root": str(self.root), "fragments": str(fragments)}
            else:
                options = self._options(name)
            extensions.append({name: options} if options else name)
        raw["markdown_extensions"] = extensions
        # Zensical looks for anchors in the Markdown's own headings: the ids of the blocks (swapped
        # in as HTML) and of the source listings (filled in after) are found by the link check of
        # the written site (lessonkit.site.links), which checks every link and anchor.
        validation = raw.get("validation")
        validation = raw["validation"] = {**(validation if isinstance(validation, dict) else {}), "anchors": "ignore"}
        if isinstance(validation.get("links"), dict):  # the long form, `links: anchors:`
            validation["links"] = {**validation["links"], "anchors": "ignore"}
        for option, uri in (("extra_css", "assets/lessonkit.css"), ("extra_javascript", "assets/lessonkit.js")):
            listed = [str(x) for x in config[option]]
            raw[option] = listed if uri in listed else [*listed, uri]
        theme = raw.get("theme")
        if isinstance(theme, dict) and theme.get("custom_dir"):
            theme["custom_dir"] = str((self.root / theme["custom_dir"]).resolve())
        pin = self.b.project.pin
        if pin.commit_known:
            raw.setdefault("extra", {})["lessonkit_pin"] = {
                "repo": pin.repo,
                "commit": pin.commit,
                "version": pin.version,
            }
        return raw

    # -- 2. Zensical
    def zensical(self, config: Path) -> bool:
        if self.site_dir.is_dir():  # as MkDocs' build: the folder holds this build's files only
            shutil.rmtree(self.site_dir)
        env = dict(os.environ, NO_COLOR="1")
        proc = subprocess.run(
            [sys.executable, "-m", "zensical", "build", "--strict", "-f", str(config)],
            cwd=config.parent,
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode == 0:
            shutil.move(str(config.parent / "site"), str(self.site_dir))
            return True
        text = ANSI.sub("", proc.stdout + proc.stderr)
        report, _, trace = text.partition("Traceback (most recent call last):")  # its reasons come first
        lines = [line for line in report.splitlines() if line.strip()]
        lines += [line for line in trace.splitlines() if line.strip()][-1:]  # the exception, without the stack
        self.log(f"{self.config_file.name}: zensical build failed (exit code {proc.returncode}); its report:")
        for line in lines[-40:]:
            self.log("  " + line)
        return False

    # -- 3. after
    def finish(self) -> None:
        b, site = self.b, self.site_dir
        code_pages = {b.dests[uri]: uri for uri in b.generated}
        for path in sorted(site.rglob("*.html")):
            rel = path.relative_to(site).as_posix()
            html = path.read_text(encoding="utf-8")
            uri = code_pages.get(rel)
            if uri is not None:
                html = b.page_html(uri, html, b.urls[uri], _relative)
            try:
                html = csp.apply(html, f"{site.name}/{rel}")
            except LessonError as exc:
                b.report_problem(exc.problem)
                continue
            path.write_text(html, encoding="utf-8")
        # the theme's assets Zensical copied (verify --site compares each copy with its source)
        theme = Path(b.theme[0])
        for path in sorted(site.rglob("*")):
            rel = path.relative_to(site).as_posix()
            src = theme / rel
            if path.is_file() and rel not in b.copied and src.is_file() and src.read_bytes() == path.read_bytes():
                b.copied[rel] = str(src)  # (sitemap.xml is rendered from the theme's template: not a copy)
        b.check_links(site, self.config_file)
        b.record_site(site)

    def run(self) -> int:
        b = self.b
        try:
            self.prepare()
            b.forget_site(self.site_dir)
            from urllib.parse import urlsplit

            b.site_path = urlsplit(self.config.site_url or "/").path or "/"
            with tempfile.TemporaryDirectory(prefix="lessonkit-zensical-") as tmp:
                config = self.stage(Path(tmp))
                if b.problems:
                    self.log(f"lessonkit: {len(b.problems)} annotation problem(s); see the lines above")
                    return 1
                if not self.zensical(config):
                    return 1
            self.finish()
        except LessonError as exc:
            for p in exc.problems:
                self.log(str(p))
            return 1
        finally:
            b.cancel()
        if b.problems:
            self.log(f"lessonkit: {len(b.problems)} problem(s); see the lines above")
            return 1
        self.log_info(f"lessonkit: built {self.site_dir} with Zensical")
        return 0


def _relative(url: str, other: str) -> str:
    from mkdocs.utils import get_relative_url

    return get_relative_url(url, other)


def _front_matter(text: str) -> tuple[str, str]:
    """A page's YAML front matter (with its closing line) and the rest, as MkDocs splits them."""
    m = re.match(r"^-{3}[ \t]*\n.*?\n(?:-{3}|\.{3})[ \t]*\n", text, re.S)
    return (m.group(0), text[m.end() :]) if m else ("", text)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def build(config_file: Path) -> int:
    """``lessonkit build --engine zensical -f CONFIG``: 0 when the site is built without a problem."""

    def err(line: str) -> None:
        print(line, file=sys.stderr)

    try:
        emitter = Emitter(config_file, log=err, log_info=err)
    except LessonError as exc:
        err(str(exc))
        return 1
    return emitter.run()
