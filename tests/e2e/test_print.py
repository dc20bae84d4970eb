"""The printed course: the print stylesheet, checked in Debian's Chromium with print media
emulated (computed styles and boxes), and the whole-course PDF that a build with
``LESSONKIT_PDF=1`` (``nox -s pdf``) prints from the site and merges with pypdf."""

from __future__ import annotations

import io
import os
import re
import unicodedata

import pytest
from support import ROOT, build_real_site
from test_site import Visit  # the browser and server fixtures come from conftest.py

from lessonkit.errors import LessonError
from lessonkit.integrations.mkdocs.hooks import nav_pages
from lessonkit.site import pdf as coursepdf
from lessonkit.site import pdffont

LESSON = "lessons/05-reverse-mode/"
PDF = "downloads/autograd-course.pdf"


def _print_view(browser, server, rel, width=1280, scheme="light"):
    v = Visit(browser, f"{server}/{rel}", width=width, scheme=scheme)
    v.page.emulate_media(media="print")
    return v


def test_code_and_output_wrap_on_paper_and_scroll_on_screen(server, browser):
    v = _print_view(browser, server, LESSON)
    boxes = v.page.evaluate(
        """() => [...document.querySelectorAll('.lk-output code, td.code pre > code')].map(c => ({
          ws: getComputedStyle(c).whiteSpace, over: c.scrollWidth - c.clientWidth, text: c.textContent.length}))"""
    )
    v.page.emulate_media(media="screen")
    screen = v.page.evaluate("() => getComputedStyle(document.querySelector('.lk-output code')).whiteSpace")
    v.close()
    assert len(boxes) > 10 and {b["ws"] for b in boxes} == {"pre-wrap"}, boxes[:3]
    assert [b for b in boxes if b["over"] > 1] == []  # nothing runs past the right edge
    assert screen == "pre"


def test_excerpt_line_numbers_stand_at_the_start_of_their_line_on_paper(built_site, server, browser):
    html = (built_site / LESSON / "index.html").read_text(encoding="utf-8")
    anchors = re.findall(r'<a id="([\w.-]+)-L(\d+)" name="\1-L\2"( data-ln="(\d+)")?></a>', html)
    assert len(anchors) > 100 and all(ln == n for _, n, _, ln in anchors), anchors[:3]
    v = _print_view(browser, server, LESSON)
    seen = v.page.evaluate(
        """() => {
          const a = document.querySelector('#src-backward_pass-L25');
          const next = a.nextElementSibling.getBoundingClientRect();
          const box = a.getBoundingClientRect();
          const number = parseFloat(getComputedStyle(a, '::before').width);
          const code = a.parentElement.getBoundingClientRect();
          return {
            column: getComputedStyle(document.querySelector('td.linenos')).display,
            first: getComputedStyle(a, '::before').content,
            last: getComputedStyle(document.querySelector('#src-backward_pass-L32'), '::before').content,
            shown: getComputedStyle(a, '::before').visibility, position: getComputedStyle(a).position,
            // the number hangs in the code's left padding, before the line's code, on its first row
            before_code: number > 10 && next.left - code.left > number && box.right <= next.left + 1
              && Math.abs(box.top - next.top) < 4,
          };
        }"""
    )
    v.page.emulate_media(media="screen")
    screen = v.page.evaluate(
        """() => [getComputedStyle(document.querySelector('td.linenos')).display,
                 getComputedStyle(document.querySelector('#src-backward_pass-L25'), '::before').content]"""
    )
    v.close()
    assert seen == {
        "column": "none",
        "first": '"25"',
        "last": '"32"',
        "shown": "visible",
        "position": "static",
        "before_code": True,  # on the line's first row, left of its code
    }, seen
    assert screen[0] != "none" and screen[1] == "none", screen  # the number column, as on screen


