"""Server-Sent Events, decoded without I/O (h11 style: text in, events out).

Rules (the WHATWG "event stream interpretation", with one leniency):
1. Text may arrive split anywhere: mid-field, mid-line, between "\\r" and "\\n". Feeding the same
   stream in any chunking yields the same events.
2. Lines end with "\\n", "\\r\\n" or "\\r". One leading byte-order mark is ignored.
3. A line starting with ":" is a comment (keep-alive) and is ignored. "field: value" drops ONE
   space after the colon; a line without a colon is a field with an empty value.
4. `data` lines accumulate, joined by "\\n"; a blank line dispatches the event. An event with no
   data is not dispatched (the spec's rule), but `event`/`id` lines still count.
5. `id` is the last event id: it persists across events until a new `id` line (ids holding NUL
   are ignored). `event` defaults to "message" and is reset after each dispatch.
6. Leniency: `close()` dispatches an event that was still pending when the stream ended (the
   spec discards it). Servers that end with "data: [DONE]" and no blank line exist.
7. Linear: each feed searches only its own text for line ends; an unterminated line is kept as
   pieces and joined once, when its end arrives (a chunk without a line break costs O(chunk)).
   `scanned` counts the characters searched, so a test can prove it.
8. Bounded: a line, or an event's data, longer than `LINE_LIMIT` characters raises
   `LineTooLong`, which carries the events decoded before it (nothing already decoded is lost).
"""

from __future__ import annotations

from dataclasses import dataclass

# Characters one line (or one event's data) may hold: far above any real provider's event.
LINE_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class SSEEvent:
    event: str = "message"
    data: str = ""
    id: str | None = None


class LineTooLong(ValueError):
    """Rule 8: the stream holds a line (or an event) longer than the limit."""

    def __init__(self, limit: int, events: list[SSEEvent]):
        super().__init__(f"an event stream line is longer than {limit} characters")
        self.limit = limit
        self.events = events


class SSEDecoder:
    def __init__(self, line_limit: int = LINE_LIMIT) -> None:
        self.line_limit = line_limit
        self.scanned = 0  # characters searched for line ends (rule 7)
        self._pending: list[str] = []  # the pieces of an unterminated line (rule 7)
        self._pending_size = 0
        self._data_size = 0
        self._started = False  # a BOM is only skipped at the very start
        self._skip_lf = False  # the last feed ended with "\r": a "\n" next completes that line end
        self._data: list[str] = []
        self._has_data = False
        self._event_type = ""
        self._last_id: str | None = None

    def feed(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        if text.endswith("\r"):
            self._skip_lf = True  # a "\n" opening the next feed belongs to this line end
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = self._split(text)
        events: list[SSEEvent] = []
        tail = lines.pop()
        if lines and self._pending:
            self._pending.append(lines[0])
            lines[0] = "".join(self._pending)
            self._pending = []
            self._pending_size = 0
        for line in lines:
            if len(line) > self.line_limit:
                raise LineTooLong(self.line_limit, events)
            self._line(line, events)
        if tail:
            self._pending.append(tail)
            self._pending_size += len(tail)
            if self._pending_size > self.line_limit:
                raise LineTooLong(self.line_limit, events)
        return events

    def _split(self, text: str) -> list[str]:
        """`text` (line ends already "\n") split at its line ends, the unterminated rest last: the
        seam rule 7's `scanned` counts."""
        self.scanned += len(text)
        return text.split("\n")

    def close(self) -> list[SSEEvent]:
        """The stream ended: flush the unterminated line and the pending event."""
        events: list[SSEEvent] = []
        if self._pending:
            line = "".join(self._pending)
            self._pending = []
            self._pending_size = 0
            self._line(line, events)
        self._dispatch(events)
        return events

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if line == "":
            self._dispatch(events)
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_size += len(value) + 1
            if self._data_size > self.line_limit:
                raise LineTooLong(self.line_limit, events)
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event_type = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        # "retry" and unknown fields are ignored: reconnection is not ours to do.

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._has_data:
            events.append(SSEEvent(self._event_type or "message", "\n".join(self._data), self._last_id))
        self._data = []
        self._data_size = 0
        self._has_data = False
        self._event_type = ""
