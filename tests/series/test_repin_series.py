"""Moving this series' excerpts to another autograd and back ends green.

A throwaway project holds every real-source block of the series' lessons, verbatim and in page
order (one page per lesson, the lesson's title and its blocks; experiments, prose and references
stay behind: their outputs are another test's subject, and rerunning 56 experiments twice would
cost minutes). Then, as an author would:

1. ``lessonkit repin 1.8.0 --apply`` moves the pin to the 1.8.0 release archive (which records no
   commit: the archive's sha256 identifies the tree) and prints one located line per block that
   needs the author, with the old and new text; the author makes each quoted body say what the
   printed new text says, and ``verify --update-map`` is green at 1.8.0;
2. ``lessonkit repin 1.9.1 --apply --commit <the series' commit>`` moves it back; the author acts
   on each printed line the same way; ``verify --update-map``, ``lessonkit build`` and
   ``lessonkit verify`` are green at 1.9.1, the pin is the series' own again, and every page
   equals the one made from the real lessons: the rewritten `Lines:`, `Emphasize:` and `Commit:`
   headers and the author's edits restored every block.

The archives come from the session's sdist cache (fetched from the index once per machine), the
build's highlighted pages of the 1.9.1 tree from the series' own cache.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time

from support import ROOT, WARM_KINDS
from test_repin import _seed, sdists  # noqa: F401  (the fixture, shared with the release tests)

from lessonkit.project import Project
from lessonkit.source.pin import load_pin, sha256_file

SERIES_PIN = load_pin(ROOT / "sourcemap")
SHA_1_8_0 = "107374ded5b09fc8643ac925348c0369e7b0e73bbed9565ffd61b8fd04425683"
ITEM = re.compile(r"^(?P<page>docs/\S+\.md):(?P<line>\d+): (?P<kind>\S+) (?P<label>\S+) is (?P<status>\w+) at ")


def _excerpt_pages() -> dict[str, str]:
    """Every lesson's title and real-source blocks, verbatim (out of any tab or admonition)."""
    real = Project(ROOT)
    out = {}
    for page in sorted((ROOT / "docs" / "lessons").glob("*.md")):
        lines = page.read_text(encoding="utf-8").split("\n")
        title = next(line for line in lines if line.startswith("# "))
        parts = []
        for b in real.parse(page).blocks:
            if b.kind == "real-source":
                parts.append("\n".join(l[len(b.indent) :] for l in lines[b.start : b.end + 1]) + "\n")
        out[f"lessons/{page.name}"] = title + "\n\n" + "\n".join(parts)
    return out


def _author_items(stdout: str) -> list[tuple[str, int, str, str, list[str]]]:
    """The located lines an applied repin prints for the author: (page, line, label, status, diff)."""
    todo = stdout[stdout.index("for the author:") :].splitlines()[1:]
    items: list[tuple[str, int, str, str, list[str]]] = []
    for line in todo:
        m = ITEM.match(line)
        if m:
            items.append((m["page"], int(m["line"]), m["label"], m["status"], []))
        elif line.startswith("    ") and items:
            items[-1][4].append(line[4:])
        elif not line.startswith(("verify at ", "then: ")) and not re.match(r"^docs/\S+:\d+: ", line):
            raise AssertionError(f"an unexpected line for the author: {line!r}")
    return items


def _hunks(diff: list[str]) -> list[list[tuple[str, str]]]:
    """The hunks of a unified diff as (op, text) pairs, op one of ' ', '-', '+'."""
    hunks: list[list[tuple[str, str]]] = []
    for line in diff[2:]:  # after the ---/+++ header
        if line.startswith("@@"):
            hunks.append([])
        else:
            hunks[-1].append((line[:1] or " ", line[1:]))
    return hunks