def test_a_wrapped_code_line_continues_past_its_line_number_on_paper(server, browser):
    v = _print_view(browser, server, LESSON, width=420)
    rows = v.page.evaluate(
        """() => [...document.querySelectorAll('td.code code a[data-ln]')].map(a => {
          const r = document.createRange();
          r.setStartAfter(a);
          const all = [...a.parentElement.querySelectorAll('a[data-ln]')];
          const next = all[all.indexOf(a) + 1];
          if (next) r.setEndBefore(next); else r.setEnd(a.parentElement, a.parentElement.childNodes.length);
          const rects = [...r.getClientRects()].filter(b => b.width > 0);
          const tops = [...new Set(rects.map(b => Math.round(b.top)))].sort((x, y) => x - y);
          const left = t => Math.min(...rects.filter(b => Math.round(b.top) === t).map(b => b.left));
          const number = parseFloat(getComputedStyle(a, '::before').width);
          return {rows: tops.length, first: left(tops[0]), rest: tops.slice(1).map(left),
                  lead: left(tops[0]) - a.parentElement.getBoundingClientRect().left, number};
        })"""
    )
    v.close()
    wrapped = [r for r in rows if r["rows"] > 1]
    assert len(wrapped) > 5, rows[:3]
    # every continued row starts where the line's code starts, right of the number
    assert [r for r in wrapped if abs(min(r["rest"]) - r["first"]) > 1 or r["lead"] <= r["number"]] == [], wrapped[:3]


def test_paper_is_white_in_the_dark_scheme_too(server, browser):
    v = _print_view(browser, server, LESSON, scheme="dark")
    seen = v.page.evaluate(
        """() => [document.body.getAttribute('data-md-color-scheme'),
                  getComputedStyle(document.documentElement).backgroundColor,
                  (window.dispatchEvent(new Event('beforeprint')), getComputedStyle(document.body).backgroundColor)]"""
    )
    v.close()
    # without the print script's switch the margins (the root's background) are white; with it, all is
    assert seen == ["slate", "rgb(255, 255, 255)", "rgb(255, 255, 255)"], seen


def test_folded_blocks_print_open_and_the_chrome_is_left_out(server, browser):
    v = _print_view(browser, server, LESSON)
    seen = v.page.evaluate(
        """() => {
          const d = document.querySelector('details.lk-script');
          const code = d.querySelector('td.code pre');
          const shown = sel => [...document.querySelectorAll(sel)].filter(e => e.getClientRects().length).length;
          return {open: d.open, height: code.getBoundingClientRect().height, visible: code.checkVisibility(),
                  hints: [...document.querySelectorAll('details:not([open]) > :not(summary)')]
                         .filter(e => e.getBoundingClientRect().height === 0).length,
                  copy: shown('button.md-code__button, .md-clipboard'),
                  nav: shown('.md-sidebar, .md-header, .md-footer'),
                  links: shown('.lk-links'), search: shown('.md-search')};
        }"""
    )
    v.page.emulate_media(media="screen")
    folded = v.page.evaluate("() => document.querySelector('details.lk-script td.code pre').checkVisibility()")
    v.close()
    assert seen["open"] is False and seen["visible"] and seen["height"] > 100, seen  # closed, its script shown
    assert seen["hints"] == 0, seen  # no closed block keeps its content hidden
    assert (seen["copy"], seen["nav"], seen["links"], seen["search"]) == (0, 0, 0, 0), seen
    assert folded is False  # on screen the script stays folded


def test_printing_opens_and_then_refolds_blocks_in_a_browser_without_details_content(server, browser):
    v = Visit(browser, f"{server}/{LESSON}")
    counts = v.page.evaluate(
        """() => {
          const closed = () => document.querySelectorAll('details:not([open])').length;
          const before = closed();
          window.dispatchEvent(new Event('beforeprint'));
          const during = closed();
          window.dispatchEvent(new Event('afterprint'));
          return [before, during, closed()];
        }"""
    )
    v.close()
    assert counts[0] > 3 and counts[1] == 0 and counts[2] == counts[0], counts


