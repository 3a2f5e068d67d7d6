"""A whole backup: every session (images included), the open conversation and the settings.

File format (`backup.export`), JSON:
    {format: "margin-backup", version: 1, exportedAt,
     sessions: [{...index entry, history}],          # history = the body's records, verbatim
     current: {history, historySessionId},
     settings: {providers, activeProviderId, uiLanguage, summarizeAboveChars}}
API keys are blanked ("") unless the user asked to include them. A session whose body is missing
is exported with `history: null` and `damaged`, so the file says what was lost.

Import rules (`backup.import`):
1. Validate first, write nothing on a bad file: not JSON, truncated JSON, not ours, or another
   version each get `MarginError("bad_backup", <what is wrong and what to do>)`.
2. Merge, never overwrite newer data: a session whose id is new is added; the same id is replaced
   only when the file's copy is newer (savedAt, else createdAt) and differs; otherwise skipped.
3. Bodies are written before the index (as in margin.sessions), one body per write. An imported
   session leaves `sessionTrash` (in the index write), so emptying the trash cannot remove the
   body just imported.
4. The file's open conversation becomes `history` only when ours is empty (records we could not
   read are parked first, as everywhere); otherwise it is kept as a session of its own (its id
   derives from its content, so importing twice adds it once).
5. Providers are added by id, never replacing a local one; options are set only if unset here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from . import clock
from . import session_index as s
from .errors import MarginError
from .history import parked_unreadable, parse_history
from .options import valid_threshold
from .ports import Platform
from .session_search import sort_entries
from .sessions import read_trash
from .storage import (
    ACTIVE_PROVIDER_ID,
    HISTORY,
    HISTORY_SESSION_ID,
    OPTION_DEFAULTS,
    PROVIDERS,
    SESSION_TRASH,
    SUMMARIZE_ABOVE_CHARS,
    UI_LANGUAGE,
    get_all,
    lock_for,
    session_body_key,
)

FORMAT = "margin-backup"
VERSION = 1


async def build_backup(platform: Platform, include_api_keys: bool) -> dict[str, Any]:
    area = platform.local
    entries = await s.read_session_index(area)
    exported = []
    for entry in sort_entries(entries):
        stored = await area.get([entry.body_key])  # one body at a time keeps memory bounded to one
        raw = s.body_history(stored.get(entry.body_key))
        item = {**entry.to_json(), "history": raw if entry.body_key in stored else None}
        if entry.body_key not in stored:
            item["damaged"] = "missing"
        elif not isinstance(raw, list):
            item["damaged"] = "unreadable"
        exported.append(item)
    current = await area.get([HISTORY, HISTORY_SESSION_ID])
    light = await get_all(area)
    providers = []
    for provider in light[PROVIDERS] if isinstance(light[PROVIDERS], list) else []:
        if isinstance(provider, dict):
            provider = dict(provider)
            if not include_api_keys and "apiKey" in provider:
                provider["apiKey"] = ""
            providers.append(provider)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exportedAt": clock.now_ms(),
        "sessions": exported,
        "current": {"history": current.get(HISTORY, []), "historySessionId": current.get(HISTORY_SESSION_ID)},
        "settings": {
            "providers": providers,
            "activeProviderId": light[ACTIVE_PROVIDER_ID],
            "uiLanguage": light[UI_LANGUAGE],
            "summarizeAboveChars": light[SUMMARIZE_ABOVE_CHARS],
        },
    }


async def handle_export(platform: Platform, payload: dict) -> dict:
    include = isinstance(payload, dict) and payload.get("includeApiKeys") is True
    async with lock_for(platform.local):
        backup = await build_backup(platform, include)
    day = datetime.fromtimestamp(backup["exportedAt"] / 1000, tz=UTC).strftime("%Y-%m-%d")
    return {
        "filename": f"margin-backup-{day}.json",
        "mimeType": "application/json",
        "text": json.dumps(backup, ensure_ascii=False),
    }


# -- import -----------------------------------------------------------------------------------------


def parse_backup(text: Any) -> dict[str, Any]:
    """The backup object, or MarginError("bad_backup", ...) saying exactly what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise MarginError("bad_backup", "The chosen file is empty. Choose a file made with “Export backup”.")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        stripped = text.rstrip()
        if stripped.startswith("{") and FORMAT in stripped[:200]:
            if not stripped.endswith("}"):
                raise MarginError(
                    "bad_backup",
                    "This backup file is incomplete: it ends too early, as if the download "
                    "or copy was cut off. Export the backup again and import the new file.",
                ) from None
            raise MarginError(
                "bad_backup",
                f"This backup file is damaged (unreadable near character {exc.pos}). "
                "Export the backup again and import the new file.",
            ) from None
        raise MarginError(
            "bad_backup",
            "This file is not a Margin backup (it is not valid JSON). Choose a file made "
            "with “Export backup”.",
        ) from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise MarginError(
            "bad_backup", "This file is not a Margin backup. Choose a file made with “Export backup”."
        )
    version = value.get("version")
    if version != VERSION:
        if isinstance(version, int) and version > VERSION:
            raise MarginError(
                "bad_backup",
                f"This backup was made by a newer Margin (format version {version}). "
                "Update Margin, then import it again.",
            )
        raise MarginError(
            "bad_backup",
            f"This backup has an unknown format version ({version!r}); Margin reads "
            f"version {VERSION}. Export it again with this version of Margin.",
        )
    if not isinstance(value.get("sessions", []), list):
        raise MarginError(
            "bad_backup", "This backup is damaged: its list of sessions is not readable. Export it again."
        )
    return value