def _new_run(run: list[str], diff: list[str]) -> list[str] | None:
    """What a quoted run of a body becomes by the printed diff: found among a hunk's old lines (up
    to one uniform indentation), replaced by the new lines from its first line to its last, and to
    the end of the change its last line is part of. None: no hunk holds it (it did not change)."""
    for ops in _hunks(diff):
        old = [(p, t) for p, (op, t) in enumerate(ops) if op != "+"]
        for k in range(len(old) - len(run) + 1):
            first = old[k][1]
            indent = first[: len(first) - len(run[0])]
            if indent.strip() or not all(
                o == (indent + r if r else "") for (_, o), r in zip(old[k:], run, strict=False)
            ):
                continue
            p0, p1 = old[k][0], old[k + len(run) - 1][0]
            while ops[p1][0] != " " and p1 + 1 < len(ops) and ops[p1 + 1][0] != " ":
                p1 += 1  # a run that ends inside a change shows the change's new lines
            new = [t for op, t in ops[p0 : p1 + 1] if op != "-"]
            # a line of the new code less indented than the run (a `try:` gone) keeps only its own indentation
            return [t[len(indent) :] if t.startswith(indent) else t.lstrip() for t in new]
    return None


def _act_as_author(site, stdout: str) -> list[str]:
    """Make each quoted body a printed line names say what the new text says; the rest (a whole
    symbol, `Lines` by number) shows the new code already. Returns the located lines acted on."""
    acted = []
    # from the bottom of each page up, so that an edit leaves the lines of the blocks above it
    for page, line, _label, status, diff in sorted(_author_items(stdout), key=lambda i: (i[0], -i[1])):
        assert status == "changed", (page, line, status)  # nothing went missing between 1.8.0 and 1.9.1
        path = site.root / page
        text = path.read_text(encoding="utf-8").split("\n")
        [b] = [b for b in site.project().parse(path).blocks if b.line == line]
        if b.body is None:
            continue
        body, runs, run = list(b.body), [], []
        for l in [*body, "..."]:
            if l.strip() in ("...", "\u2026"):
                runs.append(run)
                runs.append([l])
                run = []
            else:
                run.append(l)
        new_body: list[str] = []
        for part in runs[:-1]:
            if len(part) == 1 and part[0].strip() in ("...", "\u2026"):
                new_body += part
            elif part:
                new_body += _new_run(part, diff) or part
        if new_body != body:
            assert b.body_line is not None
            lo = b.body_line - 1
            text[lo : lo + len(body)] = [(b.indent + l) if l else "" for l in new_body]
            path.write_text("\n".join(text), encoding="utf-8")
            acted.append(f"{page}:{line}")
    return sorted(acted, key=lambda a: (a.split(":")[0], int(a.split(":")[1])))


ADJACENT = re.compile(r"^(docs/\S+?):(\d+): the elision line leaves out no lines: ")


def _drop_empty_elisions(site, output: str) -> list[str]:
    """Act on verify's lines that name an elision line which leaves out nothing (the lines around
    it became adjacent in the new code): remove that `...` line, as its hint says."""
    named = [(m[1], int(m[2])) for m in map(ADJACENT.match, output.splitlines()) if m]
    for page, n in sorted(named, key=lambda x: (x[0], -x[1])):
        path = site.root / page
        text = path.read_text(encoding="utf-8").split("\n")
        assert text[n - 1].strip() in ("...", "\u2026"), (page, n, text[n - 1])
        del text[n - 1]
        path.write_text("\n".join(text), encoding="utf-8")
    return [f"{p}:{n}" for p, n in named]


