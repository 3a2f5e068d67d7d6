"""Sync's side in this browser: the saved sessions as the merge sees them, and the writes a sync
makes to them, through the sessions modules' own readers and writers.

Invariants:
1. Every read and write holds `storage.lock_for(local)` for one session at a time, never across
   a network request: the user's actions wait for at most one session's write.
2. A write happens only when the session is still as the plan saw it (`Local` equal, or still
   absent); otherwise it is skipped, and the engine keeps the old base for that session, so the
   next sync sees both changes (margin.sync.merge).
3. A session's keys are written as a save writes them (margin.sessions.actions rule 4): body,
   digest and entry in one `set`, the index's header after; a delete removes the id from the
   header first, then its keys. So a crash at any write leaves a readable index.
4. A pulled session that is the open conversation (`historySessionId`) replaces `history` in the
   same `set` when `history` is still what was saved; when it holds more, the pull is skipped
   (rule 2) and the next sync makes a conflict copy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..base import clock
from ..images import originals as image_originals
from ..platform.ports import StorageArea
from ..sessions.actions import purge_expired_trash, read_trash, save_current
from ..sessions.index import (
    IndexEntry,
    body_hash,
    body_history,
    entry_item,
    index_item,
    is_clean_entry,
    is_number,
    read_session_index,
    text_digest,
    with_digest,
)
from ..storage.history import parse_history
from ..storage.keys import HISTORY, HISTORY_SESSION_ID, lock_for, session_body_key
from .crypto import damaged
from .manifest import Local, Meta


@dataclass(frozen=True)
class View:
    sessions: dict[str, Local]
    pending: set[str]  # deleted here, still in the undo window (margin.sync.merge rule 5)


async def prepare(area: StorageArea) -> View:
    """Save the open conversation into its session (it travels as that session), drop the bodies
    whose undo window passed, and read every entry (no body)."""
    async with lock_for(area):
        await save_current(area)
        await purge_expired_trash(area)
        entries = await (await read_session_index(area)).entries()
        now = clock.now_ms()
        pending = {
            t["id"] for t in await read_trash(area) if is_number(t.get("expiresAt")) and t["expiresAt"] > now
        }
    return View({e.id: Local.of(e) for e in entries if not e.damaged}, pending)


async def _current(area: StorageArea, sid: str) -> IndexEntry | None:
    return await (await read_session_index(area)).find(sid)


def _same(entry: IndexEntry | None, seen: Local | None) -> bool:
    if entry is None or seen is None:
        return entry is None and seen is None
    return Local.of(entry) == seen


async def read_object(
    area: StorageArea, source: str, as_id: str, meta: Meta
) -> tuple[dict[str, Any], IndexEntry] | None:
    """What a push uploads: the session's entry (as `as_id`, with `meta`) and body."""
    async with lock_for(area):
        entry = await _current(area, source)
        if entry is None or entry.damaged:
            return None
        stored = await area.get([entry.body_key])
    if entry.body_key not in stored:
        return None
    entry = replace(entry, id=as_id, name=meta.name, named=meta.named, pinned=meta.pinned)
    return {"format": 1, "entry": entry.to_json(), "body": stored[session_body_key(source)]}, entry


def entry_of_object(value: Any, sid: str, meta: Meta) -> tuple[IndexEntry, Any, str]:
    """The entry, body and digest an object holds, as session `sid`; `damaged` when it is not one.
    The digest is not sent: it is made again from the body, as a save makes it (half the bytes)."""
    if not isinstance(value, dict) or value.get("format") != 1 or not is_clean_entry(value.get("entry")):
        raise damaged()
    body = value.get("body")
    history = body_history(body)
    if not isinstance(history, list):
        raise damaged()
    entry = replace(
        IndexEntry.from_clean_json(value["entry"]),
        id=sid,
        name=meta.name,
        named=meta.named,
        pinned=meta.pinned,
        damaged=None,
    )
    digest = text_digest(parse_history(history).records)
    entry, _ = with_digest(entry, digest)
    return entry, body, digest


async def write_session(
    area: StorageArea, entry: IndexEntry, body: Any, digest: str, seen: Local | None
) -> bool:
    """Save a session that came from the server (rules 2-4). False when skipped."""
    async with lock_for(area):
        index = await read_session_index(area)
        current = await index.find(entry.id)
        if not _same(current, seen):
            return False
        items: dict[str, Any] = {entry.body_key: body, entry.digest_key: digest, **entry_item(entry)}
        stored = await area.get([HISTORY_SESSION_ID])
        if current is not None and stored.get(HISTORY_SESSION_ID) == entry.id:
            # As a save hashes it: with its images' originals put back (margin.sessions.actions rule 7).
            history = await image_originals.inline(area, (await area.get([HISTORY])).get(HISTORY))
            if body_hash(history) != current.body_hash:
                return False  # rule 4: the open conversation holds more than its session
            items[HISTORY] = body_history(body)
        await area.set(items)
        if entry.id not in index:
            await area.set(index_item([entry.id, *index.ids]))
    return True


async def write_meta(area: StorageArea, sid: str, meta: Meta, seen: Local | None) -> bool:
    async with lock_for(area):
        current = await _current(area, sid)
        if current is None or not _same(current, seen):
            return False
        await area.set(entry_item(replace(current, name=meta.name, named=meta.named, pinned=meta.pinned)))
    return True


async def delete_session(area: StorageArea, sid: str, seen: Local | None) -> bool:
    async with lock_for(area):
        index = await read_session_index(area)
        current = await index.find(sid)
        if current is None or not _same(current, seen):
            return current is None
        items: dict[str, Any] = index_item([i for i in index.ids if i != sid])
        if (await area.get([HISTORY_SESSION_ID])).get(HISTORY_SESSION_ID) == sid:
            items[HISTORY_SESSION_ID] = None  # the open conversation, saved again, is a new session
        await area.set(items)
        await area.remove([current.body_key, current.digest_key, current.entry_key])
    return True
