"""Tokens a page may hold, ``[[lessonkit:key]]``: filled with the build's values, and every unknown
one reported where it is."""

from __future__ import annotations

import re

from lessonkit.errors import Problem

TOKEN = re.compile(r"\[\[lessonkit:([^\]\s]*)\]\]")


def fill_tokens(text: str, tokens: dict[str, str]) -> str:
    """``text`` with every known ``[[lessonkit:key]]`` replaced by its value."""
    for key, value in tokens.items():
        text = text.replace(f"[[lessonkit:{key}]]", value)
    return text


def unknown_tokens(text: str, source: str, path: str, known: list[str]) -> list[Problem]:
    """A located problem for every ``[[lessonkit:…]]`` left in ``text`` (lines from ``source``)."""
    out = []
    for key in sorted(set(TOKEN.findall(text))):
        at = source.find(f"[[lessonkit:{key}]]")
        out.append(
            Problem(
                f"unknown token `[[lessonkit:{key}]]`",
                path,
                source.count("\n", 0, at) + 1 if at >= 0 else None,
                hint="known tokens: " + ", ".join(sorted(known)),
            )
        )
    return out
