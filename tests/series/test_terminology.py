"""One spelling per term: the glossary's 「写法约定」 table is the single source.

docs/glossary.md has a section ``{#spelling}`` whose table gives, for each term with more
than one spelling in circulation, the one the series writes (正文写法) and the ones it does
not (不用的写法, separated by 、). This test reads that table and reports ``path:line`` for
every use of a non-preferred spelling in the prose of docs/: code (fenced blocks, inline
code), math, link targets, inline references and HTML are not prose. Two kinds of text name
a term's translations on purpose and are not scanned: the 中文 / English / 首次介绍 columns
of the glossary's own tables (their 定义 column is), and the name part of each hover
explanation in docs/includes/abbreviations.md (``*[tangent]: 切向量：`` — its text after the
name is). Annotation blocks are read as the reader sees them: a snapshot's or figure's
title, caption and cells are prose; a real-source, teaching or experiment block shows only
its ``Title:`` / ``Purpose:`` as prose.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GLOSSARY = DOCS / "glossary.md"
ABBREVIATIONS = DOCS / "includes" / "abbreviations.md"

FENCE = re.compile(r"^\s*(?P<mark>`{3,}|~{3,})(?P<info>.*)$")
PROSE_BLOCKS = {"snapshot", "figure"}  # every line shown is text
HEADED_BLOCKS = {"real-source", "teaching-simplification", "experiment"}  # only these keys are text
PROSE_KEYS = {"Title", "Caption", "Purpose", "Label"}
NOT_PROSE = [
    re.compile(r"(`+)(?:(?!\1).)+\1"),  # inline code, any number of backticks
    re.compile(r"\[\[.*?\]\]"),  # [[line: …]] / [[value: …]]
    re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$"),  # math
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"\{[#.@][^}]*\}"),  # attribute lists and snapshot checks {@key = …}
    re.compile(r"@[A-Za-z0-9_.\-]+"),  # snapshot cells generated from a record key
    re.compile(r"<[^>\n]+>"),  # HTML tags
    re.compile(r"https?://\S+"),
]


def spelling_table(text: str) -> list[tuple[str, list[str], int]]:
    """(preferred, variants, line) for each row of the glossary's {#spelling} table."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("## ") and "{#spelling}" in l), None)
    assert start is not None, "docs/glossary.md has no section {#spelling}"
    rows, header = [], None
    for i in range(start + 1, len(lines)):
        l = lines[i]
        if l.startswith("## "):
            break
        if not l.startswith("|"):
            if header is not None and rows:
                break
            continue
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if header is None:
            header = cells
            assert cells[:2] == ["正文写法", "不用的写法"], cells
            continue
        if set(l) <= set("|-: "):
            continue
        preferred = cells[0].strip("`")
        variants = [v.strip().strip("`") for v in cells[1].split("、") if v.strip()]
        rows.append((preferred, variants, i + 1))
    return rows


def variant_pattern(variant: str) -> re.Pattern:
    """A Latin-script variant matches as a whole word (``node``, not ``VJPNode`` or ``end_node``)."""
    if re.search(r"[A-Za-z]", variant):
        return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(variant) + r"(?![A-Za-z0-9_])")
    return re.compile(re.escape(variant))


def prose_lines(path: Path, text: str):
    """(line number, prose text) for every line of a docs page, as the reader reads it."""
    lines = text.split("\n")
    fence = None  # (mark, kind, in_body)
    in_comment = in_math = False
    is_glossary, is_abbr = path == GLOSSARY, path == ABBREVIATIONS
    in_spelling = False
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is not None:
            mark, kind, in_body = fence
            if m and m["mark"][0] == mark[0] and len(m["mark"]) >= len(mark) and not m["info"].strip():
                fence = None
                continue
            if not line.strip():
                fence = (mark, kind, True)
                continue
            if kind in PROSE_BLOCKS or kind in HEADED_BLOCKS:
                key = re.match(r"^\s*([A-Z][A-Za-z-]*):\s*(.*)$", line)
                if not in_body and key:
                    if key[1] in PROSE_KEYS:
                        yield n, key[2]
                elif kind in PROSE_BLOCKS and in_body:
                    yield n, line
            continue
        if m:
            info = re.sub(r"[{}.]", " ", m["info"]).split()
            fence = (m["mark"], info[0] if info else "", False)
            continue
        if in_comment:
            if "-->" in line:
                in_comment = False
                line = line.split("-->", 1)[1]
            else:
                continue
        if "<!--" in line:
            before, _, after = line.partition("<!--")
            in_comment = "-->" not in after
            line = before + (after.split("-->", 1)[1] if not in_comment else "")
        if line.strip() == "$$":
            in_math = not in_math
            continue
        if in_math:
            continue
        if is_glossary:
            if line.startswith("## "):
                in_spelling = "{#spelling}" in line
            if in_spelling:
                continue
            if line.startswith("|"):
                cells = line.strip().strip("|").split("|")
                line = cells[2] if len(cells) >= 4 else ""
        if is_abbr and line.startswith("*["):
            line = line.split("：", 1)[1] if "：" in line else ""
        yield n, line


def strip_non_prose(line: str) -> str:
    for pattern in NOT_PROSE:
        line = pattern.sub(" ", line)
    return line


def misspellings(path: Path, text: str, rows) -> list[str]:
    patterns = [(variant_pattern(v), v, preferred) for preferred, variants, _ in rows for v in variants]
    found = []
    for n, line in prose_lines(path, text):
        prose = strip_non_prose(line)
        for pattern, variant, preferred in patterns:
            if pattern.search(prose):
                found.append(f"{path.relative_to(ROOT)}:{n}: `{variant}` — the glossary writes `{preferred}`")
    return found


ROWS = spelling_table(GLOSSARY.read_text(encoding="utf-8"))
# The site's pages, in Chinese; docs/dev/ is the engine's English documentation, not on the site
PAGES = sorted(p for p in DOCS.rglob("*.md") if "dev" not in p.relative_to(DOCS).parts[:1])


def test_the_glossary_declares_the_spellings():
    assert len(ROWS) >= 5
    for preferred, variants, line in ROWS:
        assert preferred and variants, f"docs/glossary.md:{line}: a row needs a spelling and its variants"
        for v in variants:
            assert not variant_pattern(v).search(preferred), f"docs/glossary.md:{line}: `{v}` is inside `{preferred}`"


def test_the_scan_finds_a_variant_in_prose_only(tmp_path):
    rows = [("节点", ["node"], 1), ("tangent", ["切向量"], 2)]
    page = DOCS / "lessons" / "99-example.md"
    text = "\n".join(
        [
            "一个 node 在这里。",  # 1: prose
            "`node` 与 `VJPNode`、end_node、[节点](x.md#node) 都不算。",  # 2: code, identifiers, a link target
            "```python",
            "node = 切向量",  # 4: code
            "```",
            "```figure",
            "Caption: 切向量随值前进。",  # 7: a caption is prose
            "```",
            "??? tip",
            "",
            "    缩进的提示里的切向量也是正文。",  # 11: admonition text
        ]
    )
    found = misspellings(page, text, rows)
    assert [f.split(":")[1] for f in found] == ["1", "7", "11"], found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_use_the_glossary_spellings(page):
    found = misspellings(page, page.read_text(encoding="utf-8"), ROWS)
    assert not found, "\n".join(found)
