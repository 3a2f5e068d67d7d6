"""Importing a backup: staged while the file streams in, visible only once all of it was checked.

Rules:
1. The file is read as it streams in (margin.backup.reader) and every piece is checked
   (margin.backup.check) before the index, the only thing that makes a session visible, is
   written. A bad piece anywhere refuses the whole file and rolls back what was staged.
2. Nothing stored is ever overwritten: a session is written under a key that does not exist yet.
   A session whose id is here already is skipped when its records are the same, and otherwise
   imported as a copy beside ours, under a new id (`<id>-<8 hex of its content's hash>`, so
   importing the same file twice adds it once) and named “… (imported)”, the suffix
   (`py_import_copy_suffix`) in the user's language at the time of the import: like any name, it
   keeps the words it was made with (a copy is told by its id and its body's hash, never by its
   name). An untitled session's copy takes the catalogue's word for it too. The summary quotes the
   same suffix. A file cannot replace local work by claiming a newer `savedAt`.
3. Staging: each session body is written together with its digest (recomputed from the body), its
   index entry (`sessionEntry_<id>`, which no index names yet) and the list of every key staged so
   far (`backupImportStaging`, one atomic `set`). The commit is one `set` of the index's header
   (every id), the open
   conversation and the settings that also sets the list to null, so a session is either
   committed or listed for removal. A failure (a bad piece, Chrome's storage full, the panel
   closed) removes the staged keys; a worker stopped mid-import leaves the list, and the next
   worker start (background.js) or the next import removes them (`recover`) before anything else.
4. The file's open conversation becomes `history` only when ours is empty (what we could not read
   is parked first, as everywhere); otherwise it is kept as a session of its own, whose id derives
   from its content.
5. Providers are added by id, never replacing one of ours, and only as `normalize_provider` made
   them (margin.backup.check, rule 4); the language and the summary size only when ours are the
   defaults; `activeProviderId` is never taken from a file. A profile that had no provider uses
   the first one added (margin.settings.options, rule 3): the message names it and its host.
6. The whole import holds the storage lock (`lock_for`), so no other write interleaves with it.
7. Saved prompts (margin.settings.prompts): a profile that never saved any takes the file's list
   whole (its order, hidden built-ins, menu marks); otherwise the file's own prompts are added at
   the end, except one we have by id or by the same name and text. Ours are never changed (what
   we could not read is parked first).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ..base.errors import MarginError
from ..base.sentences import Number, Sentence, plural, say, sentence
from ..platform.ports import StorageArea
from ..sessions import index as s
from ..settings.prompts import read_prompts
from ..storage.history import parked_unreadable, parse_history
from ..storage.keys import (
    BACKUP_IMPORT_STAGING,
    HISTORY,
    HISTORY_SESSION_ID,
    MCP_SERVERS,
    OPTION_DEFAULTS,
    PROMPTS,
    PROVIDERS,
    SESSION_BODY_PREFIX,
    SESSION_DIGEST_PREFIX,
    SESSION_ENTRY_PREFIX,
    SUMMARIZE_ABOVE_CHARS,
    UI_LANGUAGE,
    get_all,
    session_body_key,
    session_digest_key,
    session_entry_key,
)
from ..storage.stored_values import park
from ..tools.servers import merged_servers
from .check import MAX_TIME_MS, Incoming, Settings, check_current, check_session, check_settings
from .reader import CHOOSE_OURS, BackupReader, Read, bad, not_a_backup

FORMAT = "margin-backup"
VERSION = 1

Progress = Callable[[dict[str, Any]], None]

# What staging writes per session (rule 3): its body, its digest, its index entry.
_STAGED_PREFIXES = (SESSION_BODY_PREFIX, SESSION_DIGEST_PREFIX, SESSION_ENTRY_PREFIX)


async def recover(area: StorageArea) -> int:
    """Remove what an import that never committed staged (rule 3); how many sessions went. The caller
    holds the storage lock."""
    stored = await area.get([BACKUP_IMPORT_STAGING])
    if BACKUP_IMPORT_STAGING not in stored:
        return 0
    marker = stored[BACKUP_IMPORT_STAGING]
    listed = marker.get("keys") if isinstance(marker, dict) else None
    keys = [k for k in listed if isinstance(k, str)] if isinstance(listed, list) else []
    referenced = {
        key
        for sid in (await s.read_session_index(area)).ids
        for key in (session_body_key(sid), session_digest_key(sid), session_entry_key(sid))
    }
    drop = [k for k in keys if k.startswith(_STAGED_PREFIXES) and k not in referenced]
    await area.remove([*drop, BACKUP_IMPORT_STAGING])
    return sum(k.startswith(SESSION_BODY_PREFIX) for k in drop)


def _copy_suffix() -> str:
    """Rule 2: " (imported)", in the user's language (the port loaded it: margin.backup.stream)."""
    return say(sentence("py_import_copy_suffix"))


