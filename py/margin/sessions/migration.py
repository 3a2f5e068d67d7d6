"""The session index's repair and its crash-safe migrations: older layouts of `savedSessions`
made into the current one (margin.sessions.index), and one entry that cannot be read made whole.

Layouts of `savedSessions`, oldest first (docs/storage-model.md, "Sessions"):
- legacy: a list of whole sessions `{id, name, createdAt, pinned, history}`;
- list, digests inline: a list of entries each carrying its `textDigest`;
- list: a list of light entries `{id, name, ..., digestHead}` (digests in `sessionDigest_<id>`);
- layout 2 (current): `{"layout": 2, "ids": [...]}`, each entry in `sessionEntry_<id>`.

Rules:
1. Every older layout goes through one path (`migrate_list`): each item is made a clean entry
   (legacy bodies moved to `session_<id>`, entries missing fields completed, duplicate ids split:
   the later one gets a new id and its own copy of the body, what cannot be read is parked under
   `savedSessionsUnreadable_<hash>`), then written as layout 2.
2. Write order: every body, then every digest, then every entry (`sessionEntry_<id>`), and only
   then `savedSessions` (with anything parked) in one `set`: until that last write the old index
   is what storage holds. Everything computed is a pure function of the stored data (generated
   ids are hashes of the entry and its position), so a crash at any write leaves the old index
   and the next run writes the same keys again: idempotent, nothing lost, nothing duplicated.
3. One entry of layout 2 that is not clean (`repair_entry`) is repaired the same way, under its
   own key: the key names the id; a missing entry is rebuilt from its body (its name, its digest);
   what the repair could not keep as it was is parked under `sessionEntry_<id>Unreadable_<hash>`
   in the same `set` that replaces it.
"""

from __future__ import annotations

from typing import Any

from ..platform.ports import StorageArea
from ..storage.history import Record, parse_history
from ..storage.keys import SAVED_SESSIONS, SAVED_SESSIONS_UNREADABLE_PREFIX, session_body_key
from ..storage.stored_values import parked_key
from .entries import (
    _KNOWN_FIELDS,
    DIGEST_CAP,
    DIGEST_HEAD,
    NAME_MAX,
    IndexEntry,
    body_hash,
    body_history,
    default_name,
    digest_head,
    id_of_entry,
    is_clean_entry,
    is_number,
    last_used,
    text_digest,
)

# Digests (characters) and entries written by the migration per `set`: a few MB, not 100 MB at once.
_DIGEST_BATCH = 4_000_000
_ENTRY_BATCH = 500


def _stable_hash(value: Any) -> str:
    return body_hash(value)[:12]


async def migrate_list(area: StorageArea, raw: Any, write_index: Any) -> list[IndexEntry]:
    """Any older `savedSessions` value made layout 2 (rules 1 and 2); `write_index(area, ids,
    **other)` writes the header (margin.sessions.index)."""
    parked: dict[str, Any] = {}
    if isinstance(raw, list):
        items = raw
    else:
        # Keep the raw value, then salvage what looks like entries.
        parked[SAVED_SESSIONS_UNREADABLE_PREFIX + _stable_hash(raw)] = raw
        if isinstance(raw, dict) and ("id" in raw or "history" in raw):
            items = [raw]
        elif isinstance(raw, dict):
            items = [v for v in raw.values() if isinstance(v, dict)]
        else:
            items = []
    entries: list[IndexEntry] = []
    taken: set[str] = set()
    lossy = any(not isinstance(item, dict) for item in items)
    digests: dict[str, str] = {}
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if is_clean_entry(item) and item["id"] not in taken:
            entry, digest = IndexEntry.from_clean_json(item), dict[str, str]()
        else:
            entry, digest = await _repair_item(area, position, item, taken)
            lossy = lossy or _changes_what_was_stored(item, entry)
        taken.add(entry.id)
        entries.append(entry)
        digests.update(digest)
        if sum(map(len, digests.values())) >= _DIGEST_BATCH:
            await area.set(digests)
            digests = {}
    if digests:
        await area.set(digests)  # rule 2: every digest is stored before the index forgets it
    for start in range(0, len(entries), _ENTRY_BATCH):
        await area.set({e.entry_key: e.to_json() for e in entries[start : start + _ENTRY_BATCH]})
    if lossy and isinstance(raw, list):
        # Rule 1: what the repair could not keep as it was is kept whole, parked.
        parked[parked_key(SAVED_SESSIONS, raw)] = raw
    await write_index(area, [e.id for e in entries], **parked)
    return entries


async def repair_entry(area: StorageArea, sid: str, raw: Any, stored: bool) -> IndexEntry:
    """The entry of `sid` whose stored value `raw` (absent when not `stored`) is not clean, made
    whole and written back (rule 3)."""
    item = dict(raw) if isinstance(raw, dict) else {}
    item["id"] = sid
    # Whole sessions lived inline only in the legacy list: here `session_<id>` is the body, never
    # overwritten by what an entry claims (the claim is parked with the entry).
    inline_history = item.pop("history", None) is not None
    entry, digest = await _repair_item(area, 0, item, set())
    lossy = stored and (
        inline_history
        or not isinstance(raw, dict)
        or raw.get("id") != sid
        or _changes_what_was_stored(item, entry)
    )
    parked = {parked_key(entry.entry_key, raw): raw} if lossy else {}
    written = entry.to_json()
    await area.set({**digest, entry.entry_key: written, **parked})
    return IndexEntry.from_clean_json(written)


