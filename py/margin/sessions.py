"""Saved sessions: a light index in `savedSessions`, one body per session in `session_<id>`.

Storage (docs/storage-model.md, "Sessions"):
- `savedSessions` is the LIGHT index, a list of entries
  `{id, name, createdAt, pinned, textDigest, savedAt, bodyHash, named?, damaged?}`.
  The first five fields are the storage model's; `savedAt` (ms of the last save), `bodyHash`
  (sha256 of the saved history, so saving an unchanged conversation writes nothing), `named`
  (true once the user renamed it: saving again keeps that name) and `damaged` ("missing" or
  "unreadable", set when a body was found gone or not a list of records) are additive.
  Unknown fields of an entry are kept verbatim.
- The body of session <id> lives in `session_<id>` (read by address only, never in GET_ALL_KEYS):
  `{history: [...records exactly as stored in `history`], savedAt}`. Images stay data URLs inside
  the records: pixels are never dropped or degraded. A body that is a bare list of records (an
  older shape) is read too.
- `textDigest` is the sessions' text only (no image bytes), at most DIGEST_CAP characters: content
  past the cap is not searchable (a documented trade-off).

Rules:
1. Every session function goes through `read_session_index()`. It returns the index as it is when
   it is clean, and otherwise repairs it in place: legacy inline snapshots
   (`{id, name, createdAt, pinned, history}`) get their bodies moved to `session_<id>`, entries
   missing fields are completed, duplicate ids are split (the later one gets a new id and its own
   copy of the body), what cannot be read is parked under `savedSessionsUnreadable_<hash>`.
2. The repair writes every body BEFORE it rewrites the index (one `set` per body, then one `set`
   for the index and anything parked). Everything it computes is a pure function of the stored
   data (generated ids are hashes of the entry and its position), so a crash at any point leaves
   the old index in place and the next run writes the same bodies again: idempotent, nothing
   lost, nothing duplicated.
3. Listing and searching read the index only, never a body. Listing asks the store for its key
   NAMES (`StorageArea.keys()`, chrome.storage's getKeys()) and marks an entry whose body key is
   gone `damaged: "missing"` (and clears that mark when the body is back), so a lost body shows in
   the list, not only when the session is opened.
4. `history` remembers its session in `historySessionId`: saving again updates that session (body,
   digest, and name unless the user renamed it) and never rewrites another session's body. A save
   writes the body (with `historySessionId`) first, then the index, so a crash in between leaves
   at worst a body the next save overwrites.
5. Delete removes the entry from the index at once and moves the id to `sessionTrash`; the body is
   removed once the undo window (UNDO_MS) has passed, by the next session call. What undo needs
   lives in chrome.storage.session (`sessionUndo_<token>`), so it survives a worker restart;
   keeping the body in `local` meanwhile avoids pushing megabytes of images through the 10 MB
   session area. Deleting the open conversation's session unlinks `historySessionId`; undo links
   it again when the conversation is still the one that was open (its records at delete time are
   a prefix of `history`), so saving again updates the session instead of making a copy.
6. Search is case- and diacritics-insensitive in every script: both sides are folded by `fold()`
   (NFKD, lowercase + the ß/final-sigma/iota folds, NFKD, marks dropped), then every word of the
   query must occur as a substring of the folded name + digest (substring matching also serves
   CJK, which has no spaces). Where it runs: in the side panel, in JS, over the index it read
   (extension/sessions_panel.js, same fold, same results): Python here takes seconds per query
   over 1,000 full digests, the panel answers each keystroke in milliseconds. This Python search
   serves `session.list {query}` and the tests; tests keep the two in step.
"""

from __future__ import annotations

import json
import re
import secrets
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from . import clock
from .errors import MarginError
from .history import Record, canonical_hash, parked_unreadable, parse_history, read_history
from .ports import Platform, StorageArea
from .storage import HISTORY, HISTORY_SESSION_ID, SAVED_SESSIONS, lock_for, session_body_key

DIGEST_CAP = 100_000
NAME_LENGTH = 60
NAME_MAX = 200
UNTITLED = "Untitled session"
PREVIEW_LENGTH = 140
UNDO_MS = 10_000
SESSION_TRASH = "sessionTrash"
UNDO_PREFIX = "sessionUndo_"
PARKED_PREFIX = "savedSessionsUnreadable_"

_KNOWN_FIELDS = ("id", "name", "createdAt", "pinned", "textDigest", "savedAt", "bodyHash", "named",
                 "damaged")



