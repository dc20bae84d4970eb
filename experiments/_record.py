"""This series' recorder: lessonkit's record helper (``lessonkit_record``, which the build puts
in every experiment's box) plus what autograd adds, its boxes, nodes and graphs.

An experiment stores what its lesson states under stable dotted keys::

    from _record import record
    record.set("m.vjp", end_node.vjp(1.0))          # values, tuples, arrays, boxes
    record.append("steps", {"node": "M", "g": g})   # one row per step
    record.count("calls.tanh")                      # call counts

and captures the real autograd graph of a run::

    with record.capture() as cap:
        y = grad(f)(x)
    record.graph("graph", cap, end_node, labels={end_node: "M"})

Keys, the encoding of plain values and NumPy values, ``$LESSONKIT_RECORD`` and its limit are
lessonkit_record's (see its docstring); this module adds:

  - Boxes: ``{"box": "ArrayBox", "trace": t, "value": encoded _value}``
    (plus ``"node": index`` inside a capture);
  - nodes: only by name (``names={node: "label"}``): a node without one is an error, addresses
    are never recorded;
  - :class:`Capture`, the nodes and boxes a run creates, numbered in creation order (a
    topological order: a node is created after its parents), and :func:`closure_functions`.
"""

from __future__ import annotations

import sys

import lessonkit_record


def _autograd(value, names):
    """The encoding of autograd's boxes; a node without a name is an error (lessonkit_record
    records a named one as ``{"node": name}``)."""
    if _is_box(value):
        out = {"box": type(value).__name__, "trace": value._trace, "value": encode(value._value, names)}
        if id(value._node) in _ACTIVE_NODES:
            out["node"] = _ACTIVE_NODES[id(value._node)]
        return out
    if _is_node(value) and not any(k is value for k in names):
        raise ValueError(f"a {type(value).__name__} without a name: pass names={{node: 'label'}}")
    return NotImplemented


ENCODERS = (_autograd,)


def encode(value, names=None):
    """A JSON-ready, deterministic form of ``value``: lessonkit_record's, with autograd's boxes."""
    return lessonkit_record.encode(value, names, ENCODERS)


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
                                     "argnums": _plain(tuple(parent_argnums)), "parents": tuple(parents),
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
                 "argnums": _plain(()) if info is None else info["argnums"],
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
        name or ``root``), ``kind``, ``type``, ``fun``, ``trace``, ``argnums`` (a tuple, as
        autograd has it; empty for a root), ``parents`` (ids, one per argnum: the same parent twice for
        ``x * x``; a tuple, as the ``parents`` a primitive's node is built from, and for a root the
        empty list ``VJPNode.initialize_root`` sets),
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
                   "parents": _parents(e, renumber), "args": e["args"], "value": e["value"]}
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


def _parents(e, renumber):
    """A graph node's parents as ids, in autograd's own kind: the tuple ``primitive`` passes to the
    node (tracer.py: ``parents = tuple(...)``), the list ``[]`` of a root (``initialize_root``)."""
    ids = [renumber[p] for p in e["parents"]]
    return encode(tuple(ids)) if e["kind"] == "primitive" else ids


def closure_functions(fn) -> list:
    """Every function reachable from ``fn`` through closure cells, depth first, as
    ``{"function": co_name, "module": ..., "freevars": (...)}`` (what a node's ``vjp`` keeps alive;
    ``freevars`` is the code object's ``co_freevars``, a tuple)."""
    out, seen, stack = [], set(), [fn]
    while stack:
        f = stack.pop()
        if id(f) in seen or not callable(f) or not hasattr(f, "__code__"):
            continue
        seen.add(id(f))
        out.append({"function": f.__code__.co_name, "module": getattr(f, "__module__", None),
                    "freevars": f.__code__.co_freevars})
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


class Recorder(lessonkit_record.Recorder):
    """The one recording of this process (``record``): lessonkit_record's, with autograd."""

    encoders = ENCODERS

    def capture(self) -> Capture:
        return Capture()

    def graph(self, key: str, capture: Capture, end, labels=None):
        """Record the graph reachable from ``end`` (see :meth:`Capture.graph`)."""
        return self.set_encoded(key, capture.graph(end, labels))


record = Recorder()
