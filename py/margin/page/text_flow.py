"""One stream of output text, as `margin.page.text` writes it: paragraphs, line starts, indentation.

The renderer says what comes (`text`, `brk(1)` for a new line, `brk(2)` for a paragraph,
`push_prefix("> ")` for a quote, a list `marker`); the flow decides the characters.

Rules:
1. Whitespace: runs collapse to one space (no-break spaces included), no line ends in spaces,
   at most one blank line in a row outside code blocks, none at the start or the end.
2. Inside a list a paragraph break is a line break (the list stays compact); a raw flow (`<pre>`)
   keeps its text as it is, line breaks included (no-break spaces become spaces).
3. Only the first `_MAX_MARKS` nesting levels add indentation or "> ", so deep nesting cannot
   make every line long.
"""

from __future__ import annotations

from os.path import commonprefix

_MAX_MARKS = 8  # nesting levels that still add indentation or "> "


class Flow:
    """One stream of output text: paragraphs, line starts, indentation and list markers."""

    __slots__ = (
        "empty",
        "indent",
        "indents",
        "last_indent",
        "list_depth",
        "marker",
        "parts",
        "pending",
        "raw",
        "space",
    )

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
                    # Indents are strings of spaces and markers: a character-wise prefix is meant.
                    shared = commonprefix([self.last_indent, self.indent])  # noqa: RUF071
                    blank = shared.rstrip()
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
