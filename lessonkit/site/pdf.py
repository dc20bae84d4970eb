"""The whole course as one PDF, printed from the written site by headless Chromium.

A build makes it when ``LESSONKIT_PDF`` is set (``nox -s pdf``), after every page is written:
each page of the navigation, in its order, except those ``[pdf] skip`` of ``site.toml`` names,
is loaded from a local server of the site directory and printed with Playwright's
``page.pdf`` (the print stylesheet of lessonkit.css: code and output wrap, folded blocks open,
no navigation); pypdf joins the pages' PDFs into ``[pdf] path`` with one outline entry per page.
The links between the printed pages lead inside the PDF (to the anchor, where the page has
it); links to other pages of the site are removed, since the local server they name is gone;
links to other sites stay.

Chromium embeds the system's CJK font (Noto CJK, ``fonts-noto-cjk``) glyph by glyph, and names
each glyph with the lowest code point the font maps to it: 「心」 comes out as the Kangxi radical
「⼼」 (U+2F3C), so a reader's search for 「核心」 in the PDF would find nothing. :func:`radicals`
reads which ideograph shares each radical's glyph from the font itself, and :func:`fix_text`
rewrites the PDF's text mappings with it.

Optional: it needs Playwright, pypdf and a Chromium (``nox -s pdf`` installs the first two);
nothing here is imported by a build without ``LESSONKIT_PDF``.
"""

from __future__ import annotations

import functools
import http.server
import io
import re
import shutil
import struct
import subprocess
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

from lessonkit.errors import LessonError

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-quic"]
MARGIN = {"top": "14mm", "bottom": "14mm", "left": "13mm", "right": "13mm"}  # A4
RADICALS = [(0x2E80, 0x2EFF), (0x2F00, 0x2FDF)]  # CJK Radicals Supplement, Kangxi Radicals
IDEOGRAPHS = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x3134F)]
# The print font holds every character of the printed pages from U+00A0 on that the CJK font has
# (so that no character falls back to the system's CFF font), and takes over exactly those.
PRINT_FROM = 0xA0
PRINT_FAMILY = "lessonkit print CJK"
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


def _share_fonts(writer) -> int:
    """Embed each TrueType font once: Chromium embeds a subset of a font in each printed page's
    PDF, and its subsetter keeps the font's glyph numbers, so the subsets of one font (by the name
    after the subset tag) join into one font with every glyph any of them has, which all of their
    font descriptors then name. Returns how many font files the PDF had before."""
    from pypdf.generic import NameObject, NumberObject, StreamObject

    groups: dict[str, list] = {}
    seen: set[int] = set()
    for page in writer.pages:
        for ref in _fonts_of(page.get("/Resources")):
            font = ref.get_object()
            if font.get("/Subtype") != "/Type0":
                continue
            name = str(font.get("/BaseFont", "")).partition("+")[2]
            for descendant in font.get("/DescendantFonts") or []:
                descriptor = descendant.get_object().get("/FontDescriptor")
                file = descriptor.get_object().get("/FontFile2") if descriptor is not None else None
                if file is not None and file.idnum not in seen:
                    seen.add(file.idnum)
                    groups.setdefault(name, []).append(descriptor.get_object())
    for name, descriptors in sorted(groups.items()):
        if len(descriptors) < 2:
            continue
        joined = _join_subsets([d["/FontFile2"].get_object().get_data() for d in descriptors])
        if joined is None:
            continue
        stream = StreamObject()
        stream.set_data(joined)
        stream[NameObject("/Length1")] = NumberObject(len(joined))
        ref = writer._add_object(stream.flate_encode(level=9))
        for descriptor in descriptors:
            descriptor[NameObject("/FontFile2")] = ref
    return len(seen)


