"""Checks of the project's own files: ``sourcemap/kinds.toml``, ``sourcemap/site.toml``, the
output of ``python -m lessonkit manifest``, and links and special files under ``docs/``.

Re-exported by :mod:`lessonkit.config.files`; every mistake is one line ``file:line: what — hint``."""

from __future__ import annotations

import os
import re
import stat as stat_module
from pathlib import Path

from lessonkit.config.files import (
    CONTROL,
    DIST,
    MANIFEST_LINE,
    MAX_MANIFEST_BYTES,
    MAX_VALUE,
    _type_name,
    show,
    tree_path_problem,
)
from lessonkit.config.modules import HINT as MODULES_HINT
from lessonkit.config.modules import read_modules
from lessonkit.errors import LessonError, Problem

# ---------------------------------------------------------------- kinds.toml

KINDS_LABEL = "sourcemap/kinds.toml"
KINDS_HINT = MODULES_HINT


def read_kind_modules(root: Path) -> list[tuple[str, int]]:
    """``sourcemap/kinds.toml``: exactly ``modules = [names…]`` (see :mod:`lessonkit.config.modules`).
    (name, line) pairs."""
    return read_modules(root, KINDS_LABEL, KINDS_HINT)


# ---------------------------------------------------------------- site.toml

SITE_LABEL = "sourcemap/site.toml"
SITE_HINT = "see the engine guide, 'site.toml', for its fields"
_SITE_FIELDS = {  # (table, key) -> what the value must be
    ("upstream", "name"): "name",
    ("upstream", "label"): "text",
    ("upstream", "package"): "package",
    ("repository", "teaching"): "folders",
    ("repository", "code"): "folders",
    ("bundle", "path"): "output",
    ("experiments", "pinned"): "pinned-paths",
    ("experiments", "versions"): "distributions",
    ("experiments", "path"): "pinned-path",
    ("search", "glossary"): "file",
    ("search", "introduced"): "text",
    ("pages", "lessons"): "docs-folder",
    ("pages", "api"): "docs-page",
    ("pages", "bundle-text"): "docs-pages",
    ("pages", "authors"): "docs-pages",
}


def check_site(root: Path, data: dict, lines: dict[tuple[str, str], int]) -> None:
    """Every field of ``site.toml`` has its type and shape; every path is a plain relative path
    that stays inside the project (files and folders it names exist there, and are not links out)."""
    real_root = os.path.realpath(root)
    for table, values in data.items():
        if not isinstance(values, dict):
            raise LessonError(
                f"`{table}` is {_type_name(values)}, not a table",
                path=SITE_LABEL,
                line=lines.get(("", table), 1),
                hint=f"write `[{table}]` with its keys below",
            )
        for key, value in values.items():
            what = _SITE_FIELDS.get((table, key))
            if what is None:
                continue  # unknown tables and keys: siteconfig's own messages
            line = lines.get((table, key), lines.get((table, ""), 1))
            problem = _site_value_problem(real_root, what, value)
            if problem:
                raise LessonError(f"`{key}` in `[{table}]` {problem}", path=SITE_LABEL, line=line, hint=SITE_HINT)


def _items_problem(real_root: str, value: object, item: str, noun: str) -> str | None:
    """Why ``value`` is not an array of ``item`` values (the first item's problem), or None."""
    if not isinstance(value, list):
        return f"is {_type_name(value)}, not an array of {noun}"
    for v in value:
        p = _site_value_problem(real_root, item, v)
        if p:
            return f"item {show(v)} {p}" if isinstance(v, str) else p
    return None


def _site_value_problem(real_root: str, what: str, value: object) -> str | None:
    """Why ``value`` is not what a field of kind ``what`` (a value of _SITE_FIELDS) must be, or None."""
    if what == "pinned-paths":
        return _pinned_paths_problem(real_root, value)
    if what == "distributions":
        return _distributions_problem(value)
    if what == "docs-pages":  # pages under docs/, docs-relative
        return _items_problem(real_root, value, "docs-page", "pages")
    if what in ("docs-page", "docs-folder"):
        return _docs_path_problem(real_root, what, value)
    if what == "folders":
        return _items_problem(real_root, value, "folder", "folders")
    return _string_value_problem(real_root, what, value)