def new_session_id() -> str:
    return secrets.token_hex(8)


# -- the index entry ---------------------------------------------------------------------------

@dataclass(frozen=True)
class IndexEntry:
    id: str
    name: str
    created_at: int
    pinned: bool
    text_digest: str
    saved_at: int = 0
    body_hash: str = ""
    named: bool = False
    damaged: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def body_key(self) -> str:
        return session_body_key(self.id)

    @property
    def last_active(self) -> int:
        return max(self.saved_at, self.created_at)

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {
            **self.extra,
            "id": self.id, "name": self.name, "createdAt": self.created_at, "pinned": self.pinned,
            "textDigest": self.text_digest, "savedAt": self.saved_at, "bodyHash": self.body_hash,
        }
        if self.named:
            value["named"] = True
        if self.damaged:
            value["damaged"] = self.damaged
        return value

    @classmethod
    def from_clean_json(cls, value: dict[str, Any]) -> "IndexEntry":
        return cls(
            id=value["id"], name=value["name"], created_at=value["createdAt"], pinned=value["pinned"],
            text_digest=value["textDigest"], saved_at=value.get("savedAt", 0),
            body_hash=value.get("bodyHash", ""), named=value.get("named") is True,
            damaged=value.get("damaged"),
            extra={k: v for k, v in value.items() if k not in _KNOWN_FIELDS},
        )


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_clean(raw: Any) -> bool:
    if not isinstance(raw, list):
        return False
    seen: set[str] = set()
    for entry in raw:
        if not isinstance(entry, dict) or "history" in entry:
            return False
        sid = entry.get("id")
        if not isinstance(sid, str) or not sid or sid in seen:
            return False
        seen.add(sid)
        if not (isinstance(entry.get("name"), str) and entry["name"].strip()
                and is_number(entry.get("createdAt"))
                and isinstance(entry.get("pinned"), bool)
                and isinstance(entry.get("textDigest"), str)
                and len(entry["textDigest"]) <= DIGEST_CAP
                and is_number(entry.get("savedAt", 0))
                and isinstance(entry.get("bodyHash", ""), str)
                and entry.get("damaged") in (None, "missing", "unreadable")):
            return False
    return True


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

async def read_session_index(area: StorageArea) -> list[IndexEntry]:
    """The session index; migrates legacy entries and repairs bad ones first (see rules 1 and 2)."""
    stored = await area.get([SAVED_SESSIONS])
    raw = stored.get(SAVED_SESSIONS, [])
    if _is_clean(raw):
        return [IndexEntry.from_clean_json(entry) for entry in raw]
    return await _repair(area, raw)


async def _repair(area: StorageArea, raw: Any) -> list[IndexEntry]:
    parked: dict[str, Any] = {}
    if isinstance(raw, list):
        items = raw
    else:
        # Keep the raw value, then salvage what looks like entries.
        parked[PARKED_PREFIX + _stable_hash(raw)] = raw
        if isinstance(raw, dict) and ("id" in raw or "history" in raw):
            items = [raw]
        elif isinstance(raw, dict):
            items = [v for v in raw.values() if isinstance(v, dict)]
        else:
            items = []
    unreadable = [item for item in items if not isinstance(item, dict)]
    if unreadable and isinstance(raw, list):
        parked[PARKED_PREFIX + _stable_hash(unreadable)] = unreadable

    entries: list[IndexEntry] = []
    taken: set[str] = set()
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        entry = await _repair_entry(area, position, item, taken)
        taken.add(entry.id)
        entries.append(entry)

    await area.set({SAVED_SESSIONS: [e.to_json() for e in entries], **parked})
    return entries


def id_of_entry(item: dict[str, Any]) -> str | None:
    sid = item.get("id")
    if isinstance(sid, bool):
        return None
    if isinstance(sid, int) or (isinstance(sid, float) and sid.is_integer()):
        return str(int(sid))  # legacy ids were often Date.now()
    if isinstance(sid, str) and sid.strip() and len(sid) <= 200:
        return sid
    return None


