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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_END = re.compile(r"[\r\n]")


@dataclass(frozen=True)
class SSEEvent:
    event: str = "message"
    data: str = ""
    id: str | None = None


class SSEDecoder:
    def __init__(self) -> None:
        self._partial = ""  # an unterminated line carried to the next feed
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
        buffer = self._partial + text
        events: list[SSEEvent] = []
        position = 0
        while True:
            match = _LINE_END.search(buffer, position)
            if match is None:
                break
            end = match.start()
            line = buffer[position:end]
            if buffer[end] == "\r":
                if end + 1 < len(buffer):
                    position = end + 2 if buffer[end + 1] == "\n" else end + 1
                else:
                    position = end + 1
                    self._skip_lf = True
            else:
                position = end + 1
            self._line(line, events)
        self._partial = buffer[position:]
        return events

    def close(self) -> list[SSEEvent]:
        """The stream ended: flush the unterminated line and the pending event."""
        events: list[SSEEvent] = []
        if self._partial:
            line, self._partial = self._partial, ""
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
        self._has_data = False
        self._event_type = ""