def _join_subsets(files: list[bytes]) -> bytes | None:
    """One TrueType font of glyph-number-keeping subsets of one font: each glyph from the first
    subset that has an outline for it (None: the files are not such subsets, or two of them give
    one glyph number different contours or advances)."""
    from fontTools.ttLib import TTFont

    fonts = [TTFont(io.BytesIO(data), recalcTimestamp=False) for data in files]
    if any("glyf" not in f or "hmtx" not in f for f in fonts):
        return None
    base = max(fonts, key=lambda f: f["maxp"].numGlyphs)
    order = base.getGlyphOrder()
    for font in fonts:
        if font is base:
            continue
        names = font.getGlyphOrder()
        for gid, name in enumerate(names):
            glyph = font["glyf"][name]
            if glyph.numberOfContours == 0 or gid >= len(order):
                continue
            target = order[gid]
            have = base["glyf"][target]
            if have.numberOfContours != 0 and (
                have.numberOfContours != glyph.numberOfContours or base["hmtx"][target] != font["hmtx"][name]
            ):
                return None  # two subsets disagree on a glyph number: not one font's numbering
            if have.numberOfContours == 0:
                if glyph.isComposite():
                    for component in glyph.components:  # by name: the same in every subset
                        component.glyphName = order[names.index(component.glyphName)]
                base["glyf"][target] = glyph
                base["hmtx"][target] = font["hmtx"][name]
                if "vmtx" in base and "vmtx" in font:
                    base["vmtx"][target] = font["vmtx"][name]
    out = io.BytesIO()
    base.save(out)
    return out.getvalue()


def _fonts_of(resources, depth: int = 0):
    """The fonts of a page's resources and of the forms it draws."""
    resources = resources.get_object() if resources is not None else None
    if not resources or depth > 8:
        return
    yield from ((resources.get("/Font") or {}).values())
    for xobject in (resources.get("/XObject") or {}).values():
        form = xobject.get_object()
        if form.get("/Subtype") == "/Form":
            yield from _fonts_of(form.get("/Resources"), depth + 1)


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
    _share_fonts(writer)
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


NUMBER = rb"-?(?:\d+\.?\d*|\.\d+)"
PLACED = re.compile(rb"(?<![^\s])((?:" + NUMBER + rb" )+)(Td|m|l|c|v|y|re)(?=\s)")


def round_paths(data: bytes) -> bytes:
    """A content stream with the operands of its moves and path segments (``Td``, ``m``, ``l``,
    ``c``, ``v``, ``y``, ``re``) rounded to two decimals: Chromium writes eight digits, a
    ten-thousandth of a point, and a PDF full of small boxes carries thousands of them. Colors,
    matrices and text stay as they are."""

    def one(m: re.Match) -> bytes:
        out = []
        for token in m.group(1).split():
            text = f"{round(float(token), 2):.2f}".rstrip("0").rstrip(".")
            out.append(b"0" if text in ("-0", "") else text.encode("ascii"))
        return b" ".join(out) + b" " + m.group(2)

    return PLACED.sub(one, data)


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


# ---------------------------------------------------------------- the print font

# Chromium (Skia) embeds a font with TrueType outlines as a subset CID font, and draws the glyphs of
# a font with CFF outlines, such as Noto CJK's OpenType files, one by one as Type 3 fonts: large,
# without hinting, and poorly searchable. So the PDF is printed with a TrueType copy of the system's
# CJK font, made here for the characters the printed pages use.


def used_characters(site_dir: Path, urls: list[str], extra: str = "") -> set[int]:
    """The code points from :data:`PRINT_FROM` on of the text and attributes of the written pages
    ``urls`` (site-relative folders) and of ``extra``."""
    from html.parser import HTMLParser

    found: set[str] = set(extra)

    class Text(HTMLParser):
        def handle_data(self, data: str) -> None:
            found.update(data)

        def handle_starttag(self, tag: str, attrs: list) -> None:
            for _, value in attrs:
                found.update(value or "")

    for url in urls:
        page = site_dir / url / "index.html" if not url.endswith(".html") else site_dir / url
        if page.is_file():
            parser = Text(convert_charrefs=True)
            parser.feed(page.read_text(encoding="utf-8"))
            parser.close()
    return {ord(c) for c in found if ord(c) >= PRINT_FROM}


