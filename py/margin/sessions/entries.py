"""One entry of the session index, and what the index says about a conversation: its digest, its
default name, the hash of its body. Pure: no storage here but `read_digests` (by address).

An entry is `{id, name, createdAt, pinned, digestHead, savedAt, bodyHash, activeAt?, named?, damaged?}`
(docs/storage-model.md, "Saved sessions"); it is stored under `sessionEntry_<id>` (margin.sessions.index).

Rules:
1. `is_clean_entry` is the one test of a stored entry: what passes it is taken as it is
   (`IndexEntry.from_clean_json`, which keeps the stored dict, so writing an unchanged entry back
   writes the value it was read as); anything else goes through the repair
   (margin.sessions.migration). Unknown fields are kept verbatim.
2. The digest is the conversation's text only (no image bytes; an attachment adds only its
   header), at most DIGEST_CAP characters: text past the cap is not searchable. Its first
   DIGEST_HEAD characters are the entry's `digestHead`.
3. A session with no question and no titled attachment is stored under the name UNTITLED, an
   English sentinel kept for compatibility (older Margins and backups hold it). It is not what a
   user reads: an entry so named and not `named` by the user is shown as the catalogue's
   `py_session_untitled`, in the language of the moment it is shown (`shown_name`; the panel's
   sessions list does the same, extension/sessions_panel.js), so a change of language relabels it.
   Search matches and highlights that shown name too (margin.sessions.search rule 6).
4. `activeAt` is when the conversation was last used: the latest `createdAt` of its records
   (`last_used`), written with its body (a save, an import, a repair that reads the body). It is
   optional: an entry without it (saved by an older Margin, or whose records carry no time) is
   taken at its last save, else its creation (`IndexEntry.active_at`); nothing rewrites old
   entries for it. The list shows and sorts by it (margin.sessions.search rule 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..base.sentences import Sentence, sentence
from ..platform.ports import StorageArea
from ..storage.history import Record, canonical_hash
from ..storage.keys import session_body_key, session_digest_key, session_entry_key
from ..storage.stored_values import is_number

DIGEST_CAP = 100_000
DIGEST_HEAD = 140  # = the preview's length (margin.sessions.search.PREVIEW_LENGTH)
NAME_LENGTH = 60
NAME_MAX = 200
UNTITLED = "Untitled session"  # rule 3: stored, never shown as it is

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
    "activeAt",
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
    used_at: int = 0  # rule 4: stored as `activeAt` when known
    extra: dict[str, Any] = field(default_factory=dict)
    # The stored dict this entry was read from (rule 1); `replace()` leaves it None.
    _stored: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def body_key(self) -> str:
        return session_body_key(self.id)

    @property
    def digest_key(self) -> str:
        return session_digest_key(self.id)

    @property
    def entry_key(self) -> str:
        return session_entry_key(self.id)

    @property
    def active_at(self) -> int:
        """Rule 4: when the conversation was last used, or, not known, last saved (or created)."""
        return self.used_at if self.used_at > 0 else max(self.saved_at, self.created_at)

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
        if self.used_at > 0:
            value["activeAt"] = self.used_at
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
            used_at=value.get("activeAt", 0),
            extra={k: v for k, v in value.items() if k not in _KNOWN_FIELDS},
        )


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
        and is_number(entry.get("activeAt", 0))
        and entry.get("damaged") in (None, "missing", "unreadable")
    )


def id_of_entry(item: dict[str, Any]) -> str | None:
    sid = item.get("id")
    if isinstance(sid, bool):
        return None
    if isinstance(sid, int) or (isinstance(sid, float) and sid.is_integer()):
        return str(int(sid))  # legacy ids were often Date.now()
    if isinstance(sid, str) and sid.strip() and len(sid) <= 200:
        return sid
    return None


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


def last_used(records: list[Record]) -> int:
    """Rule 4: the latest `createdAt` (ms) among the records, 0 when none carries one."""
    last = 0
    for record in records:
        at: Any = record.fields.get("createdAt")
        if is_number(at) and at > last:
            last = int(at)
    return last


def digest_head(digest: str) -> str:
    return digest[:DIGEST_HEAD]


def with_digest(entry: IndexEntry, digest: str) -> tuple[IndexEntry, dict[str, str]]:
    """The entry showing `digest`'s head, and the item that stores the digest (rule 2)."""
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


def is_untitled(name: str, named: bool) -> bool:
    """Rule 3: the stored name is the sentinel Margin wrote, not one the user chose."""
    return not named and name == UNTITLED


def shown_name(entry: IndexEntry) -> str | Sentence:
    """Rule 3: the name the user reads; a Sentence is said in their language (margin.base.sentences)."""
    return sentence("py_session_untitled") if is_untitled(entry.name, entry.named) else entry.name


def body_hash(raw_history: Any) -> str:
    return canonical_hash(raw_history)


def body_history(body: Any) -> Any:
    """The stored history inside a body (dict or bare-list shape); None when the body is absent."""
    if isinstance(body, dict):
        return body.get("history")
    return body
