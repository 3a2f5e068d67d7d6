"""Reading a backup file while it streams in: one top-level member, one session at a time.

A backup (margin.backup.stream) is one JSON object; its `sessions` list can hold hundreds of megabytes of
images. The reader hands out each top-level member, and each element of `sessions` separately, so
only the session being read is ever in memory.

Rules:
1. Text arrives in chunks from `read()` (None at the end of the file). A value is decoded by the C
   decoder (`JSONDecoder.raw_decode`) once enough of it has arrived. An attempt that fails because
   the value has not fully arrived reads at least as much again before it retries, so reading
   stays linear in the file's size. A number that ends where the text read so far ends may go on
   in the next chunk: it is decoded again once more text has arrived.
2. What JSON allows but a backup never holds is refused: nesting deeper than MAX_DEPTH (checked
   before decoding: the decoder would raise RecursionError, and in the browser's small stack it
   could crash Python), NaN and Infinity, integers of more than MAX_INT_DIGITS digits (Python
   refuses some, JavaScript rounds them all), numbers too large for a float.
3. Every refusal is `MarginError("bad_backup")`: its sentence says what is wrong (not
   JSON, incomplete, damaged near character N, too deeply nested, a number too large) and what to
   do. The reader writes nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..base.errors import MarginError
from ..base.sentences import Number, Sentence, sentence

Read = Callable[[], Awaitable[str | None]]

MAX_DEPTH = 64
MAX_INT_DIGITS = 20

CHOOSE_OURS = sentence("py_error_backup_choose_ours")
EXPORT_AGAIN = sentence("py_error_backup_export_again")

_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The characters that decide how deep a value nests: brackets, and the quotes and escapes of strings.
_SPECIAL = re.compile(r'[\[\]{}"\\]')


def bad(key: str, *args: object) -> MarginError:
    """Rule 3: the refusal whose sentence is the catalogue's `key`."""
    return MarginError.said("bad_backup", key, *args)


def not_a_backup() -> MarginError:
    return bad("py_error_backup_not_ours", CHOOSE_OURS)


def _not_json() -> MarginError:
    return bad("py_error_backup_not_json", CHOOSE_OURS)


class _Refused(ValueError):
    """A parse hook refused a value (rule 2); `said` is the sentence."""

    def __init__(self, said: Sentence):
        super().__init__(said.english())
        self.said = said


def _no_constant(name: str) -> Any:
    raise _Refused(sentence("py_error_backup_constant", name, EXPORT_AGAIN))


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(sentence("py_error_backup_long_number", MAX_INT_DIGITS, EXPORT_AGAIN))
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(sentence("py_error_backup_huge_number", text[:40], EXPORT_AGAIN))
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_int=_int, parse_float=_float)


def _too_deep(text: str, start: int) -> bool:
    """Whether the value starting at `start` nests deeper than MAX_DEPTH (what has arrived of it).
    Only the characters that matter are visited (a one-class regex skips the rest at C speed: the
    base64 of an image holds none of them); a string that has not fully arrived ends the check."""
    if text[start] not in "[{":
        return False
    depth = 0
    in_string = False
    escaped_until = -1
    for match in _SPECIAL.finditer(text, start):
        at = match.start()
        if at < escaped_until:
            continue
        char = text[at]
        if in_string:
            if char == "\\":
                escaped_until = at + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return False
    return False


def _maybe_unfinished(error: json.JSONDecodeError, length: int) -> bool:
    """The decoder stopped where more text may still come (a literal or escape cut short)."""
    return error.msg.startswith("Unterminated string") or error.pos >= length - 6