def test_the_default_build_makes_no_pdf_and_tells_the_reader_what_to_do_instead(built_site):
    """The reader of a site built without the PDF is told so, and what to do (the bundle, or print
    a page); a maintainer's command is no reader's business (README lists `nox -s pdf`)."""
    assert not (built_site / PDF).exists()
    home = (built_site / "index.html").read_text(encoding="utf-8")
    assert "这一版网站没有附带整本课程的 PDF" in home and f'href="{PDF}"' not in home
    assert "nox -s pdf" not in home


def test_pdf_options_are_checked(tmp_path, monkeypatch):
    from lessonkit.config import environment
    from lessonkit.config import site as siteconfig

    for value, on in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("LESSONKIT_PDF", value)
        assert environment.course_pdf() is on
    monkeypatch.setenv("LESSONKIT_PDF", "maybe")
    with pytest.raises(LessonError) as err:
        environment.course_pdf()
    assert str(err.value).startswith("LESSONKIT_PDF: 'maybe' is not 1 or 0")
    (tmp_path / "sourcemap").mkdir()
    toml = tmp_path / "sourcemap" / "site.toml"
    for text, message in (
        ('[bundle]\npath = "d/x.zip"\n\n[pdf]\npath = "course.html"\n', "sourcemap/site.toml:5: `path` in `[pdf]`"),
        ('[pdf]\npath = "../out.pdf"\n', "sourcemap/site.toml:2: `path` in `[pdf]`"),
        ('[pdf]\nskip = ["api"]\n', "sourcemap/site.toml:2: `skip` in `[pdf]` is not a list of pages"),
    ):
        toml.write_text(text, encoding="utf-8")
        with pytest.raises(LessonError) as err:
            siteconfig.load(tmp_path, "https://github.com/o/p")
        assert str(err.value).startswith(message), text
    toml.write_text("", encoding="utf-8")
    conf = siteconfig.load(tmp_path, "https://github.com/o/p")
    assert (conf.pdf_path, conf.pdf_skip) == ("downloads/p-course.pdf", ())


def test_a_radical_in_a_text_mapping_becomes_its_ideograph():
    import pypdf
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    cmap = "2 beginbfchar\n<94> <2F3C>\n<95> <6838>\nendbfchar\n1 beginbfrange\n<A0> <A2> <2EC4>\nendbfrange\n"
    writer = pypdf.PdfWriter()
    page = writer.add_blank_page(10, 10)
    stream = DecodedStreamObject()
    stream.set_data(cmap.encode("latin-1"))
    font = DictionaryObject(
        {NameObject("/Type"): NameObject("/Font"), NameObject("/ToUnicode"): writer._add_object(stream)}
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )
    equivalents = pdffont.radicals()
    assert (equivalents[0x2F3C], equivalents[0x2EC5]) == (ord("心"), ord("见"))  # NFKC, and the font's glyphs
    before = _mappings(cmap)
    assert pdffont.fix_text(writer, equivalents) == sum(1 for d in before.values() if d in equivalents)
    after = _mappings(stream.get_data().decode("latin-1"))
    assert after == {src: equivalents.get(dst, dst) for src, dst in before.items()}
    assert after[0x94] == ord("心") and after[0x95] == 0x6838 and after[0xA1] == ord("见")


