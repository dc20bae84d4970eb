"""Configuration checked before anything acts on it.

The files under ``sourcemap/`` and the environment variables that steer the build are
inputs like the lessons: every field is checked for type and shape here, and every
mistake is one line ``file:line: what — hint`` (``NAME: what — hint`` for an
environment variable). Nothing else in lessonkit reads these inputs raw.

* :func:`load_pin_fields` — ``sourcemap/pin.toml``;
* :func:`read_manifest` — ``sourcemap/manifest.sha256``;
* :func:`read_excerpt_map` — ``sourcemap/excerpts.json``;
* :func:`read_roles` — ``sourcemap/roles.toml``;
* :func:`cache_dir`, :func:`source_dir`, :func:`sdist_path`, :func:`git_remote` — the environment.
"""

from __future__ import annotations

import contextlib
import stat as stat_module
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import LessonError, Problem
from .fsutil import plain_name

MAX_CONFIG_BYTES = 1 << 20  # pin.toml, roles.toml
MAX_MANIFEST_BYTES = 16 << 20
MAX_MAP_BYTES = 64 << 20
MAX_VALUE = 300  # characters of one pin.toml value
SHOWN = 12  # problems listed one per line; the rest are counted

COMMIT = re.compile(r"^[0-9a-f]{40}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
VERSION = re.compile(r"^\d{1,6}(\.\d{1,6}){0,4}((a|b|rc)\d{1,6})?(\.post\d{1,6})?(\.dev\d{1,6})?$")
REPO = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~-]+)+/?$")
ARCHIVE = re.compile(r"\.(tar\.gz|tgz|tar\.bz2|tar\.xz|tar)\Z")
DIST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
REMOTE_URL = re.compile(r"^(https?|ssh|git|file)://[^\s]+$")
SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$")

PIN_HINT = "sourcemap/pin.toml names the pin (see README, 'The pinned source')"
SOURCE_ENV = "LESSONKIT_SOURCE"


def show(value: object, limit: int = 60) -> str:
    """A value as a problem line shows it: repr (control characters escaped), cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _type_name(value: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", list: "an array", dict: "a table",
            str: "a string"}.get(type(value), type(value).__name__)


# ---------------------------------------------------------------- reading files

def read_text(path: Path, label: str, limit: int, hint: str, *, allow_cr: bool = True) -> str:
    """The text of a configuration file: present, small enough, UTF-8 without BOM, no NUL."""
    try:
        if path.is_symlink() and not path.exists():
            raise LessonError("is a dangling link", path=label, hint=hint)
        if path.is_dir():
            raise LessonError("is a directory, not a file", path=label, hint=hint)
        size = path.stat().st_size
        if size > limit:
            raise LessonError(f"is {size} bytes, more than the {limit} a configuration file may have",
                              path=label, hint=hint)
        data = path.read_bytes()
    except FileNotFoundError:
        raise LessonError("does not exist", path=label, hint=hint) from None
    except OSError as exc:
        raise LessonError(f"cannot be read: {exc.strerror or exc}", path=label, hint=hint) from None
    if data.startswith(b"\xef\xbb\xbf"):
        raise LessonError("file starts with a UTF-8 byte-order mark", path=label, line=1,
                          hint="save it as UTF-8 without BOM")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LessonError(f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})", path=label,
                          line=data[: exc.start].count(b"\n") + 1, hint="save it as UTF-8") from None
    if "\x00" in text:
        raise LessonError("file contains a NUL byte", path=label, line=text[: text.index("\x00")].count("\n") + 1,
                          hint="this is not a text file; restore it from version control")
    if not allow_cr and "\r" in text:
        raise LessonError("file has CR (Windows) line endings", path=label,
                          line=text[: text.index("\r")].count("\n") + 1, hint="save it with LF line endings")
    return text


def read_toml(path: Path, label: str, hint: str) -> tuple[dict, dict[tuple[str, str], int]]:
    """A TOML file's data and the line of each ``[section] key``."""
    text = read_text(path, label, MAX_CONFIG_BYTES, hint)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = int(m[1]) if m else (text.count("\n") + 1 if "(at end of document)" in str(exc) else None)
        raise LessonError(f"not valid TOML: {str(exc).split(' (at ')[0]}", path=label, line=line, hint=hint) from None
    except RecursionError:
        raise LessonError("not valid TOML: nested too deeply", path=label, hint=hint) from None
    return data, toml_key_lines(text)