async def _repair_entry(area: StorageArea, position: int, item: dict[str, Any],
                        taken: set[str]) -> IndexEntry:
    """One entry made whole; writes its body first when it has to move or copy one."""
    fingerprint = _stable_hash([position, item])
    stored_id = id_of_entry(item)
    sid = stored_id or f"r{fingerprint}"
    duplicate = sid in taken
    if duplicate:
        sid = f"{sid}-{fingerprint[:6]}"

    created_at = item.get("createdAt")
    if not is_number(created_at):
        created_at = item.get("savedAt") if is_number(item.get("savedAt")) else 0
    saved_at = item.get("savedAt") if is_number(item.get("savedAt")) else created_at
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
        needs_body = duplicate or not isinstance(item.get("textDigest"), str) or not (
            isinstance(item.get("name"), str) and item["name"].strip())
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
    if known_history:
        if isinstance(raw_history, list):
            records = parse_history(raw_history).records
        else:
            damaged = "unreadable"

    name = item.get("name")
    if not (isinstance(name, str) and name.strip()):
        name = default_name(records)
    digest = item.get("textDigest")
    if known_history or not isinstance(digest, str):
        digest = text_digest(records)
    return IndexEntry(
        id=sid, name=name.strip()[:NAME_MAX], created_at=created_at,
        pinned=item.get("pinned") is True or item.get("pinned") == 1,
        text_digest=digest[:DIGEST_CAP], saved_at=saved_at,
        body_hash=body_hash(raw_history) if known_history and isinstance(raw_history, list)
        else (item.get("bodyHash") if isinstance(item.get("bodyHash"), str) else ""),
        named=item.get("named") is True, damaged=damaged,
        extra={k: v for k, v in item.items() if k not in _KNOWN_FIELDS and k != "history"},
    )


async def write_index(area: StorageArea, entries: list[IndexEntry], **other: Any) -> None:
    await area.set({SAVED_SESSIONS: [e.to_json() for e in entries], **other})


def find_entry(entries: list[IndexEntry], sid: Any) -> IndexEntry:
    for entry in entries:
        if entry.id == sid:
            return entry
    raise MarginError("session_not_found",
                      "That session no longer exists. Close the sessions panel and open it again.")


def _replaced(entries: list[IndexEntry], new: IndexEntry) -> list[IndexEntry]:
    return [new if e.id == new.id else e for e in entries]


# -- saving the current conversation --------------------------------------------------------------

async def save_current(area: StorageArea, *, clear: bool = False) -> str | None:
    """Save `history` into its session (or a new one); with `clear`, empty it afterwards.

    Returns the session id, or None when there was nothing to save.
    """
    stored = await area.get([HISTORY, HISTORY_SESSION_ID])
    raw_history = stored.get(HISTORY)
    records = parse_history(raw_history).records
    if not records:
        return None
    entries = await read_session_index(area)
    current_id = stored.get(HISTORY_SESSION_ID)
    sid = current_id if isinstance(current_id, str) and current_id else new_session_id()
    existing = next((e for e in entries if e.id == sid), None)
    digest_hash = body_hash(raw_history)
    now = clock.now_ms()

    unchanged = existing is not None and existing.body_hash == digest_hash and not existing.damaged
    if not unchanged:
        # The body first (with the id the history belongs to), the index after.
        await area.set({session_body_key(sid): {"history": raw_history, "savedAt": now},
                        HISTORY_SESSION_ID: sid})
        if existing is None:
            entry = IndexEntry(id=sid, name=default_name(records), created_at=now, pinned=False,
                               text_digest=text_digest(records), saved_at=now, body_hash=digest_hash)
            entries = [entry, *entries]
        else:
            entry = replace(existing, text_digest=text_digest(records), saved_at=now,
                            body_hash=digest_hash, damaged=None,
                            name=existing.name if existing.named else default_name(records))
            entries = _replaced(entries, entry)
    if clear:
        await write_index(area, entries, **{HISTORY: [], HISTORY_SESSION_ID: None})
    elif not unchanged:
        await write_index(area, entries)
    return sid


# -- search --------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _mark_table() -> dict[int, None]:
    return {cp: None for cp in range(0x110000) if unicodedata.category(chr(cp)).startswith("M")}


# Case folds that lowercasing alone misses; JS's toLowerCase() agrees with str.lower() otherwise.
_EXTRA_FOLDS = str.maketrans({"ß": "ss", "ς": "σ", "\u0345": "ι"})


def fold(text: str) -> str:
    """Case- and diacritics-insensitive form: NFKD, lowercase + the few extra case folds (ß -> ss,
    final sigma, iota subscript), NFKD again, then every combining mark (category M) dropped.

    Defined so that JS computes the very same string with String.prototype.normalize and
    toLowerCase (extension/sessions_panel.js `fold`; tests/unit/test_sessions.py compares the two
    over every code point). It is character-wise: fold(a + b) == fold(a) + fold(b), which
    `fold_with_map` relies on.
    """
    if text.isascii():
        return text.lower()
    lowered = unicodedata.normalize("NFKD", text).lower().translate(_EXTRA_FOLDS)
    return unicodedata.normalize("NFKD", lowered).translate(_mark_table())