def _stamp(item: dict[str, Any]) -> float:
    for key in ("savedAt", "createdAt"):
        if s.is_number(item.get(key)):
            return item[key]
    return 0


def _entry_from_backup(item: dict[str, Any], raw: list[Any], sid: str) -> s.IndexEntry:
    records = parse_history(raw).records
    name = item.get("name")
    created = item["createdAt"] if s.is_number(item.get("createdAt")) else 0
    return s.IndexEntry(
        id=sid,
        name=name.strip()[: s.NAME_MAX]
        if isinstance(name, str) and name.strip()
        else s.default_name(records),
        created_at=created,
        pinned=item.get("pinned") is True,
        text_digest=s.text_digest(records),
        saved_at=item["savedAt"] if s.is_number(item.get("savedAt")) else created,
        body_hash=s.body_hash(raw),
        named=item.get("named") is True,
    )


async def import_backup(platform: Platform, backup: dict[str, Any]) -> dict[str, Any]:
    area = platform.local
    entries = await s.read_session_index(area)
    by_id = {e.id: e for e in entries}
    added = updated = skipped = 0
    changed: dict[str, s.IndexEntry] = {}

    async def take(item: dict[str, Any], raw: list[Any], sid: str) -> None:
        nonlocal added, updated, skipped
        local = by_id.get(sid) or changed.get(sid)
        if local is not None:
            if _stamp(item) <= local.last_active or s.body_hash(raw) == local.body_hash:
                skipped += 1
                return
            entry = replace(
                _entry_from_backup(item, raw, sid), pinned=local.pinned or item.get("pinned") is True
            )
            updated += 1
        else:
            entry = _entry_from_backup(item, raw, sid)
            added += 1
        await area.set({session_body_key(sid): {"history": raw, "savedAt": entry.saved_at}})
        changed[sid] = entry

    for item in backup.get("sessions", []):
        sid = s.id_of_entry(item) if isinstance(item, dict) else None
        raw = item.get("history") if isinstance(item, dict) else None
        if sid is None or not isinstance(raw, list) or not parse_history(raw).records:
            skipped += 1  # missing id or no readable conversation: nothing to restore
            continue
        await take(item, raw, sid)

    extra: dict[str, Any] = {}
    given_current = backup.get("current")
    current: dict[str, Any] = given_current if isinstance(given_current, dict) else {}
    current_raw = current.get("history")
    if isinstance(current_raw, list) and parse_history(current_raw).records:
        ours = await area.get([HISTORY, HISTORY_SESSION_ID])
        their_id = current.get("historySessionId")
        our_read = parse_history(ours.get(HISTORY))
        if not our_read.records:
            extra.update(await parked_unreadable(area, our_read))
            extra[HISTORY] = current_raw
            known = isinstance(their_id, str) and (their_id in by_id or their_id in changed)
            extra[HISTORY_SESSION_ID] = their_id if known else None
        elif s.body_hash(current_raw) != s.body_hash(ours.get(HISTORY)):
            item = {"createdAt": backup.get("exportedAt"), "savedAt": backup.get("exportedAt")}
            await take(item, current_raw, "imp" + s.body_hash(current_raw)[:12])

    given_settings = backup.get("settings")
    settings: dict[str, Any] = given_settings if isinstance(given_settings, dict) else {}
    light = await get_all(area)
    local_providers = light[PROVIDERS] if isinstance(light[PROVIDERS], list) else []
    local_ids = {p.get("id") for p in local_providers if isinstance(p, dict)}
    incoming = (
        [
            p
            for p in settings.get("providers", [])
            if isinstance(p, dict) and isinstance(p.get("id"), str) and p["id"] not in local_ids
        ]
        if isinstance(settings.get("providers"), list)
        else []
    )
    if incoming:
        extra[PROVIDERS] = [*local_providers, *incoming]
    if light[ACTIVE_PROVIDER_ID] is None and isinstance(settings.get("activeProviderId"), str):
        extra[ACTIVE_PROVIDER_ID] = settings["activeProviderId"]
    if light[UI_LANGUAGE] == OPTION_DEFAULTS[UI_LANGUAGE] and isinstance(settings.get("uiLanguage"), str):
        extra[UI_LANGUAGE] = settings["uiLanguage"]
    threshold = settings.get("summarizeAboveChars")
    local_is_default = light[SUMMARIZE_ABOVE_CHARS] == OPTION_DEFAULTS[SUMMARIZE_ABOVE_CHARS]
    if local_is_default and valid_threshold(threshold):
        extra[SUMMARIZE_ABOVE_CHARS] = threshold

    if changed:
        # A session deleted moments ago (its body waits in the trash) and imported again must not
        # lose the imported body when the trash is emptied.
        trash = await read_trash(area)
        kept = [t for t in trash if t["id"] not in changed]
        if len(kept) != len(trash):
            extra[SESSION_TRASH] = kept
    if changed or extra:
        merged = [changed.pop(e.id, e) for e in entries] + list(changed.values())
        await s.write_index(area, merged, **extra)
    return {
        "added": added,
        "updated": updated,
        "skipped": skipped,
        "providersAdded": len(incoming),
        "message": _message(added, updated, skipped, len(incoming)),
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _message(added: int, updated: int, skipped: int, providers: int) -> str:
    if not added and not updated and not providers:
        return (
            f"Nothing new to import: all {_plural(skipped, 'session')} in the backup are already here "
            "or older than yours."
            if skipped
            else "The backup holds no sessions to import."
        )
    parts = [f"Added {_plural(added, 'session')}"]
    if updated:
        parts.append(f"updated {updated} with newer copies")
    if skipped:
        parts.append(f"skipped {skipped} already up to date")
    if providers:
        parts.append(f"added {_plural(providers, 'provider')}")
    return ", ".join(parts) + "."


async def handle_import(platform: Platform, payload: dict) -> dict:
    backup = parse_backup(payload.get("text") if isinstance(payload, dict) else None)
    async with lock_for(platform.local):
        return await import_backup(platform, backup)