def _pinned_paths_problem(real_root: str, value: object) -> str | None:
    """Files or folders of the pinned tree; siteconfig matches them to the manifest."""
    if not isinstance(value, list):
        return f"is {_type_name(value)}, not an array of paths"
    if not value:
        return "is empty (leave it out for the whole tree)"
    for v in value:
        if not isinstance(v, str):
            return f"has an item that is {_type_name(v)}, not a string"
        p = _site_value_problem(real_root, "pinned-path", v)
        if p:
            return f"item {show(v)} {p}"
    return None


def _distributions_problem(value: object) -> str | None:
    """Installed distributions whose versions key the experiments: `numpy` or `NumPy=numpy`."""
    if not isinstance(value, list):
        return f"is {_type_name(value)}, not an array of distributions"
    for v in value:
        if not isinstance(v, str):
            return f"has an item that is {_type_name(v)}, not a string"
        label, _, dist = v.rpartition("=")
        if not DIST.fullmatch(dist) or (label and (len(label) > 40 or CONTROL.search(label))):
            return f"item {show(v)} is not a distribution name (`numpy`) or a label and a name (`NumPy=numpy`)"
    return None


def _docs_path_problem(real_root: str, what: str, value: object) -> str | None:
    """docs-relative: a page that exists (``docs-page``), a folder (``docs-folder``)."""
    if not isinstance(value, str):
        return f"is {_type_name(value)}, not a string"
    rel = value.rstrip("/") if what == "docs-folder" else value
    problem = tree_path_problem(rel) if rel else "is empty"
    if problem:
        return problem
    real = os.path.realpath(os.path.join(real_root, "docs", rel))
    if not real.startswith(os.path.realpath(os.path.join(real_root, "docs")) + os.sep):
        return "leads outside docs/ (a link)"
    if what == "docs-folder":
        return "is a file of docs/, not a folder" if os.path.isfile(real) else None
    if not rel.endswith(".md"):
        return "is not a Markdown page (`.md`)"
    return None if os.path.isfile(real) else "is not a page of docs/"


def _string_value_problem(real_root: str, what: str, value: object) -> str | None:
    """A one-line string: free text, a name, a path of the pinned tree or of the project."""
    if not isinstance(value, str):
        return f"is {_type_name(value)}, not a string"
    if not value.strip() or len(value) > MAX_VALUE:
        return f"is {'empty' if not value.strip() else 'longer than %d characters' % MAX_VALUE}"
    if control := CONTROL.search(value):
        return f"contains the control character U+{ord(control[0]):04X}"
    if what == "text":
        return None
    if what == "pinned-path":  # a folder, file or pattern of the pinned tree (not of the project)
        return tree_path_problem(value.rstrip("/") or value)
    if what == "name":
        return None if DIST.fullmatch(value) else "is not a plain name (letters, digits, `._-`)"
    rel = (value[:-1] or value) if what in ("folder", "package") and value.endswith("/") else value
    problem = tree_path_problem(rel)
    if problem:
        return problem
    if what == "output":
        return None if rel.endswith(".zip") else "does not end in .zip"
    if what == "package":  # a folder of the pinned tree, not of the project
        return None if value.endswith("/") else "does not end in `/`"
    return _project_path_problem(real_root, what, rel)


def _project_path_problem(real_root: str, what: str, rel: str) -> str | None:
    """A ``file`` or ``folder`` of the project: it stays inside it, and is what it says it is."""
    target = os.path.join(real_root, rel)
    real = os.path.realpath(target)  # a path that does not exist (yet) is the engine's to report
    if not real.startswith(real_root + os.sep):
        return "leads outside the project (a link)"
    if what == "file" and os.path.isdir(real):
        return "is a folder, not a file"
    if what == "folder" and os.path.exists(real) and not os.path.isdir(real):
        return "is a file, not a folder"
    if what == "folder" and rel.rsplit("/", 1)[-1] == ".lessonkit":  # lessonkit.run.boxrun.HELPERS
        return "is named like the folder of lessonkit's own files in an experiment's box"
    return None


# ---------------------------------------------------------------- outputs of commands

PROJECT_OWN = ("docs", "experiments", "sourcemap", ".git")


