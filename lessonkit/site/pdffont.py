"""The print font of the course PDF (:mod:`lessonkit.site.pdf`), the PDF's text mappings and the
size of its drawing (:func:`share_fonts`: one font file for all pages; :func:`round_paths`).

Chromium (Skia) embeds a font with TrueType outlines as a subset CID font, and draws the glyphs of
a font with CFF outlines, such as Noto CJK's OpenType files, one by one as Type 3 fonts: large,
without hinting, and poorly searchable. So the PDF is printed with a TrueType copy of the system's
CJK font, made here for the characters the printed pages use (:func:`print_fonts`,
:func:`print_style`). Chromium also names each glyph with the lowest code point the font maps to
it (「心」 as the Kangxi radical 「⼼」): :func:`radicals` and :func:`fix_text` map them back.
"""

from __future__ import annotations

import functools
import io
import re
import struct
import subprocess
import unicodedata
from pathlib import Path

RADICALS = [(0x2E80, 0x2EFF), (0x2F00, 0x2FDF)]  # CJK Radicals Supplement, Kangxi Radicals
IDEOGRAPHS = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x3134F)]
# The print font holds every character of the printed pages from U+00A0 on that the CJK font has
# (so that no character falls back to the system's CFF font), and takes over exactly those.
PRINT_FROM = 0xA0
PRINT_FAMILY = "lessonkit print CJK"


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


# ---------------------------------------------------------------- one font file for all pages


def share_fonts(writer) -> int:
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
    for _name, descriptors in sorted(groups.items()):
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


# ---------------------------------------------------------------- the drawing's numbers

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
