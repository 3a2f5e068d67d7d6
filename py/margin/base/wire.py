"""JSON that leaves Python for JS or storage: only finite numbers, or a specific error.

Python's `json` writes NaN and Infinity as the bare words `NaN` and `Infinity`, which are not
JSON: the JS side's `JSON.parse` throws on them, so a stored answer carrying a NaN count would
fail as "Chrome could not save Margin's data (Unexpected token N ...)", a misreported cause.

Rules:
1. Every JSON text Python hands to JS or to storage is written by `dumps` (`allow_nan=False`):
   the bridge calls of `margin.platform.browser`, the worker's reply envelopes and port events. The
   memory twin (`platform_memory`) refuses the same values the same way.
2. A non-finite number is refused before anything is written, as `NotFiniteError` (a
   `StorageError`, code `not_finite_number`) whose sentence names where the number sat
   (`history[3].usage.output`), so callers that handle a refused write handle it too, and the
   cause is told as what it is.
3. Finite numbers are enforced at the source (a provider's usage: `margin.providers.usage`; a cost:
   `finite_or_none`); rule 2 is the net under them, not the way they are kept out.
4. `loads` reads JSON that came from JS and refuses the words `NaN`, `Infinity` and `-Infinity`,
   and a float that overflows (`1e400`) (`ValueError`, as for any malformed JSON): JS never
   writes them, so they are never data.
5. Integers beyond JS's exact range (2**53 - 1) are not counts either: `finite_or_none` drops
   them; JSON.parse would turn them into an approximation, or into Infinity.
6. Bulk values cross the bridge in pieces (extension/bridge.js does the same on its side): the
   JSON text has each string of at least `LONG_STRING` characters replaced by a marker
   `{"\u0000margin.piece": i}`, and the string itself travels as the i-th UTF-8 piece after it.
   Neither side then writes or scans the images and digests as JSON: on the bound's 20 MB history
   the read went from 72-116 ms of JS and 46-122 ms of Python to 43-67 and 6-9 (README.md
   "Measured"). No value Margin stores holds a key with a NUL character, so a marker is never data.
7. Text a page hands over may hold lone UTF-16 surrogates (a JS string need not be well-formed;
   `JSON.stringify` writes one as `\udc00` and `json.loads` keeps it): UTF-8 cannot encode them, so
   storing such text would fail. `well_formed` replaces each with U+FFFD, as the browser's own
   `TextEncoder` and `String.prototype.toWellFormed` do, where a page's text enters (margin.page).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import StorageError

# Number.MAX_SAFE_INTEGER: the largest integer JS reads back exactly.
MAX_SAFE_INTEGER = 2**53 - 1


class NotFiniteError(StorageError):
    """A value to send or store holds NaN or an infinity (rule 2)."""

    def __init__(self, where: str):
        said = StorageError.said("not_finite_number", "py_error_not_finite", where)
        super().__init__(said.code, said.message)
        self.sentence = said.sentence
        self.where = where


def non_finite_path(value: Any, path: str = "value") -> str | None:
    """Where the first non-finite float in `value` sits (`value.a[2].b`), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            found = non_finite_path(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = non_finite_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


def dumps(value: Any, *, root: str = "value") -> str:
    """JSON text with finite numbers only (rule 1); `NotFiniteError` otherwise (rule 2).
    `root` names the value in the error (a dict's keys name themselves when `root` is "")."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        where = non_finite_path(value, root)
        if where is None:
            raise
        raise NotFiniteError(where) from None


def _refuse_constant(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e400 overflows to inf
        raise ValueError(f"{text} is not a finite number")
    return number


def loads(text: str | bytes) -> Any:
    """Rule 4: `json.loads` that refuses NaN and the infinities (also an overflowing 1e400)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def finite_or_none(value: Any) -> int | float | None:
    """A number JS reads back as itself, else None (rules 3 and 5); bools are not numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        return None
    return value


# Rule 6.
LONG_STRING = 64 * 1024
PIECE = "\u0000margin.piece"


def split_long_strings(value: Any, pieces: list[str]) -> Any:
    """`value` with each long string replaced by a marker; the strings are appended to `pieces`."""
    if isinstance(value, str):
        if len(value) < LONG_STRING:
            return value
        pieces.append(value)
        return {PIECE: len(pieces) - 1}
    if isinstance(value, dict):
        return {key: split_long_strings(item, pieces) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [split_long_strings(item, pieces) for item in value]
    return value


def join_long_strings(value: Any, pieces: list[str]) -> Any:
    """`value` with each marker replaced by its piece; a marker without one is a ValueError."""
    if isinstance(value, dict):
        index = value.get(PIECE) if len(value) == 1 else None
        if index is not None:
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(pieces):
                raise ValueError(f"a bulk value refers to piece {index!r} of {len(pieces)}")
            return pieces[index]
        return {key: join_long_strings(item, pieces) for key, item in value.items()}
    if isinstance(value, list):
        return [join_long_strings(item, pieces) for item in value]
    return value


# A Python str holds a surrogate code point only when it was lone: json.loads joins a pair.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (keys included) replaced by U+FFFD (rule 7).
    Walks the value without recursion: a page's JSON may be nested deeper than Python's stack."""
    fix = _LONE_SURROGATE.sub
    if isinstance(value, str):
        return fix("\ufffd", value)
    if not isinstance(value, dict | list):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, slot, item = stack.pop()
        if isinstance(item, str):
            parent[slot] = fix("\ufffd", item)
        elif isinstance(item, list):
            copy: list[Any] = [None] * len(item)
            parent[slot] = copy
            stack.extend((copy, i, child) for i, child in enumerate(item))
        elif isinstance(item, dict):
            mapping: dict[str, Any] = {}
            parent[slot] = mapping
            for key, child in item.items():
                name = fix("\ufffd", key) if isinstance(key, str) else key
                mapping[name] = None
                stack.append((mapping, name, child))
        else:
            parent[slot] = item
    return root[0]