def fold_with_map(text: str) -> tuple[str, list[int]]:
    """`fold(text)` and, for each folded character, the index of the character it came from."""
    pieces: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        piece = fold(char)
        pieces.append(piece)
        origin.extend([index] * len(piece))
    return "".join(pieces), origin


def query_words(query: str) -> list[str]:
    return fold(query or "").split()


def matches(entry: IndexEntry, words: list[str]) -> bool:
    haystack = fold(entry.name) + "\n" + fold(entry.text_digest)
    return all(word in haystack for word in words)


def _ranges(text: str, words: list[str]) -> list[list[int]]:
    """Where the words occur in `text`, as merged [start, end) ranges of `text`'s own indexes."""
    folded, origin = fold_with_map(text)
    spans: list[tuple[int, int]] = []
    for word in words:
        start = folded.find(word)
        while start >= 0:
            spans.append((origin[start], origin[start + len(word) - 1] + 1))
            start = folded.find(word, start + len(word))
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _one_line(text: str) -> str:
    return re.sub(r"\s", " ", text)  # one character for one: highlight offsets stay valid


def _first_match_offset(digest: str, words: list[str]) -> int | None:
    """The index in `digest` of the earliest occurrence of any word, or None."""
    folded = fold(digest)
    found = [p for p in (folded.find(w) for w in words) if p >= 0]
    if not found:
        return None
    target = min(found)
    if len(folded) == len(digest) and digest.isascii():
        return target
    # fold is character-wise: walk chunks to the one holding the match, then characters.
    position = 0
    chunk_size = 2048
    for chunk_start in range(0, len(digest), chunk_size):
        chunk = digest[chunk_start:chunk_start + chunk_size]
        folded_chunk = fold(chunk)
        if position + len(folded_chunk) > target:
            _, origin = fold_with_map(chunk)
            return chunk_start + origin[target - position]
        position += len(folded_chunk)
    return None


def preview_for(entry: IndexEntry, words: list[str]) -> tuple[str, list[list[int]]]:
    digest = entry.text_digest
    offset = _first_match_offset(digest, words) if words else None
    if offset is None:
        return _one_line(digest[:PREVIEW_LENGTH]).strip(), []
    start = max(0, offset - 40)
    if start > 0:
        space = digest.find(" ", start, offset)
        start = space + 1 if space >= 0 else start
    excerpt = _one_line(digest[start:start + PREVIEW_LENGTH])
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + PREVIEW_LENGTH < len(digest) else ""
    preview = prefix + excerpt + suffix
    return preview, _ranges(preview, words)


def sort_entries(entries: list[IndexEntry]) -> list[IndexEntry]:
    """Pinned first, then the most recently saved (or created)."""
    return sorted(entries, key=lambda e: (not e.pinned, -e.last_active, e.id))


def list_view(entries: list[IndexEntry], query: str = "") -> list[dict[str, Any]]:
    words = query_words(query)
    shown = [e for e in entries if matches(e, words)] if words else entries
    result = []
    for entry in sort_entries(shown):
        preview, preview_ranges = preview_for(entry, words)
        result.append({
            "id": entry.id, "name": entry.name, "createdAt": entry.created_at,
            "savedAt": entry.saved_at, "pinned": entry.pinned, "preview": preview,
            "damaged": bool(entry.damaged), "damagedReason": entry.damaged,
            "highlights": {"name": _ranges(entry.name, words) if words else [],
                           "preview": preview_ranges},
        })
    return result


# -- trash (delete with undo) --------------------------------------------------------------------

async def read_trash(area: StorageArea) -> list[dict[str, Any]]:
    stored = await area.get([SESSION_TRASH])
    trash = stored.get(SESSION_TRASH, [])
    return [t for t in trash if isinstance(t, dict) and isinstance(t.get("id"), str)] \
        if isinstance(trash, list) else []


async def purge_expired_trash(area: StorageArea) -> None:
    """Remove the bodies whose undo window has passed (bodies first, then the trash list)."""
    trash = await read_trash(area)
    now = clock.now_ms()
    expired = [t for t in trash if not (is_number(t.get("expiresAt")) and t["expiresAt"] > now)]
    if not expired:
        return
    await area.remove([session_body_key(t["id"]) for t in expired])
    await area.set({SESSION_TRASH: [t for t in trash if t not in expired]})


