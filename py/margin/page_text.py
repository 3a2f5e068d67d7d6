"""A web page's readable HTML, as the compact Markdown-like text the model reads.

The page script hands over either the article Mozilla Readability found (`method="readability"`,
already cleaned) or, when it found none, the body's HTML (`method="fallback"`, boilerplate and
all). This module turns either into text; it reads no tab and no storage (sans-IO, stdlib only).

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
3. Never text: script, style, noscript, template, svg, canvas, iframe, object, embed, video,
   audio, form controls, dialog, title; elements that are `hidden` (except `hidden="until-found"`,
   which the browser's find-in-page reveals), `aria-hidden="true"`, or styled inline
   `display:none` / `visibility:hidden`.
4. `drop_boilerplate=True` (the fallback path) also drops nav, aside and menu; header and footer
   outside article/main/section/aside/nav (ARIA's banner and contentinfo); roles navigation,
   banner, contentinfo, complementary, search, dialog, alertdialog, menu, menubar; and elements
   whose id or class holds a boilerplate word (`_BOILERPLATE_WORDS`) as a whole word of a class
   name (split at `-`, `_`, digits and camelCase humps, so `header-ad` and `cookieBanner` match
   but `shadow`, `adaptive`, `download` do not; `has-sidebar` and `menu-open` are states, not
   parts). Never judged by class: html, body, main, article, and anything inside pre or code.
   An element judged by class is kept when it holds the page's h1, a main or an article, or
   more than half of the page's text: it is a wrapper, and dropping it would lose the page.
   Elements judged by tag or role are kept only when they hold a main or an article.
5. Then, on that path, only the largest main or article (not inside what was dropped) is kept,
   when it holds at least a quarter of the remaining text, and, for an article, at least half of
   all the articles' text (a list of similar articles, a feed or a forum thread, is kept whole).
6. Whitespace: runs collapse to one space (no-break spaces included), no line ends in spaces,
   at most one blank line in a row outside code blocks, none at the start or the end.
7. The first heading is dropped when it says the same as `title` (any case, any spacing): the
   record's header already names the page.
8. It never raises and stays linear: broken HTML (unclosed tags, stray end tags, `<p>` closed by
   a block) is repaired the HTML way, entities are decoded, the tree is walked without recursion
   and searches up the open elements are bounded, so 10,000 nested divs are just text.
9. Only the hard cap `MAX_PAGE_CHARS` cuts the text (`cap_text`): at a paragraph break, else at
   whitespace, when one is in the last tenth before the cap; `truncated` says whether it cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape as _unescape
from os.path import commonprefix
from urllib.parse import urlsplit

MAX_PAGE_CHARS = 2_000_000


@dataclass(frozen=True)
class PageText:
    text: str
    truncated: bool
    original_chars: int  # the text's length before the cap


# -- the vocabulary ------------------------------------------------------------------------------

_VOID = frozenset(
    "area base br col embed hr img input keygen link meta param source track wbr".split())
_NEVER_TEXT = frozenset(
    "script style noscript template svg canvas iframe object embed video audio button input "
    "select textarea option optgroup datalist dialog title".split())
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BOILERPLATE_TAGS = frozenset(("nav", "aside", "menu"))
_PAGE_LEVEL_ONLY = frozenset(("header", "footer"))
_SECTIONING = ("article", "aside", "main", "nav", "section")
_BOILERPLATE_ROLES = frozenset(
    "navigation banner contentinfo complementary search dialog alertdialog menu menubar".split())
_BOILERPLATE_WORDS = frozenset(
    "cookie cookies consent gdpr banner newsletter subscribe signup share sharing social related "
    "recommend recommended recommendations promo promos advert adverts advertisement advertising "
    "ad ads adsense sponsor sponsors sponsored sidebar breadcrumb breadcrumbs menu navbar nav "
    "navigation footer masthead popup modal skip skiplink comments disqus".split())
# `has-sidebar`, `no-ads`, `menu-open`: a state of the element, usually a wrapper of the page.
_STATE_BEFORE = frozenset(("has", "with", "no", "without", "show", "hide"))
_STATE_AFTER = frozenset(("open", "opened", "shown", "visible", "active", "enabled", "closed"))
_NEVER_BOILERPLATE = frozenset(("html", "body", "main", "article"))
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")

# The HTML parsing rules, simplified: which start tags close which open elements, and where the
# search for the element to close stops.
_CLOSES_P = frozenset(
    "address article aside blockquote center details dialog dir div dl dd dt fieldset figcaption "
    "figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li main menu nav ol p pre section "
    "table ul".split())
_CELL_SCOPE = frozenset(("td", "th", "caption", "table", "template"))
_P_SCOPE = _CELL_SCOPE | {"button"}
_LIST_SCOPE = _CELL_SCOPE | {"ul", "ol", "menu"}
_DL_SCOPE = _CELL_SCOPE | {"dl"}
_TABLE_PARTS = frozenset(("td", "th", "tr", "tbody", "thead", "tfoot", "caption"))
_SECTIONS = ("tbody", "thead", "tfoot")
# A start tag closes the nearest open element of `targets`, searching no further than `stops`.
_IMPLIED_CLOSE = {
    "li": (("li",), _LIST_SCOPE),
    "dt": (("dt", "dd"), _DL_SCOPE),
    "dd": (("dt", "dd"), _DL_SCOPE),
    "td": (("td", "th"), ("tr", "table")),
    "th": (("td", "th"), ("tr", "table")),
    "tr": (("tr",), ("table", *_SECTIONS)),
    **{section: (_SECTIONS, ("table",)) for section in _SECTIONS},
    **{heading: (tuple(_HEADINGS), None) for heading in _HEADINGS},
    "option": (("option",), None),
}
# An end tag closes its element, searching no further than these.
_END_STOPS = {
    **{part: ("table",) for part in _TABLE_PARTS},
    "table": (),
    "li": _LIST_SCOPE,
    "dt": _DL_SCOPE,
    "dd": _DL_SCOPE,
}
_SEARCH_LIMIT = 100  # open elements looked through to find the one to close

# How the renderer treats each tag (anything else is inline: its text flows).
_PARAGRAPH = frozenset(
    "p address article section main header footer aside nav figure figcaption hgroup fieldset "
    "center dl details form".split())
_LINE = frozenset("div dt summary legend".split())
_LISTS = frozenset(("ul", "ol", "menu", "dir"))
_INLINE_CODE = frozenset(("code", "kbd", "samp", "tt"))
_RAW_NEWLINE = _PARAGRAPH | _LINE | _LISTS | {"li", "tr", "table", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"}
_STRUCTURAL = _RAW_NEWLINE | _INLINE_CODE | {
    "br", "pre", "hr", "img", "td", "th", "caption"}  # the others are inline: only their text counts
_MAX_MARKS = 8  # nesting levels that still add indentation or "> "
_MAX_COLSPAN = 100

_CELL_LINES = re.compile(r"\s*\n\s*")
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)", re.I)
_BACKTICKS = re.compile(r"`+")


# -- the tree ------------------------------------------------------------------------------------


class _Node:
    __slots__ = ("tag", "attrs", "children", "skip", "tracked", "start", "end", "outer", "judged_by_class",
                 "effective_skip")

    def __init__(self, tag: str, attrs: dict):
        self.tag = tag
        self.attrs = attrs
        self.children: list = []
        self.skip = False
        # A boilerplate candidate, main or article (only those get the other fields): `start` and
        # `end` are (characters, mains/articles, h1s) seen so far, `outer` the innermost
        # candidate around it.
        self.tracked = False

    def track(self, start: tuple, outer: "_Node | None", judged_by_class: bool = False) -> None:
        self.tracked = True
        self.start = self.end = start
        self.outer = outer
        self.judged_by_class = judged_by_class
        self.effective_skip = False

    def chars(self) -> int:
        return self.end[0] - self.start[0]


def _is_hidden(attrs: dict) -> bool:
    if "hidden" in attrs and (attrs["hidden"] or "").strip().lower() != "until-found":
        return True
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = attrs.get("style")
    if style:
        style = "".join(style.lower().split())
        return "display:none" in style or "visibility:hidden" in style
    return False


def _names_boilerplate(value: str) -> bool:
    for name in value.split():
        words = [w.lower() for w in _WORD.findall(name)]
        for i, word in enumerate(words):
            if word in _BOILERPLATE_WORDS:
                after = i + 1
            elif i + 1 < len(words) and word + words[i + 1] in _BOILERPLATE_WORDS:  # sign-up, nav-bar
                after = i + 2
            else:
                continue
            if i > 0 and words[i - 1] in _STATE_BEFORE:
                continue
            if after < len(words) and words[after] in _STATE_AFTER:
                continue
            return True
    return False


def _is_main(tag: str, attrs: dict) -> bool:
    return tag == "main" or (attrs.get("role") or "").strip().lower() == "main"


class _TreeBuilder:
    """The document as a tree of `_Node`s and strings; never-text elements are left out."""

    def __init__(self, drop_boilerplate: bool):
        self.drop_boilerplate = drop_boilerplate
        self.root = _Node("#root", {})
        self.stack = [self.root]
        self.open: dict[str, int] = {}
        self.hidden = 0  # open never-text elements (their content is not kept)
        self.chars = self.content_marks = self.h1_marks = 0
        self.open_candidate: _Node | None = None
        self.candidates: list[_Node] = []
        self.mains: list[_Node] = []
        self.articles: list[_Node] = []

    # The stack of open elements.

    def _push(self, node: _Node) -> None:
        self.stack.append(node)
        self.open[node.tag] = self.open.get(node.tag, 0) + 1

    def _pop_to(self, index: int) -> None:
        stack, open_ = self.stack, self.open
        for _ in range(len(stack) - index):
            node = stack.pop()
            open_[node.tag] -= 1
            if node.skip and self.hidden:  # a never-text element: never in the tree, so never rendered
                self.hidden -= 1
            if node.tracked:
                node.end = (self.chars, self.content_marks, self.h1_marks)
                if node is self.open_candidate:
                    self.open_candidate = node.outer

    def _close(self, targets, stops) -> None:
        """Close the nearest open element in `targets`, unless one of `stops` comes first."""
        stack = self.stack
        index = len(stack) - 1
        bottom = max(0, index - _SEARCH_LIMIT)
        while index > bottom:
            tag = stack[index].tag
            if tag in targets:
                self._pop_to(index)
                return
            if tag in stops:
                return
            index -= 1

    def _any_open(self, tags) -> bool:
        open_ = self.open
        return any(open_.get(t) for t in tags)

    def _close_implied_by(self, tag: str) -> None:
        if tag in _CLOSES_P and self.open.get("p"):
            self._close(("p",), _P_SCOPE)
        rule = _IMPLIED_CLOSE.get(tag)
        if rule is not None:
            targets, stops = rule
            if self._any_open(targets):
                if stops is None:  # only when it is the current element
                    if self.stack[-1].tag in targets:
                        self._pop_to(len(self.stack) - 1)
                else:
                    self._close(targets, stops)

    # The tokenizer's events.

    def start_tag(self, tag: str, attrs: dict) -> None:
        if tag in _VOID:
            if not self.hidden and tag in ("br", "hr", "img") and not (attrs and _is_hidden(attrs)):
                node = _Node(tag, {"alt": attrs["alt"]} if tag == "img" and attrs.get("alt") else {})
                self.stack[-1].children.append(node)
            return
        self._close_implied_by(tag)
        node = _Node(tag, attrs)
        if self.hidden:
            pass
        elif tag in _NEVER_TEXT or (attrs and _is_hidden(attrs)):
            self.hidden += 1
            node.skip = True
        else:
            self.stack[-1].children.append(node)
            if self.drop_boilerplate:
                self._judge(node)
        self._push(node)

    def _judge(self, node: _Node) -> None:
        tag, attrs = node.tag, node.attrs
        verdict = self._boilerplate_verdict(tag, attrs)
        if verdict:
            node.track((self.chars, self.content_marks, self.h1_marks), self.open_candidate, verdict == "class")
            self.open_candidate = node
            self.candidates.append(node)
        elif tag == "article" or _is_main(tag, attrs):
            node.track((self.chars, self.content_marks, self.h1_marks), self.open_candidate)
            (self.articles if tag == "article" else self.mains).append(node)
            self.content_marks += 1
        elif tag == "h1":
            self.h1_marks += 1

    def _boilerplate_verdict(self, tag: str, attrs: dict) -> str:
        """"tag" or "class" when the element looks like boilerplate (rule 4), else ""."""
        if tag in _BOILERPLATE_TAGS:
            return "tag"
        if tag in _PAGE_LEVEL_ONLY and not self._any_open(_SECTIONING):
            return "tag"
        role = attrs.get("role")
        if role:
            roles = role.lower().split()
            if any(r in _BOILERPLATE_ROLES for r in roles):
                return "tag"
            if "main" in roles:
                return ""
        if tag in _NEVER_BOILERPLATE or self.open.get("pre") or self.open.get("code"):
            return ""
        for name in ("id", "class"):
            value = attrs.get(name)
            if value and _names_boilerplate(value):
                return "class"
        return ""

    def end_tag(self, tag: str) -> None:
        if tag == "br":  # `</br>` is a `<br>`, as in browsers
            self.start_tag("br", {})
            return
        if tag in _HEADINGS:  # any heading's end tag closes the open heading
            if self._any_open(_HEADINGS):
                self._close(_HEADINGS, _CELL_SCOPE)
        elif self.stack[-1].tag == tag and len(self.stack) > 1:
            self._pop_to(len(self.stack) - 1)
        elif self.open.get(tag):
            self._close((tag,), _END_STOPS.get(tag, _CELL_SCOPE))

    def data(self, data: str) -> None:
        if not self.hidden:
            self.stack[-1].children.append(data)
            self.chars += len(data.strip())

    def finish(self) -> _Node:
        self._pop_to(1)
        return self.root


# -- the tokenizer -------------------------------------------------------------------------------
# Not html.parser: it is quadratic on unterminated tags (`<a<a<a...`), and raises on some `<![`.
# One regex finds the next piece of markup; every alternative ends at `>` or at the end of the
# text (HTML's rule: a tag still open at the end is dropped), so each character is read once.

_MARKUP = re.compile(r"""
    <!--(?:-?>|.*?(?:--!?>|\Z))
  | <(/?)([a-zA-Z][^\t\n\f\r\ />]*+)((?:[^>"'=]++|=\s*+(?:"[^"]*+"?|'[^']*+'?)?|["'])*+)(>?)
  | </(?:>|[^a-zA-Z>][^>]*+>?)
  | <[!?][^>]*+>?
