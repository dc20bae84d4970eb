"""Moving a pin ends green: ``lessonkit repin TARGET --apply`` moves the pin even where the target
changed what blocks show, rewrites what it can prove only moved, and gives one located line per
block that needs the author, with the old and new text; after the author's edits,
``verify --update-map`` and ``verify`` pass at the new pin. Over the tiny package, moved to a
0.2.0 tree made in the test."""

from __future__ import annotations

import textwrap

from tinypin import SOURCES

from lessonkit.cli.main import main as cli
from lessonkit.source.pin import load_pin

TARGET_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
HEADER = "# tiny 0.2.0 adds two comment lines\n# at the top of core.py\n"

PAGE = """\
# Moving

```real-source
File: tiny/core.py
Symbol: Node.__init__
Lines: 9-12
Commit: 0123456
```

```real-source
File: tiny/core.py
Symbol: backward
Commit: 0123456
```

```real-source
File: tiny/core.py
Symbol: Node.__repr__
Commit: 0123456

def __repr__(self):
    return f"Node({self.value})"
```
"""


def _target(tmp_path):
    """tiny 0.2.0: every line of core.py two lower, `backward` seeds 2.0, `__repr__` says `value=`."""
    tree = tmp_path / "tiny-0.2.0"
    for rel, text in SOURCES.items():
        if rel == "tiny/core.py":
            text = HEADER + text.replace("out.grad = 1.0", "out.grad = 2.0").replace(
                'return f"Node({self.value})"', 'return f"Node(value={self.value})"'
            )
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text, encoding="utf-8")
    (tree / "pyproject.toml").write_text('[project]\nname = "tiny"\nversion = "0.2.0"\n', encoding="utf-8")
    return tree


def test_an_applied_repin_lists_what_needs_the_author_and_ends_green_after_the_edits(tiny, tmp_path, capsys):
    page = tiny.page("p.md", PAGE)
    root = ["--root", str(tiny.root)]
    assert cli([*root, "verify", "--update-map"]) == 0
    tree = _target(tmp_path)
    capsys.readouterr()

    code = cli([*root, "repin", str(tree), "--commit", TARGET_COMMIT, "--apply", "--html", str(tmp_path / "r.html")])
    out = capsys.readouterr().out
    assert code == 1  # the pin moved; two blocks wait for the author
    pin = load_pin(tiny.root / "sourcemap")
    assert (pin.version, pin.commit) == ("0.2.0", TARGET_COMMIT)
    text = page.read_text(encoding="utf-8")
    assert "Lines: 11-14" in text and "Lines: 9-12" not in text  # only moved: rewritten
    assert text.count(f"Commit: {TARGET_COMMIT[:7]}") == 3
    todo = out[out.index("for the author:") :].splitlines()
    assert todo[0] == "for the author: 2 item(s) need an edit or a review at tiny 0.2.0 (fedcba9):"
    assert todo[1].startswith(
        "docs/p.md:10: real-source tiny/core.py::backward is changed at tiny 0.2.0 (fedcba9) (L18-27 → L20-29, "
        "2 line(s) differ) — the code it shows changed: "
    )
    assert "    -    out.grad = 1.0" in todo and "    +    out.grad = 2.0" in todo
    repr_line = next(l for l in todo if l.startswith("docs/p.md:16: "))
    assert "real-source tiny/core.py::Node.__repr__ is changed at tiny 0.2.0 (fedcba9)" in repr_line
    assert "verify at tiny 0.2.0 (fedcba9) finds 1 problem(s) until then:" in todo
    assert any(l.startswith("docs/p.md:22: ") and "not verbatim" in l for l in todo), todo
    assert todo[-1].startswith("then: `lessonkit verify --update-map` records the new excerpts")
    assert cli([*root, "verify"]) == 1  # the quoted body still shows the old code

    # the author makes the quoted block say what the new code says
    page.write_text(text.replace('return f"Node({self.value})"', 'return f"Node(value={self.value})"'), "utf-8")
    assert cli([*root, "verify", "--update-map"]) == 0
    capsys.readouterr()
    assert cli([*root, "verify"]) == 0
    assert "against tiny 0.2.0 (fedcba9, " in capsys.readouterr().out
    assert textwrap.dedent(page.read_text(encoding="utf-8")).count("Node(value=") == 1
