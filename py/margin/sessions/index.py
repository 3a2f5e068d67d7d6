"""The session index: which sessions exist, in what order, and each one's light entry, read by
`read_session_index()` (which first migrates any older layout) and written one entry at a time.

Storage (docs/storage-model.md, "Sessions"):
- `savedSessions` is the index's header `{"layout": 2, "ids": [id, ...]}`: the saved sessions'
  ids in their stored order (the newest saved first), ~20 characters a session.
- Each session's entry (margin.sessions.entries) lives in `sessionEntry_<id>` (~300 characters),
  its body in `session_<id>` (`{history: [...records exactly as stored], savedAt}`; a bare list of
  records, an older shape, is read too) and its digest in `sessionDigest_<id>` (a string; one gone
  or not a string reads as "no digest": the session is found by its name until its next save).
  All three are read by address only, never in GET_ALL_KEYS. Images stay data URLs inside the
  records: pixels are never dropped or degraded.

Rules (numbered as for every sessions module: 4-5 are in margin.sessions.actions, 6 in
margin.sessions.search; the migration's own rules are in margin.sessions.migration):
1. Every session function goes through `read_session_index()`. A clean layout-2 header is
   returned as it is, with no entry read: an action on one session then reads and writes that
   session's own keys (`SessionIndex.entry`, `write_entry`), and only adding or removing a
   session rewrites the header, ~20 characters a session. So its cost does not grow with the
   other sessions' entries, digests or bodies (figures in README, "Measured").
2. Any older layout (whole sessions inline, digests inline, the list of entries) is migrated first
   (margin.sessions.migration): bodies, digests and entries are all written before the header
   replaces the old value, so a crash at any write leaves the old index, and running again is
   idempotent. A header that is not clean (ids that are not text, repeated ids) keeps its readable
   ids, and the raw value is parked under `savedSessionsUnreadable_<hash>` in the same `set`. An
   entry is read through `is_clean_entry` and must name its own key's id; one that is not clean
   or is gone is repaired under its key, and what could not be kept is parked
   (margin.sessions.migration, rule 3): reading never raises on stored data.
3. Listing and searching read the entries, never a body. Listing asks the store for its key
   NAMES (`StorageArea.keys()`, chrome.storage's getKeys()) and marks an entry whose body key is
   gone `damaged: "missing"` (and clears that mark when the body is back), so a lost body shows in
   the list, not only when the session is opened (`session.check` does it once per browser run:
   margin.sessions.actions, rule 8). Every writer of a digest writes
   `sessionDigest_<id>` in the same `set` as the body and the entry, before the header.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..base.errors import MarginError
from ..platform.ports import StorageArea
from ..storage.keys import SAVED_SESSIONS, SESSION_INDEX_LAYOUT, session_entry_key
from ..storage.stored_values import parked_key
from .entries import (
    DIGEST_CAP,
    DIGEST_HEAD,
    NAME_LENGTH,
    NAME_MAX,
    UNTITLED,
    IndexEntry,
    body_hash,
    body_history,
    default_name,
    digest_head,
    id_of_entry,
    is_clean_entry,
    is_number,
    is_untitled,
    last_used,
    read_digests,
    searchable_text,
    shorten,
    shown_name,
    text_digest,
    with_digest,
)
from .migration import migrate_list, repair_entry

# The entry's concept (margin.sessions.entries) is imported by the sessions modules from here.
__all__ = [
    "DIGEST_CAP",
    "DIGEST_HEAD",
    "ID_MAX",
    "NAME_LENGTH",
    "NAME_MAX",
    "UNTITLED",
    "IndexEntry",
    "SessionIndex",
    "body_hash",
    "body_history",
    "check_bodies_present",
    "default_name",
    "digest_head",
    "entry_item",
    "id_of_entry",
    "index_item",
    "is_clean_entry",
    "is_header",
    "is_number",
    "is_untitled",
    "last_used",
    "read_body_checked",
    "read_digests",
    "read_session_index",
    "searchable_text",
    "shorten",
    "shown_name",
    "stored_entries",
    "text_digest",
    "with_digest",
    "write_entry",
    "write_index",
]

ID_MAX = 200


def _readable_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= ID_MAX


def is_header(raw: Any) -> bool:
    """A `savedSessions` value of the current layout (clean or not)."""
    return isinstance(raw, dict) and raw.get("layout") == SESSION_INDEX_LAYOUT and "ids" in raw


def index_item(ids: list[str]) -> dict[str, Any]:
    """The item that stores the index's header (rule 1)."""
    return {SAVED_SESSIONS: {"layout": SESSION_INDEX_LAYOUT, "ids": list(ids)}}


