"""The one error type of lessonkit: a message that knows where it happened."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lessonkit.util.text import visible


@dataclass(frozen=True)
class Problem:
    """One author-facing problem: ``path:line: message — hint``."""

    message: str
    path: str | None = None
    line: int | None = None
    hint: str | None = None
    code: str | None = None  # what kind of problem, for code that reacts to it (e.g. "missing-symbol")

    def __str__(self) -> str:
        """One line: control, bidi and separator characters of any part (a file name, a quoted
        value) are shown as escapes, so the line reads as it is and stays one line."""
        where = self.path or "<markdown>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        text = f"{where}: {self.message}"
        if self.hint:
            text += f" — {self.hint}"
        return visible(text)


class LessonError(Exception):
    """An author or input mistake. Stages raise it; edges print ``str(err)``.

    A stage that does not know the page raises it without a path; the caller
    that does know adds the location once with :meth:`at`.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        hint: str | None = None,
        problems: list[Problem] | None = None,
        code: str | None = None,
    ):
        self.problem = Problem(message, path, line, hint, code)
        self.problems = problems or [self.problem]
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    def at(self, path: str | None, line: int | None) -> "LessonError":
        """Return the same error located at ``path:line`` where not yet located."""
        fixed = [replace(p, path=p.path or path, line=p.line if p.line is not None else line) for p in self.problems]
        first = fixed[0]
        return LessonError(
            first.message, path=first.path, line=first.line, hint=first.hint, problems=fixed, code=first.code
        )

    @classmethod
    def collect(cls, problems: list[Problem]) -> "LessonError":
        first = problems[0]
        return cls(
            first.message, path=first.path, line=first.line, hint=first.hint, problems=list(problems), code=first.code
        )

    @property
    def code(self) -> str | None:
        """The code of the first problem (see :attr:`Problem.code`)."""
        return self.problem.code
