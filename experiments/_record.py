"""Record structured state of an experiment for the lesson build.

An experiment stores what its lesson states under stable dotted keys::

    from _record import record
    record.set("m.vjp", end_node.vjp(1.0))          # values, tuples, arrays, boxes
    record.append("steps", {"node": "M", "g": g})   # one row per step
    record.count("calls.tanh")                      # call counts

and captures the real autograd graph of a run::

    with record.capture() as cap:
        y = grad(f)(x)
    record.graph("graph", cap, end_node, labels={end_node: "M"})

At exit the object is written as JSON to the file named by ``$LESSONKIT_RECORD``
(set by the build's runner, outside the working directory). Without it (a
reader running the script from the bundle) the script runs just the same and
says nothing about the recording: stdout and stderr are what the page shows. The output is deterministic: no ids or addresses, keys
sorted, nodes numbered in creation order (a topological order: a node is
created after its parents).

Value encoding (what :func:`encode` returns):
  - ``None``, ``bool``, ``int``, ``str`` and finite Python ``float``: themselves;
  - non-finite floats: ``{"float": "nan" | "inf" | "-inf"}``;
  - NumPy scalars: ``{"scalar": v, "dtype": "float64"}``;
  - arrays: ``{"array": nested lists, "shape": [..], "dtype": ".."}``;
  - Boxes: ``{"box": "ArrayBox", "trace": t, "value": encoded _value}``
    (plus ``"node": index`` inside a capture);
  - tuples and lists: lists; dicts: objects with ``str`` keys.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import re
import sys

import numpy as np

LIMIT = 4 * 1024 * 1024  # the runner reads at most this many bytes
KEY = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")


def encode(value, names=None):
    """A JSON-ready, deterministic form of ``value`` (see the module docstring).

    ``names`` maps nodes (by identity) to the label used for them, e.g. ``{node: "M"}``;
    a node without a name is an error: addresses are never recorded."""
    names = names or {}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic):  # before float: np.float64 is a float subclass
        item = value.item()
        if isinstance(item, float) and not math.isfinite(item):
            item = {"float": repr(item)}
        elif isinstance(item, complex):
            item = [item.real, item.imag]
        return {"scalar": item, "dtype": str(value.dtype)}
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, np.ndarray):
        data = value.tolist()
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            data = json.loads(json.dumps(data, allow_nan=True).replace("NaN", '"nan"')
                              .replace("-Infinity", '"-inf"').replace("Infinity", '"inf"'))
        if value.dtype.kind == "c":
            data = np.stack([value.real, value.imag], axis=-1).tolist()
        return {"array": data, "shape": list(value.shape), "dtype": str(value.dtype)}
    if _is_box(value):
        out = {"box": type(value).__name__, "trace": value._trace, "value": encode(value._value, names)}
        if id(value._node) in _ACTIVE_NODES:
            out["node"] = _ACTIVE_NODES[id(value._node)]
        return out
    if id(value) in {id(k) for k in names}:
        return {"node": next(v for k, v in names.items() if k is value)}
    if isinstance(value, (tuple, list)):
        return [encode(v, names) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = _key_name(k, names)
            if key in out:
                raise ValueError(f"two dict keys encode to the same name {key!r}")
            out[key] = encode(v, names)
        return out
    if _is_node(value):
        raise ValueError(f"a {type(value).__name__} without a name: pass names={{node: 'label'}}")
    raise TypeError(f"cannot record a {type(value).__name__}: record its fields instead")


def _key_name(k, names):
    for node, name in names.items():
        if node is k:
            return name
    if isinstance(k, (str, int)) and not isinstance(k, bool):
        return str(k)
    raise TypeError(f"cannot record a dict key of type {type(k).__name__}")


def _is_box(value) -> bool:
    tracer = sys.modules.get("autograd.tracer")
    return tracer is not None and type(value) in tracer.Box.types


def _is_node(value) -> bool:
    tracer = sys.modules.get("autograd.tracer")
    return tracer is not None and isinstance(value, tracer.Node)


_ACTIVE_NODES: dict[int, int] = {}  # id(node) -> index, while a capture is open


class Capture:
    """Every node and box the pinned autograd creates while the ``with`` block runs.

    It wraps ``autograd.tracer.new_box`` (called for every start box and every
    primitive's output, with the trace number and the node) and the ``__init__``
    of ``VJPNode`` and ``JVPNode`` (which receive the primitive, the argnums and
    the parents). The capture holds the nodes it saw until it is discarded, so
    count live nodes outside a capture.
    """

    def __init__(self):
        self.nodes: list[dict] = []  # in creation order; "obj" is the real node
        self.boxes: list[dict] = []  # every new_box call, in order
        self._index: dict[int, int] = {}
        self._pending: dict[int, dict] = {}
        self._saved = None

    def __enter__(self) -> "Capture":
        import autograd.core as core
        import autograd.tracer as tracer
        real_new_box = tracer.new_box
        real_inits = {cls: cls.__init__ for cls in (core.VJPNode, core.JVPNode)}
        pending, cap = self._pending, self

        def make_init(real_init):
            def init(node, value, fun, args, kwargs, parent_argnums, parents):
                real_init(node, value, fun, args, kwargs, parent_argnums, parents)
                pending[id(node)] = {"fun": getattr(fun, "__name__", repr(fun)),
                                     "argnums": list(parent_argnums), "parents": tuple(parents),
                                     "args": _plain(tuple(args)), "obj": node}
            return init

        def new_box(value, trace, node):
            box = real_new_box(value, trace, node)
            cap._see(node, trace, value)
            cap.boxes.append({"trace": trace, "node": cap._index[id(node)], "type": type(box).__name__,
                              "depth": _depth(value)})
            return box

        self._saved = (tracer, real_new_box, real_inits)
        tracer.new_box = new_box
        for cls, real_init in real_inits.items():
            cls.__init__ = make_init(real_init)
        return self

    def __exit__(self, *exc):
        tracer, real_new_box, real_inits = self._saved
        tracer.new_box = real_new_box
        for cls, real_init in real_inits.items():
            cls.__init__ = real_init
        return False

    def root(self, node, trace, value) -> None:
        """Declare a node whose box was made outside ``tracer.new_box`` (``from autograd.tracer
        import new_box`` binds the unwrapped function)."""
        self._see(node, trace, value)

    def _see(self, node, trace, value):
        if id(node) in self._index:
            return
        info = self._pending.pop(id(node), None)
        for p in (info or {}).get("parents", ()):
            if id(p) not in self._index:  # a parent made before the capture, or by an unwrapped new_box
                self._see(p, None, _Unrecorded)
        entry = {"index": len(self.nodes), "type": type(node).__name__, "trace": trace, "obj": node,
                 "kind": "root" if info is None else "primitive",
                 "fun": None if info is None else info["fun"],
                 "argnums": [] if info is None else info["argnums"],
                 "parents": [] if info is None else [self._index[id(p)] for p in info["parents"]],
                 "args": None if info is None else info["args"],
                 "value": _plain(value), "raw": value}
        if hasattr(node, "g"):  # JVPNode: the tangent was computed in __init__
            entry["g"] = _plain(node.g)
        self._index[id(node)] = entry["index"]
        _ACTIVE_NODES[id(node)] = entry["index"]
        self.nodes.append(entry)

    def index(self, node) -> int:
        """The creation index of a node (or of a box's node)."""
        if _is_box(node):
            node = node._node
        try:
            return self._index[id(node)]
        except KeyError:
            raise KeyError("this node was not created inside the capture") from None

    def graph(self, end, labels=None) -> dict:
        """The nodes reachable from ``end`` (a node or a box) through parents, as JSON.

        ``{"nodes": [...], "end": i}``; each node has ``id`` (its position here, in
        creation order), ``label`` (from ``labels`` by identity, else the primitive's
        name or ``root``), ``kind``, ``type``, ``fun``, ``trace``, ``argnums``,
        ``parents`` (ids, one per argnum: the same parent twice for ``x * x``),
        ``args`` (the unboxed arguments the node was built from; ``None`` for a root),
        ``value`` and, for JVP nodes, ``g``."""
        labels = labels or {}
        start = self.index(end)
        seen, stack = {start}, [start]
        while stack:
            for p in self.nodes[stack.pop()]["parents"]:
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        order = sorted(seen)
        renumber = {old: new for new, old in enumerate(order)}
        nodes = []
        for old in order:
            e = self.nodes[old]
            label = next((v for k, v in labels.items() if k is e["obj"]), None)
            out = {"id": renumber[old], "label": label or (e["fun"] or "root"), "kind": e["kind"],
                   "type": e["type"], "fun": e["fun"], "trace": e["trace"], "argnums": e["argnums"],
                   "parents": [renumber[p] for p in e["parents"]], "args": e["args"], "value": e["value"]}
            if "g" in e:
                out["g"] = e["g"]
            nodes.append(out)
        return {"nodes": nodes, "end": renumber[start]}

    def owner(self, obj):
        """The index of the node whose value ``is`` obj (an array a closure holds), or None."""
        for e in self.nodes:
            if e["raw"] is obj:
                return e["index"]
        return None

    def box_counts(self) -> dict:
        """How many boxes were created on each trace: ``{"0": n0, "1": n1, ...}``."""
        out: dict[str, int] = {}
        for b in self.boxes:
            out[str(b["trace"])] = out.get(str(b["trace"]), 0) + 1
        return dict(sorted(out.items()))

    def primitive_counts(self) -> dict:
        """How many nodes each primitive got: ``{"multiply": 3, ...}`` (roots excluded)."""
        out: dict[str, int] = {}
        for e in self.nodes:
            if e["fun"]:
                out[e["fun"]] = out.get(e["fun"], 0) + 1
        return dict(sorted(out.items()))

    def release(self) -> None:
        """Forget the real nodes (the JSON facts stay), so they can be freed."""
        for e in self.nodes:
            _ACTIVE_NODES.pop(id(e["obj"]), None)
            e["obj"] = e["raw"] = None
        self._pending.clear()


def closure_functions(fn) -> list:
    """Every function reachable from ``fn`` through closure cells, depth first, as
    ``{"function": co_name, "module": ..., "freevars": [...]}`` (what a node's ``vjp`` keeps alive)."""
    out, seen, stack = [], set(), [fn]
    while stack:
        f = stack.pop()
        if id(f) in seen or not callable(f) or not hasattr(f, "__code__"):
            continue
        seen.add(id(f))
        out.append({"function": f.__code__.co_name, "module": getattr(f, "__module__", None),
                    "freevars": list(f.__code__.co_freevars)})
        cells = [c.cell_contents for c in (f.__closure__ or ()) if _filled(c)]
        stack.extend(reversed([c for c in cells if callable(c) and hasattr(c, "__code__")]))
    return out


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _depth(value) -> int:
    """How many boxes are nested in a box's value (0: a plain value)."""
    d = 0
    while _is_box(value):
        value, d = value._value, d + 1
    return d


class _Unrecorded:
    pass


def _plain(value):
    """A node's value, as recorded: boxes of lower traces become their box form."""
    if value is _Unrecorded:
        return {"unrecorded": "created outside the capture"}
    try:
        return encode(value)
    except (TypeError, ValueError):
        return {"unrecorded": type(value).__name__}


class Recorder:
    """The one recording of this process (``record``)."""

    def __init__(self):
        self.data: dict = {}
        self._registered = False

    def _slot(self, key: str):
        if not isinstance(key, str) or not KEY.match(key):
            raise ValueError(f"bad record key {key!r}: dotted names of letters, digits, _ and -")
        *parents, last = key.split(".")
        node = self.data
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"record key {key!r}: {p!r} already holds a value")
        self._register()
        return node, last

    def set(self, key: str, value, names=None):
        """Record ``value`` under ``key`` (each key once: a second set is a mistake)."""
        node, last = self._slot(key)
        if last in node:
            raise ValueError(f"record key {key!r} is already set")
        node[last] = encode(value, names)
        return value

    def append(self, key: str, value, names=None):
        """Append ``value`` to the list under ``key``."""
        node, last = self._slot(key)
        lst = node.setdefault(last, [])
        if not isinstance(lst, list):
            raise ValueError(f"record key {key!r} holds a value, not a list")
        lst.append(encode(value, names))
        return value

    def count(self, key: str, n: int = 1) -> int:
        """Add ``n`` to the counter under ``key``."""
        node, last = self._slot(key)
        node[last] = node.get(last, 0) + n
        return node[last]

    def table(self, key: str, columns: list[str], rows: list, names=None):
        """A named table: ``{"columns": [...], "rows": [[...], ...]}``."""
        if any(len(r) != len(columns) for r in rows):
            raise ValueError(f"table {key!r}: every row needs {len(columns)} cells")
        self.set(key, {"columns": list(columns), "rows": [list(r) for r in rows]}, names)

    def capture(self) -> Capture:
        return Capture()

    def graph(self, key: str, capture: Capture, end, labels=None):
        """Record the graph reachable from ``end`` (see :meth:`Capture.graph`)."""
        node, last = self._slot(key)
        if last in node:
            raise ValueError(f"record key {key!r} is already set")
        node[last] = capture.graph(end, labels)
        return node[last]

    def dumps(self) -> str:
        return json.dumps(self.data, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)

    def _register(self):
        if not self._registered:
            atexit.register(self.write)
            self._registered = True

    def write(self) -> None:
        """Write the recording to ``$LESSONKIT_RECORD`` (at exit; outside the build, nothing)."""
        path = os.environ.get("LESSONKIT_RECORD")
        text = self.dumps()
        size = len(text.encode("utf-8"))
        if size > LIMIT:
            print(f"_record: the recording is {size} bytes, more than {LIMIT}: record less",
                  file=sys.stderr)
            sys.stderr.flush()
            os._exit(3)
        if not path:  # run outside the build: the recording has no reader
            return
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


record = Recorder()
