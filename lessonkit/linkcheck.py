"""Check a built site: every internal link and anchor resolves, and no page loads
anything from another host (scripts, styles, images, fonts, frames)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

RANGE = re.compile(r"^L(\d+)-L\d+$")
RESOURCE_ATTRS = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"), ("source", "src"),
                  ("video", "src"), ("audio", "src"), ("embed", "src"), ("object", "data")}


@dataclass(frozen=True)
class LinkProblem:
    page: str
    target: str
    what: str

    def __str__(self) -> str:
        return f"site/{self.page}: {self.what}: {self.target}"


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.resources: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])
        for t, attr in RESOURCE_ATTRS:
            if tag == t and a.get(attr):
                if tag == "link" and a.get("rel") in ("canonical", "alternate"):
                    continue
                self.resources.append(a[attr])
        style = a.get("style") or ""
        for url in re.findall(r"url\(['\"]?([^'\")]+)", style):
            self.resources.append(url)


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.netloc) or url.startswith("//")


def check_site(site: Path) -> list[LinkProblem]:
    pages: dict[str, _Collector] = {}
    for html in sorted(site.rglob("*.html")):
        c = _Collector()
        c.feed(html.read_text(encoding="utf-8", errors="replace"))
        pages[html.relative_to(site).as_posix()] = c
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
                ids = pages[target].ids if target in pages else set()
                if frag not in ids:
                    problems.append(LinkProblem(page, href, "broken anchor"))
    return problems
