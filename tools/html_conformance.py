"""How closely the HTML reader of lessonkit (lexbor, through selectolax) follows the HTML Standard:
the tree-construction tests of html5lib-tests, run against it.

    python tools/html_conformance.py PATH/TO/html5lib-tests/tree-construction

(the folder of `.dat` files of a checkout of html5lib-tests from before the tests moved to WPT).
selectolax exposes no namespaces, so trees are compared without them (``<svg title>`` is read
as ``<title>``, ``xlink href`` as ``xlink:href``); doctypes are compared as present or not.
Prints the passed count and the failures per file.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

HEADS = {"data", "errors", "new-errors", "document", "document-fragment", "script-off", "script-on"}
NS_ELEMENT = re.compile(r"^(\|\s*)<(?:svg|math) ")
NS_ATTRIBUTE = re.compile(r"^(\|\s*)(xlink|xml|xmlns) (\S+=)")


def cases(path: Path):
    with open(path, encoding="utf-8", newline="") as f:  # a test's data may hold a lone CR
        text = f.read()
    for block in re.split(r"\n\n(?=#data\n)", text):
        sections: dict[str, list[str]] = {}
        current = None
        for line in block.strip("\n").split("\n"):
            if line.startswith("#") and line[1:].strip() in HEADS:
                current = line[1:].strip()
                sections[current] = []
            elif current is not None:
                sections[current].append(line)
        if "data" in sections:
            yield {k: "\n".join(v) for k, v in sections.items()}


def expected(document: str) -> str:
    out = []
    for line in document.split("\n"):
        line = NS_ATTRIBUTE.sub(r"\1\2:\3", NS_ELEMENT.sub(r"\1<", line))
        out.append(re.sub(r"<!DOCTYPE.*", "<!DOCTYPE>", line))
    return "\n".join(out).rstrip("\n")


def dump(node, depth: int, out: list[str], siblings: bool = True) -> None:
    while node is not None:
        tag, pad = node.tag, "| " + "  " * depth
        if tag == "-text":
            out.append(pad + '"' + (node.text(deep=False) or "") + '"')
        elif tag in ("-comment", None):
            html = node.html or ""
            out.append(pad + "<!-- " + (html[4:-3] if html.startswith("<!--") else html) + " -->")
        elif tag in ("-doctype", "!doctype"):
            out.append(pad + "<!DOCTYPE>")
        else:
            out.append(pad + "<" + tag + ">")
            attrs = node.attributes
            out += [pad + "  " + k + '="' + (attrs[k] or "") + '"' for k in sorted(attrs)]
            if tag == "template":
                out.append(pad + "  content")
                fragments = node.template_fragments()
                if fragments:
                    dump(fragments[0].child, depth + 2, out)
            else:
                dump(node.child, depth + 1, out)
        node = node.next if siblings else None


def run(case: dict[str, str]) -> str:
    scripting = "script-off" not in case
    out: list[str] = []
    context = case.get("document-fragment")
    if context is not None:
        namespace, _, name = context.strip().rpartition(" ")
        parser = LexborHTMLParser(
            case["data"],
            is_fragment=True,
            fragment_tag=name,
            fragment_namespace=namespace or "html",
            scripting=scripting,
        )
        first = parser.root
        while first is not None and first.prev is not None:
            first = first.prev
        dump(first, 0, out)
    else:
        parser = LexborHTMLParser(case["data"], scripting=scripting)
        dump(parser.root.parent.child, 0, out)
    return "\n".join(out)


def main(folder: str) -> int:
    total = passed = 0
    failures: dict[str, int] = {}
    for path in sorted(Path(folder).glob("*.dat")):
        for case in cases(path):
            total += 1
            try:
                got = run(case)
            except Exception as exc:  # a crash is a failure of the case, reported as such
                got = f"error: {exc!r}"
            if got == expected(case.get("document", "")):
                passed += 1
            else:
                failures[path.name] = failures.get(path.name, 0) + 1
    print(f"lexbor (selectolax): {passed}/{total} tree-construction cases")
    for name, n in sorted(failures.items()):
        print(f"  {name}: {n} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
