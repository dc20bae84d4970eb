"""What a project says about itself, so that the engine names nothing: ``sourcemap/site.toml``
(data) and ``templates/`` (the prose of generated pages, Jinja2).

Every field has a default derived from the pin (``[upstream] repo`` of ``pin.toml``), so a
project without ``site.toml`` still builds::

    [upstream]
    name = "autograd"             # how pages name the pinned project (default: last part of the repo URL)
    label = "HIPS/autograd"       # how disclaimers name it (default: owner/name of the repo URL)
    package = "autograd/"         # the pinned folder the source browser shows (default: "<name>/")

    [repository]
    teaching = ["mini-autograd"]  # folders teaching blocks may quote; on the experiments' sys.path
    code = ["experiments", "mini-autograd"]  # folders with code pages, copied into the bundle

    [bundle]
    path = "downloads/autograd-resources.zip"  # default: "downloads/<name>-resources.zip"

    [experiments]                 # optional: what of the pinned tree each experiment's box holds
    pinned = ["autograd/", "examples/*.py"]  # files, folders or patterns of the manifest
                                  # (default: the whole tree)
    path = "src"                  # the folder of the pinned tree experiments import from, for a
                                  # src/ layout (default: the tree's top folder)

    [snapshots]                   # optional: the vocabulary of snapshot tables
    badges = ["手算推演", "源码推演", "实验观察"]  # the values `Label:` may take (default: English)
    prose-columns = ["说明", "来源"]  # columns whose cells are the author's prose, not values of a
                                  # run (a column counts when its name contains one of these)

    [labels]                      # every word the engine shows (defaults: English, lessonkit/config/labels.py)
    real-source = "真实源码 REAL SOURCE"
    purpose = "目的（Purpose）"
    from-index = "来自 Python 包索引的发布包 {detail}"   # {detail}: the provider's file or name

Templates are looked up in the project's ``templates/`` first, then in ``lessonkit/templates/``.
Generated pages of the project's own (attachments, diagrams) are registered in
``sourcemap/attachments.toml`` (:mod:`lessonkit.attachments`), not here.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.config.labels import LABELS, Labels
from lessonkit.config.labels import problem as label_problem
from lessonkit.util import text

CONFIG = "sourcemap/site.toml"
ENGINE_TEMPLATES = Path(__file__).parents[1] / "templates"
_KEYS = {
    "upstream": {"name", "label", "package"},
    "repository": {"teaching", "code"},
    "bundle": {"path"},
    "snapshots": {"badges", "prose-columns"},
    "experiments": {"pinned", "versions", "path"},
    "labels": None,  # keys: lessonkit.config.labels.LABELS, or the project's own (`x-…`)
}
# Tables an older site.toml had: the project's own attachments are registered in attachments.toml.
MOVED = {
    "diagrams": "diagrams are attachments of the project's own now: register them in sourcemap/attachments.toml",
    "attachments": "a project's own attachments are registered in sourcemap/attachments.toml",
}
# The defaults of [snapshots]: which `Label:` a snapshot may carry, which columns are prose.
BADGES = ("by hand", "from the source", "observed")
PROSE_COLUMNS = ("Note", "Source", "Why", "Meaning", "Explanation", "Rule", "Location", "Next step")


@dataclass(frozen=True)
class SiteConfig:
    root: Path
    name: str
    label: str
    package: str
    teaching: tuple[str, ...] = ()
    code: tuple[str, ...] = ("experiments",)
    bundle: str = ""
    labels: Labels = field(default_factory=lambda: Labels(LABELS))
    badges: tuple[str, ...] = BADGES
    prose_columns: tuple[str, ...] = PROSE_COLUMNS
    box_pinned: tuple[str, ...] = ()  # [experiments] pinned: what each box copies (empty: the whole tree)
    # [experiments] versions: (label, distribution) of the installed packages whose versions key every
    # experiment and appear in its provenance line, beside Python's (`["NumPy=numpy"]`; default none)
    tools: tuple[tuple[str, str], ...] = ()
    # [experiments] path: the folder of the pinned tree on the experiments' sys.path ("" : its top)
    import_path: str = ""

    @property
    def env_prefix(self) -> str:
        """Experiments read ``<PREFIX>_PINNED_ROOT`` / ``<PREFIX>_PINNED_VERSION``: PREFIX is the name
        in capitals (``[upstream] name``), non-word characters as ``_``."""
        return re.sub(r"\W", "_", self.name).upper()

    @cached_property
    def templates(self):
        return environment(self.root)

    def render(self, name: str, **data) -> str:
        """The template ``name`` filled with ``data`` (Markdown: a value from a file or a name goes in
        through the ``code``, ``mdtext`` or ``url`` filter; numbers and checked pin fields as given)."""
        return render(self.templates, name, site=self, **data)


def environment(root: Path):
    """Templates of the project (``templates/``) before the engine's (``lessonkit/templates/``)."""
    import jinja2

    loader = jinja2.ChoiceLoader(
        [jinja2.FileSystemLoader(root / "templates"), jinja2.FileSystemLoader(ENGINE_TEMPLATES)]
    )
    # `{#id}` is Markdown's heading-id syntax, so Jinja2 comments are written {#-- … --#}
    env = jinja2.Environment(
        loader=loader,
        keep_trailing_newline=True,
        autoescape=False,  # the templates are Markdown: values go in through the filters below
        undefined=jinja2.StrictUndefined,
        comment_start_string="{#--",
        comment_end_string="--#}",
    )
    # One escaping function per Markdown context (lessonkit.util.text): {{ file | code }} is a code
    # span, {{ name | mdtext }} literal text, {{ path | url }} a link destination.
    env.filters.update(code=text.md_code, mdtext=text.md_text, url=text.md_url)
    return env


