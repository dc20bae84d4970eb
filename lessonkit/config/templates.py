"""The templates of generated pages (Jinja2): the project's own ``templates/`` over the engine's,
rendered in a sandbox that lets a template read plain data and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

from lessonkit.config.template_sandbox import (
    MAX_OUTPUT,
    Budget,
    TooLarge,
    bounded_concat,
    bounded_template_class,
    guard_filters,
    printed_size,
    sandbox_class,
)
from lessonkit.errors import LessonError
from lessonkit.util import text

ENGINE_TEMPLATES = Path(__file__).parents[1] / "templates"


def _printed(value):
    """``finalize`` of the environment: what ``{{ … }}`` writes, bounded before it is written."""
    printed_size(value)
    return value


class UnsafeTemplate(Exception):
    """A name in ``templates/`` that is not a regular file strictly inside it (a symbolic link, a
    device, a folder): raised by :class:`_ProjectLoader`, reported by :func:`render` where the
    template that named it asked for it."""


def project_loader(folder: Path):
    """A Jinja loader of the project's ``templates/``: it reads a name only when every part of its
    path below ``folder`` is a real folder or, last, a regular file (no symbolic link anywhere, the
    file opened with ``O_NOFOLLOW``, its real path inside ``folder``); any other name that exists
    raises :class:`UnsafeTemplate`. A name that does not exist falls through to the engine's."""
    import os
    import stat

    import jinja2
    from jinja2.loaders import split_template_path

    class ProjectLoader(jinja2.BaseLoader):
        def get_source(self, environment, template):
            parts = split_template_path(template)  # refuses `..`; TemplateNotFound
            try:
                top = os.lstat(folder)
            except OSError:
                raise jinja2.TemplateNotFound(template) from None
            if not stat.S_ISDIR(top.st_mode):
                raise UnsafeTemplate("`templates` is not a folder (a symbolic link?)")
            path = folder
            for i, part in enumerate(parts):
                path = path / part
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    raise jinja2.TemplateNotFound(template) from None
                except OSError as exc:
                    raise UnsafeTemplate(f"`templates/{template}` cannot be read: {exc.strerror}") from None
                last = i == len(parts) - 1
                if stat.S_ISLNK(st.st_mode):
                    raise UnsafeTemplate(f"`templates/{'/'.join(parts[: i + 1])}` is a symbolic link")
                if not (stat.S_ISREG(st.st_mode) if last else stat.S_ISDIR(st.st_mode)):
                    kind = "not a regular file" if last else "not a folder"
                    raise UnsafeTemplate(f"`templates/{'/'.join(parts[: i + 1])}` is {kind}")
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
            except OSError as exc:
                raise UnsafeTemplate(f"`templates/{template}` cannot be opened: {exc.strerror}") from None
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                real = Path(os.path.realpath(path))
                if not stat.S_ISREG(st.st_mode) or not real.is_relative_to(Path(os.path.realpath(folder))):
                    raise UnsafeTemplate(f"`templates/{template}` is not a regular file inside templates/")
                data = f.read()
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError:
                raise UnsafeTemplate(f"`templates/{template}` is not UTF-8 text") from None
            mtime = st.st_mtime_ns

            def uptodate() -> bool:
                try:
                    return os.lstat(path).st_mtime_ns == mtime
                except OSError:
                    return False

            return source, str(path), uptodate

    loader = ProjectLoader()
    loader.folder = folder  # type: ignore[attr-defined]  # for render(): where a project template's frame is
    return loader


def environment(root: Path):
    """Templates of the project (``templates/``) before the engine's (``lessonkit/templates/``),
    rendered in a sandbox (:mod:`lessonkit.config.template_sandbox`): ``templates/`` is contributed
    content, so a template reads plain data only and calls nothing but the filters below and the
    non-mutating methods of strings, mappings and sequences; anything else is a located error,
    never run."""
    import jinja2

    loader = jinja2.ChoiceLoader([project_loader(root / "templates"), jinja2.FileSystemLoader(ENGINE_TEMPLATES)])
    # `{#id}` is Markdown's heading-id syntax, so Jinja2 comments are written {#-- … --#}
    env = sandbox_class()(
        loader=loader,
        keep_trailing_newline=True,
        autoescape=False,  # the templates are Markdown: values go in through the filters below
        undefined=jinja2.StrictUndefined,
        comment_start_string="{#--",
        comment_end_string="--#}",
    )
    # Only plain-data helpers: no cycler, joiner or lipsum (objects with methods and module globals).
    env.globals = {"range": env.globals["range"], "dict": dict, "namespace": env.globals["namespace"]}
    # One escaping function per Markdown context (lessonkit.util.text): {{ file | code }} is a code
    # span, {{ name | mdtext }} literal text, {{ path | url }} a link destination.
    env.filters.update(code=text.md_code, mdtext=text.md_text, url=text.md_url)
    guard_filters(env)
    env.template_class = bounded_template_class()
    env.concat = bounded_concat
    env.finalize = _printed  # what `{{ … }}` writes: bounded before it is written as text
    return env


