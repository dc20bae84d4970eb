"""Configuration checked before anything acts on it.

The files under ``sourcemap/`` and the environment variables that steer the build are
inputs like the lessons: every field is checked for type and shape here, and every
mistake is one line ``file:line: what — hint`` (``NAME: what — hint`` for an
environment variable). Nothing else in lessonkit reads these inputs raw.

* :func:`load_pin_fields` — ``sourcemap/pin.toml``;
* :func:`read_manifest` — ``sourcemap/manifest.sha256``;
* :func:`read_excerpt_map` — ``sourcemap/excerpts.json`` and :func:`read_roles` —
  ``sourcemap/roles.toml`` (in :mod:`lessonkit.config.maps`, re-exported here);
* ``kinds.toml``, ``site.toml``, command outputs and ``docs/`` links (in
  :mod:`lessonkit.config.checks`, re-exported here);
* :func:`cache_dir`, :func:`source_dir`, :func:`sdist_path`, :func:`git_remote` — the environment.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError, Problem
from lessonkit.util.fs import plain_name
from lessonkit.util.text import lines as text_lines

MAX_CONFIG_BYTES = 1 << 20  # pin.toml, roles.toml
MAX_MANIFEST_BYTES = 16 << 20
MAX_MAP_BYTES = 64 << 20
MAX_VALUE = 300  # characters of one pin.toml value
SHOWN = 12  # problems listed one per line; the rest are counted

COMMIT = re.compile(r"^[0-9a-f]{40}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
VERSION = re.compile(r"^\d{1,6}(\.\d{1,6}){0,4}((a|b|rc)\d{1,6})?(\.post\d{1,6})?(\.dev\d{1,6})?$")
REPO = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~-]+)+/?$")
ARCHIVE = re.compile(r"\.(tar\.gz|tgz|tar\.bz2|tar\.xz|tar|zip)\Z")
DIST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
REMOTE_URL = re.compile(r"^(https?|ssh|git|file)://[^\s]+$")
SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$")

PIN_HINT = "sourcemap/pin.toml names the pin (see the engine guide, 'The pin')"
SOURCE_ENV = "LESSONKIT_SOURCE"


def show(value: object, limit: int = 60) -> str:
    """A value as a problem line shows it: repr (control characters escaped), cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _type_name(value: object) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "an array",
        dict: "a table",
        str: "a string",
    }.get(type(value), type(value).__name__)


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
            raise LessonError(
                f"is {size} bytes, more than the {limit} a configuration file may have", path=label, hint=hint
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise LessonError("does not exist", path=label, hint=hint) from None
    except OSError as exc:
        raise LessonError(f"cannot be read: {exc.strerror or exc}", path=label, hint=hint) from None
    if data.startswith(b"\xef\xbb\xbf"):
        raise LessonError(
            "file starts with a UTF-8 byte-order mark", path=label, line=1, hint="save it as UTF-8 without BOM"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LessonError(
            f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
            path=label,
            line=data[: exc.start].count(b"\n") + 1,
            hint="save it as UTF-8",
        ) from None
    if "\x00" in text:
        raise LessonError(
            "file contains a NUL byte",
            path=label,
            line=text[: text.index("\x00")].count("\n") + 1,
            hint="this is not a text file; restore it from version control",
        )
    if not allow_cr and "\r" in text:
        raise LessonError(
            "file has CR (Windows) line endings",
            path=label,
            line=text[: text.index("\r")].count("\n") + 1,
            hint="save it with LF line endings",
        )
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
    for n, line in enumerate(text_lines(text), 1):
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
    # optional: a release archive on the package index records no commit (then the archive's sha256 is the id)
    Field("upstream", "commit", COMMIT, "the full commit id: 40 lowercase hex digits", required=False),
    Field("upstream", "version", VERSION, "a release version such as 1.9.1"),
    Field("sdist", "filename", None, "a plain archive file name such as NAME-1.2.3.tar.gz"),
    Field("sdist", "sha256", None, "64 lowercase hex digits (or \"none\" when no release archive holds the tree)"),
    Field("sdist", "requirement", None, "a pinned requirement such as NAME==1.2.3"),
    Field("sdist", "root", None, "the plain name of the archive's top folder, such as NAME-1.2.3"),
    Field("provider", "source_env", ENV_NAME, "an environment variable name such as MY_SOURCE", required=False),
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

    _unknown_pin_names(data, problem)
    out = _pin_values(data, problem)
    if not problems:
        _requirement_version(out, problem)
    if problems:
        raise LessonError.collect(problems[:SHOWN])
    return out


_PinProblem = Callable[..., None]  # load_pin_fields' `problem(message, section, key="", hint=PIN_HINT)`


def _unknown_pin_names(data: dict, problem: _PinProblem) -> None:
    """Every section and key of pin.toml that PIN_FIELDS does not name, and every section that is no table."""
    known: dict[str, set[str]] = {f.section: set() for f in PIN_FIELDS}
    for f in PIN_FIELDS:
        known[f.section].add(f.key)
    for section, table in data.items():
        if section not in known:
            problem(
                f"unknown section [{show(section, 40)[1:-1]}]",
                section if isinstance(table, dict) else "",
                "" if isinstance(table, dict) else section,
                hint="the pin has [upstream], [sdist] and [provider]",
            )
        elif not isinstance(table, dict):
            problem(f"`{section}` must be a table [{section}], got {_type_name(table)}", "", section)
        else:
            for key in table:
                if key not in known[section]:
                    problem(
                        f"unknown key `{show(key, 40)[1:-1]}` in [{section}]",
                        section,
                        key,
                        hint="known keys: " + ", ".join(sorted(known[section])),
                    )


def _pin_values(data: dict, problem: _PinProblem) -> dict[str, str]:
    """The value of every field of PIN_FIELDS that is present and well formed; a problem for each other."""
    out: dict[str, str] = {}
    for f in PIN_FIELDS:
        table = data.get(f.section)
        value = table.get(f.key) if isinstance(table, dict) else None
        if value is None:
            if f.required and (isinstance(table, dict) or f.section not in data):
                problem(f"the pin lacks `{f.key}` in [{f.section}]", f.section, hint=f"add {f.key} = \"…\": {f.what}")
            continue
        if not isinstance(value, str):
            problem(f"`{f.key}` must be a string, got {_type_name(value)}", f.section, f.key, hint=f.what)
        elif len(value) > MAX_VALUE or not _value_ok(f, value):
            problem(
                f"`{f.key} = {show(value)}` is not {f.what}",
                f.section,
                f.key,
                hint="check the value" + (" (see the engine guide, 'The pin')" if f.required else ""),
            )
        else:
            out[f.key] = value
    return out


def _requirement_version(out: dict[str, str], problem: _PinProblem) -> None:
    """The sdist's requirement pins the pin's own version."""
    req_version = out["requirement"].partition("==")[2]
    if req_version != out["version"]:
        problem(
            f"`requirement = {show(out['requirement'])}` pins another version than `version = {show(out['version'])}`",
            "sdist",
            "requirement",
            hint=f"write requirement = \"…=={out['version']}\"",
        )


# ---------------------------------------------------------------- manifest.sha256

MANIFEST_LINE = re.compile(r"^([0-9a-f]{64})  (.+)$")
MANIFEST_HINT = "expected '<sha256>  <path>' (64 lowercase hex digits, two spaces, a relative path)"


def tree_path_problem(rel: str) -> str | None:
    """Why ``rel`` is not a safe relative path inside a tree, or None."""
    if len(rel) > 1024:
        return "is longer than 1024 characters"
    if control := CONTROL.search(rel):
        return f"contains the control character U+{ord(control[0]):04X}"
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
    # The manifest is what the pinned bytes are checked against: never remade from those bytes
    # behind the author's back. `lessonkit init` and `lessonkit repin --apply` write it.
    hint = (
        "restore it from version control (`git checkout -- sourcemap/manifest.sha256`): the pinned "
        "bytes are checked against it; `lessonkit init` and `lessonkit repin --apply` write it"
    )
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
            problems.append(
                Problem(
                    f"manifest path {show(rel)} {why}",
                    label,
                    n,
                    "manifest paths are relative, with forward slashes, inside the tree",
                )
            )
        elif rel in lines:
            problems.append(
                Problem(
                    f"duplicate manifest entry for {rel} (first on line {lines[rel]})",
                    label,
                    n,
                    "keep one line per file",
                )
            )
        else:
            manifest[rel], lines[rel] = m[1], n
    folders: dict[str, str] = {}
    for rel in manifest:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            folders.setdefault("/".join(parts[:i]), rel)
    for rel in sorted(set(manifest) & set(folders), key=lambda r: lines[r]):
        problems.append(
            Problem(
                f"{rel} is listed as a file and as a folder (of {folders[rel]})",
                label,
                lines[rel],
                "a path can be only one of them; regenerate the manifest",
            )
        )
    if not problems and not manifest:
        problems.append(Problem("the manifest lists no files", label, None, hint))
    if problems:
        shown = problems[:SHOWN]
        if len(problems) > SHOWN:
            shown.append(
                Problem(f"… and {len(problems) - SHOWN} more problems in the manifest", label, None, MANIFEST_HINT)
            )
        raise LessonError.collect(shown)
    return manifest, lines


# ---------------------------------------------------------------- moved readers and checks
