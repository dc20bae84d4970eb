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
    # the one mistake it reports, when several places of a page can name it (a failed run of a
    # script, a missing script): problems of one page with the same ``about`` are folded into the first
    about: str | None = None

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
        about: str | None = None,
    ):
        self.problem = Problem(message, path, line, hint, code, about)
        self.problems = problems or [self.problem]
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    def at(self, path: str | None, line: int | None) -> "LessonError":
        """Return the same error located at ``path:line`` where not yet located."""
        fixed = [replace(p, path=p.path or path, line=p.line if p.line is not None else line) for p in self.problems]
        return LessonError.collect(fixed)

    @classmethod
    def collect(cls, problems: list[Problem]) -> "LessonError":
        first = problems[0]
        return cls(
            first.message,
            path=first.path,
            line=first.line,
            hint=first.hint,
            problems=list(problems),
            code=first.code,
            about=first.about,
        )

    def about(self, subject: str) -> "LessonError":
        """The same error, each problem marked as reporting ``subject`` (see :func:`fold_repeats`)."""
        return LessonError.collect([replace(p, about=subject) for p in self.problems])

    @property
    def code(self) -> str | None:
        """The code of the first problem (see :attr:`Problem.code`)."""
        return self.problem.code


# Problem.about of a script that is not there (the experiment kind and the kinds that show a
# recorded run name it the same way): one mistake per page, however many places name it.
MISSING_SCRIPT = "missing script "


def fold_repeats(problems: list[Problem], first_at: dict[str, int] | None = None) -> list[Problem]:
    """``problems`` with one line per mistake: of the problems of one page with the same
    :attr:`Problem.about` (a failed run cited by a block and by inline values; a missing script
    named by several places), only the first in page order stays, saying on which other lines the
    page names it. ``first_at`` (about -> line) names an earlier place of the page that has no
    problem of its own (verify does not run an experiment block, but the value it runs for fails):
    the problem is reported there. The other problems and the order are kept."""
    first: dict[tuple[str | None, str], int] = {}  # (page, about) -> index in out
    also: dict[int, set[int]] = {}
    out: list[Problem] = []
    for p in problems:
        about = p.about
        if about is None:
            out.append(p)
            continue
        seen = set()
        at = (first_at or {}).get(about)
        if at is not None and p.line is not None and at < p.line:
            seen.add(p.line)
            p = replace(p, line=at)
        n = first.get((p.path, about))
        if n is None:
            n = first[(p.path, about)] = len(out)
            out.append(p)
        else:
            kept = out[n]
            if p.line is not None and (kept.line is None or p.line < kept.line):  # the earlier place stays
                out[n], p = p, kept
            if p.line is not None:
                seen.add(p.line)
        also.setdefault(n, set()).update(seen)
    for n, lines in also.items():
        rest = sorted(lines - {out[n].line})
        if rest:
            out[n] = replace(out[n], message=f"{out[n].message} (also cited at {', '.join(f':{k}' for k in rest)})")
    return out