def system_cjk_font(bold: bool) -> tuple[Path, int] | None:
    """The file and face index of the CJK sans-serif font fontconfig chooses for Chinese."""
    pattern = "sans-serif:lang=zh-cn" + (":weight=bold" if bold else "")
    try:
        found = subprocess.run(
            ["fc-match", "-f", "%{file}\n%{index}", pattern], capture_output=True, text=True, timeout=20
        ).stdout.split("\n")
        return Path(found[0]), int(found[1] or 0)
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def truetype_subset(path: Path, index: int, codes: set[int]) -> bytes:
    """The face ``index`` of the font file ``path`` cut to the glyphs of ``codes``, with quadratic
    (TrueType) outlines: CFF cubic curves converted with fontTools' cu2qu (within 1 font unit).
    The same inputs give the same bytes (the source's dates, no hinting, the glyphs in the font's order)."""
    from fontTools import subset
    from fontTools.pens.cu2quPen import Cu2QuPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    from fontTools.ttLib import TTFont, newTable

    font = TTFont(str(path), fontNumber=index, lazy=False, recalcTimestamp=False)
    options = subset.Options()
    options.layout_features = ["vert", "vrt2", "locl", "ccmp"]
    options.hinting = False
    options.desubroutinize = True
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codes))
    subsetter.subset(font)
    if "CFF " in font:
        glyphs = font.getGlyphSet()
        glyf = newTable("glyf")
        glyf.glyphOrder = font.getGlyphOrder()
        glyf.glyphs = {}
        for name in glyf.glyphOrder:
            pen = TTGlyphPen(None)
            glyphs[name].draw(Cu2QuPen(pen, 1.0, reverse_direction=True))
            glyf.glyphs[name] = pen.glyph()
        font["glyf"] = glyf
        font["loca"] = newTable("loca")
        del font["CFF "]
        if "VORG" in font:
            del font["VORG"]
        maxp = font["maxp"]
        maxp.tableVersion = 0x00010000
        for key in ("maxZones",):
            setattr(maxp, key, 1)
        for key in (
            "maxTwilightPoints", "maxStorage", "maxFunctionDefs", "maxInstructionDefs", "maxStackElements",
            "maxSizeOfInstructions", "maxComponentElements", "maxPoints", "maxContours", "maxCompositePoints",
            "maxCompositeContours", "maxComponentDepth",
        ):  # fmt: skip
            setattr(maxp, key, 0)
        post = font["post"]
        post.formatType = 2.0
        post.extraNames = []
        post.mapping = {}
        post.glyphOrder = None
        font.sfntVersion = "\x00\x01\x00\x00"
    font["head"].modified = font["head"].created  # the source font's dates: no clock in the bytes
    out = io.BytesIO()
    font.save(out, reorderTables=True)
    return out.getvalue()


def print_fonts(codes: set[int]) -> dict[int, bytes]:
    """Weight -> a TrueType subset of the system's CJK font for ``codes``, regular and bold
    (:func:`truetype_subset`; none where fontconfig names no font)."""
    out = {}
    for weight, bold in ((400, False), (700, True)):
        found = system_cjk_font(bold)
        if found is not None and found[0].is_file():
            out[weight] = truetype_subset(*found, codes)
    return out


def print_style(fonts: dict[int, bytes]) -> str:
    """CSS that prints CJK with ``fonts`` (:func:`print_fonts`), given to both the text and the
    code font families ("" when there is none)."""
    import base64

    from fontTools.ttLib import TTFont

    faces = []
    for weight, font in sorted(fonts.items()):
        ranges = ", ".join(f"U+{lo:X}-{hi:X}" for lo, hi in _ranges(TTFont(io.BytesIO(font)).getBestCmap()))
        data = base64.b64encode(font).decode("ascii")
        faces.append(
            f'@font-face {{ font-family: "{PRINT_FAMILY}"; font-weight: {weight}; font-style: normal; '
            f'src: url(data:font/ttf;base64,{data}) format("truetype"); unicode-range: {ranges}; }}'
        )
    if not faces:
        return ""
    family = f'"{PRINT_FAMILY}"'
    return "\n".join(faces) + (
        f"\n:root {{ --md-text-font: {family}; --md-code-font: {family}; }}"
        f'\nmath {{ font-family: "STIX Two Math", {family}, math; }}'  # Chinese words in a formula
        # the text of figures and plots (lessonkit.pipeline), which name their own fonts
        f"\n:root svg text {{ font-family: {family}, {LATIN}; }}"
        f"\n:root svg text:is(.lk-code, .lk-note) {{ font-family: {family}, {MONO}; }}"
        # a halo (stroked text) would make Chromium draw the glyphs as Type 3 fonts; paper needs none
        "\n:root svg text { stroke: none; }\n"
    )


