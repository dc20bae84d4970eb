"""Command line: ``python -m lessonkit verify|render|mutate|manifest …``."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

from lessonkit.cli.verify import mutate_command, page_problem, verify_command
from lessonkit.errors import LessonError, Problem
from lessonkit.util.text import whole_number


def _render(args) -> int:
    import markdown

    from lessonkit.pipeline import markdown as mdext
    from lessonkit.project import Project

    path = Path(args.page)
    project = Project(Path(args.root).resolve())
    problem = page_problem(project, path)
    if problem:
        print(f"{args.page}: {problem} — give the path of a Markdown file under docs/", file=sys.stderr)
        return 2
    text = project.read_page(path)
    page: mdext.PageContext  # the context of the conversion below (the extension calls the lambda then)
    md = markdown.Markdown(
        extensions=[
            "lessonkit.pipeline.markdown",
            "lessonkit.pipeline.mathml",
            "tables",
            "admonition",
            "attr_list",
            "pymdownx.superfences",
            "md_in_html",
        ],
        extension_configs={"lessonkit.pipeline.markdown": {"root": args.root, "context": lambda: page}},
    )
    problems: list[Problem] = []
    page = mdext.PageContext(project.rel(path), 0, problems, source=text, project=project)
    html = md.convert(text)
    for p in problems:
        print(p, file=sys.stderr)
    print(html)
    return 1 if problems else 0


def _manifest(args) -> int:
    from lessonkit.source.pin import write_manifest

    tree = Path(args.tree)
    if not tree.is_dir() or not any(tree.iterdir()):
        print(f"{tree}: not a folder with files — give the folder of the tree to record", file=sys.stderr)
        return 2
    from lessonkit.config.checks import manifest_output_problem

    problem = manifest_output_problem(Path(args.root), Path(args.out))
    if problem:
        print(
            f"{args.out}: {problem}; not overwritten — write it to sourcemap/manifest.sha256 or outside the project",
            file=sys.stderr,
        )
        return 2
    n = write_manifest(tree, Path(args.out))
    print(f"wrote {n} entries to {args.out}")
    return 0


def _repin(args) -> int:
    from lessonkit import repin

    return repin.main(args)


def _init(args) -> int:
    from lessonkit.cli.init import init

    dest = Path(args.dest)
    notes: list[str] = []
    made = init(dest, args.package, args.lang, Path(args.sdist) if args.sdist else None, args.repo, notes)
    for p in made:
        print(f"created {p}")  # the path as given: dest / the file
    for note in notes:
        print(note)
    if args.lang == "zh" and importlib.util.find_spec("jieba") is None:
        print(
            "note: Chinese search needs jieba to split words: pip install 'lessonkit[zh]' "
            "(without it the search index is built without Chinese word segmentation)"
        )
    print(f"next: cd {dest} && lessonkit build && lessonkit verify --mutate --site site")
    return 0


def _build(args) -> int:
    """``mkdocs build --strict`` of the project, through MkDocs' own command (its log and summary)."""
    from mkdocs.__main__ import cli

    config_file = Path(args.root) / args.config_file
    if not config_file.is_file():
        print(f"{config_file}: no such file — run lessonkit build in a series' folder (or --root)", file=sys.stderr)
        return 1
    if args.engine == "zensical":
        from lessonkit.integrations.zensical import emit

        return emit.build(config_file)
    try:
        cli.main(["build", "--strict", "-f", str(config_file)], prog_name="lessonkit build", standalone_mode=False)
    except SystemExit as exc:  # MkDocs' Abort: it has logged the reason
        return int(exc.code or 0)
    except Exception as exc:  # click's usage errors and MkDocs' own exceptions: one line
        print(f"lessonkit build: {exc}", file=sys.stderr)
        return 1
    return 0


def _new(args) -> int:
    from lessonkit.checks import verify
    from lessonkit.cli.scaffold import new_lesson, slug_of
    from lessonkit.project import Project

    project = Project(Path(args.root))
    conf = project.site
    stem = Path(conf.package.strip("/")).name.removesuffix(".py")
    pinned = {"upstream": conf.name, "prefix": conf.env_prefix, "module": stem if stem.isidentifier() else None}
    slug = args.slug
    if slug is None:
        slug = slug_of(args.title, args.number)
        print(f"slug: {slug} (from the title; give a SLUG after the title for another)")
    made = new_lesson(project.root, args.number, args.title, slug, project.pin.short, conf.lessons, pinned)
    for p in made:
        print(f"created {project.rel(p)}")
    print("added the page to the nav in mkdocs.yml")
    report = verify.check(project)
    if report.problems:
        for issue in report.problems:
            print(issue, file=sys.stderr)
        return 1
    verify.write_map(project, report)
    from lessonkit.checks.living import write_ref_map

    write_ref_map(project, report)
    print("recorded the new excerpts in sourcemap/excerpts.json; next: lessonkit build && lessonkit verify")
    return 0