def _mappings(cmap: str) -> dict[int, int]:
    """A ToUnicode map's code -> code point (bfchar and bfrange entries)."""
    out = {}
    for body in re.findall(r"beginbfchar(.*?)endbfchar", cmap, re.S):
        for src, dst in re.findall(r"<([0-9A-F]+)>\s*<([0-9A-F]+)>", body):
            out[int(src, 16)] = int(dst, 16)
    for body in re.findall(r"beginbfrange(.*?)endbfrange", cmap, re.S):
        for lo, hi, dst in re.findall(r"<([0-9A-F]+)>\s*<([0-9A-F]+)>\s*<([0-9A-F]+)>", body):
            for k in range(int(hi, 16) - int(lo, 16) + 1):
                out[int(lo, 16) + k] = int(dst, 16) + k
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The real site built with LESSONKIT_PDF=1, and its PDF read with pypdf."""
    import pypdf

    out = tmp_path_factory.mktemp("pdf-site") / "site"
    r = build_real_site(out, LESSONKIT_PDF="1")
    assert r.returncode == 0, r.stderr[-3000:]
    data = (out / PDF).read_bytes()
    return out, data, pypdf.PdfReader(io.BytesIO(data)), r.stderr


def _lesson_titles() -> list[str]:
    out = []
    for page in sorted((ROOT / "docs" / "lessons").glob("*.md")):
        out.append(re.search(r"^# (.+)$", page.read_text(encoding="utf-8"), re.M)[1].strip())
    return out


def test_the_course_pdf_has_every_page_of_the_navigation_in_order(course):
    site, data, reader, log = course
    from lessonkit.config import site as siteconfig

    nav = nav_pages(__import__("yaml").safe_load(_nav_yaml())["nav"])
    skip = set(siteconfig.load(ROOT, "https://github.com/HIPS/autograd").pdf_skip)
    printed = [p for p in nav if p not in skip]
    top = [
        (item.title, reader.get_destination_page_number(item)) for item in reader.outline if not isinstance(item, list)
    ]
    # the contents, then the home page, the 14 lessons, the attachments and the glossary: one bookmark each
    assert top[0] == ("目录", 0)
    outline = top[1:]
    assert len(outline) == len(printed) and {"index.md", "glossary.md"} <= set(printed)
    assert sum(p.startswith("lessons/") for p in printed) == 14 and len(printed) > 20
    assert outline[0][0] == "首页" and outline[0][1] > 0  # the navigation names the home page
    starts = [n for _, n in outline]
    assert starts == sorted(set(starts))  # every page of the site has pages of its own
    assert [t for t, _ in outline[1:15]] == _lesson_titles()
    pages = len(reader.pages)
    assert pages > 5 * len(printed)
    assert f"{len(printed)} page(s) of the site, {pages} PDF pages" in log  # the build says what it made
    assert reader.metadata["/CreationDate"] == "D:20251130000000Z"


def _nav_yaml() -> str:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return text[text.index("\nnav:") :].split("\nnot_in_nav:")[0]


def test_the_course_pdf_embeds_a_cjk_font_and_its_text_reads_back(course):
    site, data, reader, log = course
    cjk = []
    for page in reader.pages[:40]:
        for ref in ((page.get("/Resources") or {}).get("/Font") or {}).values():
            font = ref.get_object()
            cmap = font.get("/ToUnicode")
            embedded = "/CharProcs" in font or any(
                k in (d.get_object().get("/FontDescriptor") or {})
                for d in font.get("/DescendantFonts") or []
                for k in ("/FontFile", "/FontFile2", "/FontFile3")
            )
            if cmap is not None and embedded:
                codes = re.findall(r"<([0-9A-F]{4})>\s*\n", cmap.get_object().get_data().decode("latin-1") + "\n")
                if any(0x4E00 <= int(c, 16) <= 0x9FFF for c in codes):
                    cjk.append(font)
    assert cjk  # the glyphs of the Chinese text are in the file
    text = unicodedata.normalize("NFC", "".join(p.extract_text() for p in reader.pages))
    assert [c for c in text if 0x2E80 <= ord(c) <= 0x2FDF] == []  # no radical stands for an ideograph
    flat = re.sub(r"\s+", "", text)
    missing = [t for t in _lesson_titles() if re.sub(r"\s+", "", t) not in flat]
    assert missing == []
    assert "defwatched_toposort(end_node):" in flat  # lesson 05's folded script, printed open


def test_the_course_pdf_links_lead_inside_it(course, tmp_path):
    site, data, reader, log = course
    home = (site / "index.html").read_text(encoding="utf-8")
    assert f'href="{PDF}"' in home and "nox -s pdf" not in home
    starts = {
        item.title: reader.get_destination_page_number(item) for item in reader.outline if not isinstance(item, list)
    }
    number = {page.indirect_reference.idnum: n for n, page in enumerate(reader.pages)}
    uris, dests = [], []
    for page in reader.pages[: starts[_lesson_titles()[0]]]:  # the home page's links
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            if "/A" in annot:
                uris.append(str(annot["/A"].get("/URI")))
            elif "/Dest" in annot:
                dests.append(number[annot["/Dest"][0].idnum])
    assert [u for u in uris if "127.0.0.1" in u or "localhost" in u] == []
    assert starts[_lesson_titles()[0]] in dests and starts[_lesson_titles()[-1]] in dests
    again = coursepdf.merge(coursepdf.print_pages(site, [("", "home")]), "t", "D:20251130000000Z")[0]
    assert again == coursepdf.merge(coursepdf.print_pages(site, [("", "home")]), "t", "D:20251130000000Z")[0]
    assert os.environ.get("LESSONKIT_PDF") is None  # the fixture's build did not leak its option


def test_a_missing_chromium_is_one_line_naming_the_option(tmp_path, monkeypatch):
    monkeypatch.setattr(coursepdf.shutil, "which", lambda name: None)
    monkeypatch.setattr(coursepdf, "FALLBACK", tmp_path / "chromium")
    with pytest.raises(LessonError) as err:
        coursepdf.chromium()
    assert str(err.value) == (
        "LESSONKIT_PDF: the course PDF needs Chromium, and none was found — "
        "apt-get install chromium fonts-noto-cjk (or build without LESSONKIT_PDF)"
    )


def _fonts(resources, depth=0):
    """Every font of a page's resources and of the forms it draws."""
    resources = resources.get_object() if resources is not None else None
    if not resources or depth > 8:
        return
    yield from ((resources.get("/Font") or {}).values())
    for xobject in (resources.get("/XObject") or {}).values():
        form = xobject.get_object()
        if form.get("/Subtype") == "/Form":
            yield from _fonts(form.get("/Resources"), depth + 1)