class _Staging:
    """The import's plan and what it has written so far (rule 3)."""

    def __init__(self, area: StorageArea, entries: list[s.IndexEntry], present: set[str]):
        self.area = area
        self.entries = entries
        self.by_id = {e.id: e for e in entries}
        self.present = present  # every key stored when the import began, plus what it staged
        self.staged: list[str] = []
        self.new: dict[str, s.IndexEntry] = {}
        self.final_id: dict[str, str] = {}  # the file's session id -> where it is now
        self.added = self.copies = self.skipped = self.damaged = 0

    async def _hash_of(self, entry: s.IndexEntry) -> str:
        if entry.body_hash:
            return entry.body_hash
        stored = await self.area.get([entry.body_key])
        return s.body_hash(s.body_history(stored.get(entry.body_key)))

    async def _same_as_ours(self, sid: str, digest: str) -> bool:
        local = self.by_id.get(sid) or self.new.get(sid)
        return local is not None and await self._hash_of(local) == digest

    async def take(self, item: Incoming) -> None:
        digest = s.body_hash(item.raw)
        if await self._same_as_ours(item.sid, digest):
            self.skipped += 1
            self.final_id.setdefault(item.sid, item.sid)
            return
        sid, name, copy = item.sid, item.name, False
        if sid in self.by_id or sid in self.new or session_body_key(sid) in self.present:
            copy = True
            for size in (8, 16, 64):
                sid = f"{item.sid}-{digest[:size]}"
                if await self._same_as_ours(sid, digest):
                    self.skipped += 1
                    self.final_id.setdefault(item.sid, sid)
                    return
                if (
                    sid not in self.by_id
                    and sid not in self.new
                    and session_body_key(sid) not in self.present
                ):
                    break
            else:
                raise bad("py_error_backup_repeats_session", CHOOSE_OURS)
            base = name or s.default_name(item.records)
            if s.is_untitled(base, item.named):
                base = say(sentence("py_session_untitled"))
            suffix = _copy_suffix()
            name = base[: s.NAME_MAX - len(suffix)] + suffix
        entry = s.IndexEntry(
            id=sid,
            name=name or s.default_name(item.records),
            created_at=int(item.created_at),
            pinned=item.pinned,
            digest_head="",
            saved_at=int(item.saved_at),
            body_hash=digest,
            named=item.named or copy,
            used_at=s.last_used(item.records),
        )
        # The digest is recomputed from the body (a file's own digest is never trusted).
        entry, digest_item = s.with_digest(entry, s.text_digest(item.records))
        key = entry.body_key
        self.staged.extend([key, *digest_item, entry.entry_key])
        self.present.add(key)
        await self.area.set(
            {
                key: {"history": item.raw, "savedAt": entry.saved_at},
                **digest_item,
                **s.entry_item(entry),
                BACKUP_IMPORT_STAGING: {"keys": list(self.staged)},
            }
        )
        self.new[sid] = entry
        self.final_id.setdefault(item.sid, sid)
        self.copies += copy
        self.added += 1

    async def rollback(self) -> None:
        if self.staged:
            await self.area.remove([*self.staged, BACKUP_IMPORT_STAGING])


