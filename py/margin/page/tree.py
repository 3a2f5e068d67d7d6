"""A web page's HTML as a tree of elements and text: repaired, never-text left out, boilerplate judged.

`margin.page.html_tokens` reads the markup; this builds the tree `margin.page.text` renders, and on the
fallback path (`drop_boilerplate=True`) decides which subtree is the page's content.

Rules:
1. Never text: script, style, noscript, template, svg, canvas, iframe, object, embed, video,
   audio, form controls, dialog, title; elements that are `hidden` (except `hidden="until-found"`,
   which the browser's find-in-page reveals), `aria-hidden="true"`, or styled inline
   `display:none` / `visibility:hidden`.
2. `drop_boilerplate=True` (the fallback path) also drops nav, aside and menu; header and footer
   outside article/main/section/aside/nav (ARIA's banner and contentinfo); roles navigation,
   banner, contentinfo, complementary, search, dialog, alertdialog, menu, menubar; and elements
   whose id or class holds a boilerplate word (`_BOILERPLATE_WORDS`) as a whole word of a class
   name (split at `-`, `_`, digits and camelCase humps, so `header-ad` and `cookieBanner` match
   but `shadow`, `adaptive`, `download` do not; `has-sidebar` and `menu-open` are states, not
   parts). Never judged by class: html, body, main, article, and anything inside pre or code.
   An element judged by class is kept when it holds the page's h1, a main or an article, or
   more than half of the page's text: it is a wrapper, and dropping it would lose the page.
   Elements judged by tag or role are kept only when they hold a main or an article.
3. Then, on that path, only the largest main or article (not inside what was dropped) is kept,
   when it holds at least a quarter of the remaining text, and, for an article, at least half of
   all the articles' text (a list of similar articles, a feed or a forum thread, is kept whole).
4. Broken HTML (unclosed tags, stray end tags, `<p>` closed by a block) is repaired the HTML way,
   simplified (`_IMPLIED_CLOSE`, `_END_STOPS`), and every search up the open elements is bounded
   (`_SEARCH_LIMIT`), so building stays linear: 10,000 nested divs are just text.
"""

from __future__ import annotations

import re

from .html_tokens import tokenize

_VOID = frozenset("area base br col embed hr img input keygen link meta param source track wbr".split())
_NEVER_TEXT = frozenset(
    "script style noscript template svg canvas iframe object embed video audio button input "
    "select textarea option optgroup datalist dialog title".split()
)
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BOILERPLATE_TAGS = frozenset(("nav", "aside", "menu"))
_PAGE_LEVEL_ONLY = frozenset(("header", "footer"))
_SECTIONING = ("article", "aside", "main", "nav", "section")
_BOILERPLATE_ROLES = frozenset(
    "navigation banner contentinfo complementary search dialog alertdialog menu menubar".split()
)
_BOILERPLATE_WORDS = frozenset(
    "cookie cookies consent gdpr banner newsletter subscribe signup share sharing social related "
    "recommend recommended recommendations promo promos advert adverts advertisement advertising "
    "ad ads adsense sponsor sponsors sponsored sidebar breadcrumb breadcrumbs menu navbar nav "
    "navigation footer masthead popup modal skip skiplink comments disqus".split()
)
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
    "table ul".split()
)
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
    **{heading: (tuple(HEADINGS), None) for heading in HEADINGS},
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


class Node:
    """An element: its tag, attributes and children (`Node`s and strings); `skip` keeps it out of the text."""

    __slots__ = (
        "attrs",
        "children",
        "effective_skip",
        "end",
        "judged_by_class",
        "outer",
        "skip",
        "start",
        "tag",
        "tracked",
    )

    def __init__(self, tag: str, attrs: dict):
        self.tag = tag
        self.attrs = attrs
        self.children: list = []
        self.skip = False
        # A boilerplate candidate, main or article (only those get the other fields): `start` and
        # `end` are (characters, mains/articles, h1s) seen so far, `outer` the innermost
        # candidate around it.
        self.tracked = False

    def track(self, start: tuple, outer: Node | None, judged_by_class: bool = False) -> None:
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
    """The document as a tree of `Node`s and strings; never-text elements are left out."""

    def __init__(self, drop_boilerplate: bool):
        self.drop_boilerplate = drop_boilerplate
        self.root = Node("#root", {})
        self.stack = [self.root]
        self.open: dict[str, int] = {}
        self.hidden = 0  # open never-text elements (their content is not kept)
        self.chars = self.content_marks = self.h1_marks = 0
        self.open_candidate: Node | None = None
        self.candidates: list[Node] = []
        self.mains: list[Node] = []
        self.articles: list[Node] = []

    # The stack of open elements.

    def _push(self, node: Node) -> None:
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
                node = Node(tag, {"alt": attrs["alt"]} if tag == "img" and attrs.get("alt") else {})
                self.stack[-1].children.append(node)
            return
        self._close_implied_by(tag)
        node = Node(tag, attrs)
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

    def _judge(self, node: Node) -> None:
        tag, attrs = node.tag, node.attrs
        verdict = self._boilerplate_verdict(tag, attrs)
        if verdict:
            node.track(
                (self.chars, self.content_marks, self.h1_marks), self.open_candidate, verdict == "class"
            )
            self.open_candidate = node
            self.candidates.append(node)
        elif tag == "article" or _is_main(tag, attrs):
            node.track((self.chars, self.content_marks, self.h1_marks), self.open_candidate)
            (self.articles if tag == "article" else self.mains).append(node)
            self.content_marks += 1
        elif tag == "h1":
            self.h1_marks += 1

    def _boilerplate_verdict(self, tag: str, attrs: dict) -> str:
        """ "tag" or "class" when the element looks like boilerplate (rule 2), else ""."""
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
        if tag in HEADINGS:  # any heading's end tag closes the open heading
            if self._any_open(HEADINGS):
                self._close(HEADINGS, _CELL_SCOPE)
        elif self.stack[-1].tag == tag and len(self.stack) > 1:
            self._pop_to(len(self.stack) - 1)
        elif self.open.get(tag):
            self._close((tag,), _END_STOPS.get(tag, _CELL_SCOPE))

    def data(self, data: str) -> None:
        if not self.hidden:
            self.stack[-1].children.append(data)
            self.chars += len(data.strip())

    def finish(self) -> Node:
        self._pop_to(1)
        return self.root


def _parse(html: str, drop_boilerplate: bool) -> _TreeBuilder:
    builder = _TreeBuilder(drop_boilerplate)
    tokenize(html, builder)
    builder.finish()
    return builder


def _content_root(builder: _TreeBuilder) -> Node:
    """Rules 2 and 3: decide which boilerplate candidates go, then which subtree stays."""
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
    best = max(candidates, key=Node.chars)
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
    wrapper = Node("#root", {})
    wrapper.children = [best]
    return wrapper


def parse_page(html: str, *, drop_boilerplate: bool) -> Node:
    """The tree to render: the whole document, or on the fallback path its content (rules 1-4)."""
    builder = _parse(html, drop_boilerplate)
    return _content_root(builder) if drop_boilerplate else builder.root