# -- export --------------------------------------------------------------------------------------

def _date(ms: int) -> str:
    if not ms:
        return "date unknown"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _filename(name: str, extension: str) -> str:
    slug = re.sub(r"[^\w\-]+", "-", name, flags=re.UNICODE).strip("-")[:60] or "session"
    return f"{slug}.{extension}"


def to_markdown(entry: IndexEntry, raw_history: list[Any]) -> str:
    lines = [f"# {entry.name}", "", f"_{_date(entry.created_at)}_", ""]
    for item in raw_history:
        try:
            record = Record.from_json(item)
        except ValueError:
            lines += ["**(A message Margin could not read.)**", "", "```json",
                      json.dumps(item, ensure_ascii=False)[:2000], "```", ""]
            continue
        if record.is_attachment:
            meta = record.fields["attachment"]
            lines += [f"**Attached {meta.get('kind', 'page')}:** {meta.get('title') or meta.get('url', '')} "
                      f"({meta.get('url', '')})", "", "<details><summary>The text the model got</summary>", "",
                      "```text", record.text.replace("```", "ʼʼʼ"), "```", "", "</details>", ""]
            continue
        label = {"user": "You", "assistant": "Assistant"}.get(record.role, record.role.title())
        lines += [f"**{label}:**", ""]
        for part in record.parts:
            if part.get("type") == "text":
                lines += [part.get("text", ""), ""]
            elif part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                if isinstance(url, str) and url:
                    lines += [f"![image]({url})", ""]
                else:
                    lines += ["_(an image that could not be exported)_", ""]
    return "\n".join(lines).rstrip() + "\n"


def export_session(entry: IndexEntry, raw_history: list[Any], fmt: str) -> dict[str, str]:
    if fmt == "markdown":
        return {"filename": _filename(entry.name, "md"), "mimeType": "text/markdown",
                "text": to_markdown(entry, raw_history)}
    if fmt == "json":
        value = {"format": "margin-session", "version": 1,
                 "session": {"id": entry.id, "name": entry.name, "createdAt": entry.created_at,
                             "savedAt": entry.saved_at, "pinned": entry.pinned},
                 "history": raw_history}
        return {"filename": _filename(entry.name, "json"), "mimeType": "application/json",
                "text": json.dumps(value, ensure_ascii=False, indent=2)}
    raise MarginError("bad_format", "Choose Markdown or JSON to export a session.")


async def read_body_checked(area: StorageArea, entries: list[IndexEntry], entry: IndexEntry) -> list[Any]:
    """The session's stored history; marks the entry damaged and raises when it cannot be read."""
    stored = await area.get([entry.body_key])
    raw = body_history(stored.get(entry.body_key))
    if isinstance(raw, list):
        return raw
    reason = "missing" if entry.body_key not in stored else "unreadable"
    if entry.damaged != reason:
        await write_index(area, _replaced(entries, replace(entry, damaged=reason)))
    if reason == "missing":
        raise MarginError("session_damaged",
                          f"The saved text of “{entry.name}” is missing (Chrome may have lost it while "
                          "repairing its storage). It cannot be opened; you can delete it.")
    raise MarginError("session_damaged",
                      f"The saved text of “{entry.name}” cannot be read. It is kept as it is; "
                      "export a backup before deleting it.")


# -- handlers (docs/protocol.md) ------------------------------------------------------------------

def _id_of(payload: dict) -> str:
    sid = payload.get("id") if isinstance(payload, dict) else None
    if not isinstance(sid, str) or not sid:
        raise MarginError("bad_request", "Margin did not say which session to use. Try again.")
    return sid


async def handle_new(platform: Platform, payload: dict) -> dict:
    async with lock_for(platform.local):
        saved = await save_current(platform.local, clear=True)
        return {"savedId": saved}


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
    if any(a is not b for a, b in zip(entries, checked)):
        await write_index(area, checked)
    return checked


async def handle_list(platform: Platform, payload: dict) -> dict:
    query = payload.get("query") if isinstance(payload, dict) else None
    async with lock_for(platform.local):
        await purge_expired_trash(platform.local)
        entries = await read_session_index(platform.local)
        entries = await check_bodies_present(platform.local, entries)
    return {"sessions": list_view(entries, query if isinstance(query, str) else "")}


