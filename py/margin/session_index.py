"""The light session index: its entries, reading it (with repair and the crash-safe migration), and
what it says about a conversation (its digest, its default name, the hash of its body).

Storage (docs/storage-model.md, "Sessions"):
- `savedSessions` is the LIGHT index, a list of entries
  `{id, name, createdAt, pinned, digestHead, savedAt, bodyHash, named?, damaged?}`.
  The first four fields are the storage model's; `digestHead` is the first DIGEST_HEAD characters
  of the session's digest (what the list shows as its preview); `savedAt` (ms of the last save), `bodyHash`
  (sha256 of the saved history, so saving an unchanged conversation writes nothing), `named`
  (true once the user renamed it: saving again keeps that name) and `damaged` ("missing" or
  "unreadable", set when a body was found gone or not a list of records) are additive.
  Unknown fields of an entry are kept verbatim.
- The body of session <id> lives in `session_<id>` (read by address only, never in GET_ALL_KEYS):
  `{history: [...records exactly as stored in `history`], savedAt}`. Images stay data URLs inside
  the records: pixels are never dropped or degraded. A body that is a bare list of records (an
  older shape) is read too.
- The digest (the storage model's `textDigest`: the session's text only, no image bytes, at most
  DIGEST_CAP characters; content past the cap is not searchable) lives in
  `sessionDigest_<id>` as a string, read by address (never in GET_ALL_KEYS) and by search only.
  A digest key that is gone or holds anything but a string reads as "no digest": the session is
  then found by its name only, and its digest comes back with the next save.

Rules (numbered as for every sessions module: 4-5 are in margin.sessions, 6 in
margin.session_search):
1. Every session function goes through `read_session_index()`. It returns the index as it is when
   it is clean, and otherwise repairs it in place: legacy inline snapshots
   (`{id, name, createdAt, pinned, history}`) get their bodies moved to `session_<id>`, entries
   missing fields are completed, duplicate ids are split (the later one gets a new id and its own
   copy of the body), what cannot be read is parked under `savedSessionsUnreadable_<hash>`.
2. The repair writes every body BEFORE it rewrites the index (one `set` per body, then one `set`
   for the index and anything parked). Everything it computes is a pure function of the stored
   data (generated ids are hashes of the entry and its position), so a crash at any point leaves
   the old index in place and the next run writes the same bodies again: idempotent, nothing
   lost, nothing duplicated. The same holds for digests: an entry that still carries its
   `textDigest` inline (the layout before digests moved out) gets it written to
   `sessionDigest_<id>` first; only then is the index rewritten without it.
3. Listing and searching read the index only, never a body. Listing asks the store for its key
   NAMES (`StorageArea.keys()`, chrome.storage's getKeys()) and marks an entry whose body key is
   gone `damaged: "missing"` (and clears that mark when the body is back), so a lost body shows in
   the list, not only when the session is opened.
4. An action on one session (rename, pin, delete, open, save) reads and writes the index (~300
   bytes per session) and that session's own keys, never another session's digest or body: its
   cost does not grow with the digests of the others. Every writer of a digest writes
   `sessionDigest_<id>` in the same `set` as the body, before the index. The index itself is
   still read and written whole, so what is done per entry is kept to C-speed work: an index
   equal to the one this worker last read clean or wrote is not checked and converted again (the
   entries are immutable, and every entry Python writes is clean), and an entry written back
   unchanged is the dict it was read as.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import MarginError
from .history import Record, canonical_hash, parse_history
from .ports import StorageArea
from .storage import SAVED_SESSIONS, SAVED_SESSIONS_UNREADABLE_PREFIX, session_body_key, session_digest_key
from .stored_values import is_number as is_number
from .stored_values import parked_key

DIGEST_CAP = 100_000
DIGEST_HEAD = 140  # = the preview's length (margin.session_search.PREVIEW_LENGTH)
NAME_LENGTH = 60
NAME_MAX = 200
UNTITLED = "Untitled session"

_KNOWN_FIELDS = (
    "id",
    "name",
    "createdAt",
    "pinned",
    "digestHead",
    "textDigest",
    "savedAt",
    "bodyHash",
    "named",
    "damaged",
)


# -- the index entry ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexEntry:
    id: str
    name: str
    created_at: int
    pinned: bool
    digest_head: str
    saved_at: int = 0
    body_hash: str = ""
    named: bool = False
    damaged: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The stored dict this entry was read from (rule 4); `replace()` leaves it None.
    _stored: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def body_key(self) -> str:
        return session_body_key(self.id)

    @property
    def digest_key(self) -> str:
        return session_digest_key(self.id)

    @property
    def last_active(self) -> int:
        return max(self.saved_at, self.created_at)

    def to_json(self) -> dict[str, Any]:
        if self._stored is not None:
            return self._stored
        value: dict[str, Any] = {
            **self.extra,
            "id": self.id,
            "name": self.name,
            "createdAt": self.created_at,
            "pinned": self.pinned,
            "digestHead": self.digest_head,
            "savedAt": self.saved_at,
            "bodyHash": self.body_hash,
        }
        if self.named:
            value["named"] = True
        if self.damaged:
            value["damaged"] = self.damaged
        return value

    @classmethod
    def from_clean_json(cls, value: dict[str, Any]) -> IndexEntry:
        entry = cls._from_clean_json(value)
        object.__setattr__(entry, "_stored", value)
        return entry

    @classmethod
    def _from_clean_json(cls, value: dict[str, Any]) -> IndexEntry:
        return cls(
            id=value["id"],
            name=value["name"],
            created_at=value["createdAt"],
            pinned=value["pinned"],
            digest_head=value["digestHead"],
            saved_at=value.get("savedAt", 0),
            body_hash=value.get("bodyHash", ""),
            named=value.get("named") is True,
            damaged=value.get("damaged"),
            extra={k: v for k, v in value.items() if k not in _KNOWN_FIELDS},
        )


def _is_clean(raw: Any) -> bool:
    if not isinstance(raw, list):
        return False
    seen: set[str] = set()
    for entry in raw:
        if not is_clean_entry(entry) or entry["id"] in seen:
            return False
        seen.add(entry["id"])
    return True


def is_clean_entry(entry: Any) -> bool:
    """One index entry that `IndexEntry.from_clean_json` may take as it is."""
    if not isinstance(entry, dict) or "history" in entry:
        return False
    sid = entry.get("id")
    if not isinstance(sid, str) or not sid:
        return False
    return bool(
        isinstance(entry.get("name"), str)
        and entry["name"].strip()
        and is_number(entry.get("createdAt"))
        and isinstance(entry.get("pinned"), bool)
        and "textDigest" not in entry
        and isinstance(entry.get("digestHead"), str)
        and len(entry["digestHead"]) <= DIGEST_HEAD
        and is_number(entry.get("savedAt", 0))
        and isinstance(entry.get("bodyHash", ""), str)
        and isinstance(entry.get("named", False), bool)
        and entry.get("damaged") in (None, "missing", "unreadable")
    )


# -- text: digest, default name ----------------------------------------------------------------


def searchable_text(record: Record) -> str:
    """What search sees of a record: its text; of an attachment, only its header (what it is,
    the title, the URL), so one attached page cannot fill the digest's cap by itself."""
    if record.is_attachment:
        return record.text.split("\n\n", 1)[0]
    return record.text


