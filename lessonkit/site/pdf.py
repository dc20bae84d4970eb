"""The whole course as one PDF, printed from the written site by headless Chromium.

A build makes it when ``LESSONKIT_PDF`` is set (``nox -s pdf``), after every page is written:
each page of the navigation, in its order, except those ``[pdf] skip`` of ``site.toml`` names,
is loaded from a local server of the site directory and printed with Playwright's
``page.pdf`` (the print stylesheet of lessonkit.css: code and output wrap, folded blocks open,
no navigation); pypdf joins the pages' PDFs into ``[pdf] path`` with one outline entry per page.
The links between the printed pages lead inside the PDF (to the anchor, where the page has
it); links to other pages of the site are removed, since the local server they name is gone;
links to other sites stay.

The print font (a TrueType copy of the system's CJK font), one font file for all pages, and the
text mappings that make the PDF searchable are :mod:`lessonkit.site.pdffont`'s.

Optional: it needs Playwright, pypdf and a Chromium (``nox -s pdf`` installs the first two);
nothing here is imported by a build without ``LESSONKIT_PDF``.
"""

from __future__ import annotations

import functools
import http.server
import io
import shutil
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

from lessonkit.errors import LessonError
from lessonkit.site.pdffont import (
    LATIN,
    PRINT_FAMILY,
    fix_text,
    print_fonts,
    print_style,
    radicals,
    round_paths,
    share_fonts,
    used_characters,
)

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-quic"]
MARGIN = {"top": "14mm", "bottom": "14mm", "left": "13mm", "right": "13mm"}  # A4
LINK_CLASS = "lk-course-pdf"  # the span around the home page's link to the PDF (not printed)
SIZE_CLASS = "lk-pdf-size"  # the <data> the build fills with the PDF's size (value: its bytes)
SIZE_PLACEHOLDER = f'<data class="{SIZE_CLASS}" value="0">?</data>'


def fill_size(html: str, n: int) -> str:
    """A written page with the PDF's size (``n`` bytes) in the placeholder its link wrote."""
    return html.replace(SIZE_PLACEHOLDER, f'<data class="{SIZE_CLASS}" value="{n}">{n / 2**20:.1f} MiB</data>')


@dataclass(frozen=True)
class Part:
    """One printed page of the site: its URL (site-relative, "" for the home page), its title
    (the outline entry) and its PDF."""

    url: str
    title: str
    pdf: bytes
    base: str = ""  # the address the page was printed from (its links to the site start with it)
    headings: tuple[tuple[int, str, str], ...] = ()  # (level, id, text) of its sections (:func:`headings`)


FALLBACK = Path("/usr/bin/chromium")


