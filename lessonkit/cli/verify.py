"""The ``verify`` and ``mutate`` commands: the pin, every block and the excerpt map; then, as asked,
every experiment once more (``--rerun``), every file of the built site (``--site``) and the mutation
check (``--mutate``, beside the site check in a process of its own); alone, the mutation check."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from lessonkit.errors import LessonError, Problem


def _trusted_changes(root: Path, base: str) -> int:
    """``verify --base REF``: each trusted file that differs from ``REF``, one line; 1 when any."""
    from lessonkit.integrations.mkdocs import boundary

    changed = boundary.changed_trusted(root, base)
    for rel in changed:
        print(f"{rel}: trusted file changed since {base} — a maintainer must review it", file=sys.stderr)
    if changed:
        print(
            f"verify --base {base}: {len(changed)} trusted file(s) changed; the other checks did not run "
            "(they would run the changed code)",
            file=sys.stderr,
        )
    return 1 if changed else 0


def _replaced_files(project) -> list[Problem]:
    """Files of docs/ at a site path the engine or the theme writes (the build stops on them too)."""
    from lessonkit.attachments import ENGINE_PAGE_OWNERS
    from lessonkit.config import checks
    from lessonkit.integrations.mkdocs import boundary

    yml = project.root / "mkdocs.yml"
    dirs, statics = boundary.theme_dirs(project.root, yml.read_text(encoding="utf-8")) if yml.is_file() else ([], ())
    site = project.site
    engine = {site.bundle: "the engine's bundle", site.offline_path: "the engine's offline edition"}
    engine |= {site.pdf_path: "the engine's PDF"} if site.pdf_path else {}
    written = checks.written_files(project.root, dirs, statics, engine)
    return checks.replaced_files(project.root, written, ENGINE_PAGE_OWNERS)


def verify_command(args) -> int:
    from lessonkit.project import Project

    t0 = time.perf_counter()
    if args.base is not None and _trusted_changes(Path(args.root), args.base):
        return 1  # before anything of the project is read or imported
    project = Project(Path(args.root))
    pages = [Path(p) for p in args.pages] or None
    for p in pages or []:
        problem = page_problem(project, p)
        if problem:
            print(f"{p}: {problem} — give paths of Markdown files under docs/", file=sys.stderr)
            return 2
    if args.site is not None and pages:
        print("--site checks the whole site: run it without page arguments", file=sys.stderr)
        return 2
    if pages is None and not project.pages():
        print(
            f"docs: no Markdown pages under {project.rel(project.docs)}/ — there is nothing to verify; "
            "add lessons under docs/",
            file=sys.stderr,
        )
        return 1
    args.site_note = ""
    if args.site is None and pages is None and not args.update_map:  # what ships, when this project built it
        args.site, args.site_note = _built_site(project)
    beside = None
    if args.site is not None and args.mutate and not args.update_map:
        # the mutation check needs no site and makes its own report: on the other core from now
        beside = _start_mutations(project.root)
    try:
        return _verify_checks(args, project, pages, beside, t0)
    finally:
        if beside is not None and beside[0].is_alive():  # not collected: verify stopped before the mutations
            beside[0].terminate()
            beside[0].join()
            beside[1].close()


def _verify_checks(args, project, pages, beside, t0: float) -> int:
    from lessonkit.checks import living, verify

    report = verify.check(project, pages)
    problems = _replaced_files(project) + list(report.problems)
    if not problems:  # snapshots, figures and inline values against this pin's runs (cached when unchanged)
        problems += living.check_recorded(project, report).problems
    if not problems and getattr(args, "rerun", False):  # every run once more: the same output and record
        from lessonkit.checks import rerun

        problems += rerun.check(project, report)
    if args.update_map:
        if problems:
            print("not writing the excerpt map while blocks have problems", file=sys.stderr)
        elif pages:
            print("--update-map needs all pages: run it without page arguments", file=sys.stderr)
            return 2
        else:
            verify.write_map(project, report)
            print(f"wrote {project.rel(project.sourcemap / verify.MAP_NAME)}")
            print(f"wrote {project.rel(living.write_ref_map(project, report))}")
    elif not args.no_map:
        only = {project.rel(p) for p in pages} if pages else None
        problems += verify.stale_map(project, report, only)
        problems += living.stale_ref_map(project, report, only)
    for issue in problems:
        print(issue, file=sys.stderr)
    n_pages = len(report.resolved)
    counts = ", ".join(f"{report.count(name)} {name}" for name in project.kinds.fenced)  # every registered kind
    n_inline = sum(len(v) for v in report.inline.values())
    summary = (
        f"verify: {n_pages} page(s), {counts} block(s), {n_inline} inline reference(s) "
        f"against {project.pin.name} {project.pin.version} "
        f"({project.pin.short}, {project.tree.provider}); "
        f"{len(problems)} problem(s) in {time.perf_counter() - t0:.2f} s" + getattr(args, "site_note", "")
    )
    print(summary, file=sys.stderr if problems else sys.stdout)
    if problems:
        return 1
    site_mutations = None  # (report, seconds) of the site check's mutations, when it ran
    if args.site is not None:  # what the build wrote, once the inputs are right
        site_mutations = _site_check(project, report, Path(args.site), args.mutate)
        if site_mutations is None:
            return 1
    if args.mutate:  # else the same process: the pinned tree is provided and checked once
        if beside is not None:
            code = _mutation_result(*beside)
        else:
            code = _mutation_check(project, {project.rel(p) for p in pages} if pages else None)
        if site_mutations is not None:
            code = max(code, _site_mutation_result(*site_mutations))
        return code
    return 0


def _built_site(project) -> tuple[str | None, str]:
    """The site folder a plain ``verify`` checks: ``site/`` of the project when a successful build
    of this project by this lessonkit recorded it in this cache; else None and the clause of the
    summary line that says why not."""
    from lessonkit.checks import record as site_record
    from lessonkit.util.store import code_version

    folder = project.root / "site"
    label = f"{project.rel(folder)}/"
    if not folder.is_dir():
        return None, f"; {label} not checked: there is no {label} (`lessonkit build` writes it)"
    rec = site_record.read(project, folder)
    if rec is None or rec["root"] != str(project.root):
        return None, (
            f"; {label} not checked: no successful build of this project recorded it in this cache "
            "(`lessonkit build`, then `lessonkit verify`)"
        )
    if rec["engine"] != code_version():
        return None, (
            f"; {label} not checked: another version of lessonkit built it (`lessonkit build`, then `lessonkit verify`)"
        )
    newer = _changed_since(project, project.cache / site_record.KIND / site_record._key(folder))
    if newer:  # the lessons moved on: the folder is an older build's, not something that changed it
        return None, (
            f"; {label} not checked: {newer} changed after the build that wrote it "
            "(`lessonkit build`, then `lessonkit verify`)"
        )
    return str(folder), ""


def _changed_since(project, entry: Path) -> str | None:
    """An input of the build (mkdocs.yml, docs/, sourcemap/, experiments/, the code and teaching
    folders) modified after the record ``entry`` was written, or None."""
    try:
        written = entry.stat().st_mtime_ns
    except OSError:
        return None
    tops = ["mkdocs.yml", "docs", "sourcemap", "experiments", *project.site.code, *project.site.teaching]
    for top in dict.fromkeys(tops):
        start = project.root / top
        for path in [start] if start.is_file() else sorted(start.rglob("*")) if start.is_dir() else []:
            if "__pycache__" in path.parts:
                continue
            try:
                if path.lstat().st_mtime_ns > written:
                    return project.rel(path)
            except OSError:
                continue
    return None


class _Captured:
    """What a function printed, in order, with the stream it went to."""

    def __init__(self, out: list[tuple[str, str]], name: str):
        self.out, self.name = out, name

    def write(self, text: str) -> int:
        self.out.append((self.name, text))
        return len(text)

    def flush(self) -> None:
        pass


def _mutation_worker(root: str, conn) -> None:
    """:func:`_mutation_check` of the whole site in a helper process: sends (exit code, what it printed)."""
    import contextlib

    from lessonkit.project import Project
    from lessonkit.run.box import sandbox

    sandbox.helper_process()  # dies with verify; Ctrl-C is verify's to handle
    printed: list[tuple[str, str]] = []
    try:
        with (
            contextlib.redirect_stdout(_Captured(printed, "out")),
            contextlib.redirect_stderr(_Captured(printed, "err")),
        ):
            code = _mutation_check(Project(Path(root)), None)
    except LessonError as exc:
        code = 1
        printed += [("err", f"{p}\n") for p in exc.problems]
    except Exception as exc:  # one line, never a traceback; verify fails
        code = 1
        what = (str(exc).strip().splitlines() or [""])[0][:200]
        printed.append(
            (
                "err",
                f"lessonkit verify: the mutation check stopped ({type(exc).__name__}: {what}) — "
                "run `lessonkit mutate` to see it alone\n",
            )
        )
    with contextlib.suppress(OSError):
        conn.send((code, printed))
    conn.close()


def _start_mutations(root: Path):
    """Start :func:`_mutation_worker`; (process, our end of its pipe), or None when no process
    can be spared (the mutation check then runs here, after the site check)."""
    from lessonkit.run.box import sandbox

    return sandbox.start_piped_helper("spawn", _mutation_worker, (str(root),), "lessonkit-mutate")


def _mutation_result(proc, conn) -> int:
    """Print what :func:`_mutation_worker` printed, in order; its exit code. A process that ended
    without a result fails verify."""
    try:
        code, printed = conn.recv()
    except (EOFError, OSError):
        proc.join()
        print(
            f"lessonkit verify: the mutation check's process ended without a result (exit code "
            f"{proc.exitcode}) — run `lessonkit mutate` to see it alone",
            file=sys.stderr,
        )
        return 1
    finally:
        conn.close()
    proc.join()
    for stream, text in printed:
        (sys.stdout if stream == "out" else sys.stderr).write(text)
    return code


def _site_check(project, report, site_dir: Path, mutate: bool):
    """``verify --site``: every HTML file of the written site (lessonkit.site.shipped) and, with
    ``mutate``, its mutations in the same pass (lessonkit.checks.mutation.check_site); when it
    passed, (the site mutation report or None, the pass's seconds), else None."""
    from lessonkit.checks import mutation
    from lessonkit.site import shipped

    t0 = time.perf_counter()
    check = shipped.SiteCheck(project, report, site_dir)
    rep, mutated = mutation.check_site(check, mutate)
    for p in rep.problems:
        print(p, file=sys.stderr)
    seconds = time.perf_counter() - t0
    print(
        f"site: {rep.files} HTML file(s) of {project.rel(site_dir)}/, {rep.blocks} engine block(s), "
        f"{rep.code_pages} source page(s) ({rep.lines} lines) checked against the pinned tree and this "
        f"build's runs"
        + (f", its offline edition ({rep.offline} files) made again from it byte for byte" if rep.offline else "")
        + f"; {len(rep.problems)} problem(s) in {seconds:.2f} s"
        + (" (with the site mutations)" if mutated is not None else ""),
        file=sys.stderr if rep.problems else sys.stdout,
    )
    return None if rep.problems else (mutated, seconds)


def _site_mutation_result(report, seconds: float) -> int:
    """Print the site mutations of :func:`_site_check` (None: not asked for); the exit code."""
    if report is None:
        return 0
    for o in report.outcomes:
        if not o.caught:
            print(o.problem(), file=sys.stderr)
    print(
        f"site {report.summary()} (in the site check's {seconds:.2f} s)",
        file=sys.stdout if report.ok else sys.stderr,
    )
    return 0 if report.ok else 1


def page_problem(project, path: Path) -> str | None:
    """Why ``path`` is not a page of the project, or None."""
    if not path.is_file():
        return "no such page"
    real = path.resolve()
    if project.docs.resolve() not in real.parents:
        return "not a page under docs/ (only the site's pages are checked)"
    if real.suffix != ".md":
        return "not a Markdown page"
    return None


def mutate_command(args) -> int:
    from lessonkit.project import Project

    project = Project(Path(args.root))
    return _mutation_check(project, {project.rel(p) for p in args.pages} or None)


def _mutation_check(project, pages: set[str] | None) -> int:
    from lessonkit.checks import mutation

    t0 = time.perf_counter()
    report = mutation.run(project, pages)
    for p in report.problems + [o.problem() for o in report.outcomes if not o.caught]:
        print(p, file=sys.stderr)
    print(f"{report.summary()} in {time.perf_counter() - t0:.2f} s", file=sys.stdout if report.ok else sys.stderr)
    return 0 if report.ok else 1
