"""What a block kind is: the interface every stage consults, and the resolved value.

A kind is one object (usually one module defining a :class:`Kind` subclass and a
module-level ``KIND``). The stages never test ``block.kind == "…"``; they look the
kind up in a :class:`~lessonkit.kinds.Registry` and call it:

========================  ==================================================
stage                     method
========================  ==================================================
parse                     :attr:`Kind.fields`, :attr:`Kind.required`, :meth:`Kind.validate`
project (resolve)         :meth:`Kind.resolve`
render (ids)              :meth:`Kind.anchor`
render (HTML)             :meth:`Kind.render`
bundle / plain text       :meth:`Kind.plain`
site (citations)          :attr:`Kind.citation`
attachments (acceptance)  :attr:`Kind.label`
repin                     :meth:`Kind.repin`
========================  ==================================================

Inline kinds (:class:`InlineKind`) are found in prose as ``[[name: argument]]`` and
rendered in place; see :mod:`lessonkit.kinds`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from lessonkit.errors import LessonError, Problem
from lessonkit.pipeline.blocks import InlineRef

if TYPE_CHECKING:
    from lessonkit.pipeline.blocks import Block
    from lessonkit.run.runner import Job, Result
    from lessonkit.source.resolve import Excerpt


class Project(Protocol):
    """What a kind may use of the project it resolves against (:class:`lessonkit.project.Project`,
    which is built on the kinds and so is not imported here)."""

    root: Path

    @property
    def experiments(self) -> Path: ...
    @property
    def site(self) -> Any: ...
    @property
    def pin(self) -> Any: ...
    @property
    def kinds(self) -> Any: ...
    @property
    def pinned(self) -> Any: ...
    @property
    def repo(self) -> Any: ...
    @property
    def scripts(self) -> Any: ...
    @property
    def runner(self) -> Any: ...


class Renderer(Protocol):
    """What a kind may use to draw its HTML (:class:`lessonkit.pipeline.render.Renderer`)."""

    labels: Any
    links: Any
    pin: Any
    project: Any
    store: Any
    upstream: str
    no_search: str

    @property
    def provenance(self) -> str: ...
    def head(self, badge: str, kind: str, meta: list[str], links: list[tuple[str, str]]) -> str: ...
    def code(self, *args: Any, **kwargs: Any) -> str: ...
    def code_of(self, r: Any) -> Any: ...


@dataclass(frozen=True)
class Resolved:
    """What a block shows once resolved."""

    block: "Block"
    excerpt: "Excerpt | None" = None  # real source, repo excerpt, or the experiment's shown code
    based_on: "Excerpt | None" = None
    job: "Job | None" = None
    full: "Excerpt | None" = None  # a recalled excerpt's whole symbol (real-source `Recall: yes`)
    kind: "Kind | None" = field(default=None, compare=False, repr=False)  # set by Project.resolve

    @property
    def spec(self) -> "Kind":
        """The block's kind, which :meth:`Project.resolve` sets (a kind's own ``resolve`` leaves it None)."""
        if self.kind is None:
            raise LookupError(f"{self.block.path}:{self.block.line}: this block was not resolved by its project")
        return self.kind


def slug(text: str) -> str:
    """An id fragment: ASCII letters, digits and ``_``; anything else becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9_]+", "-", text).strip("-") or "x"


# What repin does with a block (see Kind.repin): compare its excerpt, compare its
# `Based-on`, or run it as an experiment at the target.
REPIN_ROLES = ("source", "based-on", "experiment")
# Where a block with an excerpt is listed (see Kind.citation).
CITATION_ROLES = ("source", "script", None)


class Kind:
    """One block kind. Subclass it, set the class attributes, override what differs."""

    name: ClassVar[str] = ""  # the fence's info string, e.g. "real-source"
    label: ClassVar[str] = ""  # short label for tables, e.g. "REAL SOURCE"
    fields: ClassVar[tuple[str, ...]] = ()  # allowed header keys
    required: ClassVar[tuple[str, ...]] = ()  # header keys a block must have
    # "source": listed among the source a page cites (lesson footer, source pages);
    # "script": listed as a user of its script's page; None: not listed.
    citation: ClassVar[str | None] = "source"
    # True: blocks of this kind with the same `Session:` on a page form a session; parse gives each
    # of them the session's blocks (Block.session), after asking session_problems about them.
    sessions: ClassVar[bool] = False
    # The header keys whose values the block shows as Markdown, and "body" when it shows its body
    # so: parse checks them as it checks prose (imitations of engine blocks, badges, active content).
    markup: ClassVar[tuple[str, ...]] = ()

    def validate(self, block: "Block") -> list[Problem]:
        """Header rules that need no file (required keys are checked already)."""
        return []

    def session_problems(self, blocks: list["Block"]) -> list[tuple["Block", Problem]]:
        """Rules about the blocks of one session of a page, in page order (see :attr:`sessions`)."""
        return []

    def resolve(self, project: "Project", block: "Block") -> Resolved:
        """Open the files the block names; raise a located LessonError when it does not resolve."""
        raise NotImplementedError

    def anchor(self, r: Resolved, n: int) -> str:
        """The block's id before de-duplication; ``n`` counts blocks of this kind on the page (from 1)."""
        return f"{self.name}-{n}"

    def render(self, renderer: "Renderer", r: Resolved, anchor: str, result: "Result | None") -> str:
        """The block's HTML. ``result`` is the finished run of ``r.job`` (passing), else None."""
        raise NotImplementedError

    def plain(self, r: Resolved, project: "Project", result: "Result | None") -> list[str]:
        """The block as plain Markdown lines (bundle, search, bench)."""
        raise NotImplementedError

    def repin(self, block: "Block") -> tuple[str, ...]:
        """What repin compares for this block: a subset of :data:`REPIN_ROLES`."""
        return ()


def problems_of(step, *args) -> list[Problem]:
    """The problems ``step(*args)`` raises as a :class:`LessonError` (none when it returns)."""
    try:
        step(*args)
    except LessonError as exc:
        return list(exc.problems)
    return []


class InlineKind:
    """A kind written inline in prose as ``[[name: argument]]`` and rendered in place.

    Most kinds override :meth:`read` (the argument alone) and :meth:`look_up` (the argument
    against the project, running nothing); :meth:`validate` and :meth:`check` turn what
    those raise into problems."""

    name: ClassVar[str] = ""

    def read(self, ref: InlineRef):
        """Read the argument; raise a located :class:`LessonError` when it cannot be read."""
        return None

    def look_up(self, project: "Project", ref: InlineRef):
        """Find what the argument names in the project, without running anything; raise a
        located :class:`LessonError` when it names nothing."""
        return None

    def validate(self, ref: InlineRef) -> list[Problem]:
        return problems_of(self.read, ref)

    def render(self, project: "Project", ref: InlineRef, links) -> str:
        """The inline HTML that replaces the reference."""
        raise NotImplementedError

    def plain(self, project: "Project", ref: InlineRef) -> str:
        """The plain text that replaces the reference in the bundle."""
        return ref.argument

    def check(self, project: "Project", ref: InlineRef) -> list[Problem]:
        """What verify checks without running anything: :meth:`validate`, then :meth:`look_up`."""
        return self.validate(ref) or problems_of(self.look_up, project, ref)

    def job(self, project: "Project", ref: InlineRef) -> "Job | None":
        """The run the reference shows a value of, if any: the build starts it with the page's."""
        return None