def entry_item(entry: IndexEntry) -> dict[str, Any]:
    return {entry.entry_key: entry.to_json()}


async def write_index(area: StorageArea, ids: list[str], **other: Any) -> None:
    await area.set({**index_item(ids), **other})


async def write_entry(area: StorageArea, entry: IndexEntry, **other: Any) -> None:
    await area.set({**entry_item(entry), **other})


@dataclass
class SessionIndex:
    """The index as read: the ids in order; entries read by address when asked for (rule 1)."""

    area: StorageArea
    ids: list[str]

    def __post_init__(self) -> None:
        self._members = frozenset(self.ids)
        self._entries: dict[str, IndexEntry] = {}

    def __contains__(self, sid: object) -> bool:
        return sid in self._members

    def __len__(self) -> int:
        return len(self.ids)

    async def find(self, sid: Any) -> IndexEntry | None:
        """The entry of `sid`, or None when the index does not list it."""
        if sid not in self._members:
            return None
        if sid not in self._entries:
            key = session_entry_key(sid)
            stored = await self.area.get([key])
            self._entries[sid] = await _entry_of(self.area, sid, stored.get(key), key in stored)
        return self._entries[sid]

    async def entry(self, sid: Any) -> IndexEntry:
        entry = await self.find(sid)
        if entry is None:
            raise MarginError.said("session_not_found", "py_error_session_not_found")
        return entry

    async def entries(self) -> list[IndexEntry]:
        """Every entry, in the index's order (one read of every entry key)."""
        wanted = [sid for sid in self.ids if sid not in self._entries]
        if wanted:
            keys = [session_entry_key(sid) for sid in wanted]
            stored = await self.area.get(keys)
            for sid, key in zip(wanted, keys, strict=True):
                raw: Any = stored.get(key)
                if is_clean_entry(raw) and raw["id"] == sid:  # the common case, without an await
                    self._entries[sid] = IndexEntry.from_clean_json(raw)
                else:
                    self._entries[sid] = await repair_entry(self.area, sid, raw, key in stored)
        return [self._entries[sid] for sid in self.ids]


async def _entry_of(area: StorageArea, sid: str, raw: Any, stored: bool) -> IndexEntry:
    if is_clean_entry(raw) and raw["id"] == sid:
        return IndexEntry.from_clean_json(raw)
    return await repair_entry(area, sid, raw, stored)


async def read_session_index(area: StorageArea) -> SessionIndex:
    """The session index; migrates older layouts and repairs a bad header first (rules 1, 2)."""
    raw = (await area.get([SAVED_SESSIONS])).get(SAVED_SESSIONS)
    if raw is None or raw == []:
        return SessionIndex(area, [])  # nothing saved yet: the first save writes the header
    if is_header(raw):
        ids = raw["ids"]
        if isinstance(ids, list) and all(map(_readable_id, ids)) and len(set(ids)) == len(ids):
            return SessionIndex(area, ids)
        kept = list(dict.fromkeys(i for i in ids if _readable_id(i))) if isinstance(ids, list) else []
        await write_index(area, kept, **{parked_key(SAVED_SESSIONS, raw): raw})
        return SessionIndex(area, kept)
    entries = await migrate_list(area, raw, write_index)
    index = SessionIndex(area, [e.id for e in entries])
    index._entries.update((e.id, e) for e in entries)
    return index


