#!/usr/bin/env python3
"""Build benchmark for the lesson site (issue 9): what lessonkit costs over a plain site.

Run it as ``nox -s bench`` (or ``python tools/bench.py`` in an environment with the
build requirements, ``markdown-exec`` and ``pyinstrument``). Every variant is a
temporary copy of the project; the real ``docs/``, ``mkdocs.yml`` and ``.cache`` are
only read. Each measured build is a separate ``python -m mkdocs build`` process (the
serve rebuild is a driver process, see ``_serve_driver``), timed with
``time.perf_counter()`` (wall) and ``resource.getrusage(RUSAGE_CHILDREN)`` deltas
(CPU of the process and everything it waited for, experiments included). Variants are
interleaved within each repetition; a ratio is the median of the per-repetition ratios of
its two sides (which ran back to back), reported with its spread. Every build runs with
``--no-strict`` (strictness adds no work; see ``mkdocs_build``).

Variants (all on the same pages unless said otherwise):

plain      the same site with lessonkit off: every annotation block turned into an
           ordinary ```python fence (header lines as ``#`` comments, then the body as
           written); the project's hooks and Markdown extensions removed from a generated
           mkdocs.yml (math through ``pymdownx.arithmatex``, as a plain Material site does
           it); no experiments. The pages the build generates (source browser, script
           pages, symbol index, generated attachments) are there as ordinary Markdown
           files, written from the warm build's data: the page text, the whole file as a
           fenced code block with line numbers, the tables as Markdown tables. So both
           sides build the same pages, and the difference is lessonkit's work.
plain-docs supporting: plain without the generated pages (only what docs/ holds), so
           the cost of those pages themselves is visible too.
plain+     supporting: like plain, but each fence holds what lessonkit shows (the verified
           excerpt, and the experiment's output as a ```text fence), so it separates
           lessonkit's own overhead from the cost of highlighting more code.
warm       the real configuration with filled caches (experiments, highlighted code,
           symbol tables, formulas, link scans).
cold       the real configuration with an empty ``LESSONKIT_CACHE`` (every experiment
           runs, everything is highlighted and converted again); the pinned tree comes from
           ``AUTOGRAD_SOURCE`` so nothing is downloaded.
           Ratio 2 compares it with plain + the experiments' total CPU / cores, that CPU
           measured by running every script once, one at a time (``experiment_cpu_serial``),
           in every repetition right after the cold build (the median is used).
           ``--only 2`` measures just this ratio (per repetition: plain, cold, the
           experiments' CPU), so that more repetitions fit in a few minutes.
verify     ``python -m lessonkit verify``, the checks of the inputs (ratio 3): the built site is
           moved aside for this run, as a plain ``verify`` also checks a site/ its build recorded.
verify-site ``python -m lessonkit verify --site site``: the inputs and every file of the built site,
           reported beside ratio 3. ``--only 3`` measures just these (per repetition: plain,
           verify, verify --site).
serve      a driver process does what ``mkdocs serve`` does on a change: reload the config
           and rebuild in the same process after one lesson's prose was edited.
x10        the warm build with 10x the lesson pages (copies of docs/lessons/ under new
           directories, kept out of the nav with ``not_in_nav`` so the nav is the same).
mdexec     the plain site plus one ``python exec="true"`` markdown-exec fence per
           experiment holding the script; markdown-exec runs them in the build process
           with no cache.
serve-live ratio 7: ``python -m lessonkit serve`` (what ``nox -s serve`` runs: the incremental
           builder) runs as a subprocess on a copy (warm cache); one lesson's prose is
           edited and the clock runs from the file write until the page the server hands
           out from its site directory contains the edit. Divided by the plain full build.
           ``--only 7`` measures just this ratio (warm-up, plain builds, serve edits).
fresh      ratio 8: the README's build command (read from README.md) run verbatim in a
           copy of the project with no ``.nox``, ``.cache`` or ``site``, empty pip and uv
           caches (``PIP_CACHE_DIR``/``UV_CACHE_DIR`` point at new temporary directories)
           and a new venv standing in for the machine's Python (created untimed), against
           what a plain site of the same pages costs on a new machine: ``python -m venv`` +
           ``pip install -r requirements.txt`` with an empty pip cache, then a ``mkdocs build``
           of the plain variant (a copy of its own) with that venv's Python, run right before
           it. The pinned sdist is downloaded as on a new machine. The README command against
           the pip install alone is reported beside it, with its floor.
           ``--only 8`` measures just this ratio (``--fresh-reps`` pairs; a warm-up build
           first, untimed, to write the plain variant's generated pages).
paint      reported, not a ratio: the warm build's home page loaded in headless Chromium
           (Playwright) on an emulated 1.6 Mbps / 150 ms RTT link (CDP
           ``Network.emulateNetworkConditions``, cache disabled), served from the built site
           with gzip as static hosts do (the median of three loads) and without (one load): the
           first contentful paint (Paint Timing), the load event, the bytes transferred (the
           search index, which Material's bundle fetches at start, included) and when the index
           had arrived.
           After the index, the time until search is ready (Material's result line leaves its
           "initialising" text: the index fetched and built), and the bytes of the whole first
           visit once the network is idle (the math font of the page's formulas included), in KB.
           ``--only paint`` measures just this (one warm build first); ``--only paint --site
           site`` measures an already built site.
exercise   reported, not a ratio: the browser's Python of the exercise blocks (lesson 14): the
           bytes of ``assets/pyodide/`` that the first Run fetches, and, in headless Chromium on
           the local server (no throttling), the time from pressing Run on stage 1 to its checks'
           outcome, the first time (the runtime loads) and again (it is loaded).
           ``--only exercise`` measures just this (one warm build first).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDIT_PAGE = "docs/lessons/05-reverse-mode.md"
SCALE = 10
EXP_LOG = re.compile(r"lessonkit: (\d+) experiment\(s\): (\d+) run \(([\d.]+) s CPU\)")
VERIFY_SUMMARY = re.compile(r"^verify: .*$", re.M)
SITE_SUMMARY = re.compile(r"^site: .*$", re.M)
MAIN_GUARD = re.compile(r"^if __name__ == ['\"]__main__['\"]:", re.M)


# --------------------------------------------------------------------------- measuring


@dataclass
class Sample:
    wall: float
    cpu: float
    log: str = ""
    marks: tuple[tuple[float, str], ...] = ()  # (seconds from the start, a `nox > ` line), with timed(marks=True)


@dataclass
class Series:
    name: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)


def paired(num: list[float], den: list[float]) -> tuple[float, float, float]:
    """The median of per-repetition ratios ``num[i] / den[i]`` (each repetition runs both sides back
    to back, so the pair shares the machine's speed of that moment), with the smallest and largest."""
    ratios = [a / b for a, b in zip(num, den, strict=True) if b > 0]
    if not ratios:
        return float("nan"), float("nan"), float("nan")
    return statistics.median(ratios), min(ratios), max(ratios)


# --------------------------------------------------------------------------- the table of the latest run

# `--doc FILE` writes the table of this run between these two lines of FILE (and nothing else):
# the figures on docs/dev/performance.md are the bench's own, never typed.
DOC_BEGIN = "<!-- bench:table (written by `nox -s bench -- --doc FILE`; do not edit by hand) -->"
DOC_END = "<!-- /bench:table -->"


def doc_table(rows, spread: dict[str, str], context: str, notes: list[str]) -> str:
    """The Markdown of one run: ``context``, then one table row per ratio (``rows`` as the bench
    prints them: number, what, wall ratio, CPU ratio or NaN, target or None), then ``notes``."""
    out = [context, "", "| # | ratio | target | wall | CPU | spread (wall) | result |", "|---|---|---|---|---|---|---|"]
    for num, label, wall, cpu, target in rows:
        cpu_text = "—" if cpu != cpu else f"{cpu:.2f}"
        if target is None:
            tgt, verdict = "—", "report"
        else:
            tgt, verdict = f"≤ {target:.2f}", "pass" if wall <= target else "**fail**"
        out.append(f"| {num} | {label} | {tgt} | {wall:.2f} | {cpu_text} | {spread.get(label, '—')} | {verdict} |")
    if notes:
        out += ["", *(f"- {n.strip()}" for n in notes)]
    return "\n".join(out)


def write_doc(path: Path, block: str) -> None:
    """Put ``block`` between :data:`DOC_BEGIN` and :data:`DOC_END` in ``path``; the rest stays."""
    text = path.read_text(encoding="utf-8")
    a, b = text.find(DOC_BEGIN), text.find(DOC_END)
    if a < 0 or b < a:
        raise SystemExit(f"{path}: no `{DOC_BEGIN}` … `{DOC_END}` lines — put the two lines where the table goes")
    from lessonkit.util.fs import atomic_write

    new = text[: a + len(DOC_BEGIN)] + "\n" + block + "\n" + text[b:]
    atomic_write(path, new.encode("utf-8"), durable=True)  # a file under version control


def _walls_of(samples: list[Sample]) -> list[float]:
    return [x.wall for x in samples]


def _cpus_of(samples: list[Sample]) -> list[float]:
    return [x.cpu for x in samples]


def _walls(s: "Series") -> list[float]:
    return [x.wall for x in s.samples]


def _cpus(s: "Series") -> list[float]:
    return [x.cpu for x in s.samples]


def timed(cmd: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,), marks: bool = False) -> Sample:
    """Run ``cmd`` to completion; wall from perf_counter, CPU from RUSAGE_CHILDREN deltas. With
    ``marks``, its output (stdout and stderr as one stream) is read as it comes and the time of each
    line nox writes (``nox > …``) is kept: where a nox run spends its time (:func:`nox_phases`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    seen: list[tuple[float, str]] = []
    if marks:
        with subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as running:
            assert running.stdout is not None
            lines = []
            for line in running.stdout:
                lines.append(line)
                if line.startswith("nox > "):
                    seen.append((time.perf_counter() - t0, line[len("nox > ") :].rstrip("\n")))
        returncode, log = running.returncode, "".join(lines)
    else:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        returncode, log = proc.returncode, proc.stdout + proc.stderr
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if returncode not in ok:
        tail = "\n".join(log.strip().splitlines()[-25:])
        raise SystemExit(f"bench: command failed ({returncode}) in {cwd}:\n  {' '.join(cmd)}\n{tail}")
    return Sample(wall, cpu, log, tuple(seen))


# The steps of the README build command on a fresh clone, each from the first `nox > ` line that
# starts it (in order) to the next step's: (name, what the line holds).
NOX_STEPS = (
    ("the environment and the experiments' own dependencies", "Running session build"),
    ("the rest of the lock and the project (the prefill runs the experiments meanwhile)", "-r requirements.txt"),
    ("jieba's bytecode", "import warnings"),
    ("`mkdocs build --strict`", "mkdocs build"),
    ("`lessonkit verify --mutate --site`", "Running session verify"),
)


def nox_phases(sample: Sample) -> list[tuple[str, float]] | None:
    """Seconds per step of a README command run with ``timed(marks=True)``: first what ran before nox
    did (``pip install`` of nox and uv), then :data:`NOX_STEPS`; None when a step's line is missing."""
    starts, at = [], 0
    for _, needle in NOX_STEPS:
        found = next((i for i in range(at, len(sample.marks)) if needle in sample.marks[i][1]), None)
        if found is None:
            return None
        starts.append(sample.marks[found][0])
        at = found + 1
    bounds = [0.0, *starts, sample.wall]
    names = ["`pip install` of nox and uv", *(name for name, _ in NOX_STEPS)]
    return [(name, bounds[n + 1] - bounds[n]) for n, name in enumerate(names)]


