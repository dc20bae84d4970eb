"""lessonkit's record helper: what an experiment records for the build (``[[value:]]``,
snapshots, figures), standard library only.

Every experiment box can import it (the runner puts a copy on the box's ``PYTHONPATH``, and the
copy is part of every experiment's key)::

    from lessonkit_record import record
    record.set("loss.final", 0.125)                # a value, under a dotted key (each key once)
    record.append("steps", {"n": 1, "loss": 0.5})  # one row per step
    record.count("calls.tanh")                     # a counter
    record.table("grid", ["x", "y"], [[1, 2], [3, 4]])
    record.svg("plot", svg_text)                   # an SVG image (text), shown by an output block

At exit the recording is written as one JSON object to the file named by ``$LESSONKIT_RECORD``,
which the build's runner sets (outside the working directory) and reads back after a successful
run. Without the variable (a script run by hand, say by a reader from the bundle) the script
runs just the same and says nothing about the recording: stdout and stderr are what the page
shows. The output is deterministic: keys sorted, no ids or addresses, at most :data:`LIMIT`
bytes (more ends the script with status 3).

What :func:`encode` makes of a value:

  - ``None``, ``bool``, ``int``, ``str`` and finite ``float``: themselves;
  - non-finite floats: ``{"float": "nan" | "inf" | "-inf"}``;
  - NumPy scalars (when the script uses NumPy): ``{"scalar": v, "dtype": "float64"}``, complex
    ones ``[real, imag]``;
  - NumPy arrays: ``{"array": nested lists, "shape": [..], "dtype": ".."}``;
  - an object that ``names`` names (by identity): ``{"node": name}``;
  - lists: lists; tuples: ``{"tuple": [...]}`` (so that a page shows ``[1, 2]`` for a list and
    ``(1, 2)`` for a tuple, as Python writes them); dicts: objects (keys: ``str``, ``int`` or a
    named object). Tuples are the tagged ones because lists are what a recording is mostly
    made of (``append``'s rows, tables, a figure's numbers) and stay plain JSON; a record
    written by an older helper, with tuples as plain lists, is never read with this meaning:
    every experiment's key names this file's sha256, so a new helper runs every script again;
  - anything else: what one of the recorder's :attr:`Recorder.encoders` returns, else ``TypeError``.

Encoding an encoded value gives it back unchanged, so a recorder may encode parts of a value first
and record them later. The price: a recorded dict whose keys are exactly those of an encoding above
(``{"tuple": [1]}``, ``{"scalar": …, "dtype": …}``, ``{"node": …}``, ``{"svg": …}``) is shown as that
encoding. :meth:`Recorder.svg` records an SVG image's text as ``{"svg": text}``: tagged, so that a
page never takes a string for an image or an image for a string.

A project records the objects of its own subject by subclassing :class:`Recorder`: its
``encoders`` encode them, its methods add what it needs (a series keeps such a recorder in a
module of its own experiments folder). One recorder writes the record of a process: a second one
that records anything is an error.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import re
import sys

LIMIT = 4 * 1024 * 1024  # the runner reads at most this many bytes
KEY = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")
ENV = "LESSONKIT_RECORD"

_WRITER: list = []  # the recorder that writes this process's record (at most one)


def encode(value, names=None, encoders=()):
    """A JSON-ready, deterministic form of ``value`` (see the module docstring).

    ``names`` maps objects (by identity) to the label used for them, e.g. ``{node: "M"}``:
    objects are recorded by name, never by address. ``encoders``: functions
    ``fn(value, names)`` that return the encoding of ``value`` (values inside it encoded with
    :func:`encode` too) or ``NotImplemented``, asked in order about a value that is not a plain
    value, a number or a NumPy value (before names, lists and dicts)."""
    names = names or {}
    if value is None or isinstance(value, (bool, str)):
        return value
    np = sys.modules.get("numpy")  # only a script that imported NumPy has NumPy values
    if np is not None and isinstance(value, (np.generic, np.ndarray)):  # before float: np.float64 is a float
        return _numpy_value(np, value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    for fn in encoders:
        out = fn(value, names)
        if out is not NotImplemented:
            return out
    for obj, name in names.items():
        if obj is value:
            return {"node": name}
    return _container(value, names, encoders)


def _numpy_value(np, value):
    """A NumPy scalar (``{"scalar", "dtype"}``) or array (``{"array", "shape", "dtype"}``)."""
    if isinstance(value, np.generic):
        item = value.item()
        if isinstance(item, float) and not math.isfinite(item):
            item = {"float": repr(item)}
        elif isinstance(item, complex):
            item = [item.real, item.imag]
        return {"scalar": item, "dtype": str(value.dtype)}
    data = value.tolist()
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        text = json.dumps(data, allow_nan=True)
        data = json.loads(text.replace("NaN", '"nan"').replace("-Infinity", '"-inf"').replace("Infinity", '"inf"'))
    if value.dtype.kind == "c":
        data = np.stack([value.real, value.imag], axis=-1).tolist()
    return {"array": data, "shape": list(value.shape), "dtype": str(value.dtype)}


def _container(value, names, encoders):
    """A list, a tuple (tagged: JSON has one kind of sequence, a page shows either) or a dict."""
    if isinstance(value, list):
        return [encode(v, names, encoders) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v, names, encoders) for v in value]}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = _key_name(k, names)
            if key in out:
                raise ValueError(f"two dict keys encode to the same name {key!r}")
            out[key] = encode(v, names, encoders)
        return out
    raise TypeError(f"cannot record a {type(value).__name__}: record its fields instead")


def _key_name(k, names):
    for obj, name in names.items():
        if obj is k:
            return name
    if isinstance(k, (str, int)) and not isinstance(k, bool):
        return str(k)
    raise TypeError(f"cannot record a dict key of type {type(k).__name__}")


class Recorder:
    """The recording of this process (:data:`record`; a project's subclass may replace it)."""

    encoders: tuple = ()  # a subclass's encoders of its own objects (see encode)

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
        return self._put(key, encode(value, names, self.encoders), value)

    def set_encoded(self, key: str, data):
        """Record ``data``, already in the form :func:`encode` gives (JSON-ready), under ``key``."""
        return self._put(key, data, data)

    def _put(self, key: str, data, value):
        node, last = self._slot(key)
        if last in node:
            raise ValueError(f"record key {key!r} is already set")
        node[last] = data
        return value

    def append(self, key: str, value, names=None):
        """Append ``value`` to the list under ``key``."""
        node, last = self._slot(key)
        lst = node.setdefault(last, [])
        if not isinstance(lst, list):
            raise ValueError(f"record key {key!r} holds a value, not a list")
        lst.append(encode(value, names, self.encoders))
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

    def svg(self, key: str, text):
        """Record an SVG image (its text, or UTF-8 bytes) under ``key``: ``{"svg": text}``. The
        build checks and cleans it before a page shows it (an ``output`` block's ``Image:``);
        strip what changes from run to run (a date, a random id) before recording it."""
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        if not isinstance(text, str):
            raise TypeError(f"record.svg({key!r}, …) takes the SVG's text, not a {type(text).__name__}")
        return self._put(key, {"svg": text}, text)

    def dumps(self) -> str:
        return json.dumps(self.data, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)

    def _register(self):
        if self._registered:
            return
        if _WRITER and _WRITER[0] is not self:
            raise ValueError("another Recorder already records this process: record everything through one")
        _WRITER.append(self)
        atexit.register(self.write)
        self._registered = True

    def write(self) -> None:
        """Write the recording to ``$LESSONKIT_RECORD`` (at exit; no variable: nothing)."""
        path = os.environ.get(ENV)
        text = self.dumps()
        size = len(text.encode("utf-8"))
        if size > LIMIT:
            print(f"lessonkit_record: the recording is {size} bytes, more than {LIMIT}: record less", file=sys.stderr)
            sys.stderr.flush()
            os._exit(3)
        if not path:  # run outside the build (a reader, from the bundle): the recording has no reader
            return
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


record = Recorder()