def text_digest(records: list[Record]) -> str:
    """The conversation's text, images left out, capped at DIGEST_CAP characters."""
    return "\n".join(text for text in map(searchable_text, records) if text)[:DIGEST_CAP]


def digest_head(digest: str) -> str:
    return digest[:DIGEST_HEAD]


def with_digest(entry: IndexEntry, digest: str) -> tuple[IndexEntry, dict[str, str]]:
    """The entry showing `digest`'s head, and the item that stores the digest (rule 4)."""
    return replace(entry, digest_head=digest_head(digest)), {entry.digest_key: digest[:DIGEST_CAP]}


async def read_digests(area: StorageArea, entries: list[IndexEntry]) -> dict[str, str]:
    """Each entry's digest by address (id -> text); one gone or not a string reads as ""."""
    stored = await area.get([e.digest_key for e in entries])
    return {
        e.id: value[:DIGEST_CAP] if isinstance(value := stored.get(e.digest_key), str) else ""
        for e in entries
    }


def shorten(text: str, limit: int = NAME_LENGTH) -> str:
    """One line, at most `limit` characters, cut on a word boundary with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"


def default_name(records: list[Record]) -> str:
    for record in records:
        if record.is_question and record.text.strip():
            return shorten(record.text)
    for record in records:
        if record.is_attachment and record.fields["attachment"].get("title"):
            return shorten(str(record.fields["attachment"]["title"]))
    return UNTITLED


def body_hash(raw_history: Any) -> str:
    return canonical_hash(raw_history)


def _stable_hash(value: Any) -> str:
    return body_hash(value)[:12]


def body_history(body: Any) -> Any:
    """The stored history inside a body (dict or bare-list shape); None when the body is absent."""
    if isinstance(body, dict):
        return body.get("history")
    return body


# -- the repairing, migrating index reader -------------------------------------------------------


# The clean index read last and its entries (rule 4), per storage area (one in a worker; each test
# has its own), checked by equality.
_last_clean: weakref.WeakKeyDictionary[Any, tuple[list[Any], list[IndexEntry]]] = weakref.WeakKeyDictionary()
_NOTHING: tuple[list[Any], list[IndexEntry]] = ([], [])


async def read_session_index(area: StorageArea) -> list[IndexEntry]:
    """The session index; migrates legacy entries and repairs bad ones first (see rules 1 and 2)."""
    stored = await area.get([SAVED_SESSIONS])
    raw = stored.get(SAVED_SESSIONS, [])
    last_raw, last_entries = _last_clean.get(area, _NOTHING)
    if raw and raw == last_raw:
        return list(last_entries)
    if _is_clean(raw):
        entries = [IndexEntry.from_clean_json(entry) for entry in raw]
        _last_clean[area] = (raw, entries)
        return list(entries)
    return await _repair(area, raw)


async def _repair(area: StorageArea, raw: Any) -> list[IndexEntry]:
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
        entry, digest = await _repair_entry(area, position, item, taken)
        taken.add(entry.id)
        entries.append(entry)
        lossy = lossy or _changes_what_was_stored(item, entry)
        digests.update(digest)
        if sum(map(len, digests.values())) >= _DIGEST_BATCH:
            await area.set(digests)
            digests = {}
    if digests:
        await area.set(digests)  # rule 2: every digest is stored before the index forgets it
    if lossy and isinstance(raw, list):
        # Rule 1: what the repair could not keep as it was is kept whole, parked.
        parked[parked_key(SAVED_SESSIONS, raw)] = raw

    await write_index(area, entries, **parked)
    return entries


# Digests written by the migration per `set` (characters): a few MB, not the whole 100 MB at once.
_DIGEST_BATCH = 4_000_000

# Fields the repair recomputes from the body or the digest (both kept): a new value loses nothing.
_DERIVED_FIELDS = ("bodyHash", "damaged", "history", "digestHead")


def _changes_what_was_stored(item: dict[str, Any], entry: IndexEntry) -> bool:
    """True when the repaired entry no longer holds a value `item` stored (a name that was not
    text, a time that was not a number, a digest cut to the cap...). A legacy id that was a
    number, a duplicate id given a suffix, a digest rebuilt from a body that is kept are not."""
    written = entry.to_json()
    for key, value in item.items():
        if key in _DERIVED_FIELDS or key not in _KNOWN_FIELDS:
            continue
        if key == "id":
            if id_of_entry(item) is None:
                return True
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


def id_of_entry(item: dict[str, Any]) -> str | None:
    sid = item.get("id")
    if isinstance(sid, bool):
        return None
    if isinstance(sid, int) or (isinstance(sid, float) and sid.is_integer()):
        return str(int(sid))  # legacy ids were often Date.now()
    if isinstance(sid, str) and sid.strip() and len(sid) <= 200:
        return sid
    return None


async def _repair_entry(
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
        extra={k: v for k, v in item.items() if k not in _KNOWN_FIELDS and k != "history"},
    )
    return entry, ({entry.digest_key: digest} if digest is not None else {})


async def write_index(area: StorageArea, entries: list[IndexEntry], **other: Any) -> None:
    written = [e.to_json() for e in entries]
    _last_clean.pop(area, None)  # a write that fails leaves the store unknown
    await area.set({SAVED_SESSIONS: written, **other})
    _last_clean[area] = (written, list(entries))


def find_entry(entries: list[IndexEntry], sid: Any) -> IndexEntry:
    for entry in entries:
        if entry.id == sid:
            return entry
    raise MarginError(
        "session_not_found", "That session no longer exists. Close the sessions panel and open it again."
    )


def replace_entry(entries: list[IndexEntry], new: IndexEntry) -> list[IndexEntry]:
    return [new if e.id == new.id else e for e in entries]


# -- bodies: present, readable ---------------------------------------------------------------


async def check_bodies_present(area: StorageArea, entries: list[IndexEntry]) -> list[IndexEntry]:
    """Entries whose body key is gone marked damaged "missing" (and back ones unmarked); reads no body."""
    present = set(await area.keys())
    checked: list[IndexEntry] = []
    for entry in entries:
        if entry.body_key not in present and entry.damaged != "missing":
            entry = replace(entry, damaged="missing")
        elif entry.body_key in present and entry.damaged == "missing":
            entry = replace(entry, damaged=None)
        checked.append(entry)
    if any(a is not b for a, b in zip(entries, checked, strict=True)):
        await write_index(area, checked)
    return checked


async def read_body_checked(area: StorageArea, entries: list[IndexEntry], entry: IndexEntry) -> list[Any]:
    """The session's stored history; marks the entry damaged and raises when it cannot be read."""
    stored = await area.get([entry.body_key])
    raw = body_history(stored.get(entry.body_key))
    if isinstance(raw, list):
        return raw
    reason = "missing" if entry.body_key not in stored else "unreadable"
    if entry.damaged != reason:
        await write_index(area, replace_entry(entries, replace(entry, damaged=reason)))
    if reason == "missing":
        raise MarginError(
            "session_damaged",
            f"The saved text of “{entry.name}” is missing (Chrome may have lost it while "
            "repairing its storage). It cannot be opened; you can delete it.",
        )
    raise MarginError(
        "session_damaged",
        f"The saved text of “{entry.name}” cannot be read. It is kept as it is; "
        "export a backup before deleting it.",
    )