def phases_note(samples: list[Sample]) -> str | None:
    """One line: the median seconds of each step over the README command's runs (see :func:`nox_phases`)."""
    runs = [p for p in (nox_phases(s) for s in samples) if p is not None]
    if not runs:
        return None
    steps = ", ".join(
        f"{name} {statistics.median(run[n][1] for run in runs):.1f} s" for n, (name, _) in enumerate(runs[0])
    )
    return f"where the README command's time goes (ratio 8, median of {len(runs)} run(s)): {steps}"


def floor_note(
    readme: list[Sample], pip: list[Sample], cores: int, what: str = "ratio 8", side: str = "the pip side"
) -> str | None:
    """One line: the least a README-command ratio could be with the same work on this machine. However
    well the README command spreads its work over the cores, it takes at least its CPU time divided by
    the cores; divided by the other side's wall time of the same pair, that is the pair's floor (median
    of the pairs). A floor above the target means the target needs less CPU work, not a better
    schedule. None without a pair (``--fresh-reps 0``, or no wall on the other side)."""
    floors = [r.cpu / cores / p.wall for r, p in zip(readme, pip, strict=True) if p.wall > 0]
    if not floors:
        return None
    cpu = statistics.median(r.cpu for r in readme)
    pip_cpu, pip_wall = statistics.median(p.cpu for p in pip), statistics.median(p.wall for p in pip)
    return (
        f"{what}'s floor (the README command's CPU / {cores} cores / {side}'s wall, median of "
        f"{len(floors)} pair(s)): {statistics.median(floors):.2f}; the README command used {cpu:.1f} s of CPU, "
        f"{side} {pip_cpu:.1f} s of CPU in {pip_wall:.1f} s"
    )


PLAIN_SIDE = "the pip side with the plain build"
RATIO_8 = "README build command, fresh clone / (pip install of the lock + plain build)"
PIP_ONLY = "supporting: README build command, fresh clone / pip install of the lock"


def plus(a: list[Sample], b: list[Sample]) -> list[Sample]:
    """Pair by pair, two steps run one after the other as one side: their walls and CPUs added."""
    return [Sample(x.wall + y.wall, x.cpu + y.cpu) for x, y in zip(a, b, strict=True)]


def fresh_notes(readme: list[Sample], pip: list[Sample], plain: list[Sample], cores: int) -> list[str]:
    """The notes under ratio 8: where the README command's time goes, the floor of ratio 8 (against the
    pip install and the plain build), and the floor of the pip-only line reported beside it."""
    notes = [phases_note(readme), floor_note(readme, plus(pip, plain), cores, "ratio 8", PLAIN_SIDE)]
    notes.append(floor_note(readme, pip, cores, "the pip-only line", "the pip side"))
    return [n for n in notes if n]


def mkdocs_build(root: Path, *extra: str) -> list[str]:
    # --no-strict everywhere: the variants differ only in what they build. Strictness adds no
    # work, the plain variant cannot satisfy it (links to lessonkit's block ids), and a page
    # someone is editing should not stop a benchmark. lessonkit's own errors still abort.
    return [sys.executable, "-m", "mkdocs", "build", "--no-strict", "-f", str(root / "mkdocs.yml"), *extra]


# --------------------------------------------------------------------------- variants


def copy_project(dest: Path, src: Path = ROOT) -> Path:
    """A copy of ``src``. Of the checkout itself (a git work tree): the files a clone would hold
    plus the working tree's changes and new files git does not ignore (no caches, site/, .nox or
    build/); of a snapshot: every file."""
    if src != ROOT or not (src / ".git").exists():
        shutil.copytree(src, dest, symlinks=True)
        return dest
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=src,
        capture_output=True,
        check=True,
    ).stdout
    for rel in sorted({p for p in listed.decode().split("\0") if p}):
        source, target = src / rel, dest / rel
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return dest


def _drop_item(lines: list[str], pattern: str) -> list[str]:
    """Remove YAML list items matching ``pattern`` together with their nested option lines."""
    out, skip_deeper = [], None
    item = re.compile(r"^(\s*)-\s*" + pattern + r"\s*:?\s*$")
    for line in lines:
        if skip_deeper is not None:
            if line.strip() and len(line) - len(line.lstrip()) > skip_deeper:
                continue
            skip_deeper = None
        m = item.match(line)
        if m:
            skip_deeper = len(m[1])
            continue
        out.append(line)
    return out


def _add_extension(lines: list[str], block: str) -> list[str]:
    """Append ``block`` (YAML list item lines) at the end of ``markdown_extensions``."""
    idx = next(i for i, l in enumerate(lines) if l.startswith("markdown_extensions:"))
    end = idx + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith((" ", "-"))):
        end += 1
    while lines[end - 1].strip() == "":
        end -= 1
    return lines[:end] + block.split("\n") + lines[end:]


def plain_config(text: str) -> str:
    """mkdocs.yml without the project's hooks and Markdown extensions.

    Math goes the way a plain Material site does it: ``pymdownx.arithmatex`` (generic),
    leaving the formulas to a script in the browser, instead of lessonkit.pipeline.mathml's
    build-time MathML."""
    lines = _drop_item(text.split("\n"), r"(\./)?hooks/lessonkit_hooks\.py")
    lines = _drop_item(lines, r"lessonkit\.(pipeline\.markdown|mdext)")
    had_math = any(re.match(r"^\s*-\s*lessonkit\.(pipeline\.)?mathml\s*:?\s*$", l) for l in lines)
    lines = _drop_item(lines, r"lessonkit\.(pipeline\.)?mathml")
    out = []
    for i, line in enumerate(lines):  # a `hooks:` key left without items goes too
        if line.rstrip() == "hooks:":
            nxt = next((l for l in lines[i + 1 :] if l.strip()), "")
            if not re.match(r"^\s+-", nxt):
                continue
        out.append(line)
    if had_math:
        out = _add_extension(out, "  - pymdownx.arithmatex:\n      generic: true")
    result = "\n".join(out)
    if re.search(r"lessonkit_hooks|^\s*-\s*lessonkit\.", result, re.M):
        raise SystemExit("bench: could not remove the lessonkit hooks/extensions from mkdocs.yml")
    return result


def mdexec_config(text: str) -> str:
    """The plain config with markdown-exec's custom fence on pymdownx.superfences."""
    fence = (
        "  - pymdownx.superfences:\n"
        "      custom_fences:\n"
        "        - name: python\n"
        "          class: python\n"
        "          validator: !!python/name:markdown_exec.validator\n"
        "          format: !!python/name:markdown_exec.formatter"
    )
    lines = _drop_item(plain_config(text).split("\n"), r"pymdownx\.superfences")
    return "\n".join(_add_extension(lines, fence))


