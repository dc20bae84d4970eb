"""What a figure is drawn from, checked before anything is drawn.

A recording is the JSON an experiment wrote: any shape at all. :mod:`lessonkit.pipeline.svg`
draws only data of the shapes below, within bounds a page can show (and the layout can
compute: grandalf's layout recurses along long paths). Each function returns the data the
drawing needs, in a plain form, or raises :class:`Bad` saying what is wrong, which the
``figure`` kind turns into a located error at the header that named the data.

* :func:`graph` — ``{"nodes": [{"id": 0, "label": …, "kind": …, "fun": …, "parents": [..]}, …]}``,
  ids 0, 1, 2… in order, parents naming nodes of the graph, no cycle;
* :func:`broadcast` — ``{"g_in": array, "sums": [{"out_shape": [..], "out": array, "axis": …,
  "keepdims": …}, …]}``, arrays of at most two dimensions whose shapes are what they say;
* :func:`nested` — ``[[type, trace], …]``, outermost first;
* :func:`alive` — ``{mode: [live nodes after each layer], …}`` (other entries are not drawn).
"""

from __future__ import annotations

MAX_NODES = 200  # nodes of one graph (a page shows a few dozen; the layout recurses along paths)
MAX_EDGES = 400
MAX_PARENTS = 32  # edges into one node
MAX_TEXT = 80  # characters of one word drawn in a figure (a label, a type, a mode)
MAX_CELLS = 400  # cells of one array in a broadcast figure
MAX_COLUMNS = 40
MAX_SUMS = 12
MAX_BOXES = 20  # levels of a nested figure
MAX_MODES = 8
MAX_LAYERS = 100
MAX_ALIVE = 200  # squares in one row of an alive figure


class Bad(Exception):
    """The data is not of the shape: ``str(exc)`` says where and why."""


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(v, what: str) -> str:
    """A word to draw: text or a number, at most MAX_TEXT characters."""
    if not (isinstance(v, str) or _is_number(v)):
        raise Bad(f"{what} is {_kind(v)}, not text")
    s = str(v)
    if len(s) > MAX_TEXT:
        raise Bad(f"{what} is {len(s)} characters long (a figure shows at most {MAX_TEXT})")
    return s


def _kind(v) -> str:
    return {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "an object",
    }.get(type(v), type(v).__name__)


# ---------------------------------------------------------------- Graph


def graph(data) -> dict:
    """The graph as :func:`lessonkit.pipeline.svg.graph_svg` draws it (only the fields it reads)."""
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise Bad(f"it is {_kind(data)} without a list of `nodes`")
    raw = data["nodes"]
    if not raw:
        raise Bad("it has no nodes")
    if len(raw) > MAX_NODES:
        raise Bad(f"it has {len(raw)} nodes (a figure shows at most {MAX_NODES})")
    nodes, edges = [], 0
    for i, n in enumerate(raw):
        where = f"node {i}"
        if not isinstance(n, dict):
            raise Bad(f"{where} is {_kind(n)}, not an object")
        missing = [k for k in ("id", "label", "kind", "parents") if k not in n]
        if missing:
            raise Bad(f"{where} has no `{missing[0]}`")
        if not _is_int(n["id"]) or n["id"] != i:
            raise Bad(f"{where} has the id {n['id']!r} (ids are 0, 1, 2… in the order of the nodes)")
        parents = n["parents"]
        if not isinstance(parents, list) or not all(_is_int(p) for p in parents):
            raise Bad(f"the parents of {where} are not a list of node ids")
        if len(parents) > MAX_PARENTS:
            raise Bad(f"{where} has {len(parents)} parents (a figure shows at most {MAX_PARENTS})")
        wrong = next((p for p in parents if not 0 <= p < len(raw)), None)
        if wrong is not None:
            raise Bad(f"{where} names the parent {wrong}, which is not a node of the graph (0–{len(raw) - 1})")
        fun = n.get("fun")
        nodes.append(
            {
                "id": i,
                "label": _text(n["label"], f"the label of {where}"),
                "kind": _text(n["kind"], f"the kind of {where}"),
                "fun": None if fun is None else _text(fun, f"the `fun` of {where}"),
                "parents": list(parents),
            }
        )
        edges += len(parents)
    if edges > MAX_EDGES:
        raise Bad(f"it has {edges} edges (a figure shows at most {MAX_EDGES})")
    cycle = _cycle(nodes)
    if cycle:
        raise Bad("its edges form a cycle: " + " → ".join(f"node {k}" for k in cycle))
    return {"nodes": nodes}


def _cycle(nodes: list[dict]) -> list[int]:
    """Nodes on a cycle of parent links (first one repeated at the end), or [] for a DAG."""
    state = [0] * len(nodes)  # 0 new, 1 on the path, 2 done
    for start in range(len(nodes)):
        if state[start]:
            continue
        path, stack = [], [(start, iter(nodes[start]["parents"]))]
        state[start] = 1
        path.append(start)
        while stack:  # iterative: a path may be as long as the graph
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt) :] + [nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(nodes[nxt]["parents"])))
    return []


# ---------------------------------------------------------------- Broadcast


