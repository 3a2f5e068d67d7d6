"""One sync run: read the manifest, merge, move what changed, commit (docs/storage-model.md, "Sync").

Order of a run, and why a crash at any write leaves both sides readable:
1. `local.prepare`: the open conversation is saved into its session; every entry is read.
2. The manifest is read (GET: with nothing changed anywhere, that is the run's only request).
3. `merge.plan` decides, per session, what moves.
4. Uploads: each session's object is sealed (margin.sync.crypto) and PUT in pieces of at most
   `piece_chars` characters (under the bridge's PORT_CHUNK_CHARS) under fresh random names with
   `If-None-Match: *`. Nothing names them yet: a crash here leaves garbage, never a broken state.
5. Downloads, renames, pins and deletes are written here, one session at a time
   (margin.sync.local): each leaves the index readable, and is the same write when repeated.
6. The new manifest is PUT with `If-Match` the ETag read in 2: the commit. A 412 (another device
   committed first) drops this attempt's uploads and starts again from 2, at most ATTEMPTS times.
   A long run commits in batches (`_Batches`: every BATCH_ITEMS sessions or BATCH_SECONDS), the
   base with each, so a first sync that outlives its worker is continued, not begun again; a
   conflict copy of the server's version is moved before its session, so no commit leaves the
   server's version unnamed.
7. The base is written, then the pieces the old manifest named and the new one does not are
   deleted. A crash before 7 is completed by the next run, which finds both sides already equal.
8. Once a day (`SWEEP_EVERY_MS`) a run lists the folder (PROPFIND) and deletes the pieces no
   manifest names that are older than SWEEP_AGE_MS: what a crash between 4 and 6 left behind.
   The age keeps another device's uploads that are not committed yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

from ..base import clock
from ..base.errors import MarginError
from ..base.sentences import say, sentence
from ..platform.ports import PORT_CHUNK_CHARS, Platform
from ..storage.keys import SYNC_BASE, SYNC_CONFIG, SYNC_PROGRESS, SYNC_STATUS
from . import local, webdav
from . import settings as sync_settings
from .crypto import SyncKey, damaged, seal, unseal
from .manifest import (
    MANIFEST_NAME,
    Manifest,
    Record,
    Records,
    Settings,
    manifest_text,
    read_manifest,
    records_from_json,
    records_to_json,
)
from .merge import Plan, Pull, Push, plan

ATTEMPTS = 3
# Each piece of an object is one request body: a quarter of the bridge's limit per message.
PIECE_CHARS = PORT_CHUNK_CHARS // 4
PROGRESS_EVERY = 10
# Step 6's batches (`_Batches`): a commit every so many sessions moved, or every so many seconds.
BATCH_ITEMS = 200
BATCH_SECONDS = 60.0
# How often the periodic alarm syncs (extension/worker/sync.js).
PERIOD_MINUTES = 30
SWEEP_EVERY_MS = 24 * 3600 * 1000
SWEEP_AGE_MS = 2 * 24 * 3600 * 1000
PIECE_NAME = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class Config:
    store: webdav.Store
    key: SyncKey


@dataclass
class Outcome:
    uploaded: int = 0
    downloaded: int = 0
    requests: int = 0
    bytes_sent: int = 0


def sync_off() -> MarginError:
    return MarginError.said("sync_off", "py_error_sync_off")


def busy() -> MarginError:
    return MarginError.said("sync_busy", "py_error_sync_busy")


async def read_config(platform: Platform) -> Config:
    raw = (await platform.local.get([SYNC_CONFIG])).get(SYNC_CONFIG)
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(k), str) for k in ("url", "user", "password", "keyId", "key")
    ):
        raise sync_off()
    return Config(webdav.Store(raw["url"], raw["user"], raw["password"]), SyncKey(raw["keyId"], raw["key"]))


class _Remote:
    """The store as one run sees it, counting requests and bytes sent (for the bench)."""

    def __init__(self, platform: Platform, config: Config, outcome: Outcome):
        self.platform, self.store, self.key, self.outcome = platform, config.store, config.key, outcome

    async def send(self, request: Any, ok: tuple[int, ...]) -> webdav.Answer:
        self.outcome.requests += 1
        self.outcome.bytes_sent += len(request.body or "")
        return await webdav.exchange(self.platform, request, ok=ok)

    async def manifest(self) -> tuple[Manifest, str | None]:
        answer = await self.send(webdav.get(self.store, MANIFEST_NAME), (200, 404))
        if answer.status == 404:
            return Manifest({}), None
        if answer.etag is None or "html" in answer.content_type.lower():
            raise webdav.not_webdav()  # a login page in front of the folder, or no If-Match possible
        return read_manifest(await unseal(self.platform, self.key, MANIFEST_NAME, answer.text)), answer.etag

    async def put_object(self, text: str, piece_chars: int) -> tuple[tuple[str, ...], int]:
        """Seal `text` under a fresh name (its first piece's) and PUT it in pieces."""
        first = secrets.token_hex(16)
        sealed = await seal(self.platform, self.key, first, text)
        count = max(1, -(-len(sealed) // piece_chars))
        names = [first, *(secrets.token_hex(16) for _ in range(count - 1))]
        for i, name in enumerate(names):
            piece = sealed[i * piece_chars : (i + 1) * piece_chars]
            await self.send(webdav.put(self.store, name, piece, etag=None), (200, 201, 204))
        return tuple(names), len(sealed)

    async def get_object(self, record: Record | Settings) -> Any:
        pieces = []
        for name in record.files:
            answer = await self.send(webdav.get(self.store, name), (200, 404))
            if answer.status == 404:
                raise webdav.Precondition()  # collected after another device's commit: read again
            if "html" in answer.content_type.lower():
                raise webdav.not_webdav()
            pieces.append(answer.text)
        sealed = "".join(pieces)
        if not record.files or len(sealed) != record.length:
            raise damaged()
        try:
            return json.loads(await unseal(self.platform, self.key, record.files[0], sealed))
        except ValueError:
            raise damaged() from None

    async def delete(self, names: list[str]) -> None:
        for name in names:
            # Garbage left behind is harmless (step 4 of the docstring): the next sweep takes it.
            with contextlib.suppress(MarginError, webdav.Precondition):
                await self.send(webdav.delete(self.store, name), (200, 204, 404))


def copy_name(name: str) -> str:
    return say(sentence("py_sync_conflict_copy", name))


async def run(platform: Platform, *, piece_chars: int | None = None) -> Outcome:
    """One sync run (the docstring's steps); raises the sentence of what went wrong."""
    piece_chars = piece_chars or PIECE_CHARS
    config = await read_config(platform)
    outcome = Outcome()
    remote = _Remote(platform, config, outcome)
    attempts = 0
    while attempts < ATTEMPTS:
        try:
            await _attempt(platform, remote, piece_chars)
            return outcome
        except webdav.Precondition:
            attempts += 1
        except _Again:
            continue
    raise busy()


@dataclass(frozen=True)
class _Base:
    records: Records
    settings: str | None  # the settings' digest (margin.sync.settings)
    swept_at: int
    items: dict[str, dict[str, str]]  # each prompt's and server's hash (margin.sync.settings rule 4)


async def _read_base(platform: Platform) -> _Base:
    """The base (margin.sync.manifest rule 3), and when the folder was last swept (step 8)."""
    raw = (await platform.local.get([SYNC_BASE])).get(SYNC_BASE)
    if not isinstance(raw, dict):
        return _Base({}, None, 0, {})
    swept, settings, items = raw.get("sweptAt"), raw.get("settings"), raw.get("settingsItems")
    try:
        records = records_from_json(raw.get("records"))
    except MarginError:
        records = {}  # a base that cannot be read: every difference is a change on both sides
    return _Base(
        records,
        settings if isinstance(settings, str) else None,
        swept if isinstance(swept, int) else 0,
        items if isinstance(items, dict) and all(isinstance(v, dict) for v in items.values()) else {},
    )


class _Again(Exception):
    """A batch was committed and the server gave no ETag for it: read the manifest again and go
    on (not a failed attempt: every such restart has moved at least one session)."""


class _Batches:
    """Step 6 in batches: every BATCH_ITEMS sessions moved, or BATCH_SECONDS, the manifest is
    committed with what is done so far, and the base with it, so a first sync that outlives its
    worker (an event lasts minutes, not hours) is continued by the next run, not begun again."""

    def __init__(
        self, platform: Platform, remote: _Remote, manifest: Manifest, etag: str | None, base: _Base
    ):
        self.platform, self.remote, self.etag, self.base = platform, remote, etag, base
        self.start = self.current = manifest
        self.base_records = dict(base.records)
        self.settings_items = base.items
        self.uploaded: list[str] = []
        self.skipped: set[str] = set()
        self.done: set[str] = set()
        self.since = time.monotonic()
        self.moved = 0

    def sessions(self, decided: Plan, sids: set[str]) -> Records:
        sessions = dict(self.current.sessions)
        for sid in sids:
            if sid not in self.skipped:
                sessions[sid] = decided.records[sid]
            elif sid in self.start.sessions:
                sessions[sid] = self.start.sessions[sid]
            else:
                sessions.pop(sid, None)
        return sessions

    async def commit(self, manifest: Manifest, sids: set[str]) -> str | None:
        """Write `manifest` (If-Match), then the base for `sids`; the new ETag (None: not given)."""
        if manifest != self.current:
            text = await seal(self.platform, self.remote.key, MANIFEST_NAME, manifest_text(manifest))
            answer = await self.remote.send(
                webdav.put(self.remote.store, MANIFEST_NAME, text, etag=self.etag), (200, 201, 204)
            )
            self.etag, self.current = answer.etag, manifest
        self.uploaded.clear()
        for sid in sids - self.skipped:  # a skipped session keeps its old base (margin.sync.local rule 2)
            if sid in manifest.sessions:
                self.base_records[sid] = manifest.sessions[sid]
            else:
                self.base_records.pop(sid, None)
        return self.etag

    async def step(self, decided: Plan, sids: tuple[str, ...], remaining: int) -> None:
        self.done.update(sids)
        self.moved += 1
        if remaining and (self.moved >= BATCH_ITEMS or time.monotonic() - self.since >= BATCH_SECONDS):
            manifest = Manifest(self.sessions(decided, self.done), self.current.settings)
            etag = await self.commit(manifest, self.done)
            await self.write_base(self.base.settings, self.base.swept_at)
            self.moved, self.since = 0, time.monotonic()
            if etag is None:
                raise _Again()

    async def write_base(self, settings: str | None, swept_at: int) -> None:
        records = records_to_json(self.base_records)
        await self.platform.local.set(
            {
                SYNC_BASE: {
                    "records": records,
                    "settings": settings,
                    "settingsItems": self.settings_items,
                    "sweptAt": swept_at,
                }
            }
        )


async def _attempt(platform: Platform, remote: _Remote, piece_chars: int) -> None:
    area = platform.local
    view = await local.prepare(area)
    manifest, etag = await remote.manifest()
    base = await _read_base(platform)
    decided = plan(
        base.records,
        view.sessions,
        manifest.sessions,
        pending=view.pending,
        now=clock.now_ms(),
        copy_name=copy_name,
    )
    batches = _Batches(platform, remote, manifest, etag, base)
    # A conflict copy of the server's version is named before its session's record moves on.
    moves: list[Push | Pull] = [
        *(p for p in decided.pulls if p.copy),
        *decided.pushes,
        *(p for p in decided.pulls if not p.copy),
    ]
    progress = _Progress(platform, len(moves))
    try:
        for index, move in enumerate(moves):
            if isinstance(move, Push):
                files = await _push(platform, remote, move, decided, piece_chars)
                if files is None:
                    batches.skipped.add(move.sid)
                else:
                    batches.uploaded.extend(files)
                    remote.outcome.uploaded += 1
            else:
                if not await _pull(platform, remote, move, decided):
                    batches.skipped.add(move.sid)
                remote.outcome.downloaded += 1
            await progress.step()
            await batches.step(decided, (move.sid,), len(moves) - index - 1)
        for sid, meta in decided.metas.items():
            if not await local.write_meta(area, sid, meta, decided.seen.get(sid)):
                batches.skipped.add(sid)
        for sid in decided.deletes:
            if not await local.delete_session(area, sid, decided.seen.get(sid)):
                batches.skipped.add(sid)
        settings, settings_base, batches.settings_items = await _settings(
            platform, remote, manifest.settings, base, piece_chars
        )
        if settings is not None and settings != manifest.settings:
            batches.uploaded.extend(settings.files)
        every = set(decided.records) | batches.skipped
        final = Manifest(batches.sessions(decided, every), settings)
        await batches.commit(final, every)
    except webdav.Precondition:
        await remote.delete(batches.uploaded)  # only what no commit named
        raise
    finally:
        await progress.done()
    now = clock.now_ms()
    sweep = now - base.swept_at >= SWEEP_EVERY_MS
    await batches.write_base(settings_base, now if sweep else base.swept_at)
    in_use = final.files()
    await remote.delete(sorted(manifest.files() - in_use))
    if sweep:
        await _sweep(remote, in_use, now)


async def _settings(
    platform: Platform, remote: _Remote, there: Settings | None, base: _Base, piece_chars: int
) -> tuple[Settings | None, str | None, dict[str, dict[str, str]]]:
    """The settings (margin.sync.settings): merged and moved if need be. Returns the record to
    commit and the base to keep (the old one when what arrived was not applied)."""
    here = await sync_settings.read_synced(platform)
    digest = sync_settings.digest(here)
    action = sync_settings.decide(base.settings, digest, there.digest if there else None)
    if there is not None and action and there.digest != base.settings:
        value = await remote.get_object(there)
        merged = sync_settings.merge(
            base.items, here, value.get("settings") if isinstance(value, dict) else None, action
        )
        if merged is None:
            return there, base.settings, base.items
        if sync_settings.digest(merged) != digest:
            if not await sync_settings.apply(platform, merged, digest):
                return there, base.settings, base.items
            # This machine's own providers were kept beside the ones that arrived (a union): read again.
            here = await sync_settings.read_synced(platform)
            digest = sync_settings.digest(here)
        action = "" if digest == there.digest else "push"
    items = sync_settings.item_hashes(here)
    if action == "push":
        files, length = await remote.put_object(json.dumps({"format": 1, "settings": here}), piece_chars)
        return Settings(files, length, digest), digest, items
    return there, there.digest if there else base.settings, items


async def _sweep(remote: _Remote, in_use: set[str], now: int) -> None:
    """Step 8. A folder that cannot be listed is left as it is: garbage is harmless."""
    try:
        answer = await remote.send(webdav.propfind(remote.store, remote.store.root, 1), (207,))
        listed = webdav.parse_multistatus(answer.text)
    except MarginError:
        return
    await remote.delete(
        [
            item.name
            for item in listed
            if not item.collection
            and PIECE_NAME.fullmatch(item.name)
            and item.name not in in_use
            and 0 < item.modified_ms < now - SWEEP_AGE_MS
        ]
    )


async def _push(
    platform: Platform, remote: _Remote, push: Push, decided: Plan, piece_chars: int
) -> tuple[str, ...] | None:
    read = await local.read_object(platform.local, push.source, push.sid, push.meta)
    if read is None:
        return None
    value, entry = read
    files, length = await remote.put_object(json.dumps(value, ensure_ascii=False), piece_chars)
    decided.records[push.sid] = replace(
        decided.records[push.sid],
        files=files,
        length=length,
        body_hash=entry.body_hash,
        saved_at=entry.saved_at,
    )
    if push.source != push.sid:  # a conflict copy of this device's version: kept here too
        copy, body, digest = local.entry_of_object(value, push.sid, push.meta)
        await local.write_session(platform.local, copy, body, digest, None)
    return files


async def _pull(platform: Platform, remote: _Remote, pull: Pull, decided: Plan) -> bool:
    value = await remote.get_object(pull.record)
    entry, body, digest = local.entry_of_object(value, pull.sid, pull.record.meta)
    return await local.write_session(platform.local, entry, body, digest, decided.seen.get(pull.sid))


class _Progress:
    """A running sync's progress in chrome.storage.session (the options page shows it)."""

    def __init__(self, platform: Platform, total: int):
        self.platform, self.total, self.count = platform, total, 0

    async def step(self) -> None:
        self.count += 1
        if self.total >= 2 * PROGRESS_EVERY and self.count % PROGRESS_EVERY == 0:
            await self.platform.session.set({SYNC_PROGRESS: {"done": self.count, "total": self.total}})

    async def done(self) -> None:
        if self.total >= 2 * PROGRESS_EVERY:
            await self.platform.session.remove([SYNC_PROGRESS])


# -- the run as a request, and its status --------------------------------------------------------

_running: dict[int, asyncio.Lock] = {}


def _run_lock() -> asyncio.Lock:
    key = id(asyncio.get_running_loop())
    return _running.setdefault(key, asyncio.Lock())


async def handle_now(platform: Platform, payload: dict) -> dict:
    """`sync.now` (also the alarm's and the save's): one run at a time; its outcome is stored in
    `syncStatus` ({at} or {at, error}) and returned."""
    async with _run_lock():
        try:
            outcome = await run(platform)
        except MarginError as error:
            if error.code != "sync_off":
                await platform.local.set({SYNC_STATUS: {"at": clock.now_ms(), "error": error.to_json()}})
            raise
        status = {"at": clock.now_ms(), "uploaded": outcome.uploaded, "downloaded": outcome.downloaded}
        await platform.local.set({SYNC_STATUS: status})
        return status