def _fence_for(text: str, indent_fence: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    return "`" * max(len(indent_fence), longest + 1, 3)


def rewrite_pages(root: Path, convert) -> int:
    """Replace every annotation block of every page with ``convert(block, raw_lines)``."""
    from lessonkit.kinds import KINDS
    from lessonkit.pipeline.blocks import Block
    from lessonkit.pipeline.parse import parse_page

    count = 0
    for path in sorted((root / "docs").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        page = parse_page(text, path.relative_to(root).as_posix(), kinds=KINDS)
        if not page.items:
            continue
        lines = text.split("\n")
        for item in reversed(page.items):
            if not isinstance(item, Block):
                raise SystemExit(f"bench: {item.error}")
            lines[item.start : item.end + 1] = convert(item, lines[item.start : item.end + 1])
            count += 1
        path.write_text("\n".join(lines), encoding="utf-8")
    return count


def plain_fence(block, raw: list[str]) -> list[str]:
    """```python with the header lines as comments, then the body as written."""
    indent = block.indent
    fence = re.match(r"^\s*(`{3,}|~{3,})", raw[0])[1]
    out = [f"{indent}{fence}python", f"{indent}# {block.kind}"]
    k = 1
    while k < len(raw) - 1 and raw[k].strip():
        out.append(f"{indent}# {raw[k][len(indent) :] if raw[k].startswith(indent) else raw[k].strip()}")
        k += 1
    out += raw[k:-1]
    out.append(raw[-1])
    return out


def make_plain(root: Path, generated: dict[str, str] | None = None) -> int:
    cfg = root / "mkdocs.yml"
    cfg.write_text(plain_config(cfg.read_text(encoding="utf-8")), encoding="utf-8")
    n = rewrite_pages(root, plain_fence)
    write_generated(root, generated)
    return n


def write_generated(root: Path, generated: dict[str, str] | None) -> None:
    for uri, text in (generated or {}).items():
        path = root / "docs" / uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def plain_generated(lk_root: Path, cache: Path) -> dict[str, str]:
    """The pages the real build adds (source browser, script pages, symbol index,
    generated attachments) as ordinary Markdown files: the page text as the build
    generates it, with each slot as plain Markdown (the whole file as a fenced code
    block with line numbers, the tables as Markdown tables). Needs a warm cache."""
    from lessonkit.checks import living, verify
    from lessonkit.project import Project
    from lessonkit.site import citations as site
    from lessonkit.site import pages

    project = Project(lk_root, cache=cache)
    paths = project.pages()
    texts = {project.rel(p): project.read_page(p) for p in paths}
    report = verify.check(project, paths)
    if report.problems:
        raise SystemExit(f"bench: the project has annotation problems: {report.problems[0]}")
    cites = site.citations(report, "docs/", texts)
    results = {}
    for job in [r.job for rs in report.resolved.values() for r in rs if r.job] + living.attachment_jobs(project):
        result = project.runner.cached(job)
        if result is None:
            raise SystemExit(f"bench: no cached output for {job.label}; the warm cache is incomplete")
        results[project.runner.key(job)] = result
    out = {}
    for g in pages.browser_pages(project, cites) + pages.attachment_pages(project, report, results)[0]:
        out[g.uri] = _plain_slots(project, g, cites) if g.code else g.content
    return out


def _plain_slots(project, g, cites) -> str:
    from lessonkit.site import pages

    origin, file = g.code
    sf = pages.code_file(project, origin, file)
    own = sorted((c for c in cites if c.origin == origin and c.file == file), key=lambda c: (c.start, c.page))
    up = "../" * g.uri.count("/")
    cited = (
        "本文件没有被任何课程引用；仍可完整浏览。"
        if not own
        else (
            "| 行 | 符号 | 引用它的块 |\n|---|---|---|\n"
            + "\n".join(
                f"| [L{c.start}–L{c.end}](#L{c.start}) | {f'`{c.symbol}`' if c.symbol else '（片段）'} | "
                f"[{c.label} · {c.anchor}]({up}{c.page}#{c.anchor}) |"
                for c in own
            )
        )
    )
    defs = [d for d in sf.definitions if d.kind != "call"] if file.endswith(".py") else []
    symbols = "| 符号 | 类型 | 行 |\n|---|---|---|\n" + "\n".join(
        f"| `{d.name}` | {d.kind} | [L{d.start}–L{d.end}](#L{d.start}) |" for d in defs
    )
    fence = _fence_for(sf.text, "```")
    code = f'{fence}python linenums="1"\n{sf.text.rstrip(chr(10))}\n{fence}'
    return (
        g.content.replace(pages.CITED_MARK, cited).replace(pages.SYMBOLS_MARK, symbols).replace(pages.CODE_MARK, code)
    )


def make_plain_full(root: Path, cache: Path, generated: dict[str, str] | None = None) -> int:
    """Plain fences that hold what lessonkit shows: the excerpt, and the cached output."""
    from lessonkit.project import Project

    project = Project(root, cache=cache)
    cfg = root / "mkdocs.yml"
    cfg.write_text(plain_config(cfg.read_text(encoding="utf-8")), encoding="utf-8")

    def convert(block, raw):
        r = project.resolve(block)
        head = plain_fence(block, raw)
        n_head = 2 + len(block.fields)
        if r.excerpt is not None:
            shown = list(r.excerpt.lines)
        elif block.body is not None:
            shown = list(block.body)
        else:
            shown = []
        fence = _fence_for("\n".join(shown), "```")
        ind = block.indent
        out = [f"{ind}{fence}python", *head[1:n_head], *[ind + l if l else "" for l in shown], f"{ind}{fence}"]
        if block.kind == "experiment":
            result = project.runner.cached(r.job)
            if result is None:
                raise SystemExit(f"bench: no cached output for {r.job.label}; the warm cache is incomplete")
            body = result.stdout.rstrip("\n").split("\n")
            f2 = _fence_for(result.stdout, "```")
            out += ["", f"{ind}{f2}text", *[ind + l if l else "" for l in body], f"{ind}{f2}"]
        return out

    n = rewrite_pages(root, convert)
    write_generated(root, generated)
    return n


def make_mdexec(root: Path, generated: dict[str, str] | None = None) -> int:
    """The plain site plus a markdown-exec fence per experiment that runs its script."""
    cfg = root / "mkdocs.yml"
    cfg.write_text(mdexec_config(cfg.read_text(encoding="utf-8")), encoding="utf-8")
    runs = 0

    def convert(block, raw):
        nonlocal runs
        out = plain_fence(block, raw)
        if block.kind != "experiment":
            return out
        if block.get("File"):
            script_path = root / block.get("File")
            script = script_path.read_text(encoding="utf-8")
            # markdown-exec runs code under a made-up module name and no __file__:
            # give the script the names it expects so the same code runs.
            script = f"__file__ = {str(script_path)!r}\n" + script
        else:
            script = "\n".join(block.body) + "\n"
        script = MAIN_GUARD.sub("if True:  # was: if __name__ == '__main__':", script)
        fence = _fence_for(script, "```")
        ind = block.indent
        runs += 1
        return out + [
            "",
            f'{ind}{fence}python exec="true" result="text"',
            *[ind + l if l else "" for l in script.rstrip("\n").split("\n")],
            f"{ind}{fence}",
        ]

    rewrite_pages(root, convert)
    write_generated(root, generated)
    return runs


def make_scaled(root: Path, factor: int) -> int:
    """``factor`` times the lesson pages: copies of docs/lessons/ next to it, out of the nav."""
    lessons = sorted((root / "docs" / "lessons").glob("*.md"))
    for k in range(2, factor + 1):
        d = root / "docs" / f"lessons-x{k:02d}"
        d.mkdir()
        for p in lessons:
            shutil.copy2(p, d / p.name)
    cfg = root / "mkdocs.yml"
    text = cfg.read_text(encoding="utf-8")
    m = re.search(r"^not_in_nav:[ \t]*(.*)$", text, re.M)
    if m is None:
        text = text.rstrip("\n") + "\n\nnot_in_nav: |\n  /lessons-x*/\n"
    elif m[1].strip() in ("|", "|-", "|+"):
        text = text[: m.end()] + "\n  /lessons-x*/" + text[m.end() :]
    else:
        raise SystemExit(f"bench: cannot extend `not_in_nav: {m[1]}` in mkdocs.yml (expected a `|` block)")
    cfg.write_text(text, encoding="utf-8")
    return len(lessons) * factor


# --------------------------------------------------------------------------- serve driver


def _serve_driver(args) -> int:
    """What `mkdocs serve` does on a change: reload the config and rebuild in-process.

    One initial build (not timed), then ``--n`` rounds of: edit the page's prose, reload
    the config, build. Prints the rebuild times as JSON on the last line.
    """
    from urllib.parse import urlsplit

    # like `python -m mkdocs` run in the copy: its own lessonkit/ comes first on sys.path
    sys.path.insert(0, str(Path(args.config).resolve().parent))
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.livereload import _serve_url

    logging_quiet()
    site_dir = tempfile.mkdtemp(prefix="bench-serve-")
    page = Path(args.page)
    original = page.read_text(encoding="utf-8")

    def get_config():
        return load_config(config_file=args.config, site_dir=site_dir, strict=False)  # as mkdocs_build

    config = get_config()
    config.plugins.on_startup(command="serve", dirty=False)
    host, port = config.dev_addr
    serve_url = _serve_url(host, port, urlsplit(config.site_url or "/").path)
    config.site_url = serve_url
    build(config, serve_url=serve_url, dirty=False)
    walls, cpus = [], []
    profiler = None
    try:
        for i in range(args.n):
            page.write_text(
                original.rstrip("\n") + f"\n\n编辑第 {i + 1} 次：这一段只为基准测试而加。\n", encoding="utf-8"
            )
            if args.profile and i == args.n - 1:
                from pyinstrument import Profiler

                profiler = Profiler(interval=0.001)
                profiler.start()
            t0, c0 = time.perf_counter(), time.process_time()
            config = get_config()  # serve's builder(): a fresh config for every change
            config.site_url = serve_url
            build(config, serve_url=serve_url, dirty=False)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            if profiler:
                profiler.stop()
                Path(args.profile).write_text(
                    profiler.output_text(unicode=True, color=False, show_all=False), encoding="utf-8"
                )
    finally:
        page.write_text(original, encoding="utf-8")
        config.plugins.on_shutdown()
        shutil.rmtree(site_dir, ignore_errors=True)
    print(json.dumps({"wall": walls, "cpu": cpus}))
    return 0


# --------------------------------------------------------------------------- phase accounting

PAGE_EVENTS = {"pre_page", "page_read_source", "page_markdown", "page_content", "page_context", "post_page"}


def _page_group(uri: str) -> str:
    for prefix in ("lessons/", "source/", "code/"):
        if uri.startswith(prefix):
            return prefix
    return "lessons-x*/" if uri.startswith("lessons-x") else "other pages"


def _phases_driver(args) -> int:
    """CPU seconds of one build by phase and page group (prints JSON on the last line).

    Cheaper and coarser than a profiler: it wraps MkDocs' per-page steps and the plugin
    events, so generated pages, lesson pages and lessonkit's global hooks separate."""
    from collections import defaultdict

    sys.path.insert(0, str(Path(args.config).resolve().parent))
    from mkdocs import plugins
    from mkdocs.commands import build as mk
    from mkdocs.config import load_config

    logging_quiet()
    acc: dict[str, float] = defaultdict(float)

    def wrap(fn, label):
        def inner(page, *a, **k):
            c0 = time.process_time()
            try:
                return fn(page, *a, **k)
            finally:
                acc[f"{label} · {_page_group(page.file.src_uri)}"] += time.process_time() - c0

        return inner

    mk._populate_page = wrap(mk._populate_page, "Markdown → HTML (incl. page hooks)")
    mk._build_page = wrap(mk._build_page, "template, search index, write")
    run_event = plugins.PluginCollection.run_event

    def timed_event(self, name, item=None, **kwargs):
        if name in PAGE_EVENTS and name != "page_context":
            return run_event(self, name, item, **kwargs)
        c0 = time.process_time()
        try:
            return run_event(self, name, item, **kwargs)
        finally:
            page = kwargs.get("page")
            key = (
                f"  of which on_page_context (search index) · {_page_group(page.file.src_uri)}"
                if page
                else f"on_{name} (all plugins and hooks)"
            )
            acc[key] += time.process_time() - c0

    plugins.PluginCollection.run_event = timed_event
    c0 = time.process_time()
    config = load_config(config_file=args.config, strict=False)
    acc["load_config"] += time.process_time() - c0
    config.plugins.on_startup(command="build", dirty=False)
    mk.build(config)
    acc["TOTAL (after imports)"] = time.process_time() - c0
    print(json.dumps(acc))
    return 0


def phases(root: Path, env: dict[str, str]) -> dict[str, float]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "_phases", "--config", str(root / "mkdocs.yml")]
    s = timed(cmd, root, env)
    return json.loads([l for l in s.log.splitlines() if l.startswith("{")][-1])


def phase_table(columns: dict[str, dict[str, float]]) -> str:
    keys = sorted({k for c in columns.values() for k in c}, key=lambda k: -max(c.get(k, 0.0) for c in columns.values()))
    names = list(columns)
    out = [f"{'CPU seconds, one build each':<62}" + "".join(f"{n:>10}" for n in names)]
    for k in keys:
        vals = [columns[n].get(k, 0.0) for n in names]
        if max(vals) >= 0.05:
            out.append(f"{k:<62}" + "".join(f"{x:10.2f}" for x in vals))
    return "\n".join(out)


def logging_quiet() -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")


def serve_series(name: str, root: Path, env: dict[str, str], n: int, profile: Path | None = None) -> Series:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "_serve",
        "--config",
        str(root / "mkdocs.yml"),
        "--page",
        str(root / EDIT_PAGE),
        "--n",
        str(n),
    ]
    if profile:
        cmd += ["--profile", str(profile)]
    s = timed(cmd, root, env)
    try:
        data = json.loads([l for l in s.log.splitlines() if l.startswith("{\"wall\"")][-1])
    except (IndexError, json.JSONDecodeError):
        raise SystemExit(f"bench: serve driver printed no timings:\n{s.log[-3000:]}") from None
    return Series(name, [Sample(w, c) for w, c in zip(data["wall"], data["cpu"], strict=True)])


