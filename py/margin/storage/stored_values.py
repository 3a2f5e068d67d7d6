"""Reading what storage holds: every value read from chrome.storage passes a reader here (or a
per-concept reader built on this module) before Margin's code touches it, and what a reader
cannot read is parked, never destroyed.

Concept. chrome.storage hands back any JSON value under any key: an older version's shape, a key
another tool wrote, a value a crash or Chrome's own database repair left behind, a string a page
cut in the middle of a UTF-16 pair. Code past a reader relies on the shape it was promised and
never type-checks again; a reader never raises on bad data, it says what it could not read.

Rules (docs/storage-model.md, "Reading stored values"):
1. A reader returns a `Read`: `value` in the promised shape (defaults or the readable part), and
   `unreadable`, the whole raw value when any of it was left out or changed (else None). Nothing
   past a reader sees a wrong type; nothing a reader leaves out is forgotten.
2. Parking: a write that replaces (or removes) a key whose last read had `unreadable` adds
   `park(key, raw)` to the same `set`: the raw value under `<key>Unreadable_<12 hex of its
   sha256>` (`parked_key`). The name depends only on the value, so parking twice writes the same
   key, and a different bad value never overwrites one parked before. `history` keeps its first
   slot `historyUnreadable` (margin.storage.history, rule 4); `savedSessions` parks under the same scheme.
3. Records (`history`, session bodies) are read by `check_record`, which `Record.from_json` calls:
   a record with no valid role, content that is neither text nor parts, a text part whose `text`
   is not a string or an image part without a string `url` is unreadable as a whole (left out of
   the conversation shown, parked with the list). A known optional field of the wrong type
   (`createdAt`, `usage`, `imagesSeen`, `attachment.summary`, ... `RECORD_FIELDS`) is dropped
   from the record read, which stays in the conversation; the list is then parked too. An
   answer's `versions` (margin.storage.versions rule 6) is read version by version: one that
   cannot be read is left out, the answer stays, and the list is parked.
4. Numbers are finite (`is_number`): chrome.storage cannot hold NaN or Infinity (the bridge's
   JSON turns them into null), but a value Margin reads may still be any JSON number, 1e308 or
   a float where a count is meant (`is_count`). Text may hold lone surrogates: `canonical_hash`
   hashes them (surrogatepass) instead of failing.
5. Depth: chrome.storage keeps only a value's first 100 levels of nesting (measured: deeper levels
   are dropped silently by Chrome's value conversion, docs/storage-model.md), so every stored
   value Python reads is well within the JSON reader's reach; nothing deeper ever arrives.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..sandbox.code_runs import is_runs
from ..sandbox.tool_loop import is_tool_rounds

PARKED_SUFFIX = "Unreadable_"


@dataclass(frozen=True)
class Read:
    """What a reader made of one stored value (rule 1)."""

    value: Any
    # The whole raw value when some of it could not be read; None when all of it was fine.
    unreadable: Any = None

    @property
    def clean(self) -> bool:
        return self.unreadable is None


class Unreadable(ValueError):
    """A stored value (or a record in a list) that cannot be read at all."""


# -- primitives (rule 4) -------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_count(value: Any) -> bool:
    """A whole, non-negative number (a float that is whole counts: JSON does not tell them apart)."""
    return is_number(value) and value >= 0 and float(value).is_integer()


def is_text(value: Any) -> bool:
    return isinstance(value, str)


def is_flag(value: Any) -> bool:
    return isinstance(value, bool)


def is_object(value: Any) -> bool:
    return isinstance(value, dict)


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def canonical_hash(value: Any) -> str:
    """sha256 (hex) of a stored value's canonical JSON: equal values, equal hashes; lone
    surrogates (text cut inside a UTF-16 pair) are hashed, not refused."""
    return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()


# -- parking (rule 2) ----------------------------------------------------------------------------


def parked_key(key: str, raw: Any) -> str:
    return f"{key}{PARKED_SUFFIX}{canonical_hash(raw)[:12]}"


def park(key: str, read: Read | None) -> dict[str, Any]:
    """The items to add to the write that replaces `key`, so what `read` could not read is kept."""
    if read is None or read.unreadable is None:
        return {}
    return {parked_key(key, read.unreadable): read.unreadable}


# -- records (rule 3) ----------------------------------------------------------------------------

ROLES = ("user", "assistant", "system")


def _usage(value: Any) -> bool:
    return is_object(value) and all(
        is_count(value[k]) for k in ("input", "cachedInput", "output") if k in value
    )


def _summary(value: Any) -> bool:
    return (
        is_object(value)
        and is_text(value.get("text"))
        and all(is_text(value[k]) for k in ("model",) if k in value)
        and all(is_number(value[k]) for k in ("chars", "createdAt") if k in value)
    )


def is_file_value(value: Any) -> bool:
    """An attached data file's `file` field (margin.page.data_files rule 2)."""
    return (
        is_object(value)
        and is_text(value.get("name"))
        and is_text(value.get("text"))
        and is_text(value.get("mediaType"))
        and is_count(value.get("size"))
    )


