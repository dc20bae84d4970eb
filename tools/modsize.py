"""No module of lessonkit/ over MAX_LINES lines: a module a reader can hold is split by what its
code does once it grows past that.

    python tools/modsize.py    # exit 1 with one line per module over the limit

Lines are counted as `wc -l` counts them (newline characters). `nox -s lint` runs the check.

EXEMPT names the modules that stay whole however long they are, each with the reason; an entry
that is no longer over the limit fails the check too, so the list only shrinks. The check reads
the files only: it needs nothing installed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "lessonkit"
MAX_LINES = 500

EXEMPT = {
    # The launcher of a boxed experiment runs as `python -I -S _boot.py CONFIG`: isolated mode puts
    # neither its folder nor site-packages on sys.path, so it can import nothing but the standard
    # library. With bubblewrap this one file is bound read-only into every box
    # (/run/lessonkit/boot.py) and runs there as the box's PID 1; with lessonkit's own namespaces
    # its child pivots into the box's root and detaches the host's tree before `init` runs. Code
    # in a second file would need a loader of its own, one more bind into every box (a file every
    # experiment can see), and to be read before the pivot; and the file's sha256 is part of every
    # box key (run/box/spec.py ENGINE), so splitting it reruns every experiment of every series.
    "lessonkit/run/box/_boot.py": "stands alone in the box: standard library only, one file bound into every jail",
}


def line_count(path: Path) -> int:
    """The number of newline characters of the file (what `wc -l` prints)."""
    return path.read_bytes().count(b"\n")


def problems(root: Path = ROOT, limit: int = MAX_LINES, exempt: dict[str, str] | None = None) -> list[str]:
    """One line ``path:LINES: …`` per module of the package over ``limit`` lines (``LINES``: its
    count, the number of its last line), and one per exempt module that is not."""
    exempt = EXEMPT if exempt is None else exempt
    out = []
    seen = set()
    for path in sorted((root / PACKAGE).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        n = line_count(path)
        if rel in exempt:
            seen.add(rel)
            if n <= limit:
                out.append(
                    f"{rel}:{n}: {n} lines, within the limit of {limit} — remove it from EXEMPT in tools/modsize.py"
                )
        elif n > limit:
            out.append(
                f"{rel}:{n}: {n} lines, over the limit of {limit} for a module of {PACKAGE}/ — "
                "split it by what its code does into modules with names that say so"
            )
    out += [
        f"tools/modsize.py: EXEMPT names {rel}, which does not exist — remove it" for rel in exempt if rel not in seen
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.parse_args(argv)
    found = problems(ROOT)
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
