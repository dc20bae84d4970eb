"""Check a built site: every internal link and anchor resolves, and no page loads
anything from another host (scripts, styles, images, fonts, frames)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import unquote, urlsplit

RANGE = re.compile(r"^L(\d+)-L\d+$")
TAG = re.compile(r"<(a|link|script|img|iframe|source|video|audio|embed|object)\b([^>]*)>", re.I)
ATTR = re.compile(r"""\b(href|src|data|rel)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
IDS = re.compile(r"""\s(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
STYLE_URL = re.compile(r"""url\(\s*['"]?([^'")]+)""")
RESOURCE = {"link": "href", "script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
            "audio": "src", "embed": "src", "object": "data"}


@dataclass(frozen=True)
class LinkProblem:
    page: str
    target: str
    what: str

    def __str__(self) -> str:
        return f"site/{self.page}: {self.what}: {self.target}"


@dataclass
class _Page:
    ids: set
    links: list
    resources: list


def _scan(html: str) -> _Page:
    ids = {unescape(a or b) for a, b in IDS.findall(html)}
    links, resources = [], []
    for tag, attrs in TAG.findall(html):
        found = {k.lower(): unescape(v1 or v2) for k, v1, v2 in ATTR.findall(attrs)}
        tag = tag.lower()
        if tag == "a" and "href" in found:
            links.append(found["href"])
        elif tag in RESOURCE and found.get(RESOURCE[tag]):
            if tag == "link" and found.get("rel") in ("canonical", "alternate"):
                continue
            resources.append(found[RESOURCE[tag]])
    resources += [u for u in STYLE_URL.findall(html) if "://" in u or u.startswith("//")]
    return _Page(ids, links, resources)


def _external(url: str) -> bool:
    return bool(urlsplit(url).netloc) or url.startswith("//")


def check_site(site: Path) -> list[LinkProblem]:
    pages = {p.relative_to(site).as_posix(): _scan(p.read_text(encoding="utf-8", errors="replace"))
             for p in sorted(site.rglob("*.html"))}
    problems = []
    for page, c in pages.items():
        for res in c.resources:
            if _external(res) and not res.startswith("data:"):
                problems.append(LinkProblem(page, res, "loads a resource from another host"))
        for href in c.links:
            if not href or _external(href) or href.startswith(("mailto:", "javascript:", "data:")):
                continue
            parts = urlsplit(href)
            target = page
            if parts.path:
                base = "" if parts.path.startswith("/") else posixpath.dirname(page)  # "/x/": from the site root
                target = posixpath.normpath(posixpath.join(base, unquote(parts.path).lstrip("/")))
                if target.startswith(".."):
                    problems.append(LinkProblem(page, href, "link leaves the site"))
                    continue
                full = site / target
                if full.is_dir() or href.endswith("/"):
                    target = posixpath.join(target, "index.html")
                    full = site / target
                if not full.exists():
                    problems.append(LinkProblem(page, href, "broken link"))
                    continue
            if parts.fragment and target.endswith(".html"):
                frag = unquote(parts.fragment)
                m = RANGE.match(frag)
                if m:
                    frag = f"L{m.group(1)}"
                if frag not in (pages[target].ids if target in pages else set()):
                    problems.append(LinkProblem(page, href, "broken anchor"))
    return problems
