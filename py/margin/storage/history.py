"""The one global, flat conversation (`history`) and its invariant.

Rules (docs/storage-model.md, "One global, flat history"):
1. `history` is ONE conversation for the whole browser, a flat list of records; it never
   changes with the active tab (docs/storage-model.md says why).
2. A record is `{role, content, ...}`: `content` is a string, or a list of parts
   `[{type: "text", text}, {type: "image_url", image_url: {url}}]`. Extra fields are kept as they
   are (`imagesSeen`, `videoSrc`, `stopped`, `createdAt`, ...), so a record survives a round trip
   through code that does not know them.
3. One send = exactly one user bubble: regenerate removes the old answer before the new turn,
   edit & resend removes the edited bubble and everything after it before sending (both keep
   what they remove as versions, rule 6).
4. Reading never destroys: records that are not valid (margin.storage.stored_values, rule 3: a text
   part whose text is not a string is one) are left out of the conversation shown, a known field
   of the wrong type is left out of its record,
   and `read_history` reports them so the caller keeps the raw value before its next write
   (`parked_unreadable`): under `historyUnreadable`, or, when that already holds another value,
   under `historyUnreadable_<12 hex of its sha256>`, so parking never overwrites what was parked.
   Every write that replaces `history` goes through it (`write_history` does so itself).
5. Attachment records (page context: a page's text, a video's transcript, a selection) are user
   records whose text starts with `PAGE_CONTEXT_PREFIX` and that carry an `attachment` object
   (`margin.page.context` builds them). They are not bubbles: the panel shows them as cards, and a
   run of them is answered by the next QUESTION (a user record that is not an attachment).
   Regenerate keeps the attachments that follow the answer it replaces (they wait for the next
   question); an answer is stored right after its question, before any attachment added meanwhile.
6. What regenerate and edit replace is never lost: the replaced answer (and, for an edit, the old
   question and the turns after it) becomes a version of the new answer (margin.storage.versions),
   pending on the question until the answer is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.errors import MarginError
from ..platform.ports import StorageArea
from . import versions
from .keys import HISTORY, HISTORY_UNREADABLE, parked_history_key
from .stored_values import (
    canonical_hash,
    check_record,
    read_list,
)

# The first characters of every attachment record's text: the model reads where the page's text
# starts and ends; the panel and the slimming rules find attachments by it.
PAGE_CONTEXT_PREFIX = "[Page context]"


@dataclass(frozen=True)
class Record:
    role: str
    content: str | list[dict[str, Any]]
    # Every other stored field, kept verbatim.
    fields: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Record:
        """The record as every reader may rely on it (margin.storage.stored_values, rule 3): ValueError
        (`Unreadable`) when it has no readable shape; known fields of the wrong type left out."""
        shape = check_record(value)
        return cls(role=shape.role, content=shape.content, fields=shape.fields)

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, **self.fields}

    @property
    def parts(self) -> list[dict[str, Any]]:
        if isinstance(self.content, str):
            return [{"type": "text", "text": self.content}] if self.content else []
        return self.content

    @property
    def text(self) -> str:
        """The record's text, parts joined, images left out."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.get("text", "") for p in self.content if p.get("type") == "text")

    @property
    def image_parts(self) -> list[dict[str, Any]]:
        return [p for p in self.parts if p.get("type") == "image_url"]

    def with_fields(self, **changes: Any) -> Record:
        return Record(self.role, self.content, {**self.fields, **changes})

    @property
    def is_attachment(self) -> bool:
        """Page context (rule 5): shown as a card, answered by the next question."""
        return (
            self.role == "user"
            and isinstance(self.fields.get("attachment"), dict)
            and self.text.startswith(PAGE_CONTEXT_PREFIX)
        )

    @property
    def is_question(self) -> bool:
        """A user bubble: what the user typed (and the images they sent with it)."""
        return self.role == "user" and not self.is_attachment


@dataclass(frozen=True)
class HistoryRead:
    records: list[Record]
    # The raw stored value when some of it could not be read; None when all of it was fine.
    unreadable_raw: Any = None


def _read_record(value: Any) -> tuple[Record, bool]:
    shape = check_record(value)
    return Record(shape.role, shape.content, shape.fields), shape.repaired


def parse_history(raw: Any) -> HistoryRead:
    """A stored list of records (`history`, a session body's): the readable ones, and the raw
    value when any record was left out or had a field dropped (rule 4)."""
    read = read_list(raw, _read_record)
    return HistoryRead(read.value, unreadable_raw=read.unreadable)


async def read_history(area: StorageArea) -> HistoryRead:
    stored = await area.get([HISTORY])
    return parse_history(stored.get(HISTORY))


def history_json(records: list[Record]) -> list[dict[str, Any]]:
    return [r.to_json() for r in records]


async def parked_unreadable(area: StorageArea, read: HistoryRead | None) -> dict[str, Any]:
    """The items to add to the write that replaces `history`, so what `read` could not parse is
    kept (rule 4); {} when everything was readable."""
    if read is None or read.unreadable_raw is None:
        return {}
    stored = await area.get([HISTORY_UNREADABLE])
    if HISTORY_UNREADABLE not in stored or stored[HISTORY_UNREADABLE] == read.unreadable_raw:
        return {HISTORY_UNREADABLE: read.unreadable_raw}
    return {parked_history_key(canonical_hash(read.unreadable_raw)[:12]): read.unreadable_raw}


async def write_history(area: StorageArea, records: list[Record], read: HistoryRead | None = None) -> None:
    """Write the conversation. If `read` found unreadable records, keep the raw value too, in the
    same atomic write."""
    await area.set({HISTORY: history_json(records), **await parked_unreadable(area, read)})


def user_record(text: str, images: list[dict[str, Any]] | None = None, **fields: Any) -> Record:
    """A user bubble: plain text, or parts when it carries images."""
    if not images:
        return Record("user", text, dict(fields))
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "text", "text": text})
    parts.extend(images)
    return Record("user", parts, dict(fields))


def last_question_index(records: list[Record]) -> int | None:
    for index in range(len(records) - 1, -1, -1):
        if records[index].is_question:
            return index
    return None


def for_regenerate(records: list[Record]) -> tuple[list[Record], int]:
    """The conversation without the answer to regenerate, and how much of it the new answer answers.

    Everything after the last question is dropped except attachments (rule 5): they were added
    after the old answer, so they wait for the next question and stay after the new answer."""
    index = last_question_index(records)
    if index is None:
        raise MarginError.said("nothing_to_regenerate", "py_error_nothing_to_regenerate")
    after = records[index + 1] if index + 1 < len(records) else None
    answer = after if after is not None and after.role == "assistant" else None
    question = versions.regenerate_pending(records[index], answer)  # rule 6
    waiting = [r for r in records[index + 1 :] if r.is_attachment]
    return [*records[:index], question, *waiting], index + 1


def for_edit(records: list[Record], index: int) -> tuple[list[Record], list[dict[str, Any]]]:
    """The conversation without the edited bubble and everything after it, but the attachments
    that wait for the next question (the edited one is it), and the versions the new question's
    answer will carry (rule 6)."""
    if not (0 <= index < len(records)) or not records[index].is_question:
        raise MarginError.said("edit_target_gone", "py_error_message_gone")
    pending, waiting = versions.edit_pending(records, index)
    return [*records[:index], *waiting], pending
