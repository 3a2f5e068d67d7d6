"""The manifest: what the sync folder holds, one record per saved session, and the base.

Invariants (docs/storage-model.md, "Sync"):
1. The server holds one encrypted manifest (`manifest`), the commit point of every sync: a
   session's object is written first under a fresh random name, then the manifest that names it
   replaces the old one (If-Match its ETag). Objects are never rewritten in place; one no
   manifest names is garbage, removed after the commit that dropped it.
2. A record says everything the merge compares without reading a body: the object's pieces
   (`files`) and their total length, the body's hash, when it was saved and created, its name
   (and whether the user named it), its pin, and `deletedAt` for a deletion (a tombstone, kept so
   a device that syncs later deletes it too).
3. The base (`syncBase` in chrome.storage.local) is the manifest as this device last agreed with
   it: a change is a difference from the base, on either side (margin.sync.merge).
4. Reading is strict: a manifest that is not one is `damaged`, and nothing is changed.
5. Beside the sessions, one `Settings` record names the settings' object (margin.sync.settings)
   and its digest; absent until a device first syncs its settings.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..sessions.index import IndexEntry
from .crypto import damaged

MANIFEST_NAME = "manifest"
MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class Record:
    files: tuple[str, ...]
    length: int
    body_hash: str
    saved_at: int
    created_at: int
    name: str
    named: bool
    pinned: bool
    deleted_at: int = 0

    @property
    def deleted(self) -> bool:
        return self.deleted_at > 0

    def to_json(self) -> dict[str, Any]:
        value = asdict(self)
        value["files"] = list(self.files)
        return value

    @classmethod
    def from_json(cls, value: Any) -> Record:
        if not isinstance(value, dict):
            raise damaged()
        try:  # the fields as `to_json` wrote them (asdict), `deleted_at` optional
            given = {f.name: value[f.name] for f in fields(cls) if f.name != "deleted_at"}
            record = cls(**given, deleted_at=value.get("deleted_at", 0))
            record = replace(record, files=tuple(record.files))
        except (KeyError, TypeError):
            raise damaged() from None
        if not (
            all(isinstance(f, str) and f.isalnum() for f in record.files)
            and all(
                isinstance(n, int)
                for n in (record.length, record.saved_at, record.created_at, record.deleted_at)
            )
            and isinstance(record.body_hash, str)
            and isinstance(record.name, str)
            and isinstance(record.named, bool)
            and isinstance(record.pinned, bool)
        ):
            raise damaged()
        return record

    def tombstone(self, at: int) -> Record:
        return replace(self, files=(), length=0, deleted_at=max(at, 1))

    def with_meta(self, meta: Meta) -> Record:
        return replace(self, name=meta.name, named=meta.named, pinned=meta.pinned)

    @property
    def meta(self) -> Meta:
        return Meta(self.name, self.named, self.pinned)


@dataclass(frozen=True)
class Meta:
    """What a rename or a pin changes (without the body)."""

    name: str
    named: bool
    pinned: bool


@dataclass(frozen=True)
class Local:
    """One saved session as this device holds it (its index entry; no body read)."""

    body_hash: str
    saved_at: int
    created_at: int
    meta: Meta

    @classmethod
    def of(cls, entry: IndexEntry) -> Local:
        return cls(
            entry.body_hash, entry.saved_at, entry.created_at, Meta(entry.name, entry.named, entry.pinned)
        )


Records = dict[str, Record]


@dataclass(frozen=True)
class Settings:
    """Rule 5."""

    files: tuple[str, ...]
    length: int
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"files": list(self.files), "length": self.length, "digest": self.digest}

    @classmethod
    def from_json(cls, value: Any) -> Settings | None:
        if value is None:
            return None
        try:
            settings = cls(tuple(value["files"]), value["length"], value["digest"])
        except (KeyError, TypeError):
            raise damaged() from None
        if not (
            settings.files
            and all(isinstance(f, str) and f.isalnum() for f in settings.files)
            and isinstance(settings.length, int)
            and isinstance(settings.digest, str)
        ):
            raise damaged()
        return settings


@dataclass(frozen=True)
class Manifest:
    sessions: Records
    settings: Settings | None = None

    def files(self) -> set[str]:
        named = {name for r in self.sessions.values() for name in r.files}
        return named | set(self.settings.files if self.settings else ())


def records_to_json(records: Records) -> dict[str, Any]:
    return {sid: record.to_json() for sid, record in sorted(records.items())}


def records_from_json(value: Any) -> Records:
    if not isinstance(value, dict):
        raise damaged()
    return {sid: Record.from_json(raw) for sid, raw in value.items() if isinstance(sid, str)}


def manifest_text(manifest: Manifest) -> str:
    value: dict[str, Any] = {"format": MANIFEST_FORMAT, "sessions": records_to_json(manifest.sessions)}
    if manifest.settings is not None:
        value["settings"] = manifest.settings.to_json()
    return json.dumps(value, ensure_ascii=False)


def read_manifest(text: str) -> Manifest:
    """Rule 4."""
    try:
        value = json.loads(text)
    except ValueError:
        raise damaged() from None
    if not isinstance(value, dict) or value.get("format") != MANIFEST_FORMAT:
        raise damaged()
    return Manifest(records_from_json(value.get("sessions")), Settings.from_json(value.get("settings")))