# Known optional fields of a record and of its `attachment` / `video` objects: a value that fails
# its check is dropped from the record read (unknown fields are kept as they are).
RECORD_FIELDS: dict[str, Callable[[Any], bool]] = {
    "createdAt": is_number,
    "imagesSeen": is_flag,
    "stopped": is_flag,
    "incomplete": is_flag,
    "model": is_text,
    "usage": _usage,
    "cost": is_number,
    "responseId": is_text,
    "responseProviderId": is_text,
    "videoSrc": is_text,
    "attachment": is_object,
    "video": is_object,
    "runs": is_runs,  # margin.sandbox.code_runs rule 4
    "toolRounds": is_tool_rounds,  # margin.sandbox.tool_loop rule 5
    "file": is_file_value,  # margin.page.data_files rule 2
}
# Only `summary` is checked inside `attachment`: its other fields are read defensively where
# they are used (the panel's slimming.js reads them too, and must see the same record).
ATTACHMENT_FIELDS: dict[str, Callable[[Any], bool]] = {"summary": _summary}
VIDEO_FIELDS: dict[str, Callable[[Any], bool]] = {
    "tabId": is_number,
    "windowId": is_number,
    "index": is_count,
    "duration": is_number,
    "pageUrl": is_text,
    "src": is_text,
    "title": is_text,
    "transcript": is_object,
}


def _checked(value: dict[str, Any], checks: dict[str, Callable[[Any], bool]]) -> tuple[dict[str, Any], bool]:
    """`value` without the known fields that fail their check, and whether any did."""
    bad = [k for k, check in checks.items() if k in value and not check(value[k])]
    if not bad:
        return value, False
    return {k: v for k, v in value.items() if k not in bad}, True


def _check_part(part: Any) -> tuple[dict[str, Any], bool]:
    if not is_object(part) or not is_text(part.get("type")):
        raise Unreadable("a content part is not {type, ...}")
    if part["type"] == "text" and not is_text(part.get("text")):
        raise Unreadable("a text part's text is not a string")
    if part["type"] == "image_url":
        image = part.get("image_url")
        if not (is_object(image) and is_text(image.get("url"))):
            raise Unreadable("an image part has no url")
        if "meta" in part and not is_object(part["meta"]):
            return {k: v for k, v in part.items() if k != "meta"}, True
    return part, False


@dataclass(frozen=True)
class RecordShape:
    role: str
    content: str | list[dict[str, Any]]
    fields: dict[str, Any]
    # True when something was dropped: the list it came from must be parked before a rewrite.
    repaired: bool


def check_record(value: Any) -> RecordShape:
    """A stored record in the shape every reader relies on (rule 3); Unreadable when it has none."""
    if not is_object(value):
        raise Unreadable("a record is not an object")
    role = value.get("role")
    if role not in ROLES:
        raise Unreadable(f"unknown role {role!r}"[:80])
    content = value.get("content")
    repaired = False
    if isinstance(content, list):
        checked = [_check_part(part) for part in content]
        if any(changed for _, changed in checked):
            content, repaired = [part for part, _ in checked], True
    elif not is_text(content):
        raise Unreadable("content is neither text nor a list of parts")
    fields, dropped = _checked(
        {k: v for k, v in value.items() if k not in ("role", "content")}, RECORD_FIELDS
    )
    repaired = repaired or dropped
    if VERSIONS in fields or VERSION_AT in fields:  # margin.storage.versions rule 6
        fields, dropped = _checked_versions(fields)
        repaired = repaired or dropped
    for name, checks in (("attachment", ATTACHMENT_FIELDS), ("video", VIDEO_FIELDS)):
        if name in fields:
            inner, dropped = _checked(fields[name], checks)
            if dropped:
                fields, repaired = {**fields, name: inner}, True
    return RecordShape(role, content, fields, repaired)