# Fields the repair recomputes from the body or the digest (both kept): a new value loses nothing.
_DERIVED_FIELDS = ("bodyHash", "damaged", "history", "digestHead")


def _changes_what_was_stored(item: dict[str, Any], entry: IndexEntry) -> bool:
    """True when the repaired entry no longer holds a value `item` stored (a name that was not
    text, a time that was not a number, a digest cut to the cap...). A legacy id that was a
    number, a duplicate id given a suffix, a digest rebuilt from a body that is kept are not. An
    item with no readable id may not be an entry at all (a record, another tool's object): the
    entry made of it is a guess, so the raw value is kept too."""
    if id_of_entry(item) is None:
        return True
    written = entry.to_json()
    for key, value in item.items():
        if key in _DERIVED_FIELDS or key not in _KNOWN_FIELDS:
            continue
        if key == "id":
            continue
        if (key == "textDigest" and "history" in item) or (key == "named" and value is False):
            continue
        if key == "textDigest":
            # Moved to its own key (rule 2), whole unless it was not text or was past the cap.
            if not isinstance(value, str) or len(value) > DIGEST_CAP:
                return True
            continue
        if written.get(key) != value:
            return True
    return False


def _stored_active_at(item: dict[str, Any]) -> int:
    value: Any = item.get("activeAt")
    return int(value) if is_number(value) and value > 0 else 0


async def _repair_item(
    area: StorageArea, position: int, item: dict[str, Any], taken: set[str]
) -> tuple[IndexEntry, dict[str, str]]:
    """One entry made whole, and the digest to store for it (empty: keep what is stored); writes
    its body first when it has to move or copy one."""
    fingerprint = _stable_hash([position, item])
    stored_id = id_of_entry(item)
    sid = stored_id or f"r{fingerprint}"
    duplicate = sid in taken
    if duplicate:
        sid = f"{sid}-{fingerprint[:6]}"

    # Indexed only once is_number has checked the key holds a number (as from_clean_json trusts).
    has_saved_at = is_number(item.get("savedAt"))
    if is_number(item.get("createdAt")):
        created_at = item["createdAt"]
    else:
        created_at = item["savedAt"] if has_saved_at else 0
    saved_at = item["savedAt"] if has_saved_at else created_at
    damaged: str | None = item.get("damaged") if item.get("damaged") in ("missing", "unreadable") else None

    raw_history: Any = None
    known_history = False
    if "history" in item:
        # Legacy: the whole snapshot is inline. Its body moves to session_<id>, verbatim.
        raw_history = item["history"]
        known_history = True
        await area.set({session_body_key(sid): {"history": raw_history, "savedAt": saved_at}})
        damaged = None
    else:
        needs_body = (
            duplicate
            or not (isinstance(item.get("digestHead"), str) or isinstance(item.get("textDigest"), str))
            or not (isinstance(item.get("name"), str) and item["name"].strip())
        )
        if needs_body:
            source_key = session_body_key(stored_id) if stored_id else session_body_key(sid)
            stored = await area.get([source_key])
            if source_key in stored:
                raw_history = body_history(stored[source_key])
                known_history = True
                damaged = None
                if duplicate:
                    await area.set({session_body_key(sid): stored[source_key]})
            else:
                damaged = "missing"

    records: list[Record] = []
    readable = known_history and isinstance(raw_history, list)
    if readable:
        records = parse_history(raw_history).records
    elif known_history:
        damaged = "unreadable"

    name = item.get("name")
    if not (isinstance(name, str) and name.strip()):
        name = default_name(records)
    # The digest to store: rebuilt from a body read here, else the inline one moved out; else the
    # stored `sessionDigest_<id>` stays as it is.
    inline = item.get("textDigest")
    digest = text_digest(records) if readable else inline[:DIGEST_CAP] if isinstance(inline, str) else None
    head = item.get("digestHead")
    stored_hash = item.get("bodyHash")
    entry = IndexEntry(
        id=sid,
        name=name.strip()[:NAME_MAX],
        created_at=created_at,
        pinned=item.get("pinned") is True or item.get("pinned") == 1,
        digest_head=digest_head(digest)
        if digest is not None
        else head[:DIGEST_HEAD]
        if isinstance(head, str)
        else "",
        saved_at=saved_at,
        body_hash=body_hash(raw_history)
        if known_history and isinstance(raw_history, list)
        else (stored_hash if isinstance(stored_hash, str) else ""),
        named=item.get("named") is True,
        damaged=damaged,
        used_at=last_used(records) if readable else _stored_active_at(item),
        extra={k: v for k, v in item.items() if k not in _KNOWN_FIELDS and k != "history"},
    )
    return entry, ({entry.digest_key: digest} if digest is not None else {})
