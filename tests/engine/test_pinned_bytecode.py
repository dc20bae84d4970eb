"""The checked-hash bytecode the runner compiles from the checked pinned copy for jailed boxes
(``lessonkit.run.box.tree.checked_bytecode``): its format is one the interpreter reads, it is
checked against the source it imports, and a module whose compiling fails or warns gets none."""

from __future__ import annotations

import importlib.util
import marshal
import subprocess
import sys
import textwrap

from lessonkit.run.box import tree


def _pyc_for(prefix, source_path):
    """Where an interpreter run with ``-X pycache_prefix=prefix`` looks for the bytecode of ``source_path``."""
    tag = sys.implementation.cache_tag
    return prefix / f"{str(source_path.parent).lstrip('/')}/{source_path.stem}.{tag}.pyc"


def test_the_bytecode_is_checked_hash_of_the_source_it_was_compiled_from():
    data = b"x = 6 * 7\n"
    pyc = tree.checked_bytecode([("d1", "/lessonkit-box/pinned/m.py", data)])[("d1", "/lessonkit-box/pinned/m.py")]
    assert pyc is not None
    assert pyc[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(pyc[4:8], "little") == 0b11  # hash-based, check the source
    assert pyc[8:16] == importlib.util.source_hash(data)
    code = marshal.loads(pyc[16:])
    assert code.co_filename == "/lessonkit-box/pinned/m.py"
    scope: dict = {}
    exec(code, scope)
    assert scope["x"] == 42
    again = tree.checked_bytecode([("d1", "/lessonkit-box/pinned/m.py", data)])
    assert again[("d1", "/lessonkit-box/pinned/m.py")] is pyc  # memoised


def test_a_module_whose_compiling_warns_or_fails_gets_no_bytecode():
    # an invalid escape sequence warns when compiled (DeprecationWarning, SyntaxWarning from 3.12):
    # the box compiles it itself and its stderr says so, as without bytecode
    sources = [
        ("d2", "/lessonkit-box/pinned/w.py", b"s = '\\d'\n"),
        ("d3", "/lessonkit-box/pinned/e.py", b"def f(:\n"),
        ("d4", "/lessonkit-box/pinned/n.py", b"\x00"),
        ("d6", "/lessonkit-box/pinned/ok.py", b"ok = True\n"),  # in the same batch: compiled
    ]
    got = tree.checked_bytecode(sources)
    assert [got[(d, p)] is None for d, p, _ in sources] == [True, True, True, False]


def test_the_interpreter_reads_it_and_recompiles_a_source_that_differs(tmp_path):
    """Run as a box runs its script (``-B``, a bytecode folder): the module's code comes from the
    .pyc while the source is the one it was compiled from, and from the source once that differs."""
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    mod = src_dir / "probe.py"
    mod.write_bytes(b"WHERE = 'source'\n")
    prefix = tmp_path / "pycache"
    pyc = _pyc_for(prefix, mod)
    pyc.parent.mkdir(parents=True)
    made = tree.checked_bytecode([("d5", str(mod), b"WHERE = 'source'\n")])[("d5", str(mod))]
    assert made is not None
    # the same header (the source's hash) over other code: read only if the interpreter uses the file
    other = marshal.dumps(compile("WHERE = 'bytecode'\n", str(mod), "exec"))
    pyc.write_bytes(made[:16] + other)
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(src_dir)!r})
        import probe
        print(probe.WHERE)
        """
    )
    run = [sys.executable, "-I", "-B", "-X", f"pycache_prefix={prefix}", "-c", script]
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout == "bytecode\n"
    mod.write_bytes(b"WHERE = 'edited'\n")  # the hash no longer matches: compiled from the source
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout == "edited\n"
    assert pyc.read_bytes()[16:] == other  # -B: nothing was written back
