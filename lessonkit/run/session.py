"""Inline experiments run through a driver: the blocks' code is compiled under the page's name
at its page lines, so a traceback names ``docs/x.md``, line 57; the blocks of one page session
(``Session: name``) run in order in ONE interpreter, in one box, sharing one namespace (the
``__main__`` module's), and the driver writes a mark before each block's output so that every
block's stdout can be shown under it.

What the driver writes to stdout: for block ``n``, a line ``\\n<MARK>n\\n`` and then the block's
output; after the last block, ``\\n<MARK>end\\n``. :func:`split` recovers every block's output
byte for byte. A block that raises ends the session with exit code 1 and its traceback (without
the driver's frame) on stderr; ``sys.exit(n)`` ends it with status ``n``. Standard library only
(the prefill runs it).
"""

from __future__ import annotations

import hashlib

DRIVER = '''# lessonkit: the experiment block(s) of {page}, run in order in one interpreter (generated)
def _lessonkit_run():
    import linecache, sys, traceback

    page, mark, blocks = {page!r}, {mark!r}, {blocks!r}
    lines = [""] * max(first - 1 + code.count("\\n") + 1 for first, code in blocks)
    for first, code in blocks:
        for k, line in enumerate(code.split("\\n")):
            lines[first - 1 + k] = line + "\\n"
    linecache.cache[page] = (sum(map(len, lines)), None, lines, page)  # tracebacks show the page's lines
    main = sys.modules["__main__"].__dict__
    del main["_lessonkit_run"]
    for n, (first, code) in enumerate(blocks, 1):
        sys.stdout.write("\\n" + mark + str(n) + "\\n")
        sys.stdout.flush()
        try:
            exec(compile("\\n" * (first - 1) + code, page, "exec", dont_inherit=True), main)
        except SystemExit:
            sys.stdout.flush()
            raise
        except BaseException as exc:
            sys.stdout.flush()
            traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
            sys.stderr.flush()
            sys.exit(1)
        sys.stdout.flush()
    sys.stdout.write("\\n" + mark + "end\\n")


_lessonkit_run()
'''


def mark_of(blocks: list[tuple[int, str]]) -> str:
    """The mark before each block's output: it carries a digest of the code, which no block prints."""
    digest = hashlib.sha256(repr(blocks).encode()).hexdigest()[:20]
    return f"\u27e6lessonkit {digest}\u27e7"


def driver(page: str, blocks: list[tuple[int, str]]) -> bytes:
    """The script that runs ``blocks`` ((page line of the code's first line, code), in page order)."""
    return DRIVER.format(page=page, mark=mark_of(blocks), blocks=blocks).encode("utf-8")


def split(stdout: str, blocks: list[tuple[int, str]]) -> tuple[list[str | None], bool]:
    """Every block's output (None: the block never started, or its mark was cut off with the end
    of a long output) and whether the end mark was written (every block ran to its end)."""
    mark = "\n" + mark_of(blocks)
    pieces = stdout.split(mark)
    out: list[str | None] = [None] * len(blocks)
    ended = False
    for piece in pieces[1:]:
        head, _, text = piece.partition("\n")
        if head == "end":
            ended = True
        elif head.isdigit() and 1 <= int(head) <= len(blocks):
            out[int(head) - 1] = text
    return out, ended


def end_mark_bytes(blocks: list[tuple[int, str]]) -> int:
    """The length of what the driver writes after the last block (part of a truncated count)."""
    return len(("\n" + mark_of(blocks) + "end\n").encode("utf-8"))