def test_the_course_pdf_has_no_type3_font_and_embeds_chinese_as_a_truetype_subset(course):
    site, data, reader, log = course
    kinds: dict[str, set] = {}
    for page in reader.pages:
        for ref in _fonts(page.get("/Resources")):
            font = ref.get_object()
            descendants = [d.get_object()["/Subtype"] for d in font.get("/DescendantFonts") or []]
            kinds.setdefault(font["/Subtype"], set()).update(descendants)
            if str(font.get("/BaseFont", "")).endswith("NotoSansCJKsc-Regular"):
                kinds.setdefault("cjk", set()).update(descendants)
    assert "/Type3" not in kinds, sorted(kinds)
    assert kinds["cjk"] == {"/CIDFontType2"}  # Chinese: a subset CID font with TrueType outlines
    assert len(data) <= 8 * 2**20, len(data)


def _section_titles(site, url):
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser((site / url / "index.html").read_text(encoding="utf-8"))
    out = []
    for h2 in tree.css("article h2"):
        for link in h2.css("a.headerlink"):
            link.decompose()
        out.append(" ".join("".join(c for c in h2.text() if unicodedata.category(c) != "Cf").split()))
    return out


def test_the_course_pdf_bookmarks_each_lesson_with_its_sections(course):
    site, data, reader, log = course
    items = list(reader.outline)
    at = next(n for n, item in enumerate(items) if not isinstance(item, list) and item.title.startswith("05 "))
    lesson, sections = items[at], items[at + 1]
    assert isinstance(sections, list)
    top = [s for s in sections if not isinstance(s, list)]
    titles = _section_titles(site, LESSON)
    assert [s.title for s in top] == titles and len(titles) > 8, [s.title for s in top]
    assert titles[:2] == ["本篇目标", "数学：反向累积"]
    pages = [reader.get_destination_page_number(s) for s in top]
    start = reader.get_destination_page_number(lesson)
    assert pages == sorted(pages) and pages[0] == start, (start, pages)