async def import_backup(area: StorageArea, read: Read, progress: Progress) -> dict[str, Any]:
    """Read, check, stage and commit one backup file (rules 1-5); the caller holds the lock."""
    await recover(area)
    reader = BackupReader(read)
    index = await s.read_session_index(area)
    staging = _Staging(area, await index.entries(), set(await area.keys()))
    try:
        members = await _stage_all(reader, staging, progress)
        return await _commit(area, staging, members)
    except BaseException:
        with contextlib.suppress(MarginError):  # a store that died keeps the list: `recover`
            await staging.rollback()
        raise


async def _stage_all(reader: BackupReader, staging: _Staging, progress: Progress) -> dict[str, Any]:
    members: dict[str, Any] = {}
    async for kind, name, value in reader.members():
        if kind == "member":
            members[name] = value
            if name in ("format", "version"):
                _check_header(members)
                reader.ours = members.get("format") == FORMAT
            elif name == "sessions":  # a `sessions` that is not a list
                raise bad(
                    "py_error_backup_damaged_choose",
                    sentence("py_error_backup_problem_sessions"),
                    CHOOSE_OURS,
                )
            continue
        if "format" not in members or "version" not in members:
            raise not_a_backup()
        if kind == "session":
            item = check_session(value, name)
            if item is None:
                staging.damaged += 1
            else:
                await staging.take(item)
            progress({"event": "progress", "sessions": name + 1, "chars": reader.chars_read})
    if members.get("format") != FORMAT:
        raise not_a_backup()
    _check_header(members)
    return members


def _check_header(members: dict[str, Any]) -> None:
    if "format" in members and members["format"] != FORMAT:
        raise not_a_backup()
    if "version" not in members:
        return
    version = members["version"]
    if version == VERSION:
        return
    if s.is_number(version) and version > VERSION:
        raise bad("py_error_backup_newer", version)
    raise bad("py_error_backup_unknown_version", repr(str(version)[:20]), VERSION)


async def _commit(area: StorageArea, staging: _Staging, members: dict[str, Any]) -> dict[str, Any]:
    exported_at = members.get("exportedAt")
    if exported_at is not None and not s.is_number(exported_at):
        raise bad(
            "py_error_backup_damaged_choose", sentence("py_error_backup_problem_date_of_file"), CHOOSE_OURS
        )
    current_raw, current_records, their_id = check_current(members.get("current"))
    settings = check_settings(members.get("settings"))

    extra: dict[str, Any] = {}
    if current_records:
        ours = await area.get([HISTORY])
        our_read = parse_history(ours.get(HISTORY))
        if not our_read.records:
            extra.update(await parked_unreadable(area, our_read))
            extra[HISTORY] = current_raw
            extra[HISTORY_SESSION_ID] = staging.final_id.get(their_id) if their_id else None
        elif s.body_hash(current_raw) != s.body_hash(ours.get(HISTORY)):
            stamp: float = (
                exported_at
                if isinstance(exported_at, (int, float)) and 0 <= exported_at <= MAX_TIME_MS
                else 0
            )
            await staging.take(
                Incoming(
                    sid="imp" + s.body_hash(current_raw)[:12],
                    raw=current_raw,
                    records=current_records,
                    name=None,
                    created_at=stamp,
                    saved_at=stamp,
                    pinned=False,
                    named=False,
                )
            )
    providers_added, first_of_none = await _settings(area, settings, extra)

    merged = [*(e.id for e in staging.entries), *staging.new]
    await s.write_index(area, merged, **extra, **{BACKUP_IMPORT_STAGING: None})
    with contextlib.suppress(MarginError):  # a null list is what a commit leaves; `recover` removes it
        await area.remove([BACKUP_IMPORT_STAGING])
    return {
        "added": staging.added,
        "copies": staging.copies,
        "skipped": staging.skipped,
        "damaged": staging.damaged,
        "providersAdded": providers_added,
        "providersRefused": settings.refused,
        "message": _message(staging, providers_added, settings.refused, first_of_none),
    }