class BackupReader:
    def __init__(self, read: Read):
        self._read = read
        self._text = ""
        self._pos = 0
        self._offset = 0  # characters dropped from the front of _text (already consumed)
        self._ended = False
        self.chars_read = 0
        # Set once the file said it is a Margin backup: from then on a syntax error is "damaged"
        # or "incomplete", before it "not a Margin backup".
        self.ours = False

    # -- the top level ---------------------------------------------------------------------------

    async def members(self) -> AsyncIterator[tuple[str, Any, Any]]:
        """("member", name, value) for each top-level member, in file order; a `sessions` list
        comes as ("session", position, element) for each element, then ("sessions-end", count,
        None)."""
        first = await self._peek()
        if first == "":
            raise bad("py_error_backup_empty_file", CHOOSE_OURS)
        if first != "{":
            if first in '["-0123456789tfn':
                raise not_a_backup()
            raise _not_json()
        self._pos += 1
        seen: set[str] = set()
        while True:
            char = await self._peek()
            if char == "}":
                self._pos += 1
                break
            if seen:
                await self._expect(",")
                char = await self._peek()
            if char != '"':
                raise self._syntax()
            name = await self.value()
            await self._expect(":")
            if name in seen:
                raise bad("py_error_backup_twice", str(name)[:40], EXPORT_AGAIN)
            seen.add(name)
            if name == "sessions" and await self._peek() == "[":
                self._pos += 1
                count = 0
                async for item in self._elements():
                    yield "session", count, item
                    count += 1
                yield "sessions-end", count, None
            else:
                yield "member", name, await self.value()
        if await self._peek() != "":
            raise bad("py_error_backup_text_after_end", EXPORT_AGAIN)

    async def _elements(self) -> AsyncIterator[Any]:
        first = True
        while True:
            char = await self._peek()
            if char == "]":
                self._pos += 1
                return
            if not first:
                await self._expect(",")
            first = False
            yield await self.value()

    # -- values -----------------------------------------------------------------------------------

    async def value(self) -> Any:
        """The next JSON value, decoded once it has fully arrived (rule 1)."""
        if await self._peek() == "":
            raise self._incomplete()
        while True:
            if _too_deep(self._text, self._pos):
                raise bad("py_error_backup_nested_over", MAX_DEPTH, CHOOSE_OURS)
            try:
                value, end = _DECODER.raw_decode(self._text, self._pos)
            except _Refused as refused:
                raise MarginError.said("bad_backup", refused.said.key, *refused.said.args) from None
            except RecursionError:
                raise bad("py_error_backup_nested", CHOOSE_OURS) from None
            except json.JSONDecodeError as error:
                if self._ended or not _maybe_unfinished(error, len(self._text)):
                    raise self._syntax(error) from None
            else:
                if end < len(self._text) or self._ended:
                    self._pos = end
                    return value
            await self._grow(max(len(self._text) - self._pos, 1))

    # -- the text ---------------------------------------------------------------------------------

    async def _more(self) -> bool:
        if self._ended:
            return False
        chunk = await self._read()
        if chunk is None:
            self._ended = True
            return False
        if self._pos:
            self._offset += self._pos
            self._text = self._text[self._pos :]
            self._pos = 0
        self._text += chunk
        self.chars_read += len(chunk)
        return True

    async def _grow(self, at_least: int) -> None:
        pieces: list[str] = []
        size = 0
        while size < at_least:
            chunk = await self._read() if not self._ended else None
            if chunk is None:
                self._ended = True
                break
            pieces.append(chunk)
            size += len(chunk)
            self.chars_read += len(chunk)
        if pieces:
            self._offset += self._pos
            self._text = self._text[self._pos :] + "".join(pieces)
            self._pos = 0

    async def _peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the file)."""
        while True:
            match = _WHITESPACE.match(self._text, self._pos)
            self._pos = match.end() if match else self._pos
            if self._pos < len(self._text):
                return self._text[self._pos]
            if not await self._more():
                return ""

    async def _expect(self, char: str) -> None:
        found = await self._peek()
        if found != char:
            raise self._incomplete() if found == "" else self._syntax()
        self._pos += 1

    # -- what went wrong --------------------------------------------------------------------------

    def _incomplete(self) -> MarginError:
        if not self.ours:
            return _not_json()
        return bad("py_error_backup_incomplete", EXPORT_AGAIN)

    def _syntax(self, error: json.JSONDecodeError | None = None) -> MarginError:
        at_end = self._pos >= len(self._text) if error is None else _maybe_unfinished(error, len(self._text))
        if self._ended and at_end:
            return self._incomplete()
        if not self.ours:
            return _not_json()
        where = self._offset + (error.pos if error is not None else self._pos)
        return bad("py_error_backup_unreadable_near", Number(where), EXPORT_AGAIN)