def test_the_printed_contents_give_the_page_each_bookmark_leads_to(course):
    site, data, reader, log = course
    items = list(reader.outline)
    top = [i for i in items if not isinstance(i, list)]
    toc_pages = reader.get_destination_page_number(top[1])  # the contents end where the home page starts
    assert top[0].title == "目录" and toc_pages >= 1
    expected = []
    for n, item in enumerate(items[1:], 1):
        if isinstance(item, list):
            continue
        expected.append((item.title, reader.get_destination_page_number(item) + 1))
        if n + 1 < len(items) and isinstance(items[n + 1], list):
            expected += [
                (s.title, reader.get_destination_page_number(s) + 1) for s in items[n + 1] if not isinstance(s, list)
            ]
    number = {page.indirect_reference.idnum: n for n, page in enumerate(reader.pages)}
    printed, links = [], []
    for page in reader.pages[:toc_pages]:
        for line in page.extract_text().splitlines():
            m = re.fullmatch(r"(.+?)\s*(\d+)", line.strip())
            if m:
                printed.append((re.sub(r"\s+", "", m[1]), int(m[2])))
        links += [number[ref.get_object()["/Dest"][0].idnum] + 1 for ref in page.get("/Annots") or []]
    assert printed == [(re.sub(r"\s+", "", t), p) for t, p in expected], (printed[:5], expected[:5])
    assert links == [p for _, p in expected]  # each entry is a link to the page it names


def test_the_home_page_gives_the_course_pdf_size(course):
    from selectolax.lexbor import LexborHTMLParser

    site, data, reader, log = course
    tree = LexborHTMLParser((site / "index.html").read_text(encoding="utf-8"))
    (size,) = tree.css("span.lk-course-pdf data.lk-pdf-size")
    assert (size.text(), size.attributes["value"]) == (f"{len(data) / 2**20:.1f} MiB", str(len(data)))


def test_the_print_font_is_a_truetype_subset_of_the_system_cjk_font_with_the_same_bytes_each_time():
    from fontTools.ttLib import TTFont

    found = pdffont.system_cjk_font(False)
    assert found is not None
    codes = {ord(c) for c in "反向模式的核心，“”…"}
    data = pdffont.truetype_subset(*found, codes)
    assert data == pdffont.truetype_subset(*found, codes)
    font = TTFont(io.BytesIO(data))
    assert ("glyf" in font, "CFF " in font, set(font.getBestCmap())) == (True, False, codes)
    style = pdffont.print_style({400: data})
    (ranges,) = re.findall(r"unicode-range: ([^;]+);", style)
    covered = set()
    for lo, hi in re.findall(r"U\+([0-9A-F]+)-([0-9A-F]+)", ranges):
        covered.update(range(int(lo, 16), int(hi, 16) + 1))
    assert covered == codes and "U+201C-201D, U+2026-2026" in ranges  # what the font has, nothing more


def test_rounding_a_content_stream_touches_only_coordinates():
    stream = b"1.23456 -2.5 m\n.2 .3 .4 rg\n1 0 0 -1 12.345678 9 Tm\n3.14159 0 Td <0001> Tj\n-.004 0 10.999 1 re\n"
    assert pdffont.round_paths(stream) == (
        b"1.23 -2.5 m\n.2 .3 .4 rg\n1 0 0 -1 12.345678 9 Tm\n3.14 0 Td <0001> Tj\n0 0 11 1 re\n"
    )
