"""Which outputs of a build depend on which inputs, and what a change forces to be rebuilt.

MkDocs-independent core of incremental serve (see docs/dev/incremental.md). A build records, for
every output it writes (a page's ``dest_uri``, ``search/search_index.json``, the bundle …),
the names of the inputs it read. An input name is a short string with a kind prefix:

``doc:lessons/05-reverse-mode.md``  the bytes of a Markdown page
``title:lessons/05-reverse-mode.md``  a page's title (the navigation shows it on every page)
``cites:autograd/core.py``  everything that cites a file: (page, block id, lines) of each citation
``exp:experiments/x.py``  an experiment's cache key (script, helpers, Mini, manifest, versions)
``out:downloads/…``  another output (an output that reads an output: the bundle)
``config``, ``nav``, ``code``  the configuration, the page list, the engine and theme

Each input has a digest (``digest(bytes)``). Given the digests of the last build and of now,
``plan`` names the outputs to rebuild: those that read a changed input, transitively through
``out:`` inputs. It answers ``full`` when it cannot tell: a global input changed, an input
appeared or disappeared that no output is recorded to read, or there is no recorded build.
Being conservative is the rule: rebuilding too much costs time, rebuilding too little
serves a wrong site.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lessonkit.errors import LessonError

OUT = "out:"


def digest(data: bytes | str) -> str:
    """sha256 hex of bytes (str is UTF-8 encoded)."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def digest_of(items: Iterable[object]) -> str:
    """Digest of an ordered collection of JSON-serialisable items (e.g. a file's citations)."""
    return digest(json.dumps(list(items), ensure_ascii=False, sort_keys=True, separators=(",", ":")))


@dataclass(frozen=True)
class Plan:
    """What to rebuild: everything (``full``) or exactly ``outputs``; ``why`` says which input decided."""

    full: bool
    outputs: frozenset[str] = frozenset()
    changed: frozenset[str] = frozenset()
    why: str = ""

    @property
    def nothing(self) -> bool:
        return not self.full and not self.outputs


@dataclass
class Graph:
    """Per output, the set of input names it read; ``global_inputs`` are read by every output."""

    deps: dict[str, frozenset[str]] = field(default_factory=dict)
    global_inputs: frozenset[str] = frozenset()

    def record(self, output: str, inputs: Iterable[str]) -> None:
        """Add what ``output`` read (several calls for one output accumulate)."""
        self.deps[output] = self.deps.get(output, frozenset()) | frozenset(inputs)

    def readers(self) -> dict[str, set[str]]:
        """Input name -> outputs that read it."""
        out: dict[str, set[str]] = {}
        for output, inputs in self.deps.items():
            for name in inputs:
                out.setdefault(name, set()).add(output)
        return out

    def to_json(self) -> str:
        return json.dumps(
            {"deps": {k: sorted(v) for k, v in sorted(self.deps.items())}, "global": sorted(self.global_inputs)},
            ensure_ascii=False,
            indent=0,
        )

    @classmethod
    def from_json(cls, text: str) -> Graph:
        data = json.loads(text)
        return cls({k: frozenset(v) for k, v in data["deps"].items()}, frozenset(data["global"]))


def changed_inputs(old: Mapping[str, str], new: Mapping[str, str]) -> frozenset[str]:
    """Names whose digest differs, including names present on one side only."""
    return frozenset(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))


def plan(graph: Graph | None, old: Mapping[str, str] | None, new: Mapping[str, str]) -> Plan:
    """The outputs to rebuild after the inputs went from digests ``old`` to ``new``."""
    if graph is None or old is None:
        return Plan(True, why="no recorded build")
    changed = changed_inputs(old, new)
    if not changed:
        return Plan(False, changed=changed, why="no input changed")
    global_hit = sorted(changed & graph.global_inputs)
    if global_hit:
        return Plan(True, changed=changed, why=f"global input changed: {global_hit[0]}")
    readers = graph.readers()
    unknown = sorted(name for name in changed if name not in readers)
    if unknown:
        return Plan(True, changed=changed, why=f"no output is recorded to read {unknown[0]}")
    todo: set[str] = set()
    frontier = set(changed)
    while frontier:  # an output that is rebuilt counts as a changed input of its readers
        hit = {o for name in frontier for o in readers.get(name, ())} - todo
        todo |= hit
        frontier = {OUT + o for o in hit}
    return Plan(False, frozenset(todo), changed, why=", ".join(sorted(changed)[:3]))