def chromium() -> str:
    """The Chromium to print with (Debian's; Playwright downloads none here)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and FALLBACK.exists():
        found = str(FALLBACK)
    if found is None:
        raise LessonError(
            "the course PDF needs Chromium, and none was found",
            path="LESSONKIT_PDF",
            hint="apt-get install chromium fonts-noto-cjk (or build without LESSONKIT_PDF)",
        )
    return found


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def print_pages(
    site_dir: Path, pages: list[tuple[str, str]], executable: str | None = None, style: str = ""
) -> list[Part]:
    """Print each ``(url, title)`` of ``pages`` from ``site_dir`` (A4, backgrounds on, with the
    headings' outline), as many at a time as there are cores; ``style``: CSS added to each page
    before it is printed (:func:`print_style`)."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        raise LessonError(
            "the course PDF needs Playwright, which is not installed",
            path="LESSONKIT_PDF",
            hint="pip install playwright pypdf (and a Chromium), or build without LESSONKIT_PDF",
        ) from None
    import asyncio

    handler = functools.partial(_Quiet, directory=str(site_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    executable = executable or chromium()
    out: list = []

    def run() -> None:  # a thread of its own: the caller may be inside an event loop (Playwright's sync API)
        try:
            out.append(asyncio.run(_print_all(base, pages, executable, style)))
        except BaseException as exc:  # handed to the caller
            out.append(exc)

    try:
        worker = threading.Thread(target=run, name="lessonkit-pdf")
        worker.start()
        worker.join()
    finally:
        httpd.shutdown()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


PAGE_SECONDS = 300  # one page's load and print; past it the build reports the page instead of waiting


async def one(page, url: str, style: str = "", html: str | None = None) -> bytes:
    """Load ``url`` (or set ``html`` as the page), add ``style``, wait for its fonts, print."""
    if html is None:
        await page.goto(url, wait_until="load")
    else:
        await page.set_content(html, wait_until="load")
    if style:
        await page.add_style_tag(content=style)
        await page.evaluate(LOAD_PRINT_FONTS)
    await page.evaluate("() => document.fonts.ready.then(() => true)")
    return await page.pdf(format="A4", print_background=True, margin=MARGIN)


# every face of the print style, loaded before the page is printed (a face that no text of the page
# uses yet would otherwise load only when it is laid out, after fonts.ready resolved)
LOAD_PRINT_FONTS = f"""() => Promise.all([...document.fonts]
  .filter(f => f.family.replaceAll('"', '') === {PRINT_FAMILY!r}).map(f => f.load())).then(() => true)"""


async def _print_all(base: str, pages: list[tuple[str, str]], executable: str, style: str = "") -> list[Part]:
    import asyncio
    import os

    from playwright.async_api import async_playwright

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    queue = list(enumerate(pages))
    done: dict[int, Part] = {}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=BROWSER_ARGS)
        try:

            async def worker() -> None:
                # the print style is an inline style with data: fonts, which the pages' policy refuses
                context = await browser.new_context(
                    viewport={"width": 1100, "height": 1400}, color_scheme="light", bypass_csp=bool(style)
                )
                page = await context.new_page()
                await page.emulate_media(media="print")
                while queue:
                    n, (url, title) = queue.pop(0)
                    try:
                        data = await asyncio.wait_for(one(page, base + url, style), PAGE_SECONDS)
                    except TimeoutError:
                        raise LessonError(
                            f"printing /{url} took longer than {PAGE_SECONDS} s",
                            path="LESSONKIT_PDF",
                            hint="the machine may be busy: build again, or without LESSONKIT_PDF",
                        ) from None
                    done[n] = Part(url, title, data, base)
                await context.close()

            await asyncio.gather(*(worker() for _ in range(max(1, min(cores, len(pages))))))
        finally:
            await browser.close()
    return [done[n] for n in range(len(pages))]


@dataclass
class Entry:
    """A bookmark of the PDF: its title, its page (index) and height there, and the entries under it."""

    title: str
    page: int
    top: float | None = None
    children: list[Entry] = field(default_factory=list)


TOC_BASE = "http://lessonkit-contents.invalid/"  # the contents' links: TOC_BASE + "page/top"


def headings(html: str) -> tuple[tuple[int, str, str], ...]:
    """The ``(level, id, text)`` of the h2 and h3 of a written page's article that have an id, in
    their order (their permalink sign and invisible format characters left out)."""
    from selectolax.lexbor import LexborHTMLParser

    out = []
    for node in LexborHTMLParser(html).css("article h2[id], article h3[id]"):
        for link in node.css("a.headerlink"):
            link.decompose()
        # without the invisible operators of a formula (U+2061 after a function's name): a bookmark
        # shows them as boxes
        text = " ".join("".join(c for c in node.text() if unicodedata.category(c) != "Cf").split())
        if text:
            out.append((2 if node.tag == "h2" else 3, node.attributes.get("id") or "", text))
    return tuple(out)


def _sections(part: Part, anchors: dict, first: int) -> list[Entry]:
    """The outline entries of the headings of ``part``: its h2 headings, each with the h3 that follow
    it; a heading the PDF has no destination for is left out."""
    out: list[Entry] = []
    for level, ident, text in part.headings:
        found = anchors.get((part.url, ident)) or anchors.get((part.url, quote(ident, safe="")))
        if found is None:
            continue
        entry = Entry(text, found[0] - first, found[1])
        if level == 2 or not out:
            out.append(entry)
        else:
            out[-1].children.append(entry)
    return out


def merge(
    parts: list[Part],
    title: str,
    date: str,
    equivalents: dict[int, int] | None = None,
    contents: Part | None = None,
) -> tuple[bytes, list[Entry]]:
    """One PDF of ``parts`` in their order, after ``contents`` (the printed table of contents,
    whose links go to ``TOC_BASE`` + page/top): an outline entry per part with the part's headings
    under it, links between parts (and within one) as explicit destinations, links to pages not
    in the PDF removed, the text mappings fixed (:func:`fix_text`), and fixed metadata (``date``:
    a PDF date, ``D:…``), each font embedded once (:func:`_share_fonts`) and the drawing's
    coordinates rounded (:func:`round_paths`). Returns the PDF and its outline (pages counted
    without ``contents``)."""
    import pypdf

    writer = pypdf.PdfWriter()
    first = 0
    if contents is not None:
        for page in pypdf.PdfReader(io.BytesIO(contents.pdf)).pages:
            writer.add_page(page)
        first = len(writer.pages)
    starts: dict[str, int] = {}
    anchors: dict[tuple[str, str], tuple[int, float | None]] = {}
    outline: list[Entry] = []
    for part in parts:
        reader = pypdf.PdfReader(io.BytesIO(part.pdf))
        starts[part.url] = len(writer.pages)
        for name, dest in reader.named_destinations.items():
            number = reader.get_destination_page_number(dest)
            if number is not None and number >= 0:
                top = dest.top if isinstance(dest.top, (int, float)) else None
                anchors[(part.url, name.lstrip("/"))] = (starts[part.url] + number, top)
        outline.append(Entry(part.title, starts[part.url] - first, None, _sections(part, anchors, first)))
        for page in reader.pages:
            writer.add_page(page)

    spans = [(Part("", "", b"", TOC_BASE), 0, first)] if contents is not None else []
    for n, part in enumerate(parts):
        spans.append((part, starts[part.url], starts[parts[n + 1].url] if n + 1 < len(parts) else len(writer.pages)))
    _relink(writer, spans, starts, anchors, first)

    def add(entries: list[Entry], parent) -> None:
        for entry in entries:
            item = writer.add_outline_item(
                title=entry.title,
                page_number=entry.page + first,
                parent=parent,
                fit=_fit(entry.top),
                is_open=parent is None,
            )
            add(entry.children, item)

    if contents is not None:
        writer.add_outline_item(title=contents.title, page_number=0)
    add(outline, None)
    fix_text(writer, radicals() if equivalents is None else equivalents)
    share_fonts(writer)
    for page in writer.pages:
        stream = page.get_contents()
        if stream is not None:
            stream.set_data(round_paths(stream.get_data()))
            page.replace_contents(stream)
            page.compress_content_streams(level=9)
    writer.compress_identical_objects(remove_duplicates=True, remove_unreferenced=True)  # glyphs several pages share
    writer.add_metadata({"/Title": title, "/Producer": "lessonkit", "/CreationDate": date, "/ModDate": date})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue(), outline


def _relink(writer, spans: list[tuple[Part, int, int]], starts: dict[str, int], anchors: dict, first: int) -> None:
    """Make the links of each ``(part, first page, end)`` of ``spans`` lead inside the PDF
    (:func:`_resolve`), and remove those to pages of the site the PDF leaves out."""
    from pypdf.generic import ArrayObject, FloatObject, NameObject, NullObject

    def target(index: int, top: float | None) -> ArrayObject:
        y = FloatObject(top) if top is not None else NullObject()
        return ArrayObject([writer.pages[index].indirect_reference, NameObject("/XYZ"), NullObject(), y, NullObject()])

    for part, begin, end in spans:
        for index in range(begin, end):
            page = writer.pages[index]
            annots = page.get("/Annots")
            if not annots:
                continue
            kept = ArrayObject()
            for ref in annots:
                annot = ref.get_object()
                dest = _resolve(annot, part, starts, anchors, first)
                if dest is False:  # a link to a page of the site that is not in the PDF
                    continue
                if dest is not None:
                    for key in ("/A", "/Dest"):
                        if key in annot:
                            del annot[key]
                    annot[NameObject("/Dest")] = target(*dest)
                kept.append(ref)
            page[NameObject("/Annots")] = kept


def _fit(top: float | None):
    from pypdf.generic import Fit

    return Fit.xyz(top=top) if top is not None else Fit.fit()


def _resolve(annot, part: Part, starts: dict[str, int], anchors: dict, first: int = 0):
    """Where a link of ``part`` leads in the PDF: ``(page index, top)``; None: leave it (a link
    to another site); False: remove it (a page of this site that is not in the PDF). A link of
    the contents (``TOC_BASE``) names its page (counted after the contents' ``first`` pages)."""
    action = annot.get("/A")
    uri = str(action.get("/URI", "")) if action is not None else ""
    if part.base == TOC_BASE:
        page, _, top = uri.removeprefix(TOC_BASE).partition("/")
        return (int(page) + first, float(top) if top else None) if uri.startswith(TOC_BASE) else None
    dest = annot.get("/Dest")
    if dest is not None and not isinstance(dest, list):  # a named destination of the same page
        return anchors.get((part.url, str(dest).lstrip("/")), (starts[part.url], None))
    if not part.base or not uri.startswith(part.base):
        return None
    parts = urlsplit(uri[len(part.base) :])
    path = parts.path
    if path.endswith("index.html"):
        path = path[: -len("index.html")]
    if path not in starts:
        return False
    return anchors.get((path, parts.fragment), (starts[path], None))


def outline_of(parts: list[Part]) -> list[Entry]:
    """The outline :func:`merge` gives ``parts`` (pages counted from the first part's), without merging."""
    import pypdf

    out, start = [], 0
    for part in parts:
        reader = pypdf.PdfReader(io.BytesIO(part.pdf))
        anchors = {}
        for name, dest in reader.named_destinations.items():
            number = reader.get_destination_page_number(dest)
            if number is not None and number >= 0:
                top = dest.top if isinstance(dest.top, (int, float)) else None
                anchors[(part.url, name.lstrip("/"))] = (start + number, top)
        out.append(Entry(part.title, start, None, _sections(part, anchors, 0)))
        start += len(reader.pages)
    return out


CONTENTS_CSS = """
@page { size: A4; }
html, body { margin: 0; background: #fff; color: #000; }
body { font-family: FAMILY, LATIN; font-size: 10.5pt; line-height: 1.5; }
h1 { font-size: 20pt; font-weight: 400; margin: 0 0 0.8em; }
ol { list-style: none; margin: 0; padding: 0; }
li { break-inside: avoid; }
li.lk-toc-1 { margin-top: 0.55em; font-weight: 700; }
li.lk-toc-2 { margin-left: 2em; font-weight: 400; font-size: 9.5pt; }
a { display: flex; align-items: baseline; gap: 0.4em; color: inherit; text-decoration: none; }
.lk-toc-dots { flex: 1 1 auto; border-bottom: 1px dotted #777; min-width: 2em; }
.lk-toc-page { flex: none; font-variant-numeric: tabular-nums; }
"""


def contents_html(outline: list[Entry], heading: str, skip: int, lang: str = "zh-CN") -> str:
    """The printed table of contents: each part and its sections (the outline's first two levels)
    with the page (1-based, in a PDF that starts with ``skip`` pages of contents) it starts on,
    each a link to ``TOC_BASE`` + page/top."""
    from html import escape

    rows = []

    def row(entry: Entry, level: int) -> None:
        top = "" if entry.top is None else f"{entry.top:g}"
        rows.append(
            f'<li class="lk-toc-{level}"><a href="{TOC_BASE}{entry.page}/{top}">'
            f'<span class="lk-toc-title">{escape(entry.title)}</span><span class="lk-toc-dots"></span>'
            f'<span class="lk-toc-page">{entry.page + skip + 1}</span></a></li>'
        )

    for entry in outline:
        row(entry, 1)
        for child in entry.children:
            row(child, 2)
    css = CONTENTS_CSS.replace("FAMILY", f'"{PRINT_FAMILY}"').replace("LATIN", LATIN)
    return (
        f'<!DOCTYPE html><html lang="{escape(lang)}"><head><meta charset="utf-8"><title>{escape(heading)}</title>'
        f"<style>{css}</style></head><body><h1>{escape(heading)}</h1><ol>{''.join(rows)}</ol></body></html>"
    )


def print_html(html: str, style: str, executable: str | None = None) -> bytes:
    """Print one HTML document (no server: it loads nothing but its data: fonts)."""
    import asyncio

    out: list = []

    async def main() -> bytes:
        from playwright.async_api import async_playwright

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=executable or chromium(), args=BROWSER_ARGS)
            try:
                page = await (await browser.new_context(color_scheme="light")).new_page()
                await page.emulate_media(media="print")
                return await asyncio.wait_for(one(page, "", style, html), PAGE_SECONDS)
            finally:
                await browser.close()

    def run() -> None:
        try:
            out.append(asyncio.run(main()))
        except BaseException as exc:  # handed to the caller
            out.append(exc)

    worker = threading.Thread(target=run, name="lessonkit-pdf-contents")
    worker.start()
    worker.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def course_pdf(
    site_dir: Path, pages: list[tuple[str, str]], out: Path, title: str, date: str, contents: str = "Contents"
) -> tuple[int, int]:
    """Print ``pages`` of the written site into ``out``, after a table of contents headed
    ``contents`` with the page numbers of the pages and their sections: the contents are printed
    once with a guess of their own length, and again while that length was wrong. Returns the
    PDF's pages and bytes."""
    import dataclasses

    import pypdf

    codes = used_characters(site_dir, [url for url, _ in pages], contents)
    fonts = print_fonts(codes)
    style = print_style(fonts)
    parts = [
        dataclasses.replace(part, headings=headings((site_dir / part.url / "index.html").read_text(encoding="utf-8")))
        for part in print_pages(site_dir, pages, style=style)
    ]
    outline = outline_of(parts)
    length, toc = 1, b""
    for _ in range(4):
        toc = print_html(contents_html(outline, contents, length), style)
        got = len(pypdf.PdfReader(io.BytesIO(toc)).pages)
        if got == length:
            break
        length = got
    data, _ = merge(parts, title, date, contents=Part("", contents, toc, TOC_BASE))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return len(pypdf.PdfReader(io.BytesIO(data)).pages), len(data)
