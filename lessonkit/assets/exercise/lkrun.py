"""Runs a runnable block's snippet in the browser's Python (lessonkit/kinds/runnable.py): the code as
``__main__`` in a fresh namespace, the block's teaching modules importable from their folders under
``root``, stdout and stderr captured apart. A failure prints its traceback to stderr without this
module's frame, as the build's driver does. Standard library only."""

import io
import sys
import traceback


def run(code: str, root: str, folders: list[str]) -> dict:
    """``{"stdout", "stderr", "status"}`` of one run (``status``: 0, 1 for an exception, or the
    ``sys.exit`` code)."""
    for name, module in list(sys.modules.items()):  # a fresh import of the block's modules each run
        if (getattr(module, "__file__", None) or "").startswith(root + "/"):
            del sys.modules[name]
    paths = [root + "/" + f for f in folders]
    sys.path[:0] = [p for p in paths if p not in sys.path]
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    status = 0
    try:
        exec(compile(code, "<snippet>", "exec", dont_inherit=True), {"__name__": "__main__"})
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=err)
    except BaseException as exc:  # noqa: BLE001 -- shown to the reader, as Python would
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        status = 1
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = saved
    return {"stdout": out.getvalue(), "stderr": err.getvalue(), "status": status}