async def handle_open(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    area = platform.local
    async with lock_for(area):
        entries = await read_session_index(area)
        entry = find_entry(entries, sid)
        raw = await read_body_checked(area, entries, entry)
        saved = await save_current(area)
        if saved == sid:
            return {}  # it was the open conversation: saving it was all there was to do
        # Nothing readable was saved: what history holds may still be records Margin cannot read.
        parked = {} if saved else await parked_unreadable(area, await read_history(area))
        await area.set({HISTORY: raw, HISTORY_SESSION_ID: sid, **parked})
    return {}


async def handle_rename(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    name = payload.get("name")
    if not isinstance(name, str) or not " ".join(name.split()):
        raise MarginError("bad_name", "A session name cannot be empty. Type a name, then press Enter.")
    async with lock_for(platform.local):
        entries = await read_session_index(platform.local)
        entry = find_entry(entries, sid)
        renamed = replace(entry, name=" ".join(name.split())[:NAME_MAX], named=True)
        await write_index(platform.local, _replaced(entries, renamed))
    return {}


async def handle_pin(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    async with lock_for(platform.local):
        entries = await read_session_index(platform.local)
        entry = find_entry(entries, sid)
        pinned = payload.get("pinned") is True
        if entry.pinned != pinned:
            await write_index(platform.local, _replaced(entries, replace(entry, pinned=pinned)))
    return {}


async def handle_delete(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    area = platform.local
    async with lock_for(area):
        await purge_expired_trash(area)
        entries = await read_session_index(area)
        entry = find_entry(entries, sid)
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
        await platform.session.set({UNDO_PREFIX + token: undo})
        trash = await read_trash(area)
        items: dict[str, Any] = {SESSION_TRASH: [*trash, {"id": sid, "expiresAt": expires_at}]}
        if current == sid:
            items[HISTORY_SESSION_ID] = None  # the open conversation, if saved again, is a new session
        await write_index(area, [e for e in entries if e.id != sid], **items)
    return {"undo": token}


async def handle_undelete(platform: Platform, payload: dict) -> dict:
    token = payload.get("undo") if isinstance(payload, dict) else None
    too_late = MarginError("undo_expired", "It is too late to undo: the session was deleted.")
    if not isinstance(token, str) or not token:
        raise too_late
    key = UNDO_PREFIX + token
    area = platform.local
    async with lock_for(area):
        record = (await platform.session.get([key])).get(key)
        if not isinstance(record, dict) or not isinstance(record.get("entry"), dict) \
                or not is_number(record.get("expiresAt")) or record["expiresAt"] < clock.now_ms():
            raise too_late
        sid = record["entry"].get("id")
        trash = await read_trash(area)
        if not any(t["id"] == sid for t in trash):
            raise too_late
        entries = await read_session_index(area)
        if not any(e.id == sid for e in entries):
            restored = IndexEntry.from_clean_json(record["entry"])
            entries = [*entries, restored]
        items: dict[str, Any] = {SESSION_TRASH: [t for t in trash if t["id"] != sid]}
        if await _still_open(area, record.get("reopen")):
            items[HISTORY_SESSION_ID] = sid
        await write_index(area, entries, **items)
        await platform.session.remove([key])
    return {}


async def _still_open(area: StorageArea, reopen: Any) -> bool:
    """True when no session is linked to `history` and it still starts with the conversation that
    was open when the session was deleted (`reopen` = {length, hash} taken at delete time)."""
    if not (isinstance(reopen, dict) and isinstance(reopen.get("length"), int) and reopen["length"] > 0
            and isinstance(reopen.get("hash"), str)):
        return False
    stored = await area.get([HISTORY, HISTORY_SESSION_ID])
    history = stored.get(HISTORY)
    if stored.get(HISTORY_SESSION_ID) is not None or not isinstance(history, list):
        return False
    length = reopen["length"]
    return len(history) >= length and body_hash(history[:length]) == reopen["hash"]


async def handle_export(platform: Platform, payload: dict) -> dict:
    sid = _id_of(payload)
    fmt = payload.get("format")
    if fmt not in ("markdown", "json"):
        raise MarginError("bad_format", "Choose Markdown or JSON to export a session.")
    async with lock_for(platform.local):
        entries = await read_session_index(platform.local)
        entry = find_entry(entries, sid)
        raw = await read_body_checked(platform.local, entries, entry)
    return export_session(entry, raw, fmt)

