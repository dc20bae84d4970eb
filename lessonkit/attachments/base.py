"""What an attachment is: a page the build generates once every experiment has run.

An attachment is one object, an instance of :class:`Attachment` (or of :class:`Diagram`, an
attachment drawn from one experiment script). The build asks it:

=========================  ===================================================================
when                       what
=========================  ===================================================================
registration               :attr:`~Attachment.name`, :attr:`~Attachment.uri` (the page it
                           writes), :attr:`~Attachment.reads` (project files it draws from,
                           checked to exist), :meth:`~Attachment.enabled`
planning the runs          :meth:`~Attachment.jobs`: the runs it needs, started with the
                           experiments (cached like them; ``lessonkit prefill`` runs them too)
once every run has ended   :meth:`~Attachment.page`: the page's Markdown, from :class:`Inputs`
                           (the project, the verify report, every run's result)
the bundle                 :meth:`~Attachment.bundle`: extra files under ``attachments/``
=========================  ===================================================================

The engine's own attachments (the acceptance record, the repository map) are instances too
(:mod:`lessonkit.site.attachments`); a project adds its own in ``sourcemap/attachments.toml``
(:mod:`lessonkit.attachments`). Its pages are Markdown: the prose is usually a template of the
project's ``templates/`` (:meth:`Inputs.render`), the words of drawings ``[labels]`` keys of its
own (``x-…``).

Modules that define attachments are imported while a build plans its runs, also by the
standard-library-only prefill: import only the standard library and lessonkit at their top.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lessonkit.errors import LessonError

if TYPE_CHECKING:
    from lessonkit.run.jobs import Job, Result


class Project(Protocol):
    """What an attachment may use of the project (:class:`lessonkit.project.Project`, which is
    built on the attachments and so is not imported here)."""

    root: Path

    @property
    def site(self) -> Any: ...  # lessonkit.config.site.SiteConfig: labels, render(), names
    @property
    def pin(self) -> Any: ...
    @property
    def runner(self) -> Any: ...
    @property
    def pinned(self) -> Any: ...


@dataclass(frozen=True)
class Inputs:
    """What a page is drawn from: the project, the verify report of every page (``resolved``,
    ``inline``, ``count(kind)``) and this build's results by run key."""

    project: Any  # Project
    report: Any  # lessonkit.checks.verify.Report
    results: dict

    def result(self, rel: str) -> "Result":
        """The successful run of the whole script ``rel`` (a job of :func:`script_job`), or a
        located error at the script."""
        from lessonkit.run.outcomes import failure

        job = script_job(self.project, rel)
        res = self.results.get(self.project.runner.key(job))
        if res is None:  # not among the runs the attachments listed (Attachment.jobs)
            raise LessonError(
                "no run of this script is among the build's runs",
                path=rel,
                hint="list it in the attachment's jobs() (a Diagram does)",
            )
        if not res.ok:
            raise failure(res, job, job.timeout).at(rel, None)
        return res

    def render(self, template: str, **data) -> str:
        """The project's template ``template`` (``templates/`` first, then lessonkit's) filled with
        ``data`` (see :meth:`lessonkit.config.site.SiteConfig.render`)."""
        return self.project.site.render(template, **data)


class Attachment:
    """One generated page. Subclass it, set :attr:`name` and :attr:`uri`, override :meth:`page`."""

    name: str = ""  # how problems and the acceptance record name it: lowercase words and `-`
    uri: str = ""  # the page it writes, docs-relative: "attachments/call-sequence.md"
    in_nav: bool = True  # listed in the navigation when mkdocs.yml's nav names it

    @property
    def reads(self) -> tuple[str, ...]:
        """Project files the page is drawn from (project-relative): each must exist when the
        attachment is registered."""
        return ()

    def enabled(self, project: Project) -> bool:
        """Whether the project gets this page (the engine's own attachments ask; a registered one
        is enabled by being registered)."""
        return True

    def jobs(self, project: Project) -> list["Job"]:
        """The runs the page needs (see :func:`script_job`); the build starts them with the
        experiments and passes their results to :meth:`page`."""
        return []

    def page(self, inputs: Inputs) -> str:
        """The page's Markdown. Raise a located :class:`~lessonkit.errors.LessonError` for what the
        author must fix."""
        raise NotImplementedError

    def bundle(self, inputs: Inputs) -> dict[str, bytes]:
        """Files for the bundle besides the page's plain text: ``{file name: bytes}``, placed in
        its ``attachments/`` folder."""
        return {}


class Diagram(Attachment):
    """An attachment drawn from one experiment script's output, ``source`` (project-relative,
    e.g. ``experiments/debug_walkthrough.py``): the build runs the whole script (cached like
    every experiment) and hands its result to :meth:`draw`."""

    def __init__(self, source: str):
        self.source = source

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.source,)

    def jobs(self, project: Project) -> list["Job"]:
        return [script_job(project, self.source)]

    def page(self, inputs: Inputs) -> str:
        return self.draw(inputs, inputs.result(self.source))

    def draw(self, inputs: Inputs, result: "Result") -> str:
        """The page's Markdown from ``result`` (``stdout``, ``record``, ``digest``) of the script."""
        raise NotImplementedError


def script_job(project: Project, rel: str) -> "Job":
    """The job that runs the whole script ``rel`` (a project-relative file), as ``lessonkit run
    rel`` does."""
    from lessonkit.run.jobs import Job
    from lessonkit.run.runner import DEFAULT_TIMEOUT

    return Job(Path(rel).name, (project.root / rel).read_bytes(), DEFAULT_TIMEOUT, rel)