def render(env, name: str, **data) -> str:
    import jinja2

    try:
        return env.get_template(name).render(**data)
    except jinja2.TemplateNotFound:
        raise LessonError(f"no template `{name}`", path="templates", hint="add templates/" + name) from None
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None)
        raise LessonError(
            f"template `{name}`: {exc.__class__.__name__}: {exc}",
            path=f"templates/{name}",
            line=line,
            hint="check the template against the data the engine passes",
        ) from None


def load(root: Path, repo_url: str) -> SiteConfig:
    """The project's ``sourcemap/site.toml`` (optional), checked, with defaults from the pin."""
    m = re.search(r"([^/]+)/([^/]+?)(?:\.git)?/?$", repo_url)
    owner_name = f"{m[1]}/{m[2]}" if m else repo_url
    default_name = m[2] if m else repo_url
    data: dict = {}
    path = root / CONFIG
    if path.exists() or path.is_symlink():  # checked field by field (lessonkit.config.files)
        from lessonkit.config import files as config
        from lessonkit.config import checks as projectchecks

        data, lines = config.read_toml(path, CONFIG, projectchecks.SITE_HINT)
        projectchecks.check_site(root, data, lines)
    for table, values in data.items():
        if table not in _KEYS or not isinstance(values, dict):
            raise LessonError(
                f"unknown table `[{table}]`",
                path=CONFIG,
                line=_line(path, f"[{table}]"),
                hint=MOVED.get(table, "known tables: " + ", ".join(f"[{t}]" for t in _KEYS))
                + (" (see docs/dev/engine-guide.md, 'Attachments of your own')" if table in MOVED else ""),
            )
        for key, value in values.items():
            known = _KEYS[table]
            if known is None:
                continue  # [labels]: checked by _labels
            if key not in known:
                raise LessonError(
                    f"unknown key `{key}` in `[{table}]`",
                    path=CONFIG,
                    line=_line(path, key),
                    hint="known keys: " + ", ".join(sorted(known)),
                )
            if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
                raise LessonError(
                    f"`{key}` in `[{table}]` is not text or a list of text",
                    path=CONFIG,
                    line=_line(path, key),
                    hint='for example `code = ["experiments"]`',
                )
    for key, value in data.get("snapshots", {}).items():
        if not isinstance(value, list) or not value or not all(v.strip() for v in value):
            raise LessonError(
                f"`{key}` in `[snapshots]` is not a list of words",
                path=CONFIG,
                line=_line(path, key),
                hint='for example `badges = ["by hand", "observed"]`',
            )
    import_path = data.get("experiments", {}).get("path", "")  # checked by config.checks
    up, repo = data.get("upstream", {}), data.get("repository", {})
    name = up.get("name", default_name)
    return SiteConfig(
        root,
        name,
        up.get("label", owner_name),
        up.get("package", f"{name}/"),
        tuple(repo.get("teaching", ())),
        tuple(repo.get("code", ("experiments",))),
        data.get("bundle", {}).get("path", f"downloads/{name}-resources.zip"),
        Labels({**LABELS, **_labels(data.get("labels", {}), path)}, line=_line(path, "[labels]")),
        tuple(data.get("snapshots", {}).get("badges", BADGES)),
        tuple(data.get("snapshots", {}).get("prose-columns", PROSE_COLUMNS)),
        tuple(data.get("experiments", {}).get("pinned", ())),
        tuple(_tool(v) for v in data.get("experiments", {}).get("versions", ())),
        import_path.strip("/"),
    )


