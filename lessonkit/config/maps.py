"""The generated maps of ``sourcemap/``: ``excerpts.json`` (the excerpt map) and ``roles.toml``.

Re-exported by :mod:`lessonkit.config.files`; every mistake is one line ``file:line: what — hint``."""

from __future__ import annotations

import json
from pathlib import Path

from lessonkit.config.files import (
    CONTROL,
    MAX_MAP_BYTES,
    SHOWN,
    _type_name,
    read_text,
    read_toml,
    show,
    tree_path_problem,
)
from lessonkit.errors import LessonError, Problem

# ---------------------------------------------------------------- excerpts.json

MAP_HINT = "run `lessonkit verify --update-map` to write it again"
MAP_KEYS: dict[str, type | tuple[type, ...]] = {
    "page": str,
    "block": int,
    "kind": str,
    "file": str,
    "symbol": (str, type(None)),
    "lines": list,
    "sha256": str,
}
# Keys an entry has only when its excerpt has them: [[first, last], …] of the shown runs (more than
# one) and of the left-out lines, and the emphasised lines.
MAP_OPTIONAL = ("runs", "elided", "emphasize")


def _entry_lines(text: str) -> list[int]:
    """Line of each object inside a top-level array (the map's entries, in order)."""
    stack: list[str]
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
        raise LessonError(
            f"the excerpt map is not valid JSON ({exc.msg})", path=label, line=exc.lineno, hint=MAP_HINT
        ) from None
    except (RecursionError, ValueError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise LessonError(f"the excerpt map is not valid JSON ({reason})", path=label, hint=MAP_HINT) from None
    if not isinstance(data, dict):
        raise LessonError(
            f"the excerpt map must be a JSON object, got {_type_name(data)}", path=label, line=1, hint=MAP_HINT
        )
    for key in ("pin", "version", "manifest"):
        if not isinstance(data.get(key), str):
            raise LessonError(
                f"the excerpt map's `{key}` must be a string, got {_type_name(data.get(key))}",
                path=label,
                hint=MAP_HINT,
            )
    entries = data.get("excerpts")
    if not isinstance(entries, list):
        raise LessonError(
            f"the excerpt map's `excerpts` must be an array, got {_type_name(entries)}", path=label, hint=MAP_HINT
        )
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
                if (
                    e["block"] < 0
                    or len(ln) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in ln)
                    or not 1 <= ln[0] <= ln[1]
                ):
                    why = "has an invalid `block` or `lines`"
                elif any(k in e and _optional_problem(k, e[k]) for k in MAP_OPTIONAL):
                    k = next(k for k in MAP_OPTIONAL if k in e and _optional_problem(k, e[k]))
                    why = f"has an invalid `{k}` ({_optional_problem(k, e[k])})"
                elif (e["page"], e["block"]) in seen:
                    first = seen[e["page"], e["block"]]
                    why = f"repeats block {e['block']} of {show(e['page'])} (first on line {first})"
                else:
                    seen[e["page"], e["block"]] = line or 0
        if why:
            raise LessonError(f"excerpt map entry {i + 1} {why}", path=label, line=line, hint=MAP_HINT)
    return data


def _optional_problem(key: str, value) -> str | None:
    """What is wrong with an optional key's value (None: nothing)."""

    def number(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 1

    if not isinstance(value, list) or not value:
        return "not a non-empty array"
    if key == "emphasize":
        return None if all(number(x) for x in value) else "not line numbers"
    if not all(isinstance(p, list) and len(p) == 2 and all(number(x) for x in p) and p[0] <= p[1] for p in value):
        return "not [first, last] line pairs"
    return None


# ---------------------------------------------------------------- roles.toml

ROLES_HINT = "sourcemap/roles.toml maps a file of the pinned tree to its role: [roles] \"path\" = \"text\""


def read_roles(path: Path, label: str) -> dict[str, str]:
    data, lines = read_toml(path, label, ROLES_HINT)
    problems = []
    for key in data:
        if key != "roles":
            problems.append(
                Problem(
                    f"unknown section or key `{show(key, 40)[1:-1]}`",
                    label,
                    lines.get((key, "")) or lines.get(("", key)),
                    ROLES_HINT,
                )
            )
    roles = data.get("roles", {})
    if not isinstance(roles, dict):
        problems.append(
            Problem(f"`roles` must be a table, got {_type_name(roles)}", label, lines.get(("", "roles")), ROLES_HINT)
        )
        roles = {}
    out = {}
    for rel, text in roles.items():
        line = lines.get(("roles", rel))
        why = tree_path_problem(rel)
        if why:
            problems.append(Problem(f"role key {show(rel)} {why}", label, line, ROLES_HINT))
        elif not isinstance(text, str):
            problems.append(
                Problem(f"the role of {rel} must be a string, got {_type_name(text)}", label, line, ROLES_HINT)
            )
        elif len(text) > 500 or CONTROL.search(text):
            problems.append(
                Problem(
                    f"the role of {rel} is longer than 500 characters or has a control character",
                    label,
                    line,
                    "write one short line",
                )
            )
        else:
            out[rel] = text
    if problems:
        raise LessonError.collect(problems[:SHOWN])
    return out
