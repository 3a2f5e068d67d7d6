"""A linear HTML tokenizer: start tags, end tags and text, handed to a sink as they come.

Why not `html.parser`: in Pyodide's CPython 3.12.7 (what the service worker runs) it is quadratic
on unterminated tags (`<a<a<a...`), and it raises on some `<![`. This reads only what the
page-text renderer needs, and reads it once.

Rules:
1. Linear: one regex finds the next piece of markup; every alternative ends at `>` or at the end
   of the text (HTML's rule: a tag still open at the end is dropped), so each character is read
   once.
2. Tag and attribute names are lower-cased; the first of repeated attributes wins; entities are
   decoded in text and in attribute values.
3. Comments, doctypes and processing instructions give nothing; neither does a raw-text element
   (`_RAW_TEXT`: script, style, textarea, title, ...): its content is skipped up to its end tag.
4. It never raises on any input, and never builds anything: the sink (`margin.page.tree`) repairs
   the structure.
"""

from __future__ import annotations

import re
from html import unescape as _unescape
from typing import Protocol


class TokenSink(Protocol):
    def data(self, data: str) -> None: ...

    def start_tag(self, tag: str, attrs: dict) -> None: ...

    def end_tag(self, tag: str) -> None: ...


_MARKUP = re.compile(
    r"""
    <!--(?:-?>|.*?(?:--!?>|\Z))
  | <(/?)([a-zA-Z][^\t\n\f\r\ />]*+)((?:[^>"'=]++|=\s*+(?:"[^"]*+"?|'[^']*+'?)?|["'])*+)(>?)
  | </(?:>|[^a-zA-Z>][^>]*+>?)
  | <[!?][^>]*+>?
""",
    re.S | re.X,
)
_ATTRIBUTE = re.compile(r"""([^\s/=]+)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s]*)))?""")
# Their content is text up to their end tag, and never shown.
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript")
_RAW_END = {tag: re.compile(rf"</{tag}(?=[\s/>])", re.I) for tag in _RAW_TEXT}


def attributes(text: str) -> dict:
    """The attributes of a start tag's text after its name: `{name: value or None}`."""
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


def tokenize(html: str, sink: TokenSink) -> None:
    """Feed `html` to `sink`, in document order (rules 1-4)."""
    search = _MARKUP.search
    data, start_tag, end_tag = sink.data, sink.start_tag, sink.end_tag
    position = 0
    while True:
        match = search(html, position)
        if match is None:
            text = html[position:]
            if text:
                data(_unescape(text) if "&" in text else text)
            return
        if match.start() > position:
            text = html[position : match.start()]
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
        attrs = match.group(3)
        if name in _RAW_END:
            end = _RAW_END[name].search(html, position)
            position = end.start() if end else len(html)
            continue
        start_tag(name, attributes(attrs) if attrs and not attrs.isspace() else {})