MONO = "ui-monospace, SFMono-Regular, monospace"
LATIN = "-apple-system, BlinkMacSystemFont, Helvetica, Arial, sans-serif"  # Material's text fonts


def _ranges(codes) -> list[tuple[int, int]]:
    """Sorted code points as runs of consecutive ones."""
    out: list[tuple[int, int]] = []
    for code in sorted(codes):
        if out and out[-1][1] == code - 1:
            out[-1] = (out[-1][0], code)
        else:
            out.append((code, code))
    return out


# ---------------------------------------------------------------- the text of CJK glyphs

BFCHAR = re.compile(r"(<[0-9A-Fa-f]+>\s*)<([0-9A-Fa-f]{4,8})>")


def fix_text(writer, equivalents: dict[int, int]) -> int:
    """Rewrite the ToUnicode maps of ``writer``'s fonts (those of its pages and of the forms
    they draw, such as a figure): a radical that stands for an ideograph (``equivalents``)
    becomes that ideograph. Returns how many mappings changed."""
    changed = 0
    seen: set[int] = set()

    def fonts_of(resources, depth: int = 0):
        resources = resources.get_object() if resources is not None else None
        if not resources or depth > 8:
            return
        yield from ((resources.get("/Font") or {}).values())
        for xobject in (resources.get("/XObject") or {}).values():
            form = xobject.get_object()
            if form.get("/Subtype") == "/Form":
                yield from fonts_of(form.get("/Resources"), depth + 1)

    for page in writer.pages:
        for ref in fonts_of(page.get("/Resources")):
            stream_ref = ref.get_object().get("/ToUnicode")
            if stream_ref is None:
                continue
            stream = stream_ref.get_object()
            key = stream_ref.idnum if hasattr(stream_ref, "idnum") else id(stream)
            if key in seen:
                continue
            seen.add(key)
            text = stream.get_data().decode("latin-1")
            count = 0

            def swap(m: re.Match) -> str:
                nonlocal count
                code = int(m.group(2), 16)
                if code in equivalents:
                    count += 1
                    return f"{m.group(1)}<{equivalents[code]:04X}>"
                return m.group(0)

            new = BFCHAR.sub(swap, _expand_ranges(text, equivalents))
            if count:
                stream.set_data(new.encode("latin-1"))
                changed += count
    return changed


RANGE = re.compile(r"(\d+) beginbfrange\s*(.*?)\s*endbfrange", re.S)
RANGE_ITEM = re.compile(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]{4,8})>")


def _expand_ranges(cmap: str, equivalents: dict[int, int]) -> str:
    """``cmap`` with each bfrange whose targets hold a radical written as single mappings."""

    def one(m: re.Match) -> str:
        keep, chars = [], []
        for lo, hi, dst in RANGE_ITEM.findall(m.group(2)):
            a, b, d = int(lo, 16), int(hi, 16), int(dst, 16)
            if any(d + k in equivalents for k in range(b - a + 1)):
                width = len(lo)
                chars += [f"<{a + k:0{width}X}> <{d + k:04X}>" for k in range(b - a + 1)]
            else:
                keep.append(f"<{lo}> <{hi}> <{dst}>")
        out = f"{len(keep)} beginbfrange\n" + "\n".join(keep) + "\nendbfrange" if keep else ""
        if chars:
            out += f"\n{len(chars)} beginbfchar\n" + "\n".join(chars) + "\nendbfchar"
        return out

    return RANGE.sub(one, cmap)


@functools.lru_cache(maxsize=1)
def radicals() -> dict[int, int]:
    """Radical code point -> the ideograph that shares its glyph in the system's CJK sans-serif
    font (the one Chromium prints Chinese with), and, for what the font does not tell, the
    radical's compatibility decomposition (NFKC: 「⼼」 -> 「心」)."""
    out = {}
    for lo, hi in RADICALS:
        for code in range(lo, hi + 1):
            ch = unicodedata.normalize("NFKC", chr(code))
            if len(ch) == 1 and ch != chr(code):
                out[code] = ord(ch)
    cmap = _font_cmap()
    if cmap:
        by_glyph: dict[int, int] = {}
        for lo, hi in reversed(IDEOGRAPHS):  # the first range wins: the common ideographs
            for code in range(lo, hi + 1):
                glyph = cmap.get(code)
                if glyph:
                    by_glyph[glyph] = code
        for lo, hi in RADICALS:
            for code in range(lo, hi + 1):
                glyph = cmap.get(code)
                if glyph in by_glyph:
                    out[code] = by_glyph[glyph]
    return out