def _run(args) -> int:
    """Run experiments exactly as the build does, without the cache: one script
    (``experiments/x.py``), every experiment block of a page (``docs/x.md``) or the
    block at a line (``docs/x.md:12``, the form failing inline experiments print)."""
    from dataclasses import replace

    from lessonkit.pipeline.blocks import Block, check_rel_path
    from lessonkit.project import Project
    from lessonkit.run import runner as execute
    from lessonkit.run.outcomes import as_authored

    project = Project(Path(args.root))
    target, _, line = args.script.partition(":")
    rel = check_rel_path(target)
    path = project.root / rel
    at = whole_number(line)
    jobs: list[tuple[Block | None, execute.Job]]
    if rel.startswith("docs/") and rel.endswith(".md") and path.is_file() and (not line or at is not None):
        blocks = [b for b in project.parse(path).blocks if b.kind == "experiment"]
        if line and at is not None:
            blocks = [b for b in blocks if b.line <= at <= b.line + len(b.fields) + len(b.body or ()) + 2]
        if not blocks:
            print(
                f"{args.script}: no experiment block {'at this line' if line else 'on this page'} — give "
                "docs/PAGE.md, or docs/PAGE.md:LINE with the line of the block's opening fence",
                file=sys.stderr,
            )
            return 2
        jobs = [(b, job) for b in blocks if (job := project.resolve(b).job) is not None]  # every experiment has one
    elif rel.startswith("experiments/") and rel.endswith(".py") and path.is_file() and not line:
        jobs = [(None, execute.Job(path.name, path.read_bytes(), args.timeout, rel))]
    else:
        print(
            f"{args.script}: no such experiment — give a script such as experiments/multiple_paths.py, "
            "a page such as docs/lessons/05-reverse-mode.md, or PAGE:LINE",
            file=sys.stderr,
        )
        return 2
    failed = 0
    for block, job in jobs:
        if args.timeout_given:
            job = replace(job, timeout=args.timeout)
        if block is not None:
            print(f"== {block.path}:{block.line}", flush=True)
        result = project.runner._execute(job)
        sys.stdout.write(result.stdout)
        sys.stdout.flush()
        sys.stderr.write(as_authored(result.stderr, job))
        if result.record is not None:
            print(f"record: {json.dumps(result.record, ensure_ascii=False, sort_keys=True)}")
        if not result.ok:
            failed += 1
            err = execute.failure(result, job, job.timeout)
            print(err.at(block.path, block.line) if block is not None else err.at(job.label, None), file=sys.stderr)
    for p in project.runner.tree_problems():
        print(p, file=sys.stderr)
        failed += 1
    return 1 if failed else 0