# -- bodies: present, readable ---------------------------------------------------------------


def _marked_by_presence(entry: IndexEntry, present: set[str]) -> IndexEntry:
    """The entry with its `damaged: "missing"` mark agreeing with its body key's presence (the
    same object when it already does)."""
    if entry.body_key not in present and entry.damaged != "missing":
        return replace(entry, damaged="missing")
    if entry.body_key in present and entry.damaged == "missing":
        return replace(entry, damaged=None)
    return entry


async def check_bodies_present(
    area: StorageArea, entries: list[IndexEntry], present: set[str] | None = None
) -> list[IndexEntry]:
    """Entries whose body key is gone marked damaged "missing" (and back ones unmarked); reads no
    body. `present`: the body keys known to be stored (by default every key's name is listed)."""
    if present is None:
        present = set(await area.keys())
    checked = [_marked_by_presence(entry, present) for entry in entries]
    changed = {e.entry_key: e.to_json() for a, e in zip(entries, checked, strict=True) if a is not e}
    if changed:
        await area.set(changed)
    return checked


# chrome.storage runs an extension's calls one after another: the look reads the entries in
# batches, so an action sent meanwhile waits for one batch (~3 ms at 100), not for all 1,000.
LOOK_READ_BATCH = 100


async def entries_to_mark(area: StorageArea, ids: list[str]) -> list[str]:
    """The ids among `ids` whose entry is not clean, or whose `damaged: "missing"` mark disagrees
    with its body key's presence: what `check_bodies_present` would change, found from the key
    names and the entries as stored. It writes nothing and holds no lock (margin.sessions.actions rule 8):
    the caller looks at these ids again under the lock (`mark_entries`)."""
    present = set(await area.keys())
    keys = [session_entry_key(sid) for sid in ids]
    stored: dict[str, Any] = {}
    for start in range(0, len(keys), LOOK_READ_BATCH):
        stored.update(await area.get(keys[start : start + LOOK_READ_BATCH]))

    def looks_right(sid: str, raw: Any) -> bool:
        if not (is_clean_entry(raw) and raw["id"] == sid):
            return False
        entry = IndexEntry.from_clean_json(raw)
        return _marked_by_presence(entry, present) is entry

    return [sid for sid, key in zip(ids, keys, strict=True) if not looks_right(sid, stored.get(key))]


async def mark_entries(area: StorageArea, index: SessionIndex, ids: list[str]) -> None:
    """`check_bodies_present` for the ids the index still lists, with each body key's presence
    asked by its name (getBytesInUse: no body is read): the confirmation of `entries_to_mark`,
    under the lock, reading the entries again (and repairing a bad one, rule 2)."""
    entries = [entry for sid in ids if (entry := await index.find(sid)) is not None]
    present = {e.body_key for e in entries if await area.bytes_in_use([e.body_key]) > 0}
    await check_bodies_present(area, entries, present)


async def read_body_checked(area: StorageArea, entry: IndexEntry) -> list[Any]:
    """The session's stored history; marks the entry damaged and raises when it cannot be read."""
    stored = await area.get([entry.body_key])
    raw = body_history(stored.get(entry.body_key))
    if isinstance(raw, list):
        return raw
    reason = "missing" if entry.body_key not in stored else "unreadable"
    if entry.damaged != reason:
        await write_entry(area, replace(entry, damaged=reason))
    if reason == "missing":
        raise MarginError.said("session_damaged", "py_error_session_missing", shown_name(entry))
    raise MarginError.said("session_damaged", "py_error_session_unreadable", shown_name(entry))


def stored_entries(data: dict[str, Any]) -> list[Any]:
    """The entries in a copy of the store (key -> value), in the index's order, as stored: no
    repair, nothing written (for the tests, the bench and the pages' checks)."""
    raw: Any = data.get(SAVED_SESSIONS)
    if is_header(raw) and isinstance(raw["ids"], list):
        return [data.get(session_entry_key(sid)) for sid in raw["ids"] if isinstance(sid, str)]
    return raw if isinstance(raw, list) else []
