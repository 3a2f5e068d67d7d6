"""Saved sessions as the user handles them: the requests of docs/protocol.md (session.new, list,
check, open, rename, pin, delete, undelete, export), saving the open conversation into its session,
and deleting with undo.

The concept is split by job: margin.sessions.index (the index and its entries, read by address,
rules 1-3; the migration of older layouts in margin.sessions.migration), margin.sessions.search
(order, search, previews, rule 6), margin.sessions.export (one session as a file). Every storage
key name is in margin.storage.keys.

Rules (numbered as for every sessions module):
4. `history` remembers its session in `historySessionId`: saving again updates that session (body,
   digest, and name unless the user renamed it) and never rewrites another session's keys. A save
   writes the body, its digest and its entry (with `historySessionId`) in one `set`; a new
   session's id is added to the index's header after, so a crash in between leaves at worst keys
   no index names, which the next save overwrites.
5. Delete removes the id from the index's header at once and moves it to `sessionTrash`; the
   body, the digest and the entry are removed once the undo window (UNDO_MS) has passed, by the
   next session call. What undo needs
   lives in chrome.storage.session (`sessionUndo_<token>`), so it survives a worker restart;
   keeping the body in `local` meanwhile avoids pushing megabytes of images through the 10 MB
   session area. Deleting the open conversation's session unlinks `historySessionId`; undo links
   it again when the conversation is still the one that was open (its records at delete time are
   a prefix of `history`), so saving again updates the session instead of making a copy.
7. A saved body is self-contained: saving puts the original of every thumbnailed image back in its
   part (`margin.images.originals.inline`), so the body holds exactly what the user sent and never
   a reference to an `imageOriginal_` key; deleting a session can therefore never strand or
   remove an original, and export and backup copy bodies verbatim.
8. `session.check` reads every entry (repairing the bad ones) and looks for lost bodies (every
   key's name listed, every entry marked or unmarked: margin.sessions.index rule 3) once per
   browser run, and when the panel asks for a repair (`{"repair": true}`: it could not read the
   index), not at every call: an entry or a body goes bad when Chrome repairs its database,
   which it does as it opens it, at a browser or extension start, and chrome.storage.session,
   cleared by the same starts, holds the marker `sessionBodiesChecked` that says this run was
   looked at. The marker is written after the marks, so a worker stopped mid-way leaves none and
   the next check looks again. Every call removes expired bodies and migrates an older index or
   repairs its header. A body lost later in the same run is marked when the session is opened or
   exported (margin.sessions.index `read_body_checked`), or at the next start. The look reads
   without the storage lock (`entries_to_mark`: key names and entries, no write) and takes the
   lock only to mark what it found wrong, reading those entries again first (`mark_entries`), so
   an action on one session never waits for the look, only for chrome.storage's call in flight.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

from ..base import clock
from ..base.errors import MarginError
from ..images import originals as image_originals
from ..platform.ports import Platform, StorageArea
from ..settings import options
from ..storage import stored_values
from ..storage.history import parked_unreadable, parse_history, read_history
from ..storage.keys import (
    HISTORY,
    HISTORY_SESSION_ID,
    SESSION_BODIES_CHECKED,
    SESSION_TRASH,
    SESSION_UNDO_PREFIX,
    lock_for,
    session_body_key,
    session_digest_key,
    session_entry_key,
)
from ..storage.stored_values import Read, park
from .export import check_export_format, export_session
from .index import (
    NAME_MAX,
    IndexEntry,
    body_hash,
    check_bodies_present,
    default_name,
    entries_to_mark,
    entry_item,
    index_item,
    is_number,
    last_used,
    mark_entries,
    read_body_checked,
    read_digests,
    read_session_index,
    text_digest,
    with_digest,
    write_entry,
)
from .search import list_view

UNDO_MS = 10_000


def new_session_id() -> str:
    return secrets.token_hex(8)


# -- saving the current conversation --------------------------------------------------------------


async def save_current(area: StorageArea, *, clear: bool = False) -> str | None:
    """Save `history` into its session (or a new one); with `clear`, empty it afterwards.

    Returns the session id, or None when there was nothing to save.
    """
    stored = await area.get([HISTORY, HISTORY_SESSION_ID])
    # Rule 7: a body carries every original, never a reference to one.
    raw_history = await image_originals.inline(area, stored.get(HISTORY))
    records = parse_history(raw_history).records
    if not records:
        return None
    index = await read_session_index(area)
    linked = stored_values.read_session_id(stored.get(HISTORY_SESSION_ID))
    sid = linked.value or new_session_id()
    existing = await index.find(sid)
    digest_hash = body_hash(raw_history)
    now = clock.now_ms()

    unchanged = existing is not None and existing.body_hash == digest_hash and not existing.damaged
    if not unchanged:
        if existing is None:
            entry = IndexEntry(
                id=sid,
                name=default_name(records),
                created_at=now,
                pinned=False,
                digest_head="",
                saved_at=now,
                body_hash=digest_hash,
                used_at=last_used(records),
            )
        else:
            entry = replace(
                existing,
                saved_at=now,
                body_hash=digest_hash,
                used_at=last_used(records) or existing.used_at,
                damaged=None,
                name=existing.name if existing.named else default_name(records),
            )
        entry, digest_item = with_digest(entry, text_digest(records))
        # The body, its digest and its entry in one write (with the id the history belongs to);
        # a new session's id joins the index's header after.
        await area.set(
            {
                session_body_key(sid): {"history": raw_history, "savedAt": now},
                **digest_item,
                **entry_item(entry),
                HISTORY_SESSION_ID: sid,
                **park(HISTORY_SESSION_ID, linked),
            }
        )
    after: dict[str, Any] = index_item([sid, *index.ids]) if existing is None else {}
    if clear:
        after.update({HISTORY: [], HISTORY_SESSION_ID: None, **park(HISTORY_SESSION_ID, linked)})
    if after:
        await area.set(after)
    return sid


# -- trash (delete with undo) --------------------------------------------------------------------


async def read_trash_checked(area: StorageArea) -> Read:
    """`sessionTrash` through its reader (margin.storage.stored_values): entries with an id; a write that
    replaces the list adds `park(SESSION_TRASH, read)`."""
    return stored_values.read_trash((await area.get([SESSION_TRASH])).get(SESSION_TRASH))


async def read_trash(area: StorageArea) -> list[dict[str, Any]]:
    return (await read_trash_checked(area)).value


async def purge_expired_trash(area: StorageArea) -> None:
    """Remove the bodies whose undo window has passed (bodies first, then the trash list)."""
    read = await read_trash_checked(area)
    trash = read.value
    now = clock.now_ms()
    expired = [t for t in trash if not (is_number(t.get("expiresAt")) and t["expiresAt"] > now)]
    if not expired:
        return
    await area.remove(
        [
            key
            for t in expired
            for key in (session_body_key(t["id"]), session_digest_key(t["id"]), session_entry_key(t["id"]))
        ]
    )
    await area.set({SESSION_TRASH: [t for t in trash if t not in expired], **park(SESSION_TRASH, read)})


# -- handlers (docs/protocol.md) ------------------------------------------------------------------


def _id_of(payload: dict) -> str:
    sid = payload.get("id") if isinstance(payload, dict) else None
    if not isinstance(sid, str) or not sid:
        raise MarginError.said("bad_request", "py_error_no_session_named")
    return sid


async def handle_new(platform: Platform, payload: dict) -> dict:
    async with lock_for(platform.local):
        saved = await save_current(platform.local, clear=True)
        return {"savedId": saved}


async def _checked_index(area: StorageArea) -> list[IndexEntry]:
    """The entries after the housekeeping every listing does: expired bodies removed (rule 5), the
    index migrated or repaired if need be (rules 1, 2), lost bodies marked damaged (rule 3). Hold
    the lock."""
    await purge_expired_trash(area)
    index = await read_session_index(area)
    return await check_bodies_present(area, await index.entries())


async def handle_list(platform: Platform, payload: dict) -> dict:
    query = payload.get("query") if isinstance(payload, dict) else None
    query = query if isinstance(query, str) else ""
    async with lock_for(platform.local):
        entries = await _checked_index(platform.local)
        digests: dict[str, str] = {}
        if query.split():
            digests = await read_digests(platform.local, entries)
            # An untitled session is searched by the word the user reads (margin.sessions.search rule 6).
            await options.ensure_spoken(platform)
    return {"sessions": list_view(entries, query, digests)}


async def handle_check(platform: Platform, payload: dict) -> dict:
    """What `session.list` does to storage, without building the list; every entry only once per
    browser run or when asked (rule 8). The panel searches its own copy of the index and sees the
    outcome through storage.onChanged."""
    area = platform.local
    repair = isinstance(payload, dict) and payload.get("repair") is True
    async with lock_for(area):
        await purge_expired_trash(area)
        index = await read_session_index(area)
        if not repair and (await platform.session.get([SESSION_BODIES_CHECKED])).get(SESSION_BODIES_CHECKED):
            return {}
    # The look itself runs without the lock: at 1,000 sessions listing every key's name and reading
    # every entry take hundreds of ms, which an action on one session would otherwise wait for.
    wrong = await entries_to_mark(area, index.ids)
    if wrong:
        async with lock_for(area):
            await mark_entries(area, await read_session_index(area), wrong)
    await platform.session.set({SESSION_BODIES_CHECKED: True})
    return {}


async def handle_open(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    area = platform.local
    async with lock_for(area):
        entry = await (await read_session_index(area)).entry(sid)
        raw = await read_body_checked(area, entry)
        saved = await save_current(area)
        if saved == sid:
            return {}  # it was the open conversation: saving it was all there was to do
        # Nothing readable was saved: what history holds may still be records Margin cannot read.
        parked = {} if saved else await parked_unreadable(area, await read_history(area))
        linked = stored_values.read_session_id((await area.get([HISTORY_SESSION_ID])).get(HISTORY_SESSION_ID))
        await area.set({HISTORY: raw, HISTORY_SESSION_ID: sid, **parked, **park(HISTORY_SESSION_ID, linked)})
    return {}


async def handle_rename(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    name = payload.get("name")
    if not isinstance(name, str) or not " ".join(name.split()):
        raise MarginError.said("bad_name", "py_error_empty_session_name")
    async with lock_for(platform.local):
        entry = await (await read_session_index(platform.local)).entry(sid)
        await write_entry(platform.local, replace(entry, name=" ".join(name.split())[:NAME_MAX], named=True))
    return {}


async def handle_pin(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    async with lock_for(platform.local):
        entry = await (await read_session_index(platform.local)).entry(sid)
        pinned = payload.get("pinned") is True
        if entry.pinned != pinned:
            await write_entry(platform.local, replace(entry, pinned=pinned))
    return {}


async def handle_delete(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    area = platform.local
    async with lock_for(area):
        await purge_expired_trash(area)
        index = await read_session_index(area)
        entry = await index.entry(sid)
        token = secrets.token_hex(8)
        expires_at = clock.now_ms() + UNDO_MS
        current = (await area.get([HISTORY_SESSION_ID])).get(HISTORY_SESSION_ID)
        undo: dict[str, Any] = {"entry": entry.to_json(), "expiresAt": expires_at}
        if current == sid:
            # Remember which conversation was open (its length and hash, not its bytes) so undo can
            # link it to its session again.
            open_history = (await area.get([HISTORY])).get(HISTORY)
            if isinstance(open_history, list) and open_history:
                undo["reopen"] = {"length": len(open_history), "hash": body_hash(open_history)}
        # Undo data first: once the index forgets the entry, this is where it lives.
        await platform.session.set({SESSION_UNDO_PREFIX + token: undo})
        trash_read = await read_trash_checked(area)
        items: dict[str, Any] = {
            SESSION_TRASH: [*trash_read.value, {"id": sid, "expiresAt": expires_at}],
            **park(SESSION_TRASH, trash_read),
        }
        if current == sid:
            items[HISTORY_SESSION_ID] = None  # the open conversation, if saved again, is a new session
        # The entry, body and digest stay until the purge (rule 5): undo puts the id back.
        await area.set({**index_item([i for i in index.ids if i != sid]), **items})
    return {"undo": token}


async def handle_undelete(platform: Platform, payload: dict) -> dict:
    token = payload.get("undo") if isinstance(payload, dict) else None
    too_late = MarginError.said("undo_expired", "py_error_undo_expired")
    if not isinstance(token, str) or not token:
        raise too_late
    key = SESSION_UNDO_PREFIX + token
    area = platform.local
    async with lock_for(area):
        record = (await platform.session.get([key])).get(key)
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("entry"), dict)
            or not is_number(record.get("expiresAt"))
            or record["expiresAt"] < clock.now_ms()
        ):
            raise too_late
        sid = record["entry"].get("id")
        trash_read = await read_trash_checked(area)
        trash = trash_read.value
        if not any(t["id"] == sid for t in trash):
            raise too_late
        index = await read_session_index(area)
        items: dict[str, Any] = {
            SESSION_TRASH: [t for t in trash if t["id"] != sid],
            **park(SESSION_TRASH, trash_read),
        }
        if sid not in index:
            # What undo stored goes back under its key as it was, with its id in the header; the
            # index's own reader takes it as it is when it is clean, else repairs and parks it.
            items.update({session_entry_key(sid): record["entry"], **index_item([*index.ids, sid])})
        if await _still_open(area, record.get("reopen")):
            items[HISTORY_SESSION_ID] = sid
        await area.set(items)
        await (await read_session_index(area)).entry(sid)
        await platform.session.remove([key])
    return {}


async def _still_open(area: StorageArea, reopen: Any) -> bool:
    """True when no session is linked to `history` and it still starts with the conversation that
    was open when the session was deleted (`reopen` = {length, hash} taken at delete time)."""
    if not (
        isinstance(reopen, dict)
        and isinstance(reopen.get("length"), int)
        and reopen["length"] > 0
        and isinstance(reopen.get("hash"), str)
    ):
        return False
    stored = await area.get([HISTORY, HISTORY_SESSION_ID])
    history = stored.get(HISTORY)
    if stored.get(HISTORY_SESSION_ID) is not None or not isinstance(history, list):
        return False
    length = reopen["length"]
    return len(history) >= length and body_hash(history[:length]) == reopen["hash"]


async def handle_export(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    fmt = check_export_format(payload.get("format"))
    async with lock_for(platform.local):  # before any await (margin.app.worker rule 6)
        await options.ensure_spoken(platform)  # the Markdown's words are in the user's language
        entry = await (await read_session_index(platform.local)).entry(sid)
        raw = await read_body_checked(platform.local, entry)
    return export_session(entry, raw, fmt)
