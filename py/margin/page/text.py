"""A web page's readable HTML, as the compact Markdown-like text the model reads.

The page script hands over either the article Mozilla Readability found (`method="readability"`,
already cleaned) or, when it found none, the body's HTML (`method="fallback"`, boilerplate and
all). This module turns either into text; it reads no tab and no storage (sans-IO, stdlib only).
Three steps, one module each: `margin.page.html_tokens` reads the markup in one linear pass,
`margin.page.tree` builds the repaired element tree (never-text elements left out; on the
fallback path, boilerplate dropped), and this module renders the tree through `margin.page.text_flow`
(whitespace, indentation). The renderer stays whole (a little over 400 lines): each element's
rendering reads the same flow state, and splitting it by element kind would only pass that state
around.

Rules:
1. Structure survives, compactly: headings become `#`..`######`, paragraphs are separated by one
   blank line, `<br>` is a line break, lists are `- ` / `1. ` items (ordered lists count from
   `start`, down when `reversed`) indented two spaces per level, a list item holding paragraphs
   stays one item, tables become pipe tables, `<pre>` a fenced code block (its language from a
   `language-*` / `lang-*` class) kept verbatim, inline code `code`, quotes `> ` lines, `<hr>`
   `---`. Links give their text only, no URL; bold and italics give plain text (markers would
   cost tokens and rarely change the meaning); images give nothing, except alt text inside a
   `<figure>` (`[Image: alt]`); a `<figcaption>` is a paragraph.
2. Tables: the first row is the header, cells' `|` are escaped and their lines joined, colspan is
   padded with empty cells, short rows are padded to the widest; rowspan is not reproduced. A
   table used for layout (a single non-empty cell, `role="presentation"`, or cells holding
   headings or tables) gives its cells' content in order instead.
3. What is never text, and what is boilerplate, is `margin.page.tree`'s rules 1-3; whitespace is
   `margin.page.text_flow`'s rules.
4. The title heading is dropped (the record's header already names the page): the first heading,
   or one at the page's top (only headings before it), that says the same as `title` (any case,
   any spacing; or the part of it before or after a separator such as " | " or " - ", since a
   tab's title often adds the site's name). Section kickers, the site's labels above the title,
   are boilerplate: short headings (at most `_KICKER_CHARS`) at the top go with the title heading
   that follows them, and one that ends like a label running into the title ("Biz & IT —": a
   dash, bar, bullet or guillemet) goes even when no title heading follows.
5. It never raises and stays linear: broken HTML (unclosed tags, stray end tags, `<p>` closed by
   a block) is repaired the HTML way, entities are decoded, the tree is walked without recursion
   and searches up the open elements are bounded, so 10,000 nested divs are just text.
6. Only the hard cap `MAX_PAGE_CHARS` cuts the text (`cap_text`): at a paragraph break, else at
   whitespace, when one is in the last tenth before the cap; `truncated` says whether it cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .text_flow import Flow
from .tree import HEADINGS, Node, parse_page

MAX_PAGE_CHARS = 2_000_000


@dataclass(frozen=True)
class PageText:
    text: str
    truncated: bool
    original_chars: int  # the text's length before the cap


# How the renderer treats each tag (anything else is inline: its text flows).
_PARAGRAPH = frozenset(
    "p address article section main header footer aside nav figure figcaption hgroup fieldset "
    "center dl details form".split()
)
_LINE = frozenset("div dt summary legend".split())
_LISTS = frozenset(("ul", "ol", "menu", "dir"))
_INLINE_CODE = frozenset(("code", "kbd", "samp", "tt"))
_RAW_NEWLINE = (
    _PARAGRAPH
    | _LINE
    | _LISTS
    | {"li", "tr", "table", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"}
)
_STRUCTURAL = (
    _RAW_NEWLINE | _INLINE_CODE | {"br", "pre", "hr", "img", "td", "th", "caption"}
)  # the others are inline: only their text counts
_MAX_COLSPAN = 100

_CELL_LINES = re.compile(r"\s*\n\s*")
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)", re.I)
_BACKTICKS = re.compile(r"`+")


class _Table:
    __slots__ = ("caption", "layout", "rows")

    def __init__(self, layout: bool):
        self.rows: list[list[tuple[str, int]]] = []
        self.caption = ""
        self.layout = layout


def _one_line(text: str) -> str:
    return _CELL_LINES.sub(" ", text).strip()


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


# A tab's title often adds the site's name: "Headline | Site", "Site - Headline".
_TITLE_SEPARATOR = re.compile(r"\s+[|\-\u2013\u2014\u00b7\u2022\u00bb\u203a]+\s+")
# A section kicker ("Biz & IT —"): a short heading that ends like a label running into the title.
_KICKER_CHARS = 40
_KICKER_ENDS = ("\u2014", "\u2013", "-", "|", "\u00b7", "\u2022", "\u00bb", "\u203a")


def _is_title(heading: str, title: str) -> bool:
    """Rule 4: the heading says the page's title, with or without the site's name around it."""
    if _same_text(heading, title):
        return True
    return any(
        _same_text(heading, title[: cut.start()]) or _same_text(heading, title[cut.end() :])
        for cut in _TITLE_SEPARATOR.finditer(title)
    )


def _int_attr(attrs: dict, name: str, default: int) -> int:
    try:
        return int((attrs.get(name) or "").strip())
    except ValueError:
        return default


class _Renderer:
    def __init__(self, title: str):
        self.title = title
        self.flows = [Flow()]
        self.flow = self.flows[0]
        self.lists: list[list[int]] = []  # per open list: [ordered, next number, step]
        self.tables: list[_Table] = []
        self.cells: list[int] = []  # per open cell: its colspan
        self.figures = 0
        self.pre_depth = 0
        self.pre_language = ""
        self.seen_heading = False
        self.top_end = 0  # the root flow's length while only headings were written (rule 4)
        self.top_labels: list[str] = []  # those headings

    def _push_flow(self, raw: bool = False) -> None:
        self.flow = Flow(raw)
        self.flows.append(self.flow)

    def _pop_flow(self) -> str:
        text = self.flows.pop().value()
        self.flow = self.flows[-1]
        return text

    def _mark_layout(self) -> None:
        if self.cells and self.tables:
            self.tables[-1].layout = True

    def enter(self, node: Node) -> None:
        tag = node.tag
        if tag not in _STRUCTURAL:
            return
        flow = self.flow
        if self.pre_depth:
            if tag == "pre":
                self.pre_depth += 1
            elif tag == "br":
                flow.line_break()
            elif tag == "code" and not self.pre_language:
                self.pre_language = _language(node.attrs)
            elif tag in _RAW_NEWLINE:
                flow.raw_newline()
            return
        if tag in _PARAGRAPH:
            flow.brk(2)
            if tag == "figure":
                self.figures += 1
        elif tag in _LINE:
            flow.brk(1)
        elif tag == "br":
            flow.line_break()
        elif tag in HEADINGS:
            self._mark_layout()
            self._push_flow()
        elif tag == "li":
            self._enter_item()
        elif tag in _LISTS:
            self._enter_list(node)
        elif tag in _INLINE_CODE:
            self._push_flow()
        elif tag == "pre":
            self.pre_depth = 1
            self.pre_language = _language(node.attrs)
            self._push_flow(raw=True)
        elif tag == "blockquote":
            flow.brk(2)
            flow.push_prefix("> ")
        elif tag == "dd":
            flow.brk(1)
            flow.push_prefix("  ")
        elif tag == "hr":
            flow.brk(2)
            flow.put("---")
            flow.brk(2)
        elif tag == "img":
            alt = node.attrs.get("alt")
            if alt and self.figures:
                flow.brk(1)
                flow.put(f"[Image: {' '.join(alt.split())}]")
                flow.brk(1)
        elif tag == "table":
            self._mark_layout()
            role = (node.attrs.get("role") or "").lower()
            self.tables.append(_Table(layout=role in ("presentation", "none")))
        elif tag in ("td", "th") and self.tables:
            self.cells.append(min(max(_int_attr(node.attrs, "colspan", 1), 1), _MAX_COLSPAN))
            self._push_flow()
        elif tag == "tr" and self.tables:
            self.tables[-1].rows.append([])
        elif tag == "caption" and self.tables:
            self._push_flow()

    def exit(self, node: Node) -> None:
        tag = node.tag
        if tag not in _STRUCTURAL:
            return
        flow = self.flow
        if self.pre_depth:
            if tag == "pre":
                self.pre_depth -= 1
                if not self.pre_depth:
                    self._exit_pre()
            elif tag in _RAW_NEWLINE:
                flow.raw_newline()
            return
        if tag in _PARAGRAPH:
            flow.brk(2)
            if tag == "figure":
                self.figures -= 1
        elif tag in _LINE:
            flow.brk(1)
        elif tag in HEADINGS:
            self._exit_heading(HEADINGS[tag])
        elif tag == "li":
            flow.pop_prefix()
            flow.marker = None
            flow.brk(1)
        elif tag in _LISTS:
            self.lists.pop()
            flow.list_depth -= 1
            flow.brk(1 if flow.list_depth else 2)
        elif tag in _INLINE_CODE:
            code = _one_line(self._pop_flow())
            if code:
                fence = "``" if "`" in code else "`"
                pad = " " if fence == "``" else ""
                self.flow.put(f"{fence}{pad}{code}{pad}{fence}")
        elif tag == "blockquote":
            flow.pop_prefix()
            flow.brk(2)
        elif tag == "dd":
            flow.pop_prefix()
            flow.brk(1)
        elif tag == "table":
            self._exit_table(self.tables.pop())
        elif tag in ("td", "th") and self.cells:
            colspan = self.cells.pop()
            text = self._pop_flow().strip()
            rows = self.tables[-1].rows
            if not rows:
                rows.append([])
            rows[-1].append((text, colspan))
        elif tag == "caption" and self.tables:
            self.tables[-1].caption = self._pop_flow().strip()

    def _enter_list(self, node: Node) -> None:
        flow = self.flow
        flow.brk(1 if flow.list_depth else 2)
        flow.list_depth += 1
        if node.tag == "ol":
            if "reversed" in node.attrs:
                items = sum(1 for c in node.children if isinstance(c, Node) and c.tag == "li")
                self.lists.append([1, _int_attr(node.attrs, "start", items), -1])
            else:
                self.lists.append([1, _int_attr(node.attrs, "start", 1), 1])
        else:
            self.lists.append([0, 0, 0])

    def _enter_item(self) -> None:
        flow = self.flow
        flow.brk(1)
        if self.lists and self.lists[-1][0]:
            state = self.lists[-1]
            marker = f"{state[1]}. "
            state[1] += state[2]
        else:
            marker = "- "
        flow.marker = flow.indent + marker
        flow.push_prefix("  ")

    def _exit_heading(self, level: int) -> None:
        text = _one_line(self._pop_flow())
        if not text:
            return
        first = not self.seen_heading
        self.seen_heading = True
        flow = self.flow
        root = self.flows[0]
        # Rule 4: the page's top, where only headings were written so far (not in a table cell).
        top = flow is root and len(root.parts) == self.top_end
        if (first or top) and self.title and _is_title(text, self.title):
            if top and all(len(label) <= _KICKER_CHARS for label in self.top_labels):
                root.parts.clear()  # the section labels above the title go with it
                root.empty, root.pending, root.space = True, 0, False
                self.top_end = 0
            return
        if top and len(text) <= _KICKER_CHARS and text.endswith(_KICKER_ENDS):
            return  # "Biz & IT —": a section label before the title, not a heading of the text
        flow.brk(2)
        flow.put("#" * level + " " + text)
        flow.brk(2)
        if top:
            self.top_labels.append(text)
            self.top_end = len(root.parts)

    def _exit_pre(self) -> None:
        code = self._pop_flow()
        if code.startswith("\n"):  # HTML ignores the newline right after <pre>
            code = code[1:]
        lines = [line.rstrip() for line in code.rstrip().split("\n")]
        first = next((i for i, line in enumerate(lines) if line), None)
        if first is None:
            return
        lines = lines[first:]
        longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
        fence = "`" * max(3, longest + 1)
        flow = self.flow
        flow.brk(2)
        flow.put_lines([fence + self.pre_language, *lines, fence])
        flow.brk(2)
        self.pre_language = ""

    def _exit_table(self, table: _Table) -> None:
        flow = self.flow
        if table.caption:
            flow.brk(2)
            flow.put_lines(table.caption.split("\n"))
        cells = [cell for row in table.rows for cell in row if cell[0]]
        if table.layout or len(cells) <= 1:
            for text, _ in cells:
                flow.brk(2)
                flow.put_lines(text.split("\n"))
            flow.brk(2)
            return
        rows = []
        for row in table.rows:
            if not any(text for text, _ in row):
                continue
            out = []
            for text, colspan in row:
                out.append(_one_line(text).replace("|", "\\|"))
                out.extend([""] * (colspan - 1))
            rows.append(out)
        width = max(len(r) for r in rows)
        lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
        lines.insert(1, "| " + " | ".join(["---"] * width) + " |")
        flow.brk(2)
        flow.put_lines(lines)
        flow.brk(2)


def _language(attrs: dict) -> str:
    match = _LANGUAGE.search(attrs.get("class") or "")
    return match.group(1).lower() if match else ""


def _render(root: Node, title: str) -> str:
    renderer = _Renderer(title)
    enter, exit_ = renderer.enter, renderer.exit
    stack = [(root, iter(root.children))]
    while stack:
        node, children = stack[-1]
        for child in children:
            if child.__class__ is str:
                renderer.flow.text(child)
            elif not child.skip:
                enter(child)
                if child.children:
                    stack.append((child, iter(child.children)))
                    break
                exit_(child)
        else:
            stack.pop()
            if stack:
                exit_(node)
    # Broken markup can leave captures open (a cell outside any row, say): their text still counts.
    while len(renderer.flows) > 1:
        text = renderer._pop_flow()
        if text.strip():
            renderer.flow.brk(2)
            renderer.flow.put_lines(text.strip("\n").split("\n"))
    return renderer.flow.value()


# -- the public functions ------------------------------------------------------------------------


def html_to_text(html: str, *, drop_boilerplate: bool = False, title: str = "") -> str:
    """The compact Markdown-like text of `html` (rules 1-5)."""
    if not isinstance(html, str):
        return ""
    html = html.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    root = parse_page(html, drop_boilerplate=drop_boilerplate)
    return _render(root, title if isinstance(title, str) else "")


def cap_text(text: str, limit: int = MAX_PAGE_CHARS) -> PageText:
    """`text` cut to at most `limit` characters (rule 6)."""
    original = len(text)
    limit = max(0, limit)
    if original <= limit:
        return PageText(text, False, original)
    window = limit - limit // 10
    cut = text.rfind("\n\n", window, limit)
    if cut < 0:
        cut = max(
            text.rfind(" ", window, limit), text.rfind("\n", window, limit), text.rfind("\t", window, limit)
        )
    if cut < 0:
        cut = limit
    return PageText(text[:cut].rstrip(), True, original)


def page_text(html: str, *, method: str, title: str = "", limit: int = MAX_PAGE_CHARS) -> PageText:
    """What "Attach page" attaches: Readability's article as it is, anything else cleaned first."""
    return cap_text(html_to_text(html, drop_boilerplate=(method != "readability"), title=title), limit)


def site_of(url: str) -> str:
    """The site a URL is on, as people say it: "example.com" for https://www.example.com/a,
    "file" for a file:// URL, "" when there is no host."""
    if not isinstance(url, str):
        return ""
    try:
        parts = urlsplit(url.strip())
        if parts.scheme.lower() == "file":
            return "file"
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return ""
    return host[4:] if host.startswith("www.") else host