def _font_cmap() -> dict[int, int]:
    """Code point -> glyph of the CJK sans-serif font fontconfig chooses for Chinese (``{}``
    when there is none, or it cannot be read)."""
    try:
        found = subprocess.run(
            ["fc-match", "-f", "%{file}\n%{index}", "sans-serif:lang=zh-cn"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.split("\n")
        path, index = Path(found[0]), int(found[1] or 0)
        return read_cmap(path.read_bytes(), index)
    except (OSError, ValueError, IndexError, struct.error, subprocess.SubprocessError):
        return {}


def read_cmap(data: bytes, index: int = 0) -> dict[int, int]:
    """The Unicode cmap (format 12, else 4) of face ``index`` of an OpenType font or collection."""
    cmap_at = _cmap_table(data, index)
    if cmap_at is None:
        return {}
    (subtables,) = struct.unpack(">H", data[cmap_at + 2 : cmap_at + 4])
    found: dict[int, int] = {}
    for n in range(subtables):
        platform, encoding, at = struct.unpack(">HHI", data[cmap_at + 4 + 8 * n : cmap_at + 12 + 8 * n])
        (fmt,) = struct.unpack(">H", data[cmap_at + at : cmap_at + at + 2])
        if platform in (0, 3):
            found.setdefault(fmt, cmap_at + at)
    if 12 in found:
        return _cmap_format12(data, found[12])
    if 4 in found:
        return _cmap_format4(data, found[4])
    return {}


def _cmap_table(data: bytes, index: int) -> int | None:
    """Where the ``cmap`` table of face ``index`` starts (None: the face has none)."""
    offset = 0
    if data[:4] == b"ttcf":
        (count,) = struct.unpack(">I", data[8:12])
        offset = struct.unpack(">I", data[12 + 4 * min(index, count - 1) : 16 + 4 * min(index, count - 1)])[0]
    (tables,) = struct.unpack(">H", data[offset + 4 : offset + 6])
    cmap_at = None
    for n in range(tables):
        tag, _, at, _ = struct.unpack(">4sIII", data[offset + 12 + 16 * n : offset + 28 + 16 * n])
        if tag == b"cmap":
            cmap_at = at
    return cmap_at


def _cmap_format12(data: bytes, at: int) -> dict[int, int]:
    """A format 12 subtable: groups of consecutive code points and glyphs."""
    out: dict[int, int] = {}
    (groups,) = struct.unpack(">I", data[at + 12 : at + 16])
    for g in range(groups):
        start, end, glyph = struct.unpack(">III", data[at + 16 + 12 * g : at + 28 + 12 * g])
        for code in range(start, end + 1):
            out[code] = glyph + code - start
    return out


def _cmap_format4(data: bytes, at: int) -> dict[int, int]:
    """A format 4 subtable: segments of the Basic Multilingual Plane, by delta or by glyph array."""
    out: dict[int, int] = {}
    (seg2,) = struct.unpack(">H", data[at + 6 : at + 8])
    ends = struct.unpack(f">{seg2 // 2}H", data[at + 14 : at + 14 + seg2])
    starts = struct.unpack(f">{seg2 // 2}H", data[at + 16 + seg2 : at + 16 + 2 * seg2])
    deltas = struct.unpack(f">{seg2 // 2}h", data[at + 16 + 2 * seg2 : at + 16 + 3 * seg2])
    ranges_at = at + 16 + 3 * seg2
    offsets = struct.unpack(f">{seg2 // 2}H", data[ranges_at : ranges_at + seg2])
    for s, (start, end, delta, ro) in enumerate(zip(starts, ends, deltas, offsets)):
        for code in range(start, end + 1):
            if code == 0xFFFF:
                continue
            if ro == 0:
                glyph = (code + delta) & 0xFFFF
            else:
                where = ranges_at + 2 * s + ro + 2 * (code - start)
                (glyph,) = struct.unpack(">H", data[where : where + 2])
                glyph = (glyph + delta) & 0xFFFF if glyph else 0
            if glyph:
                out[code] = glyph
    return out


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