def manifest_output_problem(root: Path, out: Path) -> str | None:
    """Why ``python -m lessonkit manifest TREE OUT`` must not write ``out``, or None: not a folder,
    not one of the project's own files (except ``sourcemap/manifest.sha256``), and an existing file
    only when it is a manifest (a typo must not replace a page or the pin)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(out)
    if os.path.isdir(real):
        return "is a folder"
    if real != os.path.join(real_root, "sourcemap", "manifest.sha256"):
        for top in PROJECT_OWN:
            if real.startswith(os.path.join(real_root, top) + os.sep):
                return f"is inside the project's own files ({top}/)"
    if os.path.exists(real):
        try:
            with open(real, "rb") as fh:
                data = fh.read(MAX_MANIFEST_BYTES + 1)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return "exists and is not a manifest"
        if len(data) > MAX_MANIFEST_BYTES or any(l and not MANIFEST_LINE.match(l) for l in text.split("\n")):
            return "exists and is not a manifest"
    return None


# ------------------------------------------------------ docs/ and the code folders: names, links, special files

LINK_FIX = "remove the link, or point it at a page inside the project"
SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")  # names that are the same in a path, an address, Markdown and HTML
NAME_HINT = "rename it with letters A–Z a–z, digits and . _ - only: names become addresses, titles and links"


def name_problem(name: str) -> str | None:
    """Why a file or folder name is refused, or None (it is one of SAFE_NAME)."""
    if SAFE_NAME.fullmatch(name):
        return None
    bad = next(c for c in name if not SAFE_NAME.fullmatch(c))
    return f"has the character {show(bad)} in its name, which only A–Z a–z 0–9 . _ - may form"


def folder_problems(root: Path, top: str, code: bool = False) -> list[Problem]:
    """Every entry of the folder ``top`` of the project whose name is not safe, and every one that
    a reader would follow somewhere it must not: a link that is dangling, a loop, leads outside the
    project (or, under ``docs/``, out of docs/: ``.git/config`` is inside the project), or is a
    folder (MkDocs walks into it); anything that is not a regular file or folder
    (a FIFO would hang the build, a device never ends). In a code folder (``code``: experiments,
    Mini), which the boxes, the code pages and the bundle copy as files, any link."""
    base = Path(root) / top
    real_root = os.path.realpath(root)
    out = []
    hint = "replace the link with the file itself (lessonkit never publishes what lies outside the project)"
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames.sort()
        if code:
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root).replace(os.sep, "/")
            try:
                st = os.lstat(p)
            except OSError:
                continue
            wrong = name_problem(name)
            if wrong:
                out.append(Problem(wrong, rel, None, NAME_HINT))
                continue
            if stat_module.S_ISLNK(st.st_mode):
                try:
                    real = Path(p).resolve(strict=True)
                except RuntimeError:
                    out.append(Problem("is a link loop", rel, None, LINK_FIX))
                    continue
                except OSError as exc:
                    what = "a link loop" if exc.errno == 40 else "a link to nothing"
                    out.append(Problem(f"is {what} ({show(os.readlink(p))})", rel, None, LINK_FIX))
                    continue
                if not str(real).startswith(real_root + os.sep):
                    out.append(
                        Problem(f"is a link that leads outside the project ({show(os.readlink(p))})", rel, None, hint)
                    )
                elif top == "docs" and not (str(real) + os.sep).startswith(os.path.realpath(base) + os.sep):
                    inside = os.path.relpath(real, real_root).replace(os.sep, "/")
                    out.append(
                        Problem(
                            f"is a link that leads out of docs/ (to `{inside}`)",
                            rel,
                            None,
                            "replace the link with a copy of the file: the site publishes what a link under "
                            "docs/ leads to",
                        )
                    )
                elif code:
                    inside = os.path.relpath(real, real_root).replace(os.sep, "/")
                    out.append(
                        Problem(
                            f"is a link to `{inside}`",
                            rel,
                            None,
                            f"replace it with a copy of the file: {top}/ goes into the boxes and the bundle as files",
                        )
                    )
                elif real.is_dir():
                    out.append(
                        Problem(
                            "is a link to a folder (MkDocs would walk into it, maybe in a loop)",
                            rel,
                            None,
                            "link single pages, or move the folder into docs/",
                        )
                    )
                elif not real.is_file():
                    out.append(Problem("is a link to something that is not a regular file", rel, None, hint))
            elif not (stat_module.S_ISREG(st.st_mode) or stat_module.S_ISDIR(st.st_mode)):
                out.append(
                    Problem("is not a regular file (a FIFO, socket or device)", rel, None, f"remove it from {top}/")
                )
    return out


# Files a browser renders as a document of the site (and runs its scripts) that are not MkDocs'
# pages: under docs/ MkDocs would copy them into the site as they are. (An ``.html`` file of docs/ is
# a snippet a page includes, checked with the page, or a page of the site that ``verify --site``
# reads as it reads MkDocs' pages: its scripts, styles and Content-Security-Policy.)
DOCUMENT_SUFFIXES = frozenset(".htm .xhtml .xht .xml .xsl .xslt .mht .mhtml .shtml .svgz".split())
DOCUMENT_WHY = "a document a browser would run scripts in"
DOCUMENT_HINT = "write the page in Markdown"
# What else a file of doc/ may be: the suffixes (any case) a browser shows as an image, a font,
# media, text or a download, never as a document of the site. A browser decides by the suffix (from
# disk, from a static host's type table), and some it knows only as documents (`.xhtm`, `.shtm`,
# `.rss`, `.atom`, `.xsd`, `.xbl`), so anything not listed is refused rather than guessed at.
# (`.md` pages, `.html` in lower case, which verify --site reads as a page, and `.svg`, read in
# full, are checked above.)
SAFE_SUFFIXES = frozenset(
    (
        ".png .jpg .jpeg .gif .webp .avif .apng .bmp .ico "  # images
        ".woff .woff2 .ttf .otf "  # fonts
        ".mp3 .mp4 .m4a .webm .ogg .oga .ogv .wav .flac "  # media
        ".txt .csv .tsv .json .toml .yaml .yml .ini .cfg .py .ipynb .tex .bib .css .js "  # text
        ".pdf .zip .gz .tgz .tar .bz2 .xz .7z .whl .epub"  # downloads
    ).split()
)
SUFFIX_HINT = (
    "docs/ holds pages (.md), images, fonts, media, text and downloads (lessonkit/config/checks.py SAFE_SUFFIXES); "
    "rename the file or leave it out"
)


def docs_problems(root: Path) -> list[Problem]:
    """The folder's entries (:func:`folder_problems`), then what its files would bring into the site:
    a document a browser runs scripts in (an XHTML or XML file, HTML not named ``.html``, any suffix
    not in :data:`SAFE_SUFFIXES`), an SVG file that does not only draw
    (:func:`lessonkit.util.markup.svg_file_problems`)."""
    out = folder_problems(root, "docs")
    if out:  # a link out of the project or a FIFO: nothing of the folder is read
        return out
    base = Path(root) / "docs"
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            out += _file_problems(path, path.relative_to(root).as_posix())
    return out


def _file_problems(path: Path, rel: str) -> list[Problem]:
    """What one file of docs/ would bring into the site (see :func:`docs_problems`)."""
    from lessonkit.util import markup

    suffix = path.suffix.lower()
    if suffix in DOCUMENT_SUFFIXES:
        return [Problem(DOCUMENT_WHY, rel, None, DOCUMENT_HINT)]
    if suffix in (".md", ".html") and path.suffix != suffix:  # `.HTML` opens as a page verify never reads
        return [Problem(f"`{path.suffix}` in capitals", rel, None, f"name it `{suffix}`")]
    if suffix == "" and not _plain_text(path):  # a browser guesses its type from its bytes
        return [Problem("has no suffix and holds markup a browser may run", rel, None, SUFFIX_HINT)]
    if suffix not in SAFE_SUFFIXES | {"", ".md", ".html", ".svg"}:
        return [Problem(f"a `{path.suffix}` file, which a browser may open as a document", rel, None, SUFFIX_HINT)]
    if suffix != ".svg":
        return []
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [Problem(f"cannot be read ({exc.strerror})", rel, None, "make it a readable file")]
    return [Problem(why, rel, line, markup.SVG_HINT) for line, why in markup.svg_file_problems(data)]


def _plain_text(path: Path) -> bool:
    """A file without a suffix (`CNAME`) that no browser would take for markup: no `<` in it."""
    try:
        with open(path, "rb") as f:
            return b"<" not in f.read(1 << 20) and not f.read(1)
    except OSError:
        return False


def check_docs(root: Path) -> None:
    _raise(docs_problems(root))


def check_code_folders(root: Path, folders) -> None:
    """The folders the boxes, the code pages and the bundle copy (``experiments/``, Mini): safe names, no links."""
    _raise(
        [p for top in dict.fromkeys(folders) if (Path(root) / top).is_dir() for p in folder_problems(root, top, True)]
    )


def _raise(problems: list[Problem]) -> None:
    if problems:
        raise LessonError(problems[0].message, path=problems[0].path, hint=problems[0].hint, problems=problems)


# ---------------------------------------------------------------- files of docs/ that stand in for others

ENGINE_ASSETS = Path(__file__).resolve().parents[1] / "assets"  # lessonkit/assets: served as site/assets/…
# what MkDocs copies from a theme folder, as MkDocs' own filter says (Files.add_files_from_theme)
THEME_SKIPPED = (".*", "*/.*", "*.py", "*.pyc", "*.html", "*readme*", "mkdocs_theme.yml", "locales/*", "*.md")
WRITTEN_FOLDERS = {"search/": "the search plugin's index (site/search/)"}
REPLACE_HINT = (
    "a file of docs/ may not stand in for a file the engine or the theme writes: give yours another name "
    "and link to it by that name"
)


def _label(folder: Path, root: Path) -> str:
    """How a problem names a theme folder: project-relative (``overrides``) or by its package
    (``material/templates``)."""
    try:
        return folder.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return f"{folder.parent.name}/{folder.name}"


def written_files(
    root: Path, theme_dirs: list[Path], static_templates=("404.html", "sitemap.xml"), engine: dict | None = None
) -> dict[str, str]:
    """Every site path the engine or the theme writes, with the file (or writer) it comes from:
    the engine's assets, each theme folder's static files (the first folder that has one wins,
    as in MkDocs), the theme's static templates and ``sitemap.xml.gz``, and ``engine`` (other
    site paths the engine writes: the bundle, the PDF)."""
    import fnmatch

    out: dict[str, str] = {}
    for path in sorted(ENGINE_ASSETS.rglob("*")):
        if path.is_file():
            rel = path.relative_to(ENGINE_ASSETS).as_posix()
            out.setdefault(f"assets/{rel}", f"lessonkit/assets/{rel}")
    for folder in theme_dirs:
        folder = Path(folder) if Path(folder).is_absolute() else root / folder
        label = _label(folder, root)
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                rel = Path(dirpath, name).relative_to(folder).as_posix()
                skipped = (*THEME_SKIPPED, *static_templates)
                if not any(fnmatch.fnmatch(rel.lower(), pattern) for pattern in skipped):
                    out.setdefault(rel, f"{label}/{rel}")
    for name in (*sorted(static_templates), "sitemap.xml.gz"):
        out.setdefault(name, f"the theme's {name}")
    for uri, what in (engine or {}).items():
        out.setdefault(uri, what)
    return out


def replaced_files(root: Path, written: dict[str, str], pages: dict[str, str] | None = None) -> list[Problem]:
    """Files of ``docs/`` at a site path that :func:`written_files` reserves (MkDocs would copy
    the docs file over the engine's or the theme's, silently) or inside a folder a plugin writes
    (``search/``), and pages at a page path the engine writes itself (``pages``: page paths, and
    folders ending in ``/``, with what writes them), and any other file in such a folder (a
    ``docs/source/pkg/core.py`` is where the engine writes the page folder of ``pkg/core.py``):
    one problem each, naming both files."""
    docs = Path(root) / "docs"
    pages = pages or {}
    out: list[Problem] = []
    for dirpath, dirnames, filenames in os.walk(docs):
        dirnames.sort()
        for name in sorted(filenames):
            rel = Path(dirpath, name).relative_to(docs).as_posix()
            if rel.endswith(".md"):  # a page becomes a page of its own (its .html), never a copied file
                owner = pages.get(rel) or next(
                    (w for f, w in pages.items() if f.endswith("/") and rel.startswith(f)), None
                )
                what = f"would replace {owner} (the engine writes the page {rel} itself)"
            else:
                owner = written.get(rel) or next((w for f, w in WRITTEN_FOLDERS.items() if rel.startswith(f)), None)
                what = f"would replace {owner} (both are site/{rel})"
                folder = next((f for f in pages if f.endswith("/") and rel.startswith(f)), None)
                if owner is None and folder is not None:  # site/source/a.py/ is the engine's page of a.py
                    owner = pages[folder]
                    what = f"would replace {owner} (the engine writes the pages under site/{folder} itself)"
            if owner is not None:
                out.append(Problem(what, f"docs/{rel}", None, REPLACE_HINT))
    return sorted(out, key=lambda p: p.path or "")