def test_the_series_excerpts_move_to_1_8_0_and_back_to_1_9_1_and_end_green(site, sdists, real_project):  # noqa: F811
    t0, c0 = time.monotonic(), time.process_time()
    for kind in (*WARM_KINDS, "pin"):  # the 1.9.1 tree and its highlighted source browser, by content
        if (real_project.cache / kind).is_dir():
            shutil.copytree(real_project.cache / kind, site.cache / kind, dirs_exist_ok=True)
    old = sdists("1.8.0")
    assert sha256_file(old) == SHA_1_8_0
    _seed(site, old)
    _seed(site, sdists("1.9.1"))
    assert sha256_file(site.cache / "repin" / "sdist" / "autograd-1.9.1.tar.gz") == SERIES_PIN.sdist_sha256
    pages = _excerpt_pages()
    for name, text in pages.items():
        site.page(name, text)
    env = {k: v for k, v in site.env.items() if k != "AUTOGRAD_SOURCE"}  # the cache provides each tree

    def run(*args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([sys.executable, "-m", *args], cwd=site.root, env=env, capture_output=True, text=True,
                           timeout=900)  # fmt: skip
        assert "Traceback" not in r.stderr, r.stderr
        return r

    assert run("lessonkit", "verify", "--update-map").returncode == 0

    # -- to 1.8.0: a release archive that records no commit
    r = run("lessonkit", "repin", "1.8.0", "--apply", "--html", str(site.root.parent / "to-1.8.0.html"))
    assert r.returncode == 1, r.stdout + r.stderr  # the pin moved; blocks wait for the author
    pin = load_pin(site.root / "sourcemap")
    assert (pin.version, pin.commit_known, pin.commit, pin.sdist_sha256) == ("1.8.0", False, SHA_1_8_0[:40], SHA_1_8_0)
    assert "commit =" not in (site.root / "sourcemap" / "pin.toml").read_text(encoding="utf-8")
    items = [(p, n, label) for p, n, label, _, _ in _author_items(r.stdout)]
    assert items == TO_1_8_0
    assert "verify at autograd 1.8.0 finds 6 problem(s) until then:" in r.stdout
    assert _act_as_author(site, r.stdout) == [f"{p}:{n}" for p, n in BODIES_TO_1_8_0]
    v = run("lessonkit", "verify", "--update-map")  # two elisions now leave out nothing: the author drops them
    assert v.returncode == 1 and _drop_empty_elisions(site, v.stdout + v.stderr) == [
        f"{p}:{n}" for p, n in EMPTY_ELISIONS
    ]
    v = run("lessonkit", "verify", "--update-map")
    assert v.returncode == 0, v.stdout + v.stderr
    assert "against autograd 1.8.0 (107374d, " in v.stdout
    text = (site.root / "docs" / "lessons" / "04-tracer-and-box.md").read_text(encoding="utf-8")
    assert "Commit: 107374d" in text and "Commit: f53a217" not in text
    text = (site.root / "docs" / "lessons" / "03-grad-call-chain.md").read_text(encoding="utf-8").split("\n")
    assert text[75:82] == [  # the body of the block at L71 as the author made it say 1.8.0's code
        "argvals = subvals(args, [(argnum, box._value) for argnum, box in boxed_args])",
        "...",
        "parents = tuple(box._node for _, box in boxed_args)",
        "argnums = tuple(argnum for argnum, _ in boxed_args)",
        "ans = f_wrapped(*argvals, **kwargs)",
        "node = node_constructor(ans, f_wrapped, argvals, kwargs, argnums, parents)",
        "return new_box(ans, trace, node)",
    ]

    # -- back to 1.9.1, naming the commit the series' pin records
    r = run("lessonkit", "repin", "1.9.1", "--apply", "--commit", SERIES_PIN.commit, "--html",
            str(site.root.parent / "to-1.9.1.html"))  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    pin = load_pin(site.root / "sourcemap")
    assert (pin.version, pin.commit, pin.commit_known) == ("1.9.1", SERIES_PIN.commit, True)
    assert (pin.sdist_filename, pin.sdist_sha256, pin.sdist_root) == (
        SERIES_PIN.sdist_filename,
        SERIES_PIN.sdist_sha256,
        SERIES_PIN.sdist_root,
    )
    assert pin.manifest == SERIES_PIN.manifest and pin.source_env == SERIES_PIN.source_env
    items = [(p, n, label) for p, n, label, _, _ in _author_items(r.stdout)]
    assert items == TO_1_9_1  # the same blocks (one higher where an edit above shortened a body)
    assert "verify at autograd 1.9.1 (f53a217) finds 6 problem(s) until then:" in r.stdout
    assert _act_as_author(site, r.stdout) == [f"{p}:{n}" for p, n in BODIES_TO_1_9_1]
    v = run("lessonkit", "verify", "--update-map")
    assert v.returncode == 0, v.stdout + v.stderr
    for name, want in pages.items():
        got = (site.root / "docs" / name).read_text(encoding="utf-8")
        assert got == _restored(site, name, want), name
    b = run("mkdocs", "build", "--strict")
    assert b.returncode == 0, b.stderr[-3000:]
    v = run("lessonkit", "verify")
    assert v.returncode == 0, v.stdout + v.stderr
    assert f"against autograd 1.9.1 ({SERIES_PIN.short}, " in v.stdout
    built = (site.root / "site" / "lessons" / "04-tracer-and-box" / "index.html").read_text(encoding="utf-8")
    assert f"https://github.com/HIPS/autograd/blob/{SERIES_PIN.commit}/autograd/tracer.py#L" in built
    print(f"repin 1.9.1 → 1.8.0 → 1.9.1: {time.monotonic() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU "
          "in the test process (the commands' CPU is the children's)")  # fmt: skip


def _restored(site, name: str, want: str) -> str:
    """The page made from the real lesson, as the author's edits leave it: equal, but for the
    bodies that ended inside a change (`...` then `box = new_box(…)`, the author's at 1.8.0
    `return new_box(…)` with the elision dropped): going back, they show the whole 1.9.1 change."""
    at = ENDS_INSIDE_A_CHANGE.get(name)
    if at is None:
        return want
    lines = want.split("\n")
    [b] = [b for b in site.project().parse(site.root / "docs" / name, want).blocks if b.line == at]
    assert lines[b.end - 2] == "..." and lines[b.end - 1].strip() == "box = new_box(ans, trace, node)"
    return "\n".join(lines[: b.end - 2] + WHOLE_CHANGE + lines[b.end :])


def _p(page: str, line: int, label: str = "") -> tuple:
    return (f"docs/lessons/{page}", line, label) if label else (f"docs/lessons/{page}", line)


PRIMITIVE, BOXED = "autograd/tracer.py::primitive", "autograd/tracer.py::find_top_boxed_args"
WRAP, SUM = "autograd/numpy/numpy_wrapper.py::wrap_namespace", "autograd/numpy/numpy_vjps.py::grad_np_sum"
# The located lines (each block's fence) the repin to 1.8.0 prints for the author, in order: the
# blocks that show `tracer.primitive` or `find_top_boxed_args` (1.9.1 added ufunc dispatch),
# `wrap_namespace` (1.9.1 maps aliases to one wrapper) and `grad_np_sum` (1.9.0 dropped `**kwargs`).
TO_1_8_0 = [
    _p("03-grad-call-chain.md", 71, PRIMITIVE),
    _p("04-tracer-and-box.md", 80, PRIMITIVE),
    _p("04-tracer-and-box.md", 86, BOXED),
    _p("06-numpy-vjp.md", 3, WRAP),
    _p("06-numpy-vjp.md", 16, PRIMITIVE),
    _p("06-numpy-vjp.md", 88, SUM),
    _p("08-forward-mode.md", 39, PRIMITIVE),
    _p("10-higher-order.md", 45, PRIMITIVE),
    _p("13-custom-primitive.md", 29, PRIMITIVE),
    _p("14-mini-autograd.md", 3, PRIMITIVE),
]
# The blocks among them with a quoted body the author rewrote (the others show a whole symbol or
# `Lines` by number: the page shows the new code by itself).
BODIES_TO_1_8_0 = [
    _p("03-grad-call-chain.md", 71),
    _p("06-numpy-vjp.md", 16),
    _p("08-forward-mode.md", 39),
    _p("10-higher-order.md", 45),
    _p("13-custom-primitive.md", 29),
    _p("14-mini-autograd.md", 3),
]
# Two bodies quote `primitive` as `...` then `box = new_box(…)`: at 1.8.0 that line is
# `return new_box(…)` right after the lines before the `...`, which then leaves out nothing.
EMPTY_ELISIONS = [_p("03-grad-call-chain.md", 82), _p("10-higher-order.md", 54)]
# Going back: the same blocks; in 06 the edit at L16 (1.8.0 has no `trace_primitives_map` line)
# moved the block below it one line up.
TO_1_9_1 = [(p, n - 1 if p.endswith("06-numpy-vjp.md") and n > 16 else n, label) for p, n, label in TO_1_8_0]
BODIES_TO_1_9_1 = [(p, n - 1 if p.endswith("06-numpy-vjp.md") and n > 16 else n) for p, n in BODIES_TO_1_8_0]
# Those two bodies end inside the change 1.8.0 replaced by `return new_box(ans, trace, node)`: back
# at 1.9.1 they show the whole change it stands for.
ENDS_INSIDE_A_CHANGE = {"lessons/03-grad-call-chain.md": 71, "lessons/10-higher-order.md": 45}
WHOLE_CHANGE = [
    "try:",
    "    box = new_box(ans, trace, node)",
    "    return box",
    "except Exception as e:",
    "    if called_by_autograd_dispatcher:",
    "        raise NotImplementedError from e",
    "    raise",
]
