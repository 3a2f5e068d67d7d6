"""The reliability suite's ledger: what each hostile case did to what was already stored.

Every case of tests/reliability/ follows one pattern:
1. Fill a store with the user's data and take `snapshot(platform)` (every key of both areas,
   serialized the way chrome.storage keeps it).
2. Run the hostile input through the real code path; assert the specific error it must get.
3. `ledger.settle(before, snapshot(platform))` records how many bytes of the user's data are gone:
   a value counts as kept when it is still stored under its key, or moved whole under another key
   (parking keeps the raw value under `historyUnreadable...`); an item of a list counts as kept
   when it is inside a stored value, or when every field of it is in one stored object (an
   index entry made of it adds its own fields). It asserts that nothing was lost.

`python3 build.py reliability` runs the suite and prints, per attack surface (test module), the
cases tried, passed and the bytes lost, which must be 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest


def serialized(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except RecursionError:  # deeper than Python's JSON writer goes: compare it by its repr
        return f"<deep {type(value).__name__} {id(value)}>"


def snapshot(platform: Any) -> dict[str, str]:
    """Every stored value of the memory platform's two areas, as `area:key` -> JSON text."""
    out: dict[str, str] = {}
    for area_name in ("local", "session"):
        area = getattr(platform, area_name)
        for key, value in area.snapshot().items():
            out[f"{area_name}:{key}"] = serialized(value)
    return out


# Values that hold nothing: replacing one loses no information.
EMPTY = frozenset(("[]", "{}", '""', "null"))


def bytes_lost(before: dict[str, str], after: dict[str, str], *, replaced: Iterable[str] = ()) -> int:
    """Bytes of `before` no longer stored anywhere in `after`. Keys in `replaced` are values the
    operation is meant to replace (a successful write the user asked for): not counted."""
    allowed = set(replaced)
    moved = set(after.values())
    lost = 0
    for key, text in before.items():
        if key in allowed or after.get(key) == text or text in moved or text in EMPTY:
            continue
        # A value kept inside a bigger one (a record parked in a list) is not lost either.
        if _kept_inside(text, after.values()):
            continue
        # A list is kept when each of its items is (the list grew, or what it held moved).
        items = _items(text)
        pieces = items if items is not None else [text]
        lost += sum(
            len(p.encode("utf-8", "surrogatepass"))
            for p in pieces
            if not _kept_inside(p, after.values()) and not _fields_kept(p, after.values())
        )
    return lost


def _kept_inside(text: str, values: Iterable[str]) -> bool:
    return any(text in other for other in values)


def _fields_kept(text: str, values: Iterable[str]) -> bool:
    """An object whose every field is still stored, with the same value, in one stored object (an
    index entry made of a list's item keeps the item's fields and adds its own)."""
    if not text.startswith("{"):
        return False
    try:
        wanted = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(wanted, dict) or not wanted:
        return False
    for other in values:
        if not other.startswith("{"):
            continue
        try:
            candidate = json.loads(other)
        except (ValueError, RecursionError):
            continue
        if isinstance(candidate, dict) and all(
            key in candidate and serialized(candidate[key]) == serialized(value)
            for key, value in wanted.items()
        ):
            return True
    return False


def _items(text: str) -> list[str] | None:
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return [serialized(item) for item in value] if isinstance(value, list) and value else None


class Ledger:
    def __init__(self, item: pytest.Item) -> None:
        self._item = item
        self.lost = 0

    def settle(self, before: dict[str, str], after: dict[str, str], *, replaced: Iterable[str] = ()) -> int:
        self.lost += bytes_lost(before, after, replaced=replaced)
        self._item.user_properties.append(("bytes_lost", self.lost))
        assert self.lost == 0, f"{self.lost} bytes of stored data were lost"
        return self.lost