async def _settings(
    area: StorageArea, settings: Settings, extra: dict[str, Any]
) -> tuple[int, Sentence | None]:
    """The providers added, and when we had none, the first of them, named in the message: it is
    marked `fromBackup`, so it is not used until the user chooses it (margin.settings.options rule 3)."""
    light = await get_all(area)
    local = light[PROVIDERS] if isinstance(light[PROVIDERS], list) else []
    local_ids = {p.get("id") for p in local if isinstance(p, dict)}
    incoming = [p for p in settings.providers if p["id"] not in local_ids]
    if incoming:
        extra[PROVIDERS] = [*local, *incoming]
    if light[UI_LANGUAGE] == OPTION_DEFAULTS[UI_LANGUAGE] and settings.ui_language is not None:
        extra[UI_LANGUAGE] = settings.ui_language
    local_default = light[SUMMARIZE_ABOVE_CHARS] == OPTION_DEFAULTS[SUMMARIZE_ABOVE_CHARS]
    if local_default and settings.summarize_above_chars is not None:
        extra[SUMMARIZE_ABOVE_CHARS] = settings.summarize_above_chars
    if settings.prompts is not None:
        ours = (await area.get([PROMPTS])).get(PROMPTS)
        merged = merged_prompts(ours, settings.prompts)
        if merged is not None:
            extra[PROMPTS] = merged
            extra.update(park(PROMPTS, read_prompts(ours)))
    if settings.mcp_servers:  # margin.tools.servers rule 6
        servers = merged_servers((await area.get([MCP_SERVERS])).get(MCP_SERVERS), settings.mcp_servers)
        if servers is not None:
            extra[MCP_SERVERS] = servers
    first = None
    if incoming and not local:
        host = urlsplit(incoming[0]["baseUrl"]).hostname
        first = sentence("py_notice_import_provider", incoming[0]["name"], host)
    return len(incoming), first


def merged_prompts(ours: Any, theirs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Rule 7: the prompts after the import, or None when nothing changes."""
    if ours is None:
        return theirs
    kept = read_prompts(ours).value
    known_ids = {p["id"] for p in kept}
    known_words = {(p.get("name"), p.get("text")) for p in kept if not p.get("builtin")}
    incoming = [
        p
        for p in theirs
        if not p.get("builtin") and p["id"] not in known_ids and (p["name"], p["text"]) not in known_words
    ]
    return [*kept, *incoming] if incoming else None


def _message(staging: _Staging, providers: int, refused: list[str], first_of_none: Sentence | None) -> str:
    """What the import did, in the user's language (the port loaded it: margin.backup.stream)."""
    added, copies, skipped, damaged = staging.added, staging.copies, staging.skipped, staging.damaged
    if not added and not providers:
        said: list[Sentence]
        if skipped:
            said = [plural("py_notice_import_nothing_new", skipped)]
        else:
            said = [sentence("py_notice_import_empty")]
    else:
        parts: list[Sentence] = [
            plural("py_notice_import_added", added) if added else sentence("py_notice_import_added_none")
        ]
        if copies:
            parts.append(plural("py_notice_import_copies", copies, _copy_suffix().strip()))
        if skipped:
            parts.append(sentence("py_notice_import_skipped", Number(skipped)))
        if providers:
            parts.append(plural("py_notice_import_providers", providers))
        listed = parts[0]
        for part in parts[1:]:
            listed = sentence("py_notice_import_list", listed, part)
        said = [sentence("py_notice_import_sentence", listed)]
    if damaged:
        said.append(plural("py_notice_import_damaged", damaged))
    if refused:
        said.append(plural("py_notice_import_left_out", len(refused), refused[0]))
    if first_of_none:
        said.append(sentence("py_notice_import_use_first", first_of_none))
    return "".join(say(s) for s in said)