# --------------------------------------------------------------------------- ratio 7: live serve

SERVE_MARK = "实时预览基准编辑第 {i} 次"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _fetch(url: str) -> str | None:
    from urllib.error import URLError
    from urllib.request import urlopen

    try:
        with urlopen(url, timeout=5) as resp:
            return resp.read().decode("utf-8", "replace")
    except (URLError, OSError):
        return None


def live_serve_series(root: Path, env: dict[str, str], n: int, timeout: float = 300.0) -> Series:
    """``python -m lessonkit serve`` as a subprocess: wall time from an edit's write until the served page has it.

    The server hands out the files of its build directory, so the page fetched over HTTP is the
    rebuilt page on disk. CPU is not measured (the server keeps running); it is reported as 0.
    """
    port = _free_port()
    page = root / EDIT_PAGE
    url = f"http://127.0.0.1:{port}/" + EDIT_PAGE.removeprefix("docs/").removesuffix(".md") + "/"
    original = page.read_text(encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lessonkit", "serve", "-a", f"127.0.0.1:{port}", "-f", str(root / "mkdocs.yml")],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    samples = []
    try:
        deadline = time.perf_counter() + timeout
        while _fetch(url) is None:
            if proc.poll() is not None or time.perf_counter() > deadline:
                raise SystemExit(f"bench: lessonkit serve did not come up on {url}")
            time.sleep(0.2)
        time.sleep(1.0)  # let the watcher settle after the first build
        for i in range(1, n + 1):
            mark = SERVE_MARK.format(i=i)
            t0 = time.perf_counter()
            page.write_text(original.rstrip("\n") + f"\n\n{mark}：这一段只为基准测试而加。\n", encoding="utf-8")
            while True:
                body = _fetch(url)
                if body is not None and mark in body:
                    break
                if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                    raise SystemExit(f"bench: lessonkit serve never served edit {i} of {EDIT_PAGE}")
                time.sleep(0.02)
            samples.append(Sample(time.perf_counter() - t0, 0.0))
            time.sleep(0.5)
    finally:
        page.write_text(original, encoding="utf-8")
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
    return Series("serve-live", samples)


# --------------------------------------------------------------------------- ratio 8: fresh clone


def readme_build_command(readme: Path) -> str:
    """The README's first command, verbatim (the line that runs `nox -s build verify`)."""
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.startswith("python3 -m pip install") and line.rstrip().endswith("nox -s build verify"):
            return line.strip()
    raise SystemExit(f"bench: no `python3 -m pip install … && nox -s build verify` line in {readme}")


def fresh_pair(snap: Path, work: Path, env: dict[str, str], tag: str, plain: Path) -> tuple[Sample, Sample, Sample]:
    """One side-by-side pair for ratio 8: (pip install of the lock, a plain build of the same pages with
    that install, README build command on a fresh copy). ``plain`` is the plain variant, copied here."""
    base = work / f"fresh-{tag}"
    base.mkdir()
    # PYTHONPYCACHEPREFIX: the bench's own environment's bytecode folder (noxfile.py), not a new machine's
    # PYTHONDONTWRITEBYTECODE: a setting of the machine the bench runs on, not of a new machine
    dropped = ("AUTOGRAD_SOURCE", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")
    clean = {k: v for k, v in env.items() if k not in dropped}
    (base / "tmp").mkdir()
    clean["TMPDIR"] = str(base / "tmp")  # a machine of its own: nobody else's /tmp cleanup, no jieba cache
    # pip alone: a new venv and the lock, with an empty pip cache
    pip_env = {**clean, "PIP_CACHE_DIR": str(base / "pip-cache-a")}
    pip_side = timed(
        [
            "sh",
            "-c",
            f'"{sys.executable}" -m venv venv && venv/bin/python -m pip install --quiet '
            f'-r "{snap / "requirements.txt"}"',
        ],
        base,
        pip_env,
    )
    # the plain site of the same pages, built with what pip just installed (a copy of its own: no site/)
    plain_copy = copy_project(base / "plain", plain)
    shutil.rmtree(plain_copy / "site", ignore_errors=True)
    plain_cmd = mkdocs_build(plain_copy)
    plain_side = timed([str(base / "venv" / "bin" / "python"), *plain_cmd[1:]], plain_copy, pip_env)
    # the README command on a fresh copy; a new venv stands in for the machine's python3 (untimed)
    clone = copy_project(base / "clone", snap)
    machine = base / "machine"
    subprocess.run([sys.executable, "-m", "venv", str(machine)], check=True)
    bin_dir = machine / "bin"
    path = os.pathsep.join(
        [str(bin_dir)]
        + [p for p in clean.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(ROOT / ".nox"))]
    )
    fresh_env = {
        **clean,
        "PATH": path,
        "PIP_CACHE_DIR": str(base / "pip-cache-b"),
        "UV_CACHE_DIR": str(base / "uv-cache-b"),
    }
    readme_side = timed(["bash", "-c", readme_build_command(clone / "README.md")], clone, fresh_env, marks=True)
    shutil.rmtree(base, ignore_errors=True)
    return pip_side, plain_side, readme_side


# --------------------------------------------------------------------------- main


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in (
        "mkdocs",
        "mkdocs-material",
        "markdown",
        "pymdown-extensions",
        "numpy",
        "markdown-exec",
        "pyinstrument",
    ):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def experiment_cpu_serial(root: Path, cache: Path) -> tuple[int, float]:
    """Total CPU of the site's experiments, each run once, one at a time, with no cache.

    Run serially so that the RUSAGE_CHILDREN delta is exactly the experiments' CPU (the
    per-entry ``cpu_seconds`` that the build records are process-wide deltas taken while
    other experiments finish in parallel, so their sum over-counts)."""
    from lessonkit.checks import verify
    from lessonkit.project import Project

    project = Project(root, cache=cache)
    report = verify.check(project)
    jobs = {project.runner.key(r.job): r.job for rs in report.resolved.values() for r in rs if r.job}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for job in jobs.values():
        result = project.runner.run(job)
        if not result.ok:
            raise SystemExit(f"bench: experiment {job.label} failed: {result.stderr[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return len(jobs), (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def experiment_cpu_serial_fresh(root: Path, cache: Path) -> tuple[int, float]:
    """:func:`experiment_cpu_serial` into a new, then removed, cache folder: measured once per
    repetition, right after the cold build, so the reference of ratio 2 drifts with the
    machine as the builds do (its median is used)."""
    shutil.rmtree(cache, ignore_errors=True)
    try:
        return experiment_cpu_serial(root, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def experiment_cpu_from_cache(cache: Path) -> tuple[int, float]:
    entries = [json.loads(p.read_text(encoding="utf-8")) for p in (cache / "experiments").glob("*.json")]
    return len(entries), sum(e["cpu_seconds"] for e in entries)


def base_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("LESSONKIT_CACHE", "AUTOGRAD_SOURCE", "LESSONKIT_GIT_REMOTE", "LESSONKIT_SDIST"):
        env.pop(name, None)
    env.update({"NO_MKDOCS_2_WARNING": "1", "PYTHONHASHSEED": "0", "SOURCE_DATE_EPOCH": "1764460800"})
    return env


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/bench.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions per variant (medians are compared)")
    ap.add_argument("--scale-reps", type=int, default=None, help="repetitions of the 10x build (default: --reps)")
    ap.add_argument(
        "--profile",
        metavar="DIR",
        type=Path,
        help="after measuring, profile (pyinstrument) the lessonkit side of every ratio that "
        "misses its target and write the text reports into DIR",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temporary project copies")
    ap.add_argument("--json", metavar="FILE", type=Path, help="also write all medians and ratios as JSON")
    ap.add_argument(
        "--doc",
        metavar="FILE",
        type=Path,
        help="write this run's table into FILE between its bench:table lines (docs/dev/performance.md); "
        "a full run only",
    )
    ap.add_argument(
        "--fresh-reps", type=int, default=1, help="repetitions of ratio 8 (a fresh install and build each; 0 skips it)"
    )
    ap.add_argument(
        "--only",
        type=_only,
        help="measure only some of ratios 2 (cold build), 3 (verify), 7 (serve edit) and 8 (fresh clone), "
        "comma-separated, e.g. `2` or `7,8`",
    )
    ap.add_argument(
        "--site",
        metavar="DIR",
        type=Path,
        help="with `--only paint` and/or `--only exercise`: measure this built site (say, site/ after "
        "`nox -s build`) instead of building a copy of the project first",
    )
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("_serve", help=argparse.SUPPRESS)
    d.add_argument("--config", required=True)
    d.add_argument("--page", required=True)
    d.add_argument("--n", type=int, default=5)
    d.add_argument("--profile")
    f = sub.add_parser("_phases", help=argparse.SUPPRESS)
    f.add_argument("--config", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "_serve":
        return _serve_driver(args)
    if args.cmd == "_phases":
        return _phases_driver(args)

    if args.site is not None:
        if not args.only or not args.only <= {"paint", "exercise"}:
            ap.error("--site measures the paint and exercise reports only: add `--only paint` (or `exercise`)")
        if not (args.site / "index.html").is_file():
            ap.error(f"--site {args.site}: no index.html there; build the site first (nox -s build)")
        lines = paint_lines(first_paint(args.site)) if "paint" in args.only else []
        lines += exercise_lines(exercise_runtime(args.site)) if "exercise" in args.only else []
        print(f"bench: the built site {args.site}, load average {_load()}")
        print("\n".join(lines))
        return 0

    os.environ["NO_MKDOCS_2_WARNING"] = "1"
    reps = max(1, args.reps)
    scale_reps = max(1, args.scale_reps or reps)
    v = versions()
    has_mdexec = v["markdown-exec"] != "not installed"
    cores = os.cpu_count() or 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores

    from lessonkit.project import Project

    real = Project(ROOT)
    pinned = real.tree.root  # provided once (cache or download) before anything is timed
    work = Path(tempfile.mkdtemp(prefix="lessonkit-bench-"))
    print(
        f"bench: cores {cores} (usable {usable}); Python {v['python']}; MkDocs {v['mkdocs']}; "
        f"Material {v['mkdocs-material']}; Markdown {v['markdown']}; pymdown-extensions "
        f"{v['pymdown-extensions']}; NumPy {v['numpy']}; markdown-exec {v['markdown-exec']}; "
        f"pyinstrument {v['pyinstrument']}",
        flush=True,
    )
    print(f"bench: pinned tree {pinned}; work dir {work}; {reps} repetition(s)", flush=True)
    try:
        return _run(args, reps, scale_reps, cores, usable, pinned, real.pin.version, work, has_mdexec, v)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def verify_pair(lk: Path, lk_env) -> tuple[Sample, Sample, str, str]:
    """``lessonkit verify`` of the inputs (ratio 3: the built site is moved aside for that run, since
    a plain ``verify`` also checks a site/ its build recorded), then ``verify --site site``; each
    sample with its summary line. A run that found problems still counts (a stale excerpt map in a
    working tree mid-edit, say); one that did not finish stops the bench."""
    (lk / "site").rename(lk / "site.aside")
    try:
        inputs = timed([sys.executable, "-m", "lessonkit", "verify"], lk, lk_env, ok=(0, 1))
    finally:
        (lk / "site.aside").rename(lk / "site")
    whole = timed([sys.executable, "-m", "lessonkit", "verify", "--site", "site"], lk, lk_env, ok=(0, 1))
    summary, site = VERIFY_SUMMARY.search(inputs.log), SITE_SUMMARY.search(whole.log)
    if summary is None or site is None:
        raise SystemExit(f"bench: lessonkit verify did not finish:\n{(inputs.log + whole.log)[-3000:]}")
    return inputs, whole, summary[0], site[0]


def _only(value: str) -> set[str]:
    ratios = {v.strip() for v in value.split(",")}
    if not ratios or not ratios <= {"2", "3", "7", "8", "paint", "exercise"}:
        raise argparse.ArgumentTypeError(
            f"{value!r}: ratios 2, 3, 7 and 8 and the paint and exercise reports can be measured alone, e.g. `2` or "
            "`7,paint`"
        )
    return ratios


# --------------------------------------------------------------------------- first paint

# 1.6 Mbps down, 750 kbps up, 150 ms round trip: Lighthouse's "slow 4G" profile.
SLOW_LINK = {"offline": False, "latency": 150, "downloadThroughput": 1_600_000 / 8, "uploadThroughput": 750_000 / 8}
COMPRESSIBLE = (".html", ".css", ".js", ".json", ".svg", ".xml", ".txt", ".map")
PAINT_JS = """() => new Promise(done => {
  const seen = performance.getEntriesByName("first-contentful-paint")[0];
  if (seen) return done(seen.startTime);
  new PerformanceObserver(list => done(list.getEntries()[0].startTime)).observe({ type: "paint", buffered: true });
})"""
# When Material's search is ready: its result line leaves the text it shows while the index is
# fetched and built (「正在初始化搜索引擎」 on this site); recorded by the page itself, from the start
# of the navigation, so the figure does not depend on how often the test polls.
READY_INIT = """(() => {
  let first = null;
  const look = () => {
    const meta = document.querySelector(".md-search-result__meta");
    if (!meta) return;
    if (first === null) first = meta.textContent;
    else if (meta.textContent !== first && window.__lkSearchReady === undefined) {
      window.__lkSearchReady = performance.now();
      watch.disconnect();
    }
  };
  const watch = new MutationObserver(look);
  watch.observe(document, { subtree: true, childList: true, characterData: true });
})()"""
ALL_WEIGHT_JS = """() => performance.getEntriesByType("resource").reduce((n, r) => n + r.transferSize,
  performance.getEntriesByType("navigation")[0].transferSize)"""
WEIGHT_JS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const resources = performance.getEntriesByType("resource");
  return [nav.loadEventStart, resources.reduce((n, r) => n + r.transferSize, nav.transferSize)];
}"""


def _site_server(site: Path, gzip_level: int | None):
    """A local static server of ``site`` (threads; gzip for text files when ``gzip_level``)."""
    import functools
    import gzip
    import http.server
    import threading

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send_head(self):
            path = Path(self.translate_path(self.path))
            if path.is_dir():
                path = path / "index.html"
            wants = "gzip" in self.headers.get("Accept-Encoding", "")
            if gzip_level is None or not wants or not path.is_file() or path.suffix not in COMPRESSIBLE:
                return super().send_head()
            import io

            body = gzip.compress(path.read_bytes(), compresslevel=gzip_level, mtime=0)
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(path)))
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return io.BytesIO(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def first_paint(site: Path, loads: int = 3) -> dict[str, dict[str, float]] | str:
    """The home page on the slow link, with gzip and without (see ``paint`` in the module
    docstring): medians in milliseconds and KiB. A string says why it was not measured."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "Playwright is not installed (`nox -s bench` installs it)"
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        return "Chromium not found (apt-get install chromium)"
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-quic"]
    out: dict[str, dict[str, float]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=args)
        try:
            for label, level, n in (("gzip", 6, loads), ("uncompressed", None, 1)):
                httpd = _site_server(site, level)
                url = f"http://127.0.0.1:{httpd.server_address[1]}/"
                rows = []
                try:
                    for _ in range(n):
                        context = browser.new_context(viewport={"width": 1280, "height": 900})
                        context.add_init_script(READY_INIT)
                        page = context.new_page()
                        cdp = context.new_cdp_session(page)
                        cdp.send("Network.enable")
                        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
                        cdp.send("Network.emulateNetworkConditions", SLOW_LINK)
                        t0 = time.perf_counter()
                        with page.expect_response(lambda r: r.url.endswith("search/search_index.json")) as index:
                            page.goto(url, wait_until="load")
                        index.value.finished()
                        ready = (time.perf_counter() - t0) * 1000
                        fcp = page.evaluate(PAINT_JS)
                        load, weight = page.evaluate(WEIGHT_JS)
                        page.wait_for_function("() => window.__lkSearchReady !== undefined", timeout=120_000)
                        search = page.evaluate("() => window.__lkSearchReady")
                        page.wait_for_load_state("networkidle")  # the visit's last request (a font, say) is in
                        visit = page.evaluate(ALL_WEIGHT_JS)
                        rows.append((fcp, load, weight / 1024, ready, search, visit / 1000))
                        context.close()
                finally:
                    httpd.shutdown()
                med = [statistics.median(col) for col in zip(*rows, strict=True)]
                out[label] = dict(
                    zip(("fcp_ms", "load_ms", "page_kib", "index_ms", "search_ms", "visit_kb"), med, strict=True)
                )
        finally:
            browser.close()
    return out


def paint_lines(result) -> list[str]:
    if isinstance(result, str):
        return [f"  home page first paint: not measured: {result}"]
    return [
        f"  home page at 1.6 Mbps / 150 ms RTT ({label}): first contentful paint {r['fcp_ms']:.0f} ms, "
        f"load {r['load_ms']:.0f} ms, {r['page_kib']:.0f} KiB transferred (search index included), "
        f"index arrived after {r['index_ms']:.0f} ms, search ready after {r['search_ms']:.0f} ms; "
        f"the whole first visit {r['visit_kb']:.0f} KB"
        for label, r in result.items()
    ]


EXERCISE_PAGE = "lessons/14-mini-autograd/"
EXERCISE_DONE = "el => el.querySelector('.lk-ex-summary') && !el.dataset.lkBusy"


def exercise_runtime(site: Path) -> dict[str, float] | str:
    """The exercise blocks' runtime: its bytes, and Run to outcome on stage 1 (ms), first and second time."""
    runtime = site / "assets" / "pyodide"
    if not (site / EXERCISE_PAGE).is_dir() or not runtime.is_dir():
        return f"the site has no {EXERCISE_PAGE} with an exercise block"
    size = sum(p.stat().st_size for p in runtime.iterdir() if p.is_file())
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "Playwright is not installed (`nox -s bench` installs it)"
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        return "Chromium not found (apt-get install chromium)"
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-quic"]
    httpd = _site_server(site, None)
    times = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=args)
            try:
                page = browser.new_context().new_page()
                page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/{EXERCISE_PAGE}", wait_until="load")
                block = page.locator("#exercise-stage_1")
                block.wait_for(state="attached")
                page.wait_for_function("document.querySelector('#exercise-stage_1').dataset.lkReady")
                for _ in range(2):
                    t0 = time.perf_counter()
                    block.locator('[data-lk-action="run"]').click()
                    page.wait_for_function(EXERCISE_DONE, arg=block.element_handle(), timeout=300000)
                    times.append((time.perf_counter() - t0) * 1000)
            finally:
                browser.close()
    finally:
        httpd.shutdown()
    return {"mib": size / 1048576, "first_ms": times[0], "again_ms": times[1]}


def exercise_lines(result) -> list[str]:
    if isinstance(result, str):
        return [f"  exercise runtime: not measured: {result}"]
    return [
        f"  exercise runtime (assets/pyodide/): {result['mib']:.1f} MiB fetched on the first Run; stage 1's "
        f"checks: {result['first_ms']:.0f} ms from Run to outcome the first time (local server), "
        f"{result['again_ms']:.0f} ms again"
    ]


def _run_only(args, reps, work: Path, pinned: Path, cores: int) -> int:
    """Ratios 2, 7 and/or 8 alone (``--only``): the same measurements as in the full run."""
    load_start = _load()
    env = base_env()
    env["AUTOGRAD_SOURCE"] = os.environ["AUTOGRAD_SOURCE"] = str(pinned)
    snap = copy_project(work / "snapshot")
    rows = []
    if args.only & {"2", "3", "7", "8"}:
        warm_cache = work / "cache-warm"
        lk = copy_project(work / "lessonkit", snap)
        lk_env = {**env, "LESSONKIT_CACHE": str(warm_cache)}
        print("bench: warm-up (fills the caches; not measured) …", flush=True)
        timed(mkdocs_build(lk), lk, lk_env)
        plain = copy_project(work / "plain", snap)
        make_plain(plain, plain_generated(lk, warm_cache))
        timed(mkdocs_build(plain), plain, env)
    if "2" in args.only:  # per repetition: a plain build, a cold build, the experiments one at a time
        P, C, E = Series("plain"), Series("cold"), []
        for rep in range(reps):
            P.samples.append(timed(mkdocs_build(plain), plain, env))
            cold_cache = work / f"cache-cold-{rep}"
            cold_cache.mkdir()
            C.samples.append(timed(mkdocs_build(lk), lk, {**env, "LESSONKIT_CACHE": str(cold_cache)}))
            shutil.rmtree(cold_cache, ignore_errors=True)
            n_jobs, cpu = experiment_cpu_serial_fresh(lk, work / "cache-serial")
            E.append(cpu)
        exp_cpu = statistics.median(E)
        print(
            f"  plain wall {P.wall:.2f} s, cold wall {C.wall:.2f} s (n={reps}; cold samples "
            f"{', '.join(f'{x.wall:.2f}' for x in C.samples)}); experiment CPU ({n_jobs} scripts) {exp_cpu:.2f} s "
            f"(samples {', '.join(f'{x:.2f}' for x in E)})"
        )
        rows.append(
            ("2", f"cold build / (plain + experiment CPU / {cores} cores)", C.wall / (P.wall + exp_cpu / cores), 1.15)
        )
    if "3" in args.only:  # per repetition: a plain build, verify of the inputs, verify --site
        P, V, VS = Series("plain"), Series("verify"), Series("verify-site")
        for _ in range(reps):
            P.samples.append(timed(mkdocs_build(plain), plain, env))
            inputs, whole, summary, site = verify_pair(lk, lk_env)
            V.samples.append(inputs)
            VS.samples.append(whole)
        walls = lambda a: paired(_walls(a), _walls(P))  # noqa: E731
        cpus = lambda a: paired(_cpus(a), _cpus(P))[0]  # noqa: E731
        print(f"  plain build wall {P.wall:.2f} s (n={reps})\n  {summary}\n  {site}")
        for name, a in (("verify (the inputs)", V), ("verify --site (inputs and site)", VS)):
            wall, lo, hi = walls(a)
            print(f"  {name} / plain build: wall {wall:.2f} ({lo:.2f}–{hi:.2f}), CPU {cpus(a):.2f}")
        rows.append(("3", "lessonkit verify (the inputs) / plain build", walls(V)[0], 0.30))
        rows.append(("-", "lessonkit verify --site (inputs and site) / plain build", walls(VS)[0], None))
    if "7" in args.only:
        P = Series("plain", [timed(mkdocs_build(plain), plain, env) for _ in range(reps)])
        print("bench: lessonkit serve subprocess, edit to served page …", flush=True)
        live = live_serve_series(lk, lk_env, reps)
        print(
            f"  plain build wall {P.wall:.2f} s (n={reps}); serve edit-to-page wall {live.wall:.2f} s "
            f"(samples {', '.join(f'{x.wall:.2f}' for x in live.samples)})"
        )
        rows.append(("7", "serve: edit to rebuilt page (lessonkit serve) / plain build", live.wall / P.wall, 0.10))
    if args.only & {"paint", "exercise"} and not args.only & {"2", "3", "7"}:
        lk = copy_project(work / "lessonkit", snap)
        print("bench: warm build for the browser reports …", flush=True)
        timed(mkdocs_build(lk), lk, {**env, "LESSONKIT_CACHE": str(work / "cache-warm")})
    paint = []
    if "paint" in args.only:
        print("bench: home page on a slow link (Chromium) …", flush=True)
        paint = paint_lines(first_paint(lk / "site"))
    if "exercise" in args.only:
        print("bench: the exercise runtime (Chromium) …", flush=True)
        paint += exercise_lines(exercise_runtime(lk / "site"))
    if "8" in args.only:
        pip, plain_fresh, readme = Series("pip-lock"), Series("plain-fresh"), Series("readme-fresh")
        for rep in range(1, args.fresh_reps + 1):
            print(f"bench: fresh clone {rep}/{args.fresh_reps} …", flush=True)
            a, p, b = fresh_pair(snap, work, env, str(rep), plain)
            pip.samples.append(a)
            plain_fresh.samples.append(p)
            readme.samples.append(b)
            print(
                f"  pip install of the lock {a.wall:.1f} s, then the plain build {p.wall:.1f} s; "
                f"README command on a fresh clone {b.wall:.1f} s"
            )
        for note in fresh_notes(readme.samples, pip.samples, plain_fresh.samples, cores):
            print(f"  {note}")  # none without a pair (--fresh-reps 0)
        # the median of the pairs' ratios
        fresh = paired(_walls(readme), _walls_of(plus(pip.samples, plain_fresh.samples)))[0]
        rows.append(("8", RATIO_8, fresh, 1.00))
        rows.append(("-", PIP_ONLY, paired(_walls(readme), _walls(pip))[0], None))
    print(f"load average at start {load_start}, at end {_load()} (other work on the machine inflates wall times)")
    failed = []
    for num, label, wall, target in rows:
        if target is None:
            print(f"{num:<2} {label:<62} {wall:6.2f}  (report)")
            continue
        ok = wall <= target
        failed += [] if ok else [num]
        print(f"{num:<2} {label:<62} {wall:6.2f}  ≤ {target:.2f}  {'pass' if ok else 'FAIL'}")
    if paint:
        print("reported, not pass/fail:")
        print("\n".join(paint))
    return 1 if failed else 0


def _run(args, reps, scale_reps, cores, usable, pinned, version, work, has_mdexec, v) -> int:
    if args.only:
        if args.doc:  # the page shows one whole run, not a mix of runs
            raise SystemExit("bench: --doc writes the table of a full run — leave out --only")
        return _run_only(args, reps, work, pinned, cores)
    load_start = _load()
    env = base_env()
    env["AUTOGRAD_SOURCE"] = str(pinned)
    warm_cache = work / "cache-warm"
    os.environ["AUTOGRAD_SOURCE"] = str(pinned)  # for make_plain_full's in-process resolution

    # -- the variants, each a copy of one snapshot of the project (others may be editing it)
    snap = copy_project(work / "snapshot")
    lk = copy_project(work / "lessonkit", snap)
    lk_env = {**env, "LESSONKIT_CACHE": str(warm_cache)}

    # -- warm-up (not measured): fills the experiment cache, the OS caches, jieba's cache
    print("bench: warm-up (fills the caches; not measured) …", flush=True)
    timed(mkdocs_build(lk), lk, lk_env)
    generated = plain_generated(lk, warm_cache)
    plain = copy_project(work / "plain", snap)
    n_blocks = make_plain(plain, generated)
    plain_docs = copy_project(work / "plain-docs", snap)
    make_plain(plain_docs)
    plain_full = copy_project(work / "plain-full", snap)
    make_plain_full(plain_full, warm_cache, generated)
    scaled = copy_project(work / "x10", snap)
    n_scaled = make_scaled(scaled, SCALE)
    mdexec = None
    if has_mdexec:
        mdexec = copy_project(work / "mdexec", snap)
        n_exec = make_mdexec(mdexec, generated)
    timed(mkdocs_build(plain), plain, env)
    n_pages = sum(1 for _ in (plain / "docs").rglob("*.md"))
    n_docs = sum(1 for _ in (lk / "docs").rglob("*.md"))
    print(
        f"bench: {n_pages} pages ({n_docs} written in docs/, {len(generated)} generated by the build), "
        f"{n_blocks} annotation blocks; x10 variant: {n_scaled} lesson pages; "
        f"markdown-exec variant: {n_exec if mdexec else 0} executed fences",
        flush=True,
    )

    series: dict[str, Series] = {
        k: Series(k)
        for k in ("plain", "plain-docs", "plain+", "warm", "cold", "verify", "verify-site", "x10", "mdexec")
    }
    exp_cpu_json, exp_cpu_log, exp_cpu_serial = [], [], []
    mdexec_errors = 0
    for rep in range(1, reps + 1):
        t_rep = time.perf_counter()
        series["plain"].samples.append(timed(mkdocs_build(plain), plain, env))
        series["warm"].samples.append(timed(mkdocs_build(lk), lk, lk_env))
        cold_cache = work / f"cache-cold-{rep}"
        cold_cache.mkdir()
        s = timed(mkdocs_build(lk), lk, {**env, "LESSONKIT_CACHE": str(cold_cache)})
        series["cold"].samples.append(s)
        exp_cpu_json.append(experiment_cpu_from_cache(cold_cache)[1])
        m = EXP_LOG.search(s.log)
        exp_cpu_log.append(float(m[3]) if m else float("nan"))
        shutil.rmtree(cold_cache, ignore_errors=True)
        n_jobs, cpu = experiment_cpu_serial_fresh(lk, work / "cache-serial")
        exp_cpu_serial.append(cpu)
        # verify does all its work and then exits 1 if it found problems (a stale excerpt
        # map in a working tree mid-edit, say): that run still counts, and is reported.
        inputs, whole, verify_summary, site_summary = verify_pair(lk, lk_env)
        series["verify"].samples.append(inputs)
        series["verify-site"].samples.append(whole)
        series["plain+"].samples.append(timed(mkdocs_build(plain_full), plain_full, env))
        series["plain-docs"].samples.append(timed(mkdocs_build(plain_docs), plain_docs, env))
        if mdexec is not None:
            mx_path = [str(pinned), str(mdexec / "experiments"), str(mdexec / "mini-autograd")]
            mx_env = {
                **env,
                "PYTHONPATH": os.pathsep.join(mx_path + [p for p in [env.get("PYTHONPATH")] if p]),
                "AUTOGRAD_PINNED_ROOT": str(pinned),
                "AUTOGRAD_PINNED_VERSION": version,
                "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
            }
            s = timed(mkdocs_build(mdexec), mdexec, mx_env)
            series["mdexec"].samples.append(s)
            mdexec_errors = s.log.count("Execution of python code block")
        if rep <= scale_reps:
            series["x10"].samples.append(timed(mkdocs_build(scaled), scaled, lk_env))
        print(f"bench: repetition {rep}/{reps} done in {time.perf_counter() - t_rep:.0f} s", flush=True)

    exp_cpu = statistics.median(exp_cpu_serial)
    print("bench: serve rebuilds (one driver process per variant) …", flush=True)
    series["serve"] = serve_series("serve", lk, lk_env, reps)
    series["serve-plain"] = serve_series("serve-plain", plain, {**env}, reps)
    print("bench: mkdocs serve subprocess, edit to served page …", flush=True)
    series["serve-live"] = live_serve_series(lk, lk_env, reps)
    for name in ("pip-lock", "plain-fresh", "readme-fresh"):
        series[name] = Series(name)
    for rep in range(1, args.fresh_reps + 1):
        print(
            f"bench: fresh clone {rep}/{args.fresh_reps}: pip install of the lock and a plain build, "
            "then the README command …",
            flush=True,
        )
        a, p, b = fresh_pair(snap, work, env, str(rep), plain)
        series["pip-lock"].samples.append(a)
        series["plain-fresh"].samples.append(p)
        series["readme-fresh"].samples.append(b)

    print("bench: home page on a slow link (Chromium) …", flush=True)
    paint = first_paint(lk / "site")
    print("bench: the exercise runtime (Chromium) …", flush=True)
    exercise = exercise_runtime(lk / "site")
    cold_minus_warm = series["cold"].cpu - series["warm"].cpu
    json_cpu = statistics.median(exp_cpu_json)
    log_cpu = statistics.median(exp_cpu_log)

    P, W, C = series["plain"], series["warm"], series["cold"]
    spread: dict[str, str] = {}

    def ratio(num: str, label: str, a: Series, b: Series, target, den_wall=None, den_cpu=None):
        """One row: the median of the paired per-repetition ratios (wall, CPU) and the wall spread."""
        wall, lo, hi = paired(_walls(a), den_wall if den_wall is not None else _walls(b))
        cpu = paired(_cpus(a), den_cpu if den_cpu is not None else _cpus(b))[0]
        spread[label] = f"{lo:.2f}–{hi:.2f}"
        return (num, label, wall, cpu, target)

    cold_den_wall = [p + e / cores for p, e in zip(_walls(P), exp_cpu_serial, strict=False)]
    cold_den_cpu = [p + e for p, e in zip(_cpus(P), exp_cpu_serial, strict=False)]
    rows = [
        ratio("1", "warm build / plain build", W, P, 1.10),
        ratio("2", f"cold build / (plain + experiment CPU / {cores} cores)", C, P, 1.15, cold_den_wall, cold_den_cpu),
        ratio("3", "lessonkit verify (the inputs) / plain build", series["verify"], P, 0.30),
        ratio("-", "lessonkit verify --site (inputs and site) / plain build", series["verify-site"], P, None),
        ratio("4", "serve: one-lesson edit rebuild / plain rebuild", series["serve"], series["serve-plain"], 1.20),
        ratio("5", f"{SCALE}x lessons build / 1x build (warm)", series["x10"], W, 10.5),
    ]
    if mdexec is not None:
        rows.append(ratio("6", "warm build / markdown-exec build (no cache)", W, series["mdexec"], None))
    live = ratio("7", "serve: edit to rebuilt page (lessonkit serve) / plain build", series["serve-live"], P, 0.10)
    rows.append((*live[:3], float("nan"), live[4]))
    if series["readme-fresh"].samples:
        den = plus(series["pip-lock"].samples, series["plain-fresh"].samples)
        rows.append(ratio("8", RATIO_8, series["readme-fresh"], Series("den"), 1.00, _walls_of(den), _cpus_of(den)))
        rows.append(ratio("-", PIP_ONLY, series["readme-fresh"], series["pip-lock"], None))
    rows.append(ratio("-", "supporting: warm build / plain+ build (same code shown)", W, series["plain+"], None))
    rows.append(ratio("-", "supporting: warm build / plain build of docs/ only", W, series["plain-docs"], None))

    print()
    print(
        f"machine: {cores} cores (os.cpu_count; {usable} usable) · Python {v['python']} · MkDocs {v['mkdocs']} · "
        f"Material {v['mkdocs-material']} · markdown-exec {v['markdown-exec']}"
    )
    print(
        f"pages: {n_pages}, {len(generated)} of them generated by the build ({n_blocks} annotation blocks); "
        f"repetitions: {reps} (x10: {scale_reps}); "
        f"each ratio is the median of per-repetition paired ratios (spread: smallest–largest); "
        f"pass/fail on the wall-time ratio"
    )
    print(f"load average at start {load_start}, at end {_load()} (other work on the machine inflates wall times)")
    print()
    print(f"{'#':<2} {'ratio':<58} {'wall':>6} {'cpu':>6} {'spread':>11} {'target':>8}  result")
    failed = []
    for num, label, wall, cpu, target in rows:
        if target is None:
            verdict, tgt = "(report)", "—"
        else:
            ok = wall <= target
            verdict, tgt = ("pass" if ok else "FAIL"), f"≤ {target:.2f}"
            if not ok:
                failed.append(num)
        print(f"{num:<2} {label:<58} {wall:6.2f} {cpu:6.2f} {spread.get(label, ''):>11} {tgt:>8}  {verdict}")
    print()
    print("supporting medians (seconds, this machine; not claims):")
    for name, s in series.items():
        if s.samples:
            print(f"  {name:<12} wall {s.wall:7.2f}  cpu {s.cpu:7.2f}  (n={len(s.samples)})")
    print(
        f"  experiment CPU ({n_jobs} scripts run one at a time, used in ratio 2): {exp_cpu:.2f} s (samples "
        f"{', '.join(f'{x:.2f}' for x in exp_cpu_serial)}); cold - warm "
        f"build CPU: {cold_minus_warm:.2f} s; sum of the cold cache entries' cpu_seconds: {json_cpu:.2f} s "
        f"(build log: {log_cpu:.2f} s)"
    )
    print(f"  {verify_summary}")
    print(f"  {site_summary}")
    print("\n".join(paint_lines(paint)))
    print("\n".join(exercise_lines(exercise)))
    if mdexec is not None and mdexec_errors:
        print(f"  markdown-exec: {mdexec_errors} block(s) raised when run in the shared build process")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "versions": v,
                    "cores": cores,
                    "reps": reps,
                    "medians": {
                        k: {"wall": s.wall, "cpu": s.cpu, "n": len(s.samples)} for k, s in series.items() if s.samples
                    },
                    "experiment_cpu": {
                        "serial": exp_cpu,
                        "cold_minus_warm": cold_minus_warm,
                        "cache_json": json_cpu,
                        "log": log_cpu,
                    },
                    "ratios": [
                        {"n": n, "what": l, "wall": w, "cpu": c, "spread": spread.get(l), "target": t}
                        for n, l, w, c, t in rows
                    ],
                    "paint": paint,
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    if args.doc:
        context = (
            f"The latest run: `nox -s bench -- --reps {reps} --fresh-reps {args.fresh_reps}` on {cores} cores "
            f"(Python {v['python']}, MkDocs {v['mkdocs']}, Material {v['mkdocs-material']}); {n_pages} pages, "
            f"{len(generated)} of them generated by the build, {n_blocks} annotation blocks. Each ratio is the "
            "median of the per-repetition ratios of its two sides, which ran back to back; the wall-time "
            "ratio decides the result."
        )
        notes = paint_lines(paint) + fresh_notes(
            series["readme-fresh"].samples, series["pip-lock"].samples, series["plain-fresh"].samples, cores
        )
        write_doc(args.doc, doc_table(rows, spread, context, notes))
        print(f"bench: wrote the table into {args.doc}")
    if mdexec is None:
        print("  ratio 6 skipped: markdown-exec is not installed here (`nox -s bench` installs it)")
    if failed and args.profile:
        if v["pyinstrument"] == "not installed":
            print("bench: --profile needs pyinstrument (`nox -s bench` installs it); no profiles written")
        else:
            profile_failures(failed, args.profile, lk, scaled, lk_env, env)
            if {"1", "2", "4"} & set(failed):
                table = phase_table(
                    {"warm": phases(lk, lk_env), "plain": phases(plain, env), "plain+": phases(plain_full, env)}
                )
                (args.profile / "phases.txt").write_text(table + "\n", encoding="utf-8")
                print(f"bench: where a build's CPU goes, by phase and page group ({args.profile / 'phases.txt'}):")
                print(table)
    return 1 if failed else 0


def profile_failures(failed, out: Path, lk: Path, scaled: Path, lk_env, env) -> None:
    out.mkdir(parents=True, exist_ok=True)
    pyi = [sys.executable, "-m", "pyinstrument", "--renderer", "text", "--interval", "0.001"]
    work = lk.parent
    for num in failed:
        path = out / f"ratio{num}.txt"
        if num in ("1", "3", "5", "2"):
            if num == "3":
                cmd = [*pyi, "-o", str(path), "-m", "lessonkit", "verify"]
                root, e = lk, lk_env
            elif num == "5":
                cmd = [*pyi, "-o", str(path), "-m", "mkdocs", "build", "--no-strict", "-f", str(scaled / "mkdocs.yml")]
                root, e = scaled, lk_env
            elif num == "2":
                cache = work / "cache-profile"
                shutil.rmtree(cache, ignore_errors=True)
                cmd = [*pyi, "-o", str(path), "-m", "mkdocs", "build", "--no-strict", "-f", str(lk / "mkdocs.yml")]
                root, e = lk, {**env, "LESSONKIT_CACHE": str(cache)}
            else:
                cmd = [*pyi, "-o", str(path), "-m", "mkdocs", "build", "--no-strict", "-f", str(lk / "mkdocs.yml")]
                root, e = lk, lk_env
            aside = lk / "site" if num == "3" and (lk / "site").is_dir() else None  # as ratio 3 was timed
            if aside is not None:
                aside.rename(lk / "site.aside")
            try:
                timed(cmd, root, e, ok=(0, 1) if num == "3" else (0,))
            finally:
                if aside is not None:
                    (lk / "site.aside").rename(aside)
        elif num == "4":
            serve_series("serve", lk, lk_env, 2, profile=path)
        print(f"bench: profile for ratio {num}: {path}")


if __name__ == "__main__":
    sys.exit(main())
