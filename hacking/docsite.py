# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docs/*.md pages as the collection docsite's extra docs: docs/docsite/rst/<page>.rst and docs/docsite/extra-docs.yml.

antsibull-docs builds a collection's docsite from its plugin, module and role documentation and from the RST pages
docs/docsite/extra-docs.yml lists (docs/docsite/rst/, each page's labels prefixed ``ansible_collections.ascend.cluster.
docsite.``). The pages are written in Markdown (they read on a forge and in the installed collection as they are), so
this converts each one with markdown-it-py's parser: headings, paragraphs, lists, fenced code, tables (``list-table``),
block quotes, inline code, emphasis and links (a link to another page of docs/ becomes a ``:ref:`` to its label).

    .venv/bin/python hacking/docsite.py          # write them
    .venv/bin/python hacking/docsite.py --check  # exit 1 naming each stale file

``make docs-lint`` (``antsibull-docs lint-collection-docs``) lints what this writes; tests/unit/test_docsite.py holds the
files to this script, byte for byte.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RST = DOCS / "docsite" / "rst"
INDEX = DOCS / "docsite" / "extra-docs.yml"
PREFIX = "ansible_collections.ascend.cluster.docsite."
# The pages, in the docsite's order: for users first, then for contributors.
SECTIONS = (
    (
        "Guides",
        ("launch", "smoke", "summaries", "when-it-fails", "support-bundle", "surveys", "inputs", "security", "real-outputs"),
    ),
    ("Test tools and contributors", ("simulator", "testbed", "hccl-standin", "benchmarks", "contracts")),
)
ADORN = {1: "=", 2: "-", 3: "^", 4: '"', 5: "~", 6: "+"}
LEXERS = {"console": "console", "ini": "ini", "json": "json", "python": "python", "text": "text", "yaml": "yaml", "": "text"}
_SPECIAL = re.compile(r"([\\*`|_])")


def label(page: str) -> str:
    return PREFIX + page.replace("-", "_")


def _escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


def _wrap(text: str, before: str, after: str) -> str:
    """Inline markup must stand apart from words: an escaped space joins it to a neighbouring letter."""
    left = "\\ " if before and (before[-1].isalnum() or before[-1] in ")]}") else ""
    return left + text + "\\ "


def inline(tokens: list, page: str) -> str:
    """One paragraph's (or cell's) inline tokens as RST text."""
    out: list = []
    stack: list = []
    for token in tokens:
        if token.type == "text":
            if stack:
                stack[-1][1].append(token.content)
            else:
                out.append(_escape(token.content))
        elif token.type == "code_inline":
            code = token.content.strip() or token.content
            if "](" in code or "``" in code:  # rstcheck takes "[x](y)" in a paragraph's source for a Markdown link
                piece = ":literal:`%s`" % code.replace("\\", "\\\\").replace("`", "\\`").replace("](", "]\\(")
            else:
                piece = "``%s``" % code
            if stack:
                stack[-1][1].append(code)
            else:
                out.append(_wrap(piece, "".join(out), ""))
        elif token.type in ("strong_open", "em_open", "link_open"):
            stack.append((token, []))
        elif token.type in ("strong_close", "em_close", "link_close"):
            opened, parts = stack.pop()
            text = "".join(parts).strip()
            if opened.type == "strong_open":
                piece = "**%s**" % text.replace("*", "\\*") if text else ""
            elif opened.type == "em_open":
                piece = "*%s*" % text.replace("*", "\\*") if text else ""
            else:
                href = str(opened.attrs.get("href") or "")
                target = re.match(r"^(?:\.\./)*(?:docs/)?([A-Za-z0-9_-]+)\.md(?:#.*)?$", href)
                shown = text.replace("`", "").replace("<", "").replace(">", "") or href
                if target and (DOCS / (target.group(1) + ".md")).is_file():
                    piece = ":ref:`%s <%s>`" % (shown, label(target.group(1)))
                elif re.match(r"^https?://", href):
                    piece = "`%s <%s>`__" % (shown, href)
                else:
                    piece = "%s (``%s``)" % (_escape(shown), href) if href else _escape(shown)
            if stack:
                stack[-1][1].append(text)
            else:
                out.append(_wrap(piece, "".join(out), ""))
        elif token.type in ("softbreak",):
            (stack[-1][1] if stack else out).append(" " if stack else "\n")
        elif token.type == "hardbreak":
            out.append("\n")
        elif token.type == "html_inline":
            continue
        elif token.type == "image":
            out.append(_escape(token.content))
    text = "".join(out)
    # an escaped space before a line end, or doubled, is noise
    text = re.sub(r"\\ (?=\n|$)", "", text).replace("\\ \\ ", "\\ ")
    return re.sub(r"\\ (?=[\s.,;:!?)\]}'\"/-])", "", text)