TOML_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\"' -]+?)\s*\]\s*(#.*)?$")
TOML_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=""")


def toml_key_lines(text: str) -> dict[tuple[str, str], int]:
    """``(section, key) -> line`` of the first ``key = …`` of each section (top level: section "")."""
    out: dict[tuple[str, str], int] = {}
    section = ""
    for n, line in enumerate(text.splitlines(), 1):
        m = TOML_SECTION.match(line)
        if m:
            section = m[1].strip("\"'")
            out.setdefault((section, ""), n)
            continue
        m = TOML_KEY.match(line)
        if m:
            out.setdefault((section, m[1].strip("\"'")), n)
    return out


# ---------------------------------------------------------------- pin.toml

@dataclass(frozen=True)
class Field:
    section: str
    key: str
    pattern: re.Pattern | None
    what: str  # what the value must be, for the problem line
    required: bool = True


PIN_FIELDS = (
    Field("upstream", "repo", REPO, "a web address such as https://github.com/OWNER/REPO"),
    Field("upstream", "commit", COMMIT, "the full commit id: 40 lowercase hex digits"),
    Field("upstream", "version", VERSION, "a release version such as 1.9.1"),
    Field("sdist", "filename", None, "a plain archive file name such as NAME-1.2.3.tar.gz"),
    Field("sdist", "sha256", None, "64 lowercase hex digits (or \"none\" when no release archive holds the tree)"),
    Field("sdist", "requirement", None, "a pinned requirement such as NAME==1.2.3"),
    Field("sdist", "root", None, "the plain name of the archive's top folder, such as NAME-1.2.3"),
    Field("provider", "source_env", ENV_NAME, "an environment variable name such as MY_SOURCE",
          required=False),
)


def _value_ok(f: Field, value: str) -> bool:
    if f.pattern is not None:
        return f.pattern.fullmatch(value) is not None
    if f.key == "filename":
        return plain_name(value) and ARCHIVE.search(value) is not None
    if f.key == "sha256":
        return value == "none" or SHA256.fullmatch(value) is not None
    if f.key == "requirement":
        name, sep, version = value.partition("==")
        return bool(sep) and DIST.fullmatch(name) is not None and VERSION.fullmatch(version) is not None
    if f.key == "root":
        return plain_name(value) and not value.startswith(".")
    return True


def load_pin_fields(path: Path, label: str) -> dict[str, str]:
    """The checked values of pin.toml: ``{key: value}`` for every field (source_env may be absent)."""
    data, lines = read_toml(path, label, PIN_HINT)
    problems: list[Problem] = []

    def problem(message: str, section: str, key: str = "", hint: str = PIN_HINT) -> None:
        line = lines.get((section, key)) or lines.get((section, "")) if section else lines.get(("", key))
        problems.append(Problem(message, label, line, hint))

    known = {f.section: set() for f in PIN_FIELDS}
    for f in PIN_FIELDS:
        known[f.section].add(f.key)
    for section, table in data.items():
        if section not in known:
            problem(f"unknown section [{show(section, 40)[1:-1]}]", section if isinstance(table, dict) else "",
                    "" if isinstance(table, dict) else section, hint="the pin has [upstream], [sdist] and [provider]")
        elif not isinstance(table, dict):
            problem(f"`{section}` must be a table [{section}], got {_type_name(table)}", "", section)
        else:
            for key in table:
                if key not in known[section]:
                    problem(f"unknown key `{show(key, 40)[1:-1]}` in [{section}]", section, key,
                            hint="known keys: " + ", ".join(sorted(known[section])))
    out: dict[str, str] = {}
    for f in PIN_FIELDS:
        table = data.get(f.section)
        value = table.get(f.key) if isinstance(table, dict) else None
        if value is None:
            if f.required and (isinstance(table, dict) or f.section not in data):
                problem(f"the pin lacks `{f.key}` in [{f.section}]", f.section,
                        hint=f"add {f.key} = \"…\": {f.what}")
            continue
        if not isinstance(value, str):
            problem(f"`{f.key}` must be a string, got {_type_name(value)}", f.section, f.key, hint=f.what)
        elif len(value) > MAX_VALUE or not _value_ok(f, value):
            problem(f"`{f.key} = {show(value)}` is not {f.what}", f.section, f.key,
                    hint="check the value" + (" (see README, 'The pinned source')" if f.required else ""))
        else:
            out[f.key] = value
    if not problems:
        req_version = out["requirement"].partition("==")[2]
        if req_version != out["version"]:
            problem(f"`requirement = {show(out['requirement'])}` pins another version than "
                    f"`version = {show(out['version'])}`", "sdist", "requirement",
                    hint=f"write requirement = \"…=={out['version']}\"")
    if problems:
        raise LessonError.collect(problems[:SHOWN])
    return out


# ---------------------------------------------------------------- manifest.sha256

MANIFEST_LINE = re.compile(r"^([0-9a-f]{64})  (.+)$")
MANIFEST_HINT = "expected '<sha256>  <path>' (64 lowercase hex digits, two spaces, a relative path)"


def tree_path_problem(rel: str) -> str | None:
    """Why ``rel`` is not a safe relative path inside a tree, or None."""
    if len(rel) > 1024:
        return "is longer than 1024 characters"
    if CONTROL.search(rel):
        return f"contains the control character U+{ord(CONTROL.search(rel)[0]):04X}"
    if rel.startswith("/") or re.match(r"^[A-Za-z]:", rel):
        return "is an absolute path"
    if "\\" in rel:
        return "contains a backslash"
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, `.` or `..` segment"
    if parts[0] == ".git":
        return "is inside .git"
    return None


def read_manifest(path: Path, label: str) -> tuple[dict[str, str], dict[str, int]]:
    """``{path: sha256}`` and ``{path: line}`` of the manifest; every line checked."""
    hint = "sourcemap/manifest.sha256 must exist (python -m lessonkit manifest TREE OUT writes it)"
    text = read_text(path, label, MAX_MANIFEST_BYTES, hint, allow_cr=False)
    manifest: dict[str, str] = {}
    lines: dict[str, int] = {}
    problems: list[Problem] = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = MANIFEST_LINE.fullmatch(line)
        if not m:
            problems.append(Problem(f"malformed manifest line: {show(line, 80)}", label, n, MANIFEST_HINT))
            continue
        rel = m[2]
        why = tree_path_problem(rel)
        if why:
            problems.append(Problem(f"manifest path {show(rel)} {why}", label, n,
                                    "manifest paths are relative, with forward slashes, inside the tree"))
        elif rel in lines:
            problems.append(Problem(f"duplicate manifest entry for {rel} (first on line {lines[rel]})", label, n,
                                    "keep one line per file"))
        else:
            manifest[rel], lines[rel] = m[1], n
    folders = {}
    for rel in manifest:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            folders.setdefault("/".join(parts[:i]), rel)
    for rel in sorted(set(manifest) & set(folders), key=lambda r: lines[r]):
        problems.append(Problem(f"{rel} is listed as a file and as a folder (of {folders[rel]})", label, lines[rel],
                                "a path can be only one of them; regenerate the manifest"))
    if not problems and not manifest:
        problems.append(Problem("the manifest lists no files", label, None, hint))
    if problems:
        shown = problems[:SHOWN]
        if len(problems) > SHOWN:
            shown.append(Problem(f"… and {len(problems) - SHOWN} more problems in the manifest", label, None,
                                 MANIFEST_HINT))
        raise LessonError.collect(shown)
    return manifest, lines


# ---------------------------------------------------------------- excerpts.json

MAP_HINT = "run `nox -s verify -- --update-map` to write it again"
MAP_KEYS = {"page": str, "block": int, "kind": str, "file": str, "symbol": (str, type(None)), "lines": list,
            "sha256": str}


def _entry_lines(text: str) -> list[int]:
    """Line of each object inside a top-level array (the map's entries, in order)."""
    out, stack, n, i, in_str = [], [], 1, 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            if c == "{" and len(stack) == 2 and stack[-1] == "[":
                out.append(n)
            stack.append(c)
        elif c in "]}":
            if stack:
                stack.pop()
        if c == "\n":
            n += 1
        i += 1
    return out


def read_excerpt_map(path: Path, label: str) -> dict:
    """The recorded excerpt map, its shape checked: pin, version, manifest, excerpts[]."""
    text = read_text(path, label, MAX_MAP_BYTES, MAP_HINT)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LessonError(f"the excerpt map is not valid JSON ({exc.msg})", path=label, line=exc.lineno,
                          hint=MAP_HINT) from None
    except (RecursionError, ValueError) as exc:
        raise LessonError(f"the excerpt map is not valid JSON ({'nested too deeply' if isinstance(exc, RecursionError) else exc})",
                          path=label, hint=MAP_HINT) from None
    if not isinstance(data, dict):
        raise LessonError(f"the excerpt map must be a JSON object, got {_type_name(data)}", path=label, line=1,
                          hint=MAP_HINT)
    for key in ("pin", "version", "manifest"):
        if not isinstance(data.get(key), str):
            raise LessonError(f"the excerpt map's `{key}` must be a string, got {_type_name(data.get(key))}",
                              path=label, hint=MAP_HINT)
    entries = data.get("excerpts")
    if not isinstance(entries, list):
        raise LessonError(f"the excerpt map's `excerpts` must be an array, got {_type_name(entries)}",
                          path=label, hint=MAP_HINT)
    where = _entry_lines(text)
    seen: dict[tuple, int] = {}
    for i, e in enumerate(entries):
        line = where[i] if i < len(where) else None
        why = None
        if not isinstance(e, dict):
            why = f"is {_type_name(e)}, not an object"
        else:
            for k, t in MAP_KEYS.items():
                v = e.get(k)
                if k not in e or not isinstance(v, t) or isinstance(v, bool):
                    why = f"has no valid `{k}` ({_type_name(v) if k in e else 'missing'})"
                    break
            else:
                ln = e["lines"]
                if e["block"] < 0 or len(ln) != 2 or not all(isinstance(x, int) and not isinstance(x, bool)
                                                              for x in ln) or not 1 <= ln[0] <= ln[1]:
                    why = "has an invalid `block` or `lines`"
                elif (e["page"], e["block"]) in seen:
                    why = f"repeats block {e['block']} of {show(e['page'])} (first on line {seen[e['page'], e['block']]})"
                else:
                    seen[e["page"], e["block"]] = line or 0
        if why:
            raise LessonError(f"excerpt map entry {i + 1} {why}", path=label, line=line, hint=MAP_HINT)
    return data


# ---------------------------------------------------------------- roles.toml

ROLES_HINT = "sourcemap/roles.toml maps a file of the pinned tree to its role: [roles] \"path\" = \"text\""


def read_roles(path: Path, label: str) -> dict[str, str]:
    data, lines = read_toml(path, label, ROLES_HINT)
    problems = []
    for key, value in data.items():
        if key != "roles":
            problems.append(Problem(f"unknown section or key `{show(key, 40)[1:-1]}`", label,
                                    lines.get((key, "")) or lines.get(("", key)), ROLES_HINT))
    roles = data.get("roles", {})
    if not isinstance(roles, dict):
        problems.append(Problem(f"`roles` must be a table, got {_type_name(roles)}", label,
                                lines.get(("", "roles")), ROLES_HINT))
        roles = {}
    out = {}
    for rel, text in roles.items():
        line = lines.get(("roles", rel))
        why = tree_path_problem(rel)
        if why:
            problems.append(Problem(f"role key {show(rel)} {why}", label, line, ROLES_HINT))
        elif not isinstance(text, str):
            problems.append(Problem(f"the role of {rel} must be a string, got {_type_name(text)}", label, line,
                                    ROLES_HINT))
        elif len(text) > 500 or CONTROL.search(text):
            problems.append(Problem(f"the role of {rel} is longer than 500 characters or has a control character",
                                    label, line, "write one short line"))
        else:
            out[rel] = text
    if problems:
        raise LessonError.collect(problems[:SHOWN])
    return out


# ---------------------------------------------------------------- environment

def env(name: str) -> str | None:
    """An environment variable's value; set-but-empty (or only spaces) counts as unset."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    if CONTROL.search(value):
        raise LessonError(f"contains the control character U+{ord(CONTROL.search(value)[0]):04X}", path=name,
                          hint="set it to one line of text, or unset it")
    return value




def cache_dir(root: Path) -> Path:
    """The build cache: ``$LESSONKIT_CACHE`` (absolute) or ``root/.cache``; either way its real
    location must be outside the project's own files (a hidden folder in the project is fine)."""
    root = Path(os.path.realpath(root))
    value = env("LESSONKIT_CACHE")
    if value is None:
        name, value = ".cache", str(root / ".cache")
        hint = "remove the link .cache, or set LESSONKIT_CACHE to a folder outside the project"
        shown = ".cache"
    else:
        name, shown = "LESSONKIT_CACHE", value
        value = os.path.expanduser(value)  # ~ as a YAML or .env file leaves it
        hint = "give an absolute path to a folder outside the project (or unset it to use .cache)"
        if not os.path.isabs(value):
            raise LessonError(f"{show(value)} is a relative path", path=name, hint=hint)
    real = Path(os.path.realpath(value))
    if real == root or real in root.parents:
        raise LessonError(f"{shown} is the project folder or contains it: the cache would be written "
                          "among the project's files", path=name, hint=hint)
    if root in real.parents:
        first = real.relative_to(root).parts[0]
        if first == ".git" or not first.startswith("."):  # the project's own files, or its history
            raise LessonError(f"{shown} is inside the project's own files ({first}/)", path=name,
                              hint=hint + "; inside the project only a hidden folder such as .cache may hold it")
    if real.exists() and not real.is_dir():
        raise LessonError(f"{shown} exists and is not a folder", path=name, hint=hint)
    return real


def source_dir(legacy: str | None = None) -> tuple[str, Path] | None:
    """``(variable, folder)`` of a local checkout of the pinned tree, from ``LESSONKIT_SOURCE``
    or the legacy variable pin.toml names in ``[provider] source_env``; None when neither is set."""
    names = [SOURCE_ENV] + ([legacy] if legacy and legacy != SOURCE_ENV else [])
    for name in names:
        value = env(name)
        if value is None:
            continue
        p = Path(value).expanduser()
        if not p.is_dir():
            raise LessonError(f"{value} is not a folder", path=name,
                              hint="point it at a checkout of the pinned tree, or unset it")
        return name, p.resolve()
    return None


def sdist_path() -> Path | None:
    value = env("LESSONKIT_SDIST")
    if value is None:
        return None
    p = Path(value).expanduser()
    if not p.is_file():
        what = "is a folder" if p.is_dir() else "is not a regular file" if p.exists() else "does not exist"
        raise LessonError(f"{value} {what}", path="LESSONKIT_SDIST",
                          hint="name the release archive file (see pin.toml [sdist] filename), or unset it")
    return p.resolve()


def git_remote() -> str | None:
    value = env("LESSONKIT_GIT_REMOTE")
    if value is None:
        return None
    hint = "give an https://, ssh://, git:// or file:// URL, user@host:path, or an existing local repository"
    if value.startswith("-"):
        raise LessonError(f"{show(value)} starts with `-` (git would read it as an option)",
                          path="LESSONKIT_GIT_REMOTE", hint=hint)
    if "::" in value.split("/")[0]:
        raise LessonError(f"{show(value)} uses a git remote helper transport", path="LESSONKIT_GIT_REMOTE",
                          hint=hint)
    if REMOTE_URL.fullmatch(value) or SCP_LIKE.fullmatch(value) or Path(value).expanduser().is_dir():
        return value
    raise LessonError(f"{show(value)} is neither a URL nor an existing folder", path="LESSONKIT_GIT_REMOTE",
                      hint=hint)


def display_text(value: str, limit: int = 300) -> str:
    """Text from a file or the environment, safe to show in a page: one line, no control or
    markup characters (each replaced by ``?``)."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029<>&\"'`]", "?", value)[:limit]


# ---------------------------------------------------------------- kinds.toml

KINDS_LABEL = "sourcemap/kinds.toml"
KINDS_HINT = 'write `modules = ["package.module"]`, modules of the project importable from its root'
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}(\.[A-Za-z_][A-Za-z0-9_]{0,99}){0,9}$")


def _quoted_line(text: str, value: str, default: int) -> int:
    for n, line in enumerate(text.split("\n"), 1):
        if f'"{value}"' in line or f"'{value}'" in line:
            return n
    return default


def read_kind_modules(root: Path) -> list[tuple[str, int]]:
    """``sourcemap/kinds.toml``: exactly ``modules = [names…]``, each a dotted module name whose
    top-level package is a file or folder of the project root. (name, line) pairs."""
    path = root / KINDS_LABEL
    data, lines = read_toml(path, KINDS_LABEL, KINDS_HINT)
    text = read_text(path, KINDS_LABEL, MAX_CONFIG_BYTES, KINDS_HINT)
    at = lines.get(("", "modules"), 1)
    if set(data) != {"modules"}:
        extra = sorted(set(data) - {"modules"})
        raise LessonError(f"unknown key `{extra[0]}`" if extra else "no `modules` key",
                          path=KINDS_LABEL, line=lines.get(("", extra[0]), 1) if extra else 1, hint=KINDS_HINT)
    modules = data["modules"]
    if not isinstance(modules, list):
        raise LessonError(f"`modules` is {_type_name(modules)}, not an array of module names",
                          path=KINDS_LABEL, line=at, hint=KINDS_HINT)
    out = []
    for name in modules:
        if not isinstance(name, str):
            raise LessonError(f"`modules` holds {_type_name(name)} {show(name)}, not a module name",
                              path=KINDS_LABEL, line=at, hint=KINDS_HINT)
        line = _quoted_line(text, name, at)
        if not MODULE_NAME.fullmatch(name):
            raise LessonError(f"{show(name)} is not a module name", path=KINDS_LABEL, line=line,
                              hint="dotted Python identifiers, e.g. `lessonkinds.note`")
        if any(n == name for n, _ in out):
            raise LessonError(f"module `{name}` is listed twice", path=KINDS_LABEL, line=line,
                              hint="list each module once")
        out.append((name, line))
    return out


def import_kind_module(root: Path, name: str, line: int) -> list:
    """Import one module of ``kinds.toml`` from the project root and return its kinds.

    Refuses (before importing anything) a module whose top-level package is not in the project
    root, such as a module of the standard library; any failure of the module itself, ``SystemExit``
    included, is one located error."""
    import importlib
    import importlib.machinery
    import sys

    from .kinds.base import InlineKind, Kind

    top = name.split(".")[0]
    real_root = os.path.realpath(root)
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, [real_root])
    except (ImportError, ValueError, OSError):
        spec = None
    origin = (spec.origin or (list(spec.submodule_search_locations or [""])[0])) if spec else ""
    if spec is None or not origin or not os.path.realpath(origin).startswith(real_root + os.sep):
        raise LessonError(f"cannot import kind module `{name}`: ModuleNotFoundError: no `{top}.py` or `{top}/` "
                          "in the project root", path=KINDS_LABEL, line=line,
                          hint="kind modules are the project's own, importable from its root")
    loaded = sys.modules.get(top)  # already imported: from the Python installation it would not be ours
    where = os.path.realpath(getattr(loaded, "__file__", None) or "/") if loaded is not None else ""
    installed = {os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix)}
    if loaded is not None and (where == "/" or any(where.startswith(p) for p in installed)):
        raise LessonError(f"module `{name}` has the name of a module lessonkit already uses",
                          path=KINDS_LABEL, line=line, hint="rename the module")
    added = real_root not in sys.path
    if added:
        sys.path.insert(0, real_root)
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # the build writes nothing there
    try:
        module = importlib.import_module(name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # an author's module: any failure, SystemExit included, at its line
        raise LessonError(f"cannot import kind module `{name}`: {type(exc).__name__}: {display_text(str(exc), 200)}",
                          path=KINDS_LABEL, line=line, hint="the module must be importable from the project root") \
            from None
    finally:
        sys.dont_write_bytecode = bytecode
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(real_root)
    many, one = getattr(module, "KINDS", None), getattr(module, "KIND", None)
    found = list(many) if isinstance(many, (list, tuple)) else ([one] if one is not None else [])
    if many is not None and not isinstance(many, (list, tuple)):
        raise LessonError(f"`KINDS` of module `{name}` is {_type_name(many)}, not a list of kinds",
                          path=KINDS_LABEL, line=line, hint="write `KINDS = [MyKind(), …]`")
    if not found:
        raise LessonError(f"module `{name}` defines neither KIND nor KINDS", path=KINDS_LABEL, line=line,
                          hint="add `KIND = MyKind()` at the end of the module")
    for k in found:
        if not isinstance(k, (Kind, InlineKind)):
            raise LessonError(f"module `{name}` lists {show(k)}, which is not a Kind or InlineKind instance",
                              path=KINDS_LABEL, line=line, hint="write `KIND = MyKind()` (an instance, not the class)")
    return found


# ---------------------------------------------------------------- site.toml

SITE_LABEL = "sourcemap/site.toml"
SITE_HINT = "see lessonkit/siteconfig.py for the fields"
_SITE_FIELDS = {  # (table, key) -> what the value must be
    ("upstream", "name"): "name", ("upstream", "label"): "text", ("upstream", "package"): "package",
    ("repository", "teaching"): "folders", ("repository", "code"): "folders", ("bundle", "path"): "output",
    ("diagrams", "calls"): "file", ("diagrams", "nesting"): "file", ("attachments", "readme"): "file",
}


def check_site(root: Path, data: dict, lines: dict[tuple[str, str], int]) -> None:
    """Every field of ``site.toml`` has its type and shape; every path is a plain relative path
    that stays inside the project (files and folders it names exist there, and are not links out)."""
    real_root = os.path.realpath(root)
    for table, values in data.items():
        if not isinstance(values, dict):
            raise LessonError(f"`{table}` is {_type_name(values)}, not a table", path=SITE_LABEL,
                              line=lines.get(("", table), 1), hint=f"write `[{table}]` with its keys below")
        for key, value in values.items():
            what = _SITE_FIELDS.get((table, key))
            if what is None:
                continue  # unknown tables and keys: siteconfig's own messages
            line = lines.get((table, key), lines.get((table, ""), 1))
            problem = _site_value_problem(real_root, what, value)
            if problem:
                raise LessonError(f"`{key}` in `[{table}]` {problem}", path=SITE_LABEL, line=line, hint=SITE_HINT)


def _site_value_problem(real_root: str, what: str, value: object) -> str | None:
    if what == "folders":
        if not isinstance(value, list):
            return f"is {_type_name(value)}, not an array of folders"
        for v in value:
            p = _site_value_problem(real_root, "folder", v)
            if p:
                return f"item {show(v)} {p}" if isinstance(v, str) else p
        return None
    if not isinstance(value, str):
        return f"is {_type_name(value)}, not a string"
    if not value.strip() or len(value) > MAX_VALUE:
        return f"is {'empty' if not value.strip() else 'longer than %d characters' % MAX_VALUE}"
    if CONTROL.search(value):
        return f"contains the control character U+{ord(CONTROL.search(value)[0]):04X}"
    if what == "text":
        return None
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
    target = os.path.join(real_root, rel)
    real = os.path.realpath(target)  # a path that does not exist (yet) is the engine's to report
    if not real.startswith(real_root + os.sep):
        return "leads outside the project (a link)"
    if what == "file" and os.path.isdir(real):
        return "is a folder, not a file"
    if what == "folder" and os.path.exists(real) and not os.path.isdir(real):
        return "is a file, not a folder"
    return None


# ---------------------------------------------------------------- environment of a build

SANDBOX_MODES = ("copy", "namespaces")
WEB_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%!$&()*+,;=:@/-]*)?$")


def sandbox_mode() -> str:
    """``LESSONKIT_SANDBOX``: unset (namespaces where they work, else copies), ``copy`` or ``namespaces``."""
    value = env("LESSONKIT_SANDBOX")
    if value is None:
        return ""
    if value not in SANDBOX_MODES:
        raise LessonError(f"{show(value)} is not a sandbox mode", path="LESSONKIT_SANDBOX",
                          hint="set it to `copy` or `namespaces`, or unset it")
    return value


def site_urls() -> dict[str, str]:
    """``SITE_URL`` and ``LESSONKIT_REPO_URL`` (read by mkdocs.yml): an http(s) address each, or unset.
    They end up in links of every page, so nothing that could leave the attribute is accepted."""
    out = {}
    for name in ("SITE_URL", "LESSONKIT_REPO_URL"):
        value = env(name)
        if value is None:
            continue
        if not WEB_URL.fullmatch(value) or len(value) > 2000:
            raise LessonError(f"{show(value)} is not an http(s) address", path=name,
                              hint="for example https://example.org/lessons/, or unset it")
        out[name] = value
    return out


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


# ---------------------------------------------------------------- docs/: links and special files

LINK_FIX = "remove the link, or point it at a page inside the project"


def docs_problems(root: Path) -> list:
    """Every entry of ``docs/`` that MkDocs would follow somewhere it must not: a link that is
    dangling, a loop, leads outside the project, or is a folder (MkDocs walks into it); and
    anything that is not a regular file or folder (a FIFO would hang the build, a device never ends)."""
    from .errors import Problem

    docs = Path(root) / "docs"
    real_root = os.path.realpath(root)
    out = []
    hint = "replace the link with the file itself (lessonkit never publishes what lies outside the project)"
    for dirpath, dirnames, filenames in os.walk(docs, followlinks=False):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root).replace(os.sep, "/")
            try:
                st = os.lstat(p)
            except OSError:
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
                    out.append(Problem(f"is a link that leads outside the project ({show(os.readlink(p))})", rel,
                                       None, hint))
                elif real.is_dir():
                    out.append(Problem("is a link to a folder (MkDocs would walk into it, maybe in a loop)", rel,
                                       None, "link single pages, or move the folder into docs/"))
                elif not real.is_file():
                    out.append(Problem("is a link to something that is not a regular file", rel, None, hint))
            elif not (stat_module.S_ISREG(st.st_mode) or stat_module.S_ISDIR(st.st_mode)):
                out.append(Problem("is not a regular file (a FIFO, socket or device)", rel, None,
                                   "remove it from docs/"))
    return out


def check_docs(root: Path) -> None:
    problems = docs_problems(root)
    if problems:
        raise LessonError(problems[0].message, path=problems[0].path, hint=problems[0].hint, problems=problems)
