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
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from lessonkit.errors import LessonError

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-quic"]
MARGIN = {"top": "14mm", "bottom": "14mm", "left": "13mm", "right": "13mm"}  # A4
RADICALS = [(0x2E80, 0x2EFF), (0x2F00, 0x2FDF)]  # CJK Radicals Supplement, Kangxi Radicals
IDEOGRAPHS = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x3134F)]


@dataclass(frozen=True)
class Part:
    """One printed page of the site: its URL (site-relative, "" for the home page), its title
    (the outline entry) and its PDF."""

    url: str
    title: str
    pdf: bytes
    base: str = ""  # the address the page was printed from (its links to the site start with it)


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


def print_pages(site_dir: Path, pages: list[tuple[str, str]], executable: str | None = None) -> list[Part]:
    """Print each ``(url, title)`` of ``pages`` from ``site_dir`` (A4, backgrounds on), as many
    at a time as there are cores."""
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
            out.append(asyncio.run(_print_all(base, pages, executable)))
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


async def one(page, url: str) -> bytes:
    await page.goto(url, wait_until="load")
    await page.evaluate("() => document.fonts.ready.then(() => true)")
    return await page.pdf(format="A4", print_background=True, margin=MARGIN)


async def _print_all(base: str, pages: list[tuple[str, str]], executable: str) -> list[Part]:
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
                context = await browser.new_context(viewport={"width": 1100, "height": 1400}, color_scheme="light")
                page = await context.new_page()
                await page.emulate_media(media="print")
                while queue:
                    n, (url, title) = queue.pop(0)
                    try:
                        data = await asyncio.wait_for(one(page, base + url), PAGE_SECONDS)
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


def merge(parts: list[Part], title: str, date: str, equivalents: dict[int, int] | None = None) -> bytes:
    """One PDF of ``parts`` in their order: an outline entry per part, links between parts (and
    within one) as explicit destinations, links to pages not in the PDF removed, the text
    mappings fixed (:func:`fix_text`), and fixed metadata (``date``: a PDF date, ``D:…``)."""
    import pypdf
    from pypdf.generic import ArrayObject, FloatObject, NameObject, NullObject

    writer = pypdf.PdfWriter()
    starts: dict[str, int] = {}
    anchors: dict[tuple[str, str], tuple[int, float | None]] = {}
    readers = []
    for part in parts:
        reader = pypdf.PdfReader(io.BytesIO(part.pdf))
        starts[part.url] = len(writer.pages)
        for name, dest in reader.named_destinations.items():
            number = reader.get_destination_page_number(dest)
            if number is not None and number >= 0:
                top = dest.top if isinstance(dest.top, (int, float)) else None
                anchors[(part.url, name.lstrip("/"))] = (starts[part.url] + number, top)
        for page in reader.pages:
            writer.add_page(page)
        readers.append(reader)

    def target(index: int, top: float | None) -> ArrayObject:
        y = FloatObject(top) if top is not None else NullObject()
        return ArrayObject([writer.pages[index].indirect_reference, NameObject("/XYZ"), NullObject(), y, NullObject()])

    for n, part in enumerate(parts):
        end = starts[parts[n + 1].url] if n + 1 < len(parts) else len(writer.pages)
        for index in range(starts[part.url], end):
            page = writer.pages[index]
            annots = page.get("/Annots")
            if not annots:
                continue
            kept = ArrayObject()
            for ref in annots:
                annot = ref.get_object()
                dest = _resolve(annot, part, starts, anchors)
                if dest is False:  # a link to a page of the site that is not in the PDF
                    continue
                if dest is not None:
                    for key in ("/A", "/Dest"):
                        if key in annot:
                            del annot[key]
                    annot[NameObject("/Dest")] = target(*dest)
                kept.append(ref)
            page[NameObject("/Annots")] = kept
    for part in parts:
        writer.add_outline_item(title=part.title, page_number=starts[part.url])
    fix_text(writer, radicals() if equivalents is None else equivalents)
    writer.compress_identical_objects(remove_duplicates=True, remove_unreferenced=True)  # glyphs several pages share
    writer.add_metadata({"/Title": title, "/Producer": "lessonkit", "/CreationDate": date, "/ModDate": date})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _resolve(annot, part: Part, starts: dict[str, int], anchors: dict):
    """Where a link of ``part`` leads in the PDF: ``(page index, top)``; None: leave it (a link
    to another site); False: remove it (a page of this site that is not in the PDF)."""
    dest = annot.get("/Dest")
    if dest is not None and not isinstance(dest, list):  # a named destination of the same page
        return anchors.get((part.url, str(dest).lstrip("/")), (starts[part.url], None))
    action = annot.get("/A")
    uri = str(action.get("/URI", "")) if action is not None else ""
    if not part.base or not uri.startswith(part.base):
        return None
    parts = urlsplit(uri[len(part.base) :])
    path = parts.path
    if path.endswith("index.html"):
        path = path[: -len("index.html")]
    if path not in starts:
        return False
    return anchors.get((path, parts.fragment), (starts[path], None))


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
    for s, (start, end, delta, ro) in enumerate(zip(starts, ends, deltas, offsets, strict=True)):
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


def course_pdf(site_dir: Path, pages: list[tuple[str, str]], out: Path, title: str, date: str) -> tuple[int, int]:
    """Print ``pages`` of the written site into ``out``. Returns its pages and bytes."""
    data = merge(print_pages(site_dir, pages), title, date)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    import pypdf

    return len(pypdf.PdfReader(io.BytesIO(data)).pages), len(data)