def _indent(text: str, prefix: str) -> str:
    return "\n".join((prefix + line) if line.strip() else "" for line in text.split("\n"))


def blocks(tokens: list, page: str) -> list:
    """Block tokens (a whole page, a list item, a quote) as RST paragraphs (strings), in order."""
    out: list = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        kind = token.type
        if kind == "heading_open":
            level = int(token.tag[1])
            text = inline(tokens[i + 1].children or [], page)
            rule = ADORN[level] * max(len(text), 3)
            out.append((rule + "\n" if level == 1 else "") + text + "\n" + rule)
            i += 3
        elif kind == "paragraph_open":
            out.append(inline(tokens[i + 1].children or [], page))
            i += 3
        elif kind in ("fence", "code_block"):
            lang = LEXERS.get((token.info or "").strip().split(" ")[0], "text")
            out.append(".. code-block:: %s\n\n%s" % (lang, _indent(token.content.rstrip("\n"), "    ")))
            i += 1
        elif kind in ("bullet_list_open", "ordered_list_open"):
            end = _close(tokens, i)
            out.append(_list(tokens[i + 1 : end], page, ordered=kind == "ordered_list_open"))
            i = end + 1
        elif kind == "blockquote_open":
            end = _close(tokens, i)
            out.append(_indent("\n\n".join(blocks(tokens[i + 1 : end], page)), "    "))
            i = end + 1
        elif kind == "table_open":
            end = _close(tokens, i)
            out.append(_table(tokens[i + 1 : end], page))
            i = end + 1
        elif kind == "hr":
            out.append("----")
            i += 1
        else:  # html_block (comments), and what closes what was handled
            i += 1
    return out


def _close(tokens: list, start: int) -> int:
    """The index of the token that closes ``tokens[start]``."""
    depth = 0
    for index in range(start, len(tokens)):
        depth += tokens[index].nesting
        if depth == 0:
            return index
    raise ValueError("unbalanced tokens")


def _list(tokens: list, page: str, ordered: bool) -> str:
    items = []
    i = 0
    while i < len(tokens):
        if tokens[i].type == "list_item_open":
            end = _close(tokens, i)
            body = "\n\n".join(blocks(tokens[i + 1 : end], page))
            mark = "#. " if ordered else "- "
            lines = body.split("\n")
            items.append(mark + lines[0] + ("\n" + _indent("\n".join(lines[1:]), " " * len(mark)) if len(lines) > 1 else ""))
            i = end + 1
        else:
            i += 1
    return "\n".join(items)


def _table(tokens: list, page: str) -> str:
    rows: list = []
    header = 0
    in_head = False
    for token in tokens:
        if token.type == "thead_open":
            in_head = True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            rows.append([])
            header += 1 if in_head else 0
        elif token.type == "inline":
            rows[-1].append(inline(token.children or [], page))
    lines = [".. list-table::", "   :header-rows: %d" % header, ""]
    for row in rows:
        for index, cell in enumerate(row):
            text = cell.replace("\n", " ") or "\\ "
            lines.append(("   * - " if index == 0 else "     - ") + text)
    return "\n".join(lines)


def convert(page: str, markdown: str) -> str:
    """The RST of the page ``docs/<page>.md``."""
    parser = MarkdownIt("commonmark").enable("table")
    body = "\n\n".join(b for b in blocks(parser.parse(markdown), page) if b.strip())
    head = ".. Generated from docs/%s.md by hacking/docsite.py: edit the Markdown, then run it.\n\n.. _%s:\n\n" % (page, label(page))
    return head + body.rstrip() + "\n"


def index_text() -> str:
    lines = ["---", "# Generated by hacking/docsite.py: the docs/*.md pages, converted to docs/docsite/rst/.", "sections:"]
    for title, pages in SECTIONS:
        lines += ["  - title: %s" % title, "    toctree:"] + ["      - %s" % page for page in pages]
    return "\n".join(lines) + "\n"


def rendered() -> dict:
    """Each generated file and the text it must hold."""
    files = {RST / ("%s.rst" % page): convert(page, (DOCS / ("%s.md" % page)).read_text()) for _title, pages in SECTIONS for page in pages}
    files[INDEX] = index_text()
    return files


def main(argv: list) -> int:
    missing = sorted(p.stem for p in DOCS.glob("*.md")) != sorted(page for _t, pages in SECTIONS for page in pages)
    if missing:
        print("docs/*.md and SECTIONS differ: list every page in hacking/docsite.py's SECTIONS")
        return 1
    stale = [path for path, text in rendered().items() if not path.is_file() or path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print("%s is stale: run hacking/docsite.py" % path.relative_to(ROOT))
        return 1 if stale else 0
    RST.mkdir(parents=True, exist_ok=True)
    for path in stale:
        path.write_text(rendered()[path])
        print("wrote %s" % path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
