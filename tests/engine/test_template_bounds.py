"""A template of ``templates/`` (contributed content) makes no value longer than a page may be:
string methods, ``%`` formats and filters that would build one are stopped before they build it,
with one located line, in well under a second and without the memory."""

from __future__ import annotations

import time

import pytest

from lessonkit.config import templates
from lessonkit.errors import LessonError

PROBES = {
    "center": "{{ 'x'.center(10**9) }}",
    "center-filter": "{{ 'x'|center(10**9) }}",
    "zfill": "{{ 'x'.zfill(10**9) }}",
    "ljust": "{{ 'x'.ljust(10**9) }}",
    "percent": "{{ '%1000000000s' % 'x' }}",
    "format-filter": "{{ '%1000000000s'|format('x') }}",
    "replace": "{{ ('a' * 4000).replace('', 'b' * 5000) }}",
    "join": "{{ (['y' * 1000000] * 100)|join }}",
    "join-method": "{{ ''.join(['y' * 1000000] * 100) }}",
    "indent": "{{ ('a\\n' * 1000000)|indent(10**6) }}",
    "batch": "{{ range(10)|batch(10**9, 'x')|list }}",
    "slice": "{{ range(10)|slice(100000000)|list }}",
    "wordwrap": "{{ ('x ' * 1000000)|wordwrap(1, wrapstring='y' * 1000) }}",
    "replace-filter": "{{ ('a' * 4000)|replace('', 'b' * 5000) }}",
    "concat-doubling": (
        "{% set ns = namespace(s='x' * 1000) %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
    ),
    "concat-print": "{% set ns = namespace(s='x' * 9000000) %}{{ ns.s ~ ns.s }}",
    "set-block": "{% set s %}{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}{% endset %}{{ s|length }}",
    "macro-output": (
        "{% macro m() %}{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}{% endmacro %}{{ m()|length }}"
    ),
    "int-squaring": (
        "{% set ns = namespace(n=3) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n }}"
    ),
    "nested-print": (
        "{% set ns = namespace(a='z' * 1000000) %}{% set ns.b = [ns.a] * 64 %}{% set ns.c = [ns.b] * 64 %}{{ ns.c }}"
    ),
    "nested-string": "{% set ns = namespace(a='z' * 1000000) %}{% set ns.b = [ns.a] * 64 %}{{ ([ns.b] * 64)|string }}",
    "nested-tojson": "{% set ns = namespace(a='z' * 1000000) %}{% set ns.b = [ns.a] * 64 %}{{ ([ns.b] * 64)|tojson }}",
    "urlencode": "{{ ('x' * 16000000)|urlencode }}",
    "escape": "{{ ('&' * 5000000)|e }}",
    "int-power": "{% set ns = namespace(n=7 ** 100) %}{% for i in range(5) %}{% set ns.n = ns.n ** 100 %}{% endfor %}",
}


@pytest.fixture
def env(tmp_path):
    (tmp_path / "templates").mkdir()

    def render(name: str, source: str) -> LessonError:
        (tmp_path / "templates" / f"{name}.md").write_text("# t\n\n" + source + "\n", encoding="utf-8")
        t0 = time.process_time()
        with pytest.raises(LessonError) as exc:
            templates.render(templates.environment(tmp_path), f"{name}.md")
        assert time.process_time() - t0 < 2.0
        return exc.value

    return render


@pytest.mark.parametrize("name", sorted(PROBES))
def test_a_value_longer_than_a_page_is_one_line_at_its_template_line(env, name):
    err = env(name, PROBES[name])
    message = str(err)
    assert message.startswith(f"templates/{name}.md:3: template `{name}.md`: "), message
    assert "longer than" in message or "wider than" in message or "more than" in message, message
    assert "\n" not in message


def test_ordinary_uses_still_render(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "ok.md").write_text(
        "{{ 'ab'.center(6) }}|{{ '%5s' % 'x' }}|{{ ['a', 'b']|join(', ') }}|{{ 'x\\ny'|indent(2) }}|"
        "{{ range(5)|batch(2)|list }}|{{ range(4)|slice(2)|list }}|{{ 'aXa'.replace('X', 'Y') }}|"
        "{{ range(3)|map('string')|join('-') }}|{{ 'a b c'|wordwrap(1) }}|{{ 'aXa'|replace('X', 'Y') }}|"
        "{{ 'a' ~ 1 ~ 'b' }}|{% set s %}[{{ 'q' * 3 }}]{% endset %}{{ s }}|{% macro m(x) %}<{{ x }}>{% endmacro %}"
        "{{ m(2) }}|{{ 2 ** 64 * 3 }}\n",
        encoding="utf-8",
    )
    out = templates.render(templates.environment(tmp_path), "ok.md")
    assert out == (
        "  ab  |    x|a, b|x\n  y|[[0, 1], [2, 3], [4]]|[[0, 1], [2, 3]]|aYa|0-1-2|a\nb\nc|aYa|a1b|[qqq]|<2>|"
        "55340232221128654848\n"
    )