def _serve(args) -> int:
    from mkdocs.exceptions import MkDocsException

    from lessonkit.integrations.mkdocs.serve import serve

    try:
        serve(args.config_file, args.dev_addr)
    except MkDocsException as exc:  # the first build failed: its problems are logged above
        text = str(exc).strip()
        located = text.startswith(f"{Path(args.config_file).name}:")  # a YAML mistake: its line
        print(text if located else f"lessonkit serve: {text}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    # `lessonkit …` (the console script) or `python -m lessonkit …`
    prog = "lessonkit" if os.path.basename(sys.argv[0]) == "lessonkit" else "python -m lessonkit"
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("--root", default=".", help="project root")
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify", help="check the pin, every block and the excerpt map")
    v.add_argument("pages", nargs="*", help="only these pages (default: all of docs/)")
    v.add_argument("--update-map", action="store_true", help="rewrite sourcemap/excerpts.json")
    v.add_argument("--no-map", action="store_true", help="skip the excerpt-map check")
    v.add_argument("--mutate", action="store_true", help="then run the mutation check (`mutate`) in the same process")
    v.add_argument(
        "--rerun",
        action="store_true",
        help="run every experiment once more, uncached, and fail where its output or record differs",
    )
    v.add_argument(
        "--site",
        nargs="?",
        const="site",
        default=None,
        metavar="SITE_DIR",
        help="then check every HTML file the build wrote (default folder: site); with --mutate, mutate it too",
    )
    v.add_argument(
        "--base",
        default=None,
        metavar="REF",
        help="first list every trusted file (build configuration and code) that differs from git revision REF, "
        "and fail if there is one",
    )
    v.set_defaults(func=verify_command)
    r = sub.add_parser("render", help="render one page to HTML on stdout (runs its experiments)")
    r.add_argument("page")
    r.set_defaults(func=_render)
    mu = sub.add_parser("mutate", help="prove verify catches a one-character change in every cited region")
    mu.add_argument("pages", nargs="*", help="only the map entries of these pages (default: all)")
    mu.set_defaults(func=mutate_command)
    x = sub.add_parser("run", help="run experiments as the build does (no cache): a script, a page or PAGE:LINE")
    x.add_argument("script", help="experiments/x.py, docs/x.md or docs/x.md:LINE")
    x.add_argument("--timeout", type=int, default=None, help="seconds (default: the block's Timeout, or 60)")
    x.set_defaults(func=_run)
    i = sub.add_parser("init", help="start a new series about a release from the package index")
    i.add_argument("dest", help="a new (or empty) folder")
    i.add_argument("--package", required=True, metavar="NAME==VERSION", help="the release to pin")
    i.add_argument("--lang", default="en", choices=("en", "zh"), help="the language of the pages (default en)")
    i.add_argument("--sdist", default=None, metavar="PATH", help="a local release archive instead of the index's")
    i.add_argument("--repo", default=None, metavar="URL", help="the source repository (default: from its metadata)")
    i.set_defaults(func=_init)
    b = sub.add_parser("build", help="build the site (mkdocs build --strict)")
    b.add_argument("-f", "--config-file", default="mkdocs.yml")
    b.add_argument(
        "--engine",
        choices=("mkdocs", "zensical"),
        default="mkdocs",
        help="the site generator (default mkdocs; zensical: see the engine guide, 'Engines')",
    )
    b.set_defaults(func=_build)
    n = sub.add_parser("new", help="scaffold a lesson: page, experiment, nav entry")
    n.add_argument("number", help="two digits, e.g. 15")
    n.add_argument("title")
    n.add_argument("slug", nargs="?", default=None, help="file name part, e.g. my-topic (default: from the title)")
    n.set_defaults(func=_new)
    m = sub.add_parser("manifest", help="write a manifest for a tree")
    m.add_argument("tree")
    m.add_argument("out")
    m.set_defaults(func=_manifest)
    rp = sub.add_parser("repin", help="report what every excerpt and experiment would become under another release")
    rp.add_argument(
        "target",
        help="a released version (1.9.0), a full commit id (fetched from "
        "LESSONKIT_GIT_REMOTE) or a local checkout path",
    )
    rp.add_argument("--commit", help="the full commit id of the target tree (sdist or local checkout), for --apply")
    rp.add_argument("--html", help="where to write the HTML report (default: site-repin/index.html)")
    rp.add_argument("--diffs", action="store_true", help="print every diff on stdout too (always in the HTML)")
    rp.add_argument(
        "--apply",
        action="store_true",
        help="move the pin: rewrite pin, manifest, Lines:/Commit: headers and map, and list the blocks "
        "that need the author",
    )
    rp.set_defaults(func=_repin)
    s = sub.add_parser(
        "serve", help="live preview that rebuilds only what a change affects (see docs/dev/incremental.md)"
    )
    s.add_argument("-a", "--dev-addr", default=None, metavar="IP:PORT", help="default: mkdocs.yml's dev_addr")
    s.add_argument("-f", "--config-file", default="mkdocs.yml")
    s.set_defaults(func=_serve)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        args.timeout_given = args.timeout is not None
        args.timeout = args.timeout or 60
    try:
        return args.func(args)
    except LessonError as exc:  # a problem no stage could locate is the argument's: name it
        print(exc.at(_argument(args), None), file=sys.stderr)
        return 1
    except OSError as exc:  # a path the command was given or needs: one line, never a traceback
        print(
            f"{exc.filename or 'lessonkit'}: {exc.strerror or exc} — check the path and its permissions",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        return 130


def _argument(args) -> str:
    """The argument a command's unlocated problem is about: the value it names (a script, a page, a
    target), or the command itself."""
    given = {"run": "script", "render": "page", "repin": "target", "serve": "config_file", "manifest": "tree"}
    value = getattr(args, given.get(args.cmd, ""), None)
    return str(value) if value else f"lessonkit {args.cmd}"


if __name__ == "__main__":
    sys.exit(main())
