"""The registry of block kinds: the one place every stage looks a kind up.

Built-in kinds are listed in :data:`KINDS`, one line each. A project adds its own in
``sourcemap/kinds.toml``::

    # modules importable from the project root; each defines KIND (or KINDS = [...])
    modules = ["lessonkinds.note"]

:func:`for_project` returns the registry a project uses (built-ins plus its own).
An unknown kind is always a located :class:`~lessonkit.errors.LessonError`
(:meth:`Registry.of`); no stage falls through to a default kind.

Fenced kinds (:class:`Kind`) are annotation blocks: ````` ```name ````` followed by
``Key: value`` header lines and a body. Inline kinds (:class:`InlineKind`) are written
in prose as ``[[name: argument]]``; the Markdown extension replaces each with the
kind's inline HTML (``[[lessonkit:…]]`` is reserved for the site's tokens).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from lessonkit.config.checks import KINDS_LABEL
from lessonkit.config.modules import Registration, guard_methods, registered_objects
from lessonkit.errors import LessonError
from lessonkit.kinds import exercise, experiment, figure, line, output, real_source, runnable, snapshot, teaching, value
from lessonkit.kinds.base import CITATION_ROLES, REPIN_ROLES, InlineKind, Kind, Resolved
from lessonkit.pipeline.blocks import INLINE, InlineRef

__all__ = ["KINDS", "Registry", "Kind", "InlineKind", "InlineRef", "Resolved", "for_project", "INLINE"]


class Registry(Mapping):
    """Kinds by name: fenced (``Kind``) and inline (``InlineKind``)."""

    def __init__(self, kinds: Iterable[Kind | InlineKind] = ()):
        self._kinds: dict[str, Kind | InlineKind] = {}
        for k in kinds:
            self._add(k)

    def _add(self, kind) -> None:
        if not isinstance(kind, (Kind, InlineKind)) or not kind.name:
            raise TypeError(f"{kind!r} is not a named lessonkit Kind or InlineKind")
        if kind.name in self._kinds or kind.name == "lessonkit":
            raise ValueError(f"block kind `{kind.name}` is registered twice")
        if isinstance(kind, Kind):
            missing = [k for k in kind.required if k not in kind.fields]
            if missing or kind.citation not in CITATION_ROLES:
                raise ValueError(
                    f"kind `{kind.name}`: required keys {missing} not allowed, or citation "
                    f"{kind.citation!r} not one of {CITATION_ROLES}"
                )
        self._kinds[kind.name] = kind

    def with_kinds(self, kinds: Iterable[Kind | InlineKind]) -> "Registry":
        """A new registry: these kinds added to this one's."""
        return Registry([*self._kinds.values(), *kinds])

    def __getitem__(self, name: str):
        return self._kinds[name]

    def __iter__(self):
        return iter(self._kinds)

    def __len__(self):
        return len(self._kinds)

    @property
    def fenced(self) -> dict[str, Kind]:
        return {n: k for n, k in self._kinds.items() if isinstance(k, Kind)}

    @property
    def inline(self) -> dict[str, InlineKind]:
        return {n: k for n, k in self._kinds.items() if isinstance(k, InlineKind)}

    def of(self, block) -> Kind:
        """The fenced kind of a block (or anything with ``kind``, ``path`` and ``line``)."""
        kind = self._kinds.get(block.kind)
        if not isinstance(kind, Kind):
            raise self.unknown(block.kind, block.path, block.line)
        return kind

    def near(self, word: str, inline: bool = False) -> str | None:
        """The known kind that ``word`` was probably meant to be, if any."""
        names = list(self.inline if inline else self.fenced)
        if word in names or not word:
            return None
        norm = re.sub(r"[\s_]+", "-", word.strip().lower())
        if norm in names:
            return norm
        close = difflib.get_close_matches(norm, names, n=1, cutoff=0.8)
        return close[0] if close else None

    def unknown(self, word: str, path: str | None, line: int | None, inline: bool = False) -> LessonError:
        guess = self.near(word, inline)
        names = self.inline if inline else self.fenced
        hint = f"did you mean `{guess}`?" if guess else f"known kinds: {', '.join(names) or '(none)'}"
        return LessonError(f"unknown {'inline ' if inline else ''}block kind `{word}`", path=path, line=line, hint=hint)


# The built-in kinds: adding one is one module and one line here.
KINDS = Registry(
    [
        real_source.KIND,
        teaching.KIND,
        experiment.KIND,
        snapshot.KIND,
        figure.KIND,
        line.KIND,
        value.KIND,
        exercise.KIND,
        output.KIND,
        runnable.KIND,
    ]
)

CONFIG = "sourcemap/kinds.toml"
REGISTRATION = Registration(
    label=KINDS_LABEL,
    what="kind",
    one="KIND",
    many="KINDS",
    types=(Kind, InlineKind),
    plural="kinds",
    type_name="a Kind or InlineKind",
    example="MyKind()",
    instance_note="an instance, not the class",
)


def for_project(root: Path) -> Registry:
    """The built-in kinds plus those the project lists in ``sourcemap/kinds.toml``."""
    from lessonkit.config.checks import read_kind_modules

    if not (root / CONFIG).exists() and not (root / CONFIG).is_symlink():
        return KINDS
    extra = []  # validated names, imported only from the project root (see lessonkit.config.files)
    for name, at in read_kind_modules(root):
        extra += import_kind_module(root, name, at)
    try:
        return KINDS.with_kinds(extra)
    except (TypeError, ValueError) as exc:
        raise LessonError(str(exc), path=CONFIG, line=1, hint="give each kind a new, unique name") from None


__all__ += ["REPIN_ROLES", "CITATION_ROLES"]


# What a project's kind must define itself, and every method the stages call on it.
MUST_DEFINE = {Kind: ("resolve", "render", "plain"), InlineKind: ("render",)}
METHODS = {
    Kind: ("validate", "session_problems", "resolve", "anchor", "render", "plain", "repin"),
    InlineKind: ("read", "look_up", "validate", "render", "plain", "check", "job"),
}


def import_kind_module(root: Path, name: str, line: int) -> list:
    """Import one module of ``kinds.toml`` from the project root and return its kinds (see
    :func:`lessonkit.config.modules.registered_objects`: only the project's own modules).

    A kind that leaves out a method it must define is one located error at ``line``; an exception
    its code raises later is one located error at the line that raised it
    (:func:`lessonkit.config.modules.guard_methods`)."""
    found = registered_objects(root, name, line, REGISTRATION)
    for kind in found:
        base = Kind if isinstance(kind, Kind) else InlineKind
        missing = [m for m in MUST_DEFINE[base] if getattr(type(kind), m, None) is getattr(base, m)]
        if missing:
            listed = ", ".join(f"{m}()" for m in missing)
            raise LessonError(
                f"kind `{kind.name or type(kind).__name__}` of module `{name}` does not define {listed}",
                path=CONFIG,
                line=line,
                hint=f"a {base.__name__} defines {', '.join(f'{m}()' for m in MUST_DEFINE[base])}; "
                "see the engine guide, 'Block kinds of your own'",
            )
        guard_methods(kind, METHODS[base], root, CONFIG, name, line)
    return found