def _tool(entry: str) -> tuple[str, str]:
    """``"NumPy=numpy"`` → ``("NumPy", "numpy")``; ``"numpy"`` → ``("numpy", "numpy")``."""
    label, _, dist = entry.rpartition("=")
    return (label.strip() or dist, dist)


def pinned_match(entry: str, rel: str) -> bool:
    """Whether the pinned file ``rel`` is one that ``[experiments] pinned``'s ``entry`` names: a
    folder (``autograd/``), a file, or a shell-style pattern (``examples/*.py``; ``*`` crosses ``/``)."""
    if any(c in entry for c in "*?["):
        return fnmatch.fnmatchcase(rel, entry)
    return rel == entry or rel.startswith(entry.rstrip("/") + "/")


def check_box_pinned(site: SiteConfig, manifest: dict[str, str]) -> None:
    """Each ``[experiments] pinned`` entry names at least one file of the pinned tree."""
    for entry in site.box_pinned:
        if not any(pinned_match(entry, rel) for rel in manifest):
            raise LessonError(
                f"`pinned` in `[experiments]` names `{entry}`, which matches no file of the pinned tree",
                path=CONFIG,
                line=_line(site.root / CONFIG, "pinned"),
                hint=f'name files, folders or patterns of sourcemap/manifest.sha256, e.g. "{site.package}"',
            )


def check_import_path(site: SiteConfig, manifest: dict[str, str]) -> None:
    """``[experiments] path`` is a folder of the pinned tree that holds Python files."""
    if site.import_path and not any(rel.startswith(site.import_path + "/") and rel.endswith(".py") for rel in manifest):
        raise LessonError(
            f"`path` in `[experiments]` names `{site.import_path}`, which holds no Python file of the pinned tree",
            path=CONFIG,
            line=_line(site.root / CONFIG, "path"),
            hint="name the folder that holds the package (see sourcemap/manifest.sha256), e.g. \"src\"",
        )


def _labels(values: dict, path: Path) -> dict[str, str]:
    for key, value in values.items():
        wrong = label_problem(key, value)
        if wrong:
            raise LessonError(wrong[0], path=CONFIG, line=_line(path, key), hint=wrong[1])
    return dict(values)


def _line(path: Path, needle: str) -> int:
    """The line of ``[table]``, or of the first ``key = …`` (exactly that key)."""
    if not path.exists():
        return 1
    key = re.compile(r'\s*["\']?' + re.escape(needle) + r'["\']?\s*=')
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if line.strip().startswith(needle) if needle.startswith("[") else key.match(line):
            return n
    return 1