# ---------------------------------------------------------------- what one lessonkit build read

BUNDLE_TOKEN = "[[lessonkit:bundle-"  # a page showing the bundle's digest or size reads the bundle


def _file_digests(root, dirs) -> dict[str, str]:
    out = {}
    for d in dirs:
        base = root / d
        if base.is_dir():
            for p in sorted(base.rglob("*")):
                if p.is_file() and "__pycache__" not in p.parts:
                    out[p.relative_to(root).as_posix()] = digest(p.read_bytes())
    return out


def record(build) -> tuple[Graph, dict[str, str]]:
    """The dependency graph of a planned :class:`lessonkit.build.Build` and the digests of its inputs.

    Outputs are docs-relative page uris (``lessons/05-reverse-mode.md``, ``source/autograd/core.py.md``,
    ``symbols.md``, ``attachments/acceptance.md``) and the bundle's uri. Inputs:

    * ``doc:<uri>``: the page's text; ``blocks:<uri>``: what its blocks resolved to (excerpts,
      ``Based-on``, the experiment's cache key), so an edited script reaches the pages showing it;
    * ``src:<file>``: a file of this repository's code directories (experiments, Mini), read by its
      code page, by the bundle and, conservatively, by every page whose text names the file;
    * ``gen:<uri>``: a generated page's Markdown (source browser, indexes, attachments, which are
      drawn from experiment output); ``cites:<origin>:<file>``: the citations a source page lists;
    * ``bundle``: the bundle's bytes (its file and the pages showing its digest or size);
    * ``api``: the set of documented API objects (every page may link to it).

    Waits for every experiment (attachments and the bundle are drawn from their output). Global
    inputs (configuration, engine, theme, the pin, the set of pages) are not recorded here: the
    serve builder compares them before asking the Build (see :mod:`lessonkit.integrations.mkdocs.serve`).
    """
    project = build.project
    build.results()  # every experiment has run: the attachments and the bundle exist
    graph, d = Graph(), {}
    srcs = _file_digests(project.root, project.site.code)
    d.update({"src:" + k: v for k, v in srcs.items()})
    d["api"] = digest_of(sorted(build.api))
    attached = dict(build.attached or {})
    d["bundle"] = digest(build.bundle_bytes())
    graph.record(project.site.bundle, {"bundle"})
    runner = project.runner
    for rel, text in build.texts.items():
        uri = rel.removeprefix("docs/")
        ins = {"doc:" + uri, "blocks:" + uri, "api"}
        d["doc:" + uri] = digest(text)
        d["blocks:" + uri] = digest_of(
            [repr(r.block), repr(r.excerpt), repr(r.based_on), runner.key(r.job) if r.job else None]
            for r in build.report.resolved.get(rel, [])
        )
        d["inline:" + uri] = digest_of(_inline_inputs(project, build.report.inline.get(rel, [])))
        ins.add("inline:" + uri)
        ins |= {"src:" + f for f in srcs if f in text}
        if BUNDLE_TOKEN in text:
            ins.add("bundle")
        graph.record(uri, ins)
    for uri, text in attached.items():
        d["gen:" + uri] = digest(text)
        graph.record(uri, {"gen:" + uri, "api"} | ({"bundle"} if BUNDLE_TOKEN in text else set()))
    for g in build.generated_pages:
        d["gen:" + g.uri] = digest(g.content)
        ins = {"gen:" + g.uri} | ({"bundle"} if BUNDLE_TOKEN in str(g.content) else set())
        if g.code:
            origin, file = g.code
            name = f"cites:{origin}:{file}"
            d[name] = digest_of(repr(c) for c in build.citations if c.origin == origin and c.file == file)
            ins.add(name)
            if origin == "repo":
                if "src:" + file not in d:
                    d["src:" + file] = digest((project.root / file).read_bytes())
                ins.add("src:" + file)
        graph.record(g.uri, ins)
    return graph, d


def _inline_inputs(project, refs) -> list:
    """What a page's inline references show: each reference, and the key of the run a recorded
    value comes from (an edited experiment changes the value on every page that cites it)."""
    out = []
    for ref in refs:
        kind = project.kinds.inline.get(ref.kind)
        try:
            job = kind.job(project, ref) if kind is not None else None
        except LessonError:  # reported by the build itself
            job = None
        out.append([repr(ref), project.runner.key(job) if job is not None else None])
    return out