""", re.S | re.X)
_ATTRIBUTE = re.compile(r"""([^\s/=]+)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s]*)))?""")
# Their content is text up to their end tag, and never shown.
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript")
_RAW_END = {tag: re.compile(rf"</{tag}(?=[\s/>])", re.I) for tag in _RAW_TEXT}


def _attributes(text: str) -> dict:
    attrs: dict = {}
    for match in _ATTRIBUTE.finditer(text):
        name = match.group(1).lower()
        if name not in attrs:
            value = match.group(2)
            if value is None:
                value = match.group(3)
                if value is None:
                    value = match.group(4)
            if value and "&" in value:
                value = _unescape(value)
            attrs[name] = value
    return attrs


def _tokenize(html: str, builder: _TreeBuilder) -> None:
    search = _MARKUP.search
    data, start_tag, end_tag = builder.data, builder.start_tag, builder.end_tag
    position = 0
    while True:
        match = search(html, position)
        if match is None:
            text = html[position:]
            if text:
                data(_unescape(text) if "&" in text else text)
            return
        if match.start() > position:
            text = html[position:match.start()]
            data(_unescape(text) if "&" in text else text)
        position = match.end()
        name = match.group(2)
        if name is None:  # a comment, a doctype, a processing instruction
            continue
        if not match.group(4):  # the text ended inside the tag
            return
        name = name.lower()
        if match.group(1):
            end_tag(name)
            continue
        attributes = match.group(3)
        if name in _RAW_END:
            end = _RAW_END[name].search(html, position)
            position = end.start() if end else len(html)
            continue
        start_tag(name, _attributes(attributes) if attributes and not attributes.isspace() else {})


def _parse(html: str, drop_boilerplate: bool) -> _TreeBuilder:
    builder = _TreeBuilder(drop_boilerplate)
    _tokenize(html, builder)
    builder.finish()
    return builder


def _content_root(builder: _TreeBuilder) -> _Node:
    """Rules 4 and 5: decide which boilerplate candidates go, then which subtree stays."""
    total = builder.chars
    dropped_chars = 0
    for node in builder.candidates:  # document order: an element before what it holds
        holds_content = node.end[1] > node.start[1]
        if node.judged_by_class:
            keep = holds_content or node.end[2] > node.start[2] or node.chars() * 2 > total
        else:
            keep = holds_content
        node.skip = not keep
        outer_skipped = node.outer is not None and node.outer.effective_skip
        node.effective_skip = node.skip or outer_skipped
        if node.skip and not outer_skipped:
            dropped_chars += node.chars()
    remaining = total - dropped_chars

    def eligible(nodes):
        return [n for n in nodes if n.chars() > 0 and not (n.outer is not None and n.outer.effective_skip)]

    mains, articles = eligible(builder.mains), eligible(builder.articles)
    candidates = mains + articles
    if not candidates:
        return builder.root
    best = max(candidates, key=_Node.chars)
    if best.chars() * 4 < remaining:
        return builder.root
    if best.tag == "article" and best not in mains:
        outermost, reach = [], -1
        for article in articles:
            if article.start[0] >= reach:
                outermost.append(article)
                reach = article.end[0]
        if best.chars() * 2 < sum(a.chars() for a in outermost):
            return builder.root
    wrapper = _Node("#root", {})
    wrapper.children = [best]
    return wrapper


# -- the text ------------------------------------------------------------------------------------


class _Flow:
    """One stream of output text: paragraphs, line starts, indentation and list markers."""

    __slots__ = ("parts", "pending", "space", "empty", "indents", "indent", "last_indent", "marker",
                 "list_depth", "raw")

    def __init__(self, raw: bool = False):
        self.parts: list[str] = []
        self.pending = 0  # line breaks due before the next text: 0, 1 (new line), 2 (blank line)
        self.space = False  # a space is due before the next text on the same line
        self.empty = True
        self.indents = [""]  # per open quote or list item: the line start ("> ", "  " added per level)
        self.indent = ""
        self.last_indent = ""
        self.marker: str | None = None  # the pending list item's "- " / "3. ", with its indentation
        self.list_depth = 0
        self.raw = raw  # inside <pre>: text as it is

    def brk(self, level: int) -> None:
        if self.raw:
            self.raw_newline()
            return
        if self.list_depth and level > 1:
            level = 1
        if level > self.pending:
            self.pending = level

    def line_break(self) -> None:
        if self.raw:
            self.parts.append("\n")
            return
        self.pending = min(self.pending + 1, 1 if self.list_depth else 2)

    def raw_newline(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")

    def push_prefix(self, prefix: str) -> None:
        self.indent = self.indent + prefix if len(self.indents) <= _MAX_MARKS else self.indent
        self.indents.append(self.indent)

    def pop_prefix(self) -> None:
        if len(self.indents) > 1:
            self.indents.pop()
        self.indent = self.indents[-1]

    def text(self, data: str) -> None:
        if self.raw:
            self.parts.append(data.replace("\xa0", " "))
            return
        words = data.split()
        if not words:
            if data:
                self.space = True
            return
        if data[0].isspace():
            self.space = True
        self.put(" ".join(words))
        self.space = data[-1].isspace()

    def put(self, text: str) -> None:
        """Write `text` (no newline in it) where the flow stands."""
        parts = self.parts
        if self.empty or self.pending:
            if not self.empty:
                if self.pending == 2:
                    blank = commonprefix([self.last_indent, self.indent]).rstrip()
                    parts.append("\n" + blank + "\n")
                else:
                    parts.append("\n")
            if self.marker is not None:
                parts.append(self.marker)
                self.marker = None
            else:
                parts.append(self.indent)
            self.last_indent = self.indent
            self.empty = False
            self.pending = 0
        elif self.space:
            parts.append(" ")
        parts.append(text)
        self.space = False

    def put_lines(self, lines: list[str]) -> None:
        """A block of lines (a table, a code block): the first where the flow stands, the others
        at the current indentation."""
        if not lines:
            return
        self.put(lines[0])
        indent = self.indent
        bare = indent.rstrip()
        self.parts.extend("\n" + (indent + line if line else bare) for line in lines[1:])

    def value(self) -> str:
        return "".join(self.parts)


class _Table:
    __slots__ = ("rows", "caption", "layout")

    def __init__(self, layout: bool):
        self.rows: list[list[tuple[str, int]]] = []
        self.caption = ""
        self.layout = layout


def _one_line(text: str) -> str:
    return _CELL_LINES.sub(" ", text).strip()


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _int_attr(attrs: dict, name: str, default: int) -> int:
    try:
        return int((attrs.get(name) or "").strip())
    except ValueError:
        return default


class _Renderer:
    def __init__(self, title: str):
        self.title = title
        self.flows = [_Flow()]
        self.flow = self.flows[0]
        self.lists: list[list[int]] = []  # per open list: [ordered, next number, step]
        self.tables: list[_Table] = []
        self.cells: list[int] = []  # per open cell: its colspan
        self.figures = 0
        self.pre_depth = 0
        self.pre_language = ""
        self.seen_heading = False

    def _push_flow(self, raw: bool = False) -> None:
        self.flow = _Flow(raw)
        self.flows.append(self.flow)

    def _pop_flow(self) -> str:
        text = self.flows.pop().value()
        self.flow = self.flows[-1]
        return text

    def _mark_layout(self) -> None:
        if self.cells and self.tables:
            self.tables[-1].layout = True

    def enter(self, node: _Node) -> None:
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
        elif tag in _HEADINGS:
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

    def exit(self, node: _Node) -> None:
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
        elif tag in _HEADINGS:
            self._exit_heading(_HEADINGS[tag])
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

    def _enter_list(self, node: _Node) -> None:
        flow = self.flow
        flow.brk(1 if flow.list_depth else 2)
        flow.list_depth += 1
        if node.tag == "ol":
            if "reversed" in node.attrs:
                items = sum(1 for c in node.children if isinstance(c, _Node) and c.tag == "li")
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
        if first and self.title and _same_text(text, self.title):
            return
        flow = self.flow
        flow.brk(2)
        flow.put("#" * level + " " + text)
        flow.brk(2)

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


def _render(root: _Node, title: str) -> str:
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
    """The compact Markdown-like text of `html` (rules 1-8)."""
    if not isinstance(html, str):
        return ""
    html = html.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    builder = _parse(html, drop_boilerplate)
    root = _content_root(builder) if drop_boilerplate else builder.root
    return _render(root, title if isinstance(title, str) else "")


def cap_text(text: str, limit: int = MAX_PAGE_CHARS) -> PageText:
    """`text` cut to at most `limit` characters (rule 9)."""
    original = len(text)
    limit = max(0, limit)
    if original <= limit:
        return PageText(text, False, original)
    window = limit - limit // 10
    cut = text.rfind("\n\n", window, limit)
    if cut < 0:
        cut = max(text.rfind(" ", window, limit), text.rfind("\n", window, limit), text.rfind("\t", window, limit))
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