def _plain(v):
    if isinstance(v, dict) and "array" in v:
        return v["array"]
    if isinstance(v, dict) and "scalar" in v:
        return v["scalar"]
    return v


def _array(v, what: str) -> tuple[tuple[int, ...], object]:
    """(shape, plain data) of a number, a list of numbers or a list of equally long lists of numbers."""
    data = _plain(v)
    if _is_number(data):
        return (), data
    if not isinstance(data, list):
        raise Bad(f"{what} is {_kind(data)}, not an array of numbers")
    if all(_is_number(x) for x in data):
        shape: tuple[int, ...] = (len(data),)
    elif data and all(isinstance(row, list) for row in data):
        width = len(data[0])
        if any(len(row) != width for row in data):
            raise Bad(f"{what} has rows of different lengths ({', '.join(str(len(r)) for r in data[:6])})")
        if not all(_is_number(x) for row in data for x in row):
            raise Bad(f"{what} is not an array of numbers of at most two dimensions")
        shape = (len(data), width)
    else:
        raise Bad(f"{what} is not an array of numbers of at most two dimensions")
    if shape[-1] > MAX_COLUMNS or (shape[0] if len(shape) == 2 else 1) * shape[-1] > MAX_CELLS:
        raise Bad(f"{what} has the shape {shape} (a figure shows at most {MAX_COLUMNS} columns, {MAX_CELLS} cells)")
    return shape, data


def broadcast(data) -> tuple[object, list[dict]]:
    """(g_in, sums): the incoming gradient and every recorded sum, checked."""
    if not isinstance(data, dict) or "g_in" not in data or not isinstance(data.get("sums"), list):
        raise Bad(f"it is {_kind(data)} without `g_in` and a list of `sums`")
    _array(data["g_in"], "`g_in`")
    sums = data["sums"]
    if len(sums) > MAX_SUMS:
        raise Bad(f"it has {len(sums)} sums (a figure shows at most {MAX_SUMS})")
    for k, s in enumerate(sums):
        where = f"sum {k}"
        if not isinstance(s, dict):
            raise Bad(f"{where} is {_kind(s)}, not an object")
        missing = [f for f in ("out_shape", "out", "axis", "keepdims") if f not in s]
        if missing:
            raise Bad(f"{where} has no `{missing[0]}`")
        shape, _ = _array(s["out"], f"the `out` of {where}")
        said = s["out_shape"]
        if not isinstance(said, list) or not all(_is_int(x) for x in said) or tuple(said) != shape:
            raise Bad(f"the `out_shape` of {where} is {said!r}, but its `out` has the shape {list(shape)}")
        for f in ("axis", "keepdims"):
            v = s[f]
            ok = v is None or isinstance(v, (bool, str)) or _is_int(v) or (isinstance(v, list) and all(map(_is_int, v)))
            if not ok or len(str(v)) > MAX_TEXT:
                raise Bad(f"the `{f}` of {where} is {_kind(v)}, not an axis or a flag")
    return data["g_in"], sums


# ---------------------------------------------------------------- Nested and Alive


def nested(data) -> list[list]:
    """The chain ``[[type, trace], …]``: a type to show, and a trace number (null: the raw value)."""
    if not isinstance(data, list):
        raise Bad(f"it is {_kind(data)}, not a chain [[type, trace], …]")
    if not data:
        raise Bad("it is an empty chain")
    if len(data) > MAX_BOXES:
        raise Bad(f"it has {len(data)} levels (a figure shows at most {MAX_BOXES})")
    out = []
    for k, c in enumerate(data):
        if not isinstance(c, list) or len(c) != 2:
            raise Bad(f"level {k} is not a pair [type, trace]")
        if not (c[1] is None or _is_int(c[1])):
            raise Bad(f"the trace of level {k} is {_kind(c[1])}, not a number or null")
        out.append([_text(c[0], f"the type of level {k}"), c[1]])
    return out


def alive(data) -> dict[str, list[int]]:
    """``{mode: [counts]}``: the entries whose values are lists (others, such as the size ``n``
    the run used, are not drawn)."""
    modes = {k: v for k, v in data.items() if isinstance(v, list)} if isinstance(data, dict) else {}
    if not modes:
        raise Bad(f"it is {_kind(data)} without a list of counts")
    if len(modes) > MAX_MODES:
        raise Bad(f"it has {len(modes)} modes (a figure shows at most {MAX_MODES})")
    for mode, counts in modes.items():
        _text(mode, "a mode's name")
        if not counts or len(counts) > MAX_LAYERS:
            raise Bad(f"`{mode}` has {len(counts)} layers (a figure shows 1 to {MAX_LAYERS})")
        bad = next((x for x in counts if not _is_int(x) or not 0 <= x <= MAX_ALIVE), None)
        if bad is not None:
            raise Bad(f"`{mode}` counts {bad!r} (counts are whole numbers from 0 to {MAX_ALIVE})")
    lengths = {mode: len(counts) for mode, counts in modes.items()}
    if len(set(lengths.values())) > 1:
        raise Bad(
            "the modes count different numbers of layers (" + ", ".join(f"`{m}`: {n}" for m, n in lengths.items()) + ")"
        )
    return modes