def _template_line(exc: BaseException, filename: str | None) -> int | None:
    """The line of the template ``filename`` where a runtime error was raised (Jinja maps the
    traceback's frames to template lines), else the error's own line."""
    line = getattr(exc, "lineno", None)
    tb = exc.__traceback__
    while tb is not None:
        if filename and tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def project_source(env, name: str) -> str | None:
    """The text of the project's template ``name`` (``templates/``), or None when the engine's
    template of that name is the one used."""
    folder = getattr(getattr(env.loader, "loaders", [None])[0], "folder", None)
    filename = env.get_template(name).filename  # compiled once: render() has loaded it
    if folder is None or filename is None or not Path(filename).is_relative_to(folder):
        return None
    return env.loader.loaders[0].get_source(env, name)[0]


UNSAFE_HINT = "a template of templates/ is a regular file inside templates/, never a symbolic link: copy the text in"


def _project_frame(env, exc: BaseException, name: str, filename: str | None) -> tuple[str, int | None]:
    """Where in the project's ``templates/`` a render error was raised: the innermost frame of a
    project template (``templates/<file>``, its line), else the rendered template's line."""
    folder = getattr(getattr(env.loader, "loaders", [None])[0], "folder", None)
    tb = exc.__traceback__
    found: tuple[str, int | None] | None = None
    while tb is not None:
        code = tb.tb_frame.f_code.co_filename
        if folder is not None and Path(code).is_relative_to(folder) and not code.endswith(".py"):
            found = (f"templates/{Path(code).relative_to(folder).as_posix()}", tb.tb_lineno)
        tb = tb.tb_next
    return found or (f"templates/{name}", _template_line(exc, filename))


def render(env, name: str, **data) -> str:
    import jinja2

    try:
        template = env.get_template(name)
    except UnsafeTemplate as exc:
        raise LessonError(f"template `{name}`: {exc}", path=f"templates/{name}", hint=UNSAFE_HINT) from None
    except jinja2.TemplateNotFound:
        raise LessonError(f"no template `{name}`", path="templates", hint="add templates/" + name) from None
    except jinja2.TemplateSyntaxError as exc:
        raise LessonError(
            f"template `{name}`: TemplateSyntaxError: {exc.message}",
            path=f"templates/{name}",
            line=exc.lineno,
            hint="check the template's Jinja syntax",
        ) from None
    traced = sys.gettrace()  # a debugger's or coverage's trace is left alone (no CPU bound then)
    try:
        if traced is None:
            sys.settrace(Budget(env).call)
        out, size = [], 0
        for chunk in template.generate(**data):
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise TooLarge(f"renders more than {MAX_OUTPUT} characters")
            out.append(chunk)
        return "".join(out)
    except TooLarge as exc:
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(
            f"template `{name}`: {exc}",
            path=path,
            line=line,
            hint="a generated page is the size of its data: check the template's loops and repetitions",
        ) from None
    except UnsafeTemplate as exc:
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(f"template `{name}`: {exc}", path=path, line=line, hint=UNSAFE_HINT) from None
    except RecursionError as exc:
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(
            f"template `{name}`: the template calls itself without end (a macro, an include or an import)",
            path=path,
            line=line,
            hint="end the recursion: a macro, include or import must not reach itself again",
        ) from None
    except jinja2.exceptions.SecurityError as exc:
        raise LessonError(
            f"template `{name}`: {exc}",
            path=f"templates/{name}",
            line=_template_line(exc, template.filename),
            hint="a template reads plain data only (values, fields, items, filters); it calls no method and "
            "reaches no object of the engine",
        ) from None
    except jinja2.TemplateError as exc:
        raise LessonError(
            f"template `{name}`: {exc.__class__.__name__}: {exc}",
            path=f"templates/{name}",
            line=_template_line(exc, template.filename),
            hint="check the template against the data the engine passes",
        ) from None
    except (ArithmeticError, LookupError, MemoryError, TypeError, ValueError) as exc:  # raised by a filter or method
        path, line = _project_frame(env, exc, name, template.filename)
        raise LessonError(
            f"template `{name}`: {exc.__class__.__name__}: {text.visible(str(exc)[:200])}",
            path=path,
            line=line,
            hint="check the values the template passes to its filters and methods",
        ) from None
    finally:
        if traced is None:
            sys.settrace(None)
