"""Which outputs of a build depend on which inputs, and what a change forces to be rebuilt.

MkDocs-independent core of incremental serve (see INCREMENTAL.md). A build records, for
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
        return json.dumps({"deps": {k: sorted(v) for k, v in sorted(self.deps.items())},
                           "global": sorted(self.global_inputs)}, ensure_ascii=False, indent=0)

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