# An answer's versions (margin.storage.versions): the list, and where the shown one stands.
VERSIONS = "versions"
VERSION_AT = "versionAt"
_NOT_IN_A_VERSION = ("role", VERSIONS, VERSION_AT)


def _check_content(content: Any) -> tuple[str | list[dict[str, Any]], bool]:
    if isinstance(content, list):
        checked = [_check_part(part) for part in content]
        if any(changed for _, changed in checked):
            return [part for part, _ in checked], True
        return content, False
    if not is_text(content):
        raise Unreadable("content is neither text nor a list of parts")
    return content, False


def _check_version(value: Any) -> tuple[dict[str, Any], bool]:
    """One version of an answer: `{content, ...answer fields, question?, later?}`; Unreadable when
    its content, its question or one of its later records cannot be read."""
    if not is_object(value):
        raise Unreadable("a version is not an object")
    content, repaired = _check_content(value.get("content"))
    rest = {k: v for k, v in value.items() if k not in ("content", "question", "later")}
    fields, dropped = _checked({k: v for k, v in rest.items() if k not in _NOT_IN_A_VERSION}, RECORD_FIELDS)
    repaired = repaired or dropped or any(k in rest for k in _NOT_IN_A_VERSION)
    version: dict[str, Any] = {"content": content, **fields}
    if "question" in value:
        question = check_record(value["question"])
        if question.role != "user":
            raise Unreadable("a version's question is not a user record")
        version["question"] = {"role": "user", "content": question.content, **question.fields}
        repaired = repaired or question.repaired
    if "later" in value:
        if not isinstance(value["later"], list):
            raise Unreadable("a version's later records are not a list")
        later = [check_record(r) for r in value["later"]]
        version["later"] = [{"role": r.role, "content": r.content, **r.fields} for r in later]
        repaired = repaired or any(r.repaired for r in later)
    return version, repaired


def _checked_versions(fields: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The record's fields with `versions` read version by version and `versionAt` in range."""
    read = read_list(fields.get(VERSIONS), _check_version)
    versions = read.value
    out = {k: v for k, v in fields.items() if k not in (VERSIONS, VERSION_AT)}
    if versions:
        out[VERSIONS] = versions
    at = fields.get(VERSION_AT)
    if isinstance(at, (int, float)) and versions and is_count(at) and at <= len(versions):
        out[VERSION_AT] = int(at)
    unchanged = read.unreadable is None and (VERSION_AT not in fields or out.get(VERSION_AT) == at)
    return out, not unchanged


def read_list(raw: Any, item: Callable[[Any], Any]) -> Read:
    """A stored list read item by item (`item` raises Unreadable, or returns (value, repaired)):
    absent -> []; not a list, an unreadable item or a repaired one -> `unreadable` = raw."""
    if raw is None:
        return Read([])
    if not isinstance(raw, list):
        return Read([], unreadable=raw)
    values: list[Any] = []
    bad = False
    for entry in raw:
        try:
            value, repaired = item(entry)
        except Unreadable:
            bad = True
            continue
        bad = bad or repaired
        values.append(value)
    return Read(values, unreadable=raw if bad else None)


# -- small keys ----------------------------------------------------------------------------------


def read_session_id(raw: Any) -> Read:
    """`historySessionId`: a non-empty string or None."""
    if raw is None or (is_text(raw) and raw):
        return Read(raw)
    return Read(None, unreadable=raw)


def _trash_item(entry: Any) -> tuple[dict[str, Any], bool]:
    if not (is_object(entry) and is_text(entry.get("id")) and entry["id"]):
        raise Unreadable("a trash entry has no id")
    # An entry whose expiry cannot be read has expired: its body goes with the next purge.
    return entry, not is_number(entry.get("expiresAt"))


def read_trash(raw: Any) -> Read:
    """`sessionTrash`: [{id, expiresAt}] (margin.sessions.actions, rule 5)."""
    return read_list(raw, _trash_item)
