"""Worked answers of the self-tests: one folded answer per question, citing the pinned source.

Every self-test question of lessons 01–13 and of the walkthrough has exactly one folded
「参考答案」 block after its folded hint, and every answer cites the pinned source (an inline
``[[line: …]]`` reference or a real-source block). The source self-test attachment stays
without answers; its answers live on their own page, one per question, with the same questions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LESSONS = sorted(p for p in (DOCS / "lessons").glob("[0-9][0-9]-*.md") if int(p.name[:2]) <= 13)
SELF_TEST = DOCS / "attachments" / "self-test.md"
ANSWERS = DOCS / "attachments" / "self-test-answers.md"

HINT = '??? tip "提示"'
ANSWER = '??? success "参考答案"'
NUMBERED = re.compile(r"^(\d+)\. ")  # a question of a lesson's (or the walkthrough's) self-test
LETTERED = re.compile(r"^- \*\*Q(\d+)\.\*\* ")  # a question of the source self-test attachment
SOURCE_REF = re.compile(r"\[\[line: |^\s*```real-source\b", re.M)  # verify checks each reference resolves


def questions(text: str, pattern: re.Pattern, section: str | None = None) -> list[tuple[int, list[str]]]:
    """(number, lines) of every question: from its line to the next question or the section's end."""
    lines = text.split("\n")
    start = 0
    if section is not None:
        start = next(i for i, l in enumerate(lines) if l.startswith(section))
    starts = [i for i in range(start, len(lines)) if pattern.match(lines[i])]
    out = []
    for k, i in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        j = i + 1
        while j < end and not (lines[j].startswith("## ") or lines[j].startswith("[← ") or lines[j] == "---"):
            j += 1
        out.append((int(pattern.match(lines[i])[1]), lines[i:j]))
    return out


def folded(block: list[str], head: str) -> list[str]:
    """The bodies of the folded blocks ``head`` in a question's lines (indented under the list item)."""
    bodies = []
    for i, line in enumerate(block):
        if line.strip() == head:
            indent = len(line) - len(line.lstrip())
            body = []
            for l in block[i + 1 :]:
                if l.strip() and len(l) - len(l.lstrip()) <= indent:
                    break
                body.append(l)
            bodies.append("\n".join(body).strip())
    return bodies


def problems(text: str, pattern: re.Pattern, section: str | None, need_hint: bool) -> list[str]:
    """What is wrong with a page's questions and answers (an empty list: nothing)."""
    found = []
    qs = questions(text, pattern, section)
    if not qs:
        return ["no self-test questions found"]
    for number, block in qs:
        answers = folded(block, ANSWER)
        if len(answers) != 1:
            found.append(f"Q{number}: {len(answers)} 参考答案 blocks, expected 1")
            continue
        if not answers[0]:
            found.append(f"Q{number}: the 参考答案 block is empty")
        elif not SOURCE_REF.search(answers[0]):
            found.append(f"Q{number}: the answer cites no source ([[line: …]] or a real-source block)")
        if need_hint:
            heads = [l.strip() for l in block if l.strip() in (HINT, ANSWER)]
            if heads != [HINT, ANSWER]:
                found.append(f"Q{number}: expected one hint, then the answer; found {heads}")
    numbers = [n for n, _ in qs]
    if numbers != list(range(1, len(numbers) + 1)):
        found.append(f"questions numbered {numbers}")
    return found


def test_there_are_thirteen_lessons_with_a_self_test():
    assert [p.name[:2] for p in LESSONS] == [f"{n:02d}" for n in range(1, 14)]


@pytest.mark.parametrize("page", LESSONS + [DOCS / "walkthrough.md"], ids=lambda p: p.name)
def test_each_self_test_question_has_one_answer_citing_the_source(page):
    assert problems(page.read_text(encoding="utf-8"), NUMBERED, "## 自测问题", need_hint=True) == []


def test_the_source_self_test_keeps_no_answers_and_links_the_answers_page():
    text = SELF_TEST.read_text(encoding="utf-8")
    qs = questions(text, LETTERED)
    assert [n for n, _ in qs] == list(range(1, 31))
    assert "参考答案\"" not in text and all(folded(block, ANSWER) == [] for _, block in qs)
    assert all(len(folded(block, HINT)) == 1 for _, block in qs)  # each question still has its hint
    assert "](self-test-answers.md)" in text.split("## 14 ")[-1]  # the link is at the end of the page


def test_the_answers_page_answers_every_source_self_test_question():
    text = ANSWERS.read_text(encoding="utf-8")
    assert problems(text, LETTERED, None, need_hint=False) == []
    asked = {n: block[0] for n, block in questions(SELF_TEST.read_text(encoding="utf-8"), LETTERED)}
    answered = {n: block[0] for n, block in questions(text, LETTERED)}
    assert answered == asked  # the same 30 questions, word for word
    assert "File: experiments/self_test_answers.py" in text  # the experiment its numbers come from


def test_the_answers_page_follows_the_self_test_in_the_nav():
    nav = [l.strip() for l in (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\n")]
    i = nav.index("- attachments/self-test.md")
    assert nav[i + 1] == "- attachments/self-test-answers.md"


def test_the_check_fails_when_an_answer_is_removed_or_cites_nothing():
    page = LESSONS[4]  # 05
    text = page.read_text(encoding="utf-8")
    lines = text.split("\n")
    at = lines.index("    " + ANSWER)  # the first question's answer
    end = next(i for i in range(at + 2, len(lines)) if lines[i].strip() and not lines[i].startswith("        "))
    removed = "\n".join(lines[:at] + lines[end:])
    assert problems(removed, NUMBERED, "## 自测问题", need_hint=True) == ["Q1: 0 参考答案 blocks, expected 1"]
    uncited = "\n".join(lines[: at + 1] + [l.replace("[[line: ", "[line: ") for l in lines[at + 1 : end]] + lines[end:])
    assert problems(uncited, NUMBERED, "## 自测问题", need_hint=True) == [
        "Q1: the answer cites no source ([[line: …]] or a real-source block)"
    ]
    doubled = "\n".join(lines[:end] + lines[at - 1 : end] + lines[end:])
    assert problems(doubled, NUMBERED, "## 自测问题", need_hint=True)[0] == "Q1: 2 参考答案 blocks, expected 1"
    answers = ANSWERS.read_text(encoding="utf-8")
    a = answers.split("\n")
    q7 = a.index(next(l for l in a if l.startswith("- **Q7.** ")))
    head = next(i for i in range(q7, len(a)) if a[i].strip() == ANSWER)
    assert problems("\n".join(a[:head] + ["    x"] + a[head + 1 :]), LETTERED, None, need_hint=False) == [
        "Q7: 0 参考答案 blocks, expected 1"
    ]
