"""The bound on parked unseen pixels: `images.bound`, run once when the panel opens.

Rule 1: `bound_unseen_image_bytes` (when the panel opens) keeps parked UNSEEN pixels under 8 MB
  by downscaling the OLDEST unseen images to thumbnails, never by replacing them with labels; the
  newest record with images is never touched; a downscale is recorded in `meta.downscaledFrom`,
  and running it again changes nothing more.
Rule 2: an image Pillow cannot read is kept as it is (never destroyed), and history is written
  once, only when something changed, against what is stored at that moment: the bound reads
  `history`, shrinks and writes it in one hold of `storage.lock_for(local)`, so no other writer
  is between its read and its write (every writer of `history` holds that lock).
Rule 3: nothing is degraded: the exact data URL of each image it shrinks is stored under its own
  key (margin.images.originals: `imageOriginal_<digest>`, read by address) before `history` is
  written with the thumbnail and `meta.originalKey`: usually it was stored ahead, after the turn
  that parked the image (rule 7), and the bound checks it is there whole by its size
  (getBytesInUse, no read); else the bound writes it. A part that already refers to an original
  keeps that reference. `handle_bound` also removes the originals nothing refers to any more (and
  the thumbnails made ahead whose image is no longer inline), in the same hold of the lock,
  without reading `history` again (it was just read): before its write, against both the value
  read and the one about to be written, so nothing either needs goes (the thumbnails this write
  makes unneeded go at the next bound). Chrome goes on with a big write after its promise
  resolves: a removal right after the 6 MB `history` waited 124-154 ms (README.md "Measured").
  When the write parks a record it cannot read, the collector runs after it instead, and reads
  the parked copy's references.
Rule 4: the bound never delays a turn: the turn goes first, the bound after. It starts only when
  no turn runs (`margin.storage.keys.turn_running()`), and while it holds the lock it yields to the event loop
  between images and polls every `POLL_SECONDS` during its reads and Pillow's load; when a turn
  has started or anything else waits for the lock, it lets go at once (a read or a load in
  flight is left to finish on its own), waits for the turn to end, and starts again from a
  fresh read. Only a write in flight is not interrupted (it cannot be called back): each original
  is a write of its own, with a look for a turn before each, and `history` is the last write.
  Work done before a restart is kept for the call (thumbnails by the sha256 of their source, the
  originals already stored), so a restart costs a read, not the pixels or the writes again; an
  original stored by a try that was let go is harmless (rule 3 of margin.images.originals: the
  collector removes it if nothing refers to it, and only the bound collects, rule 5).
Rule 5: one bound at a time per process: a second call (two panels opening) waits for the first
  and returns its result, so two bounds never yield the lock to each other forever.
Rule 6: when it must write originals itself, the pixels and the storage work at the same time:
  an image's original is written as soon as its thumbnail is planned, and while chrome.storage
  writes it (in the browser's process) Pillow makes the next thumbnail. One original write is in
  flight at a time, and every one has ended before `history` is written (rule 3). A turn that
  comes while the bound waits for an original's write does not wait for it: the bound lets go,
  the write ends on its own, and the next try waits for it (never writing it twice).
Rule 7: the bound's work is done ahead where it can be: after a turn that leaves images unseen,
  `store_ahead` (margin.turn.chat rule 13; margin.images.originals rule 7) picks the images this bound
  will shrink (as it does: oldest first, the newest record with images left out, until what
  stays is under the limit; nothing while the total is under it), and stores each one's original
  and, when Pillow is loaded, the 512-pixel thumbnail this bound would make
  (`imageThumbnail_<digest>`). The bound then takes that thumbnail (checked by `read_thumbnail`)
  and loads Pillow only for a thumbnail it must make itself, so with everything stored ahead it
  reads `history`, hashes the images it shrinks, checks sizes, and writes the smaller `history`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..base.errors import MarginError
from ..platform.ports import Platform
from ..storage.history import HistoryRead, Record, read_history, write_history
from ..storage.keys import lock_for, turn_running
from . import originals as image_originals
from .data_urls import build_data_url, parse_data_url
from .parts import has_images, image_url_of, is_image_part, is_seen, unseen_image_urls

# Parked unseen pixels, counted as data-URL characters (what chrome.storage holds).
UNSEEN_LIMIT_BYTES = 8 * 1024 * 1024
THUMBNAIL_SIDES = (512, 256)
# How often the bound looks for a turn while it waits: on a read, on Pillow's load, for a turn's end.
POLL_SECONDS = 0.01
TURN_POLL_SECONDS = 0.05

T = TypeVar("T")
Position = tuple[int, int]  # (record, part)


class _Preempted(Exception):
    """A turn started, or another request waits for the lock: the bound lets go (rule 4)."""


@dataclass
class _Work:
    """What one call keeps across restarts (rule 4); dropped when the call returns."""

    pillow: asyncio.Future[None] | None = None
    # (sha256 of a data URL, side) -> the thumbnail's data URL and `downscaledFrom`, or None when
    # the image is unreadable or not bigger than the side.
    thumbnails: dict[tuple[str, int], tuple[str, dict[str, int]] | None] = field(default_factory=dict)
    bytes_before: int | None = None
    stored_originals: set[str] = field(default_factory=set)  # keys this call has written or checked
    digests: dict[str, str] = field(default_factory=dict)  # data URL -> its sha256 (3 MB: ~20 ms)
    writing: asyncio.Future[None] | None = None  # the one original write in flight (rule 6)


def _unseen_bytes(records: list[Record]) -> int:
    return sum(len(url) for url in unseen_image_urls(records))


def _protected_index(records: list[Record]) -> int | None:
    for index in range(len(records) - 1, -1, -1):
        if has_images(records[index]):
            return index
    return None


def _candidates(records: list[Record]) -> list[Position]:
    """(record, part) positions the bound may shrink: unseen, not the protected record, oldest first."""
    protected = _protected_index(records)
    return [
        (ri, pi)
        for ri, r in enumerate(records)
        if ri != protected and not is_seen(r) and has_images(r)
        for pi, p in enumerate(r.parts)  # has_images: the content is this list of parts
        if is_image_part(p)
    ]


# -- yielding to turns (rule 4) ---------------------------------------------------------------------


def _someone_waits(lock: asyncio.Lock) -> bool:
    # asyncio.Lock has no public way to ask whether anyone waits; its waiters are the deque
    # `_waiters` (None before the first wait). tests/unit/test_image_bound.py pins this down.
    waiters = getattr(lock, "_waiters", None) or ()
    return any(not w.done() for w in waiters)


def _preempted(lock: asyncio.Lock) -> bool:
    return turn_running() or _someone_waits(lock)


async def _turns_first() -> None:
    while turn_running():
        await asyncio.sleep(TURN_POLL_SECONDS)


async def _yield(lock: asyncio.Lock) -> None:
    """Let the event loop run (a message that arrived starts its task), then let go if needed."""
    await asyncio.sleep(0)
    if _preempted(lock):
        raise _Preempted()


def _forget(task: asyncio.Future[Any]) -> None:
    """An abandoned read's outcome is not wanted; retrieve it so nothing logs it as lost."""
    if not task.cancelled():
        task.exception()


async def _unless_preempted(work: Awaitable[T], lock: asyncio.Lock) -> T:
    """Await `work`; if a turn comes first, raise _Preempted and leave `work` to finish alone."""
    task = asyncio.ensure_future(work)
    while not task.done():
        if _preempted(lock):
            task.add_done_callback(_forget)
            raise _Preempted()
        await asyncio.wait({task}, timeout=POLL_SECONDS)
    return task.result()


# -- the bound ----------------------------------------------------------------------------------


_running: asyncio.Future[dict[str, int]] | None = None


async def bound_unseen_image_bytes(
    platform: Platform, *, limit_bytes: int = UNSEEN_LIMIT_BYTES, collect_garbage: bool = False
) -> dict[str, int]:
    """Keep parked UNSEEN pixels under `limit_bytes` (data-URL characters) by downscaling the oldest.

    Returns `{changed, bytesBefore, bytesAfter}`; `changed` counts image parts downscaled.
    Writes history once, only when something changed. Raises StorageError (`storage_full` or
    `storage_failed`, as chrome.storage refused) when the write fails; what was stored stays as it
    was. `collect_garbage`: then remove the originals nothing refers to (rule 3)."""
    global _running
    if _running is not None and not _running.done():
        return await asyncio.shield(_running)  # rule 5
    task = asyncio.ensure_future(_bound(platform, limit_bytes, collect_garbage))
    _running = task
    try:
        return await task
    finally:
        if _running is task:
            _running = None


async def _bound(platform: Platform, limit_bytes: int, collect_garbage: bool) -> dict[str, int]:
    lock = lock_for(platform.local)
    work = _Work()
    while True:
        await _turns_first()
        async with lock:
            with contextlib.suppress(_Preempted):
                return await _attempt(platform, lock, limit_bytes, work, collect_garbage)
        await asyncio.sleep(0)  # released: the waiter takes the lock before this call asks again


async def _attempt(
    platform: Platform, lock: asyncio.Lock, limit_bytes: int, work: _Work, collect_garbage: bool
) -> dict[str, int]:
    """One try, under the lock: read, shrink, write. Raises _Preempted until history's write starts."""
    read = await _unless_preempted(read_history(platform.local), lock)
    # The key names, listed while the first image is hashed: what was stored ahead is looked at
    # only when its key is there (rule 7), so with nothing stored ahead no storage call waits
    # behind an original's write (rule 6). The collector uses the same listing only when this
    # try parks nothing: under the lock only history's writers add a key that refers to an
    # original, by parking unreadable records (margin.images.originals, rule 4).
    listing = asyncio.ensure_future(platform.local.keys())
    try:
        return await _attempt_read(
            platform,
            lock,
            limit_bytes,
            work,
            collect_garbage,
            read,
            listing,
            listing if read.unreadable_raw is None else None,
        )
    finally:
        listing.add_done_callback(_forget)  # let go of with the try: its outcome is not wanted


async def _attempt_read(
    platform: Platform,
    lock: asyncio.Lock,
    limit_bytes: int,
    work: _Work,
    collect_garbage: bool,
    read: HistoryRead,
    listing: asyncio.Future[list[str]],
    collect_listing: asyncio.Future[list[str]] | None,
) -> dict[str, int]:
    records = read.records
    now = _unseen_bytes(records)
    if work.bytes_before is None:
        work.bytes_before = now
    plan: dict[Position, dict[str, Any]] = {}
    candidates = _candidates(records)
    if now > limit_bytes and candidates:
        plan = await _plan(platform, records, candidates, now, limit_bytes, work, lock, listing)
    await _originals_written(work, lock)  # rule 3: every original stored before `history` changes
    if not plan:
        if collect_garbage:
            await _collect(platform, records, work, collect_listing)
        return {"changed": 0, "bytesBefore": work.bytes_before, "bytesAfter": now}
    updated = _applied(records, plan)
    # Rule 3: before the write when it parks nothing, against both values of `history`; when it
    # parks a record it cannot read, after it, with that parked copy's references.
    collect_before = collect_garbage and read.unreadable_raw is None
    if collect_before:
        await _collect(platform, records + updated, work, collect_listing)
    if _preempted(lock):  # the last moment a turn can still go first
        raise _Preempted()
    await write_history(platform.local, updated, read)  # a refusal keeps the old value
    if collect_garbage and not collect_before:
        await _collect(platform, updated, work, None)
    return {"changed": len(plan), "bytesBefore": work.bytes_before, "bytesAfter": _unseen_bytes(updated)}


async def _plan(
    platform: Platform,
    records: list[Record],
    candidates: list[Position],
    total: int,
    limit_bytes: int,
    work: _Work,
    lock: asyncio.Lock,
    listing: asyncio.Future[list[str]],
) -> dict[Position, dict[str, Any]]:
    """position -> its new part: the oldest candidates shrunk until the total is under the limit.
    Each one's original starts its write as soon as the part is planned (rule 6); its sha256 is
    taken once (3 MB cost ~20 ms), on the first visit, which is of the original."""
    current = {(ri, pi): records[ri].parts[pi] for ri, pi in candidates}
    plan: dict[Position, dict[str, Any]] = {}
    digests: dict[Position, str] = {}
    present: set[str] | None = None  # the key names listed at this try's start
    for side in THUMBNAIL_SIDES:
        for position in candidates:
            if total <= limit_bytes:
                return plan
            part = current[position]
            url = image_url_of(part)
            if url not in work.digests:  # the browser's native SHA-256: a few ms, not ~15
                work.digests[url] = await _unless_preempted(platform.sha256_hex(url), lock)
            digest = work.digests[url]
            digests.setdefault(position, digest)  # the first visit is of the original
            if present is None:
                present = set(await _unless_preempted(listing, lock))
            if (digest, side) not in work.thumbnails:
                await _yield(lock)
                ahead = None
                # The original: its thumbnail may be made ahead (rule 7).
                if position not in plan and image_originals.thumbnail_key(digest) in present:
                    ahead = await _unless_preempted(
                        image_originals.read_thumbnail(platform.local, digest, url, side), lock
                    )
                if ahead is None:
                    await _pillow(platform, work, lock)
                work.thumbnails[digest, side] = ahead or _thumbnail(url, side)
            made = work.thumbnails[digest, side]
            if made is None:
                continue
            new_url, downscaled_from = made
            if len(new_url) >= len(url):
                continue
            meta = dict(part["meta"]) if isinstance(part.get("meta"), dict) else {}
            meta.setdefault("downscaledFrom", downscaled_from)
            meta.setdefault("originalKey", image_originals.key_of_digest(digests[position]))
            image_url = dict(part["image_url"]) if isinstance(part.get("image_url"), dict) else {}
            if position not in plan and image_originals.reference_of(part) is None:
                await _store_original(platform, url, digests[position], work, lock, present)
            plan[position] = current[position] = {
                **part,
                "image_url": {**image_url, "url": new_url},
                "meta": meta,
            }
            total -= len(url) - len(new_url)
    return plan


async def _store_original(
    platform: Platform, url: str, digest: str, work: _Work, lock: asyncio.Lock, present: set[str]
) -> None:
    """Make sure one original is stored before `history` drops its bytes (rule 3): one stored
    ahead (rule 7; its key in `present`, the names listed at the try's start) is checked by its
    size; else its write starts once the one before is stored (rules 4 and 6). A turn that
    arrived meanwhile goes first."""
    await _originals_written(work, lock)
    key, value = image_originals.original_item(url, digest)
    if key in work.stored_originals:
        return
    await _yield(lock)
    if key in present:
        stored = image_originals.is_stored(platform.local, url, digest)
        if await _unless_preempted(stored, lock):
            work.stored_originals.add(key)
            return
    await _yield(lock)

    async def write() -> None:
        await platform.local.set({key: value})
        work.stored_originals.add(key)

    work.writing = asyncio.ensure_future(write())


async def _originals_written(work: _Work, lock: asyncio.Lock) -> None:
    """Wait for the original write in flight, if any; a refusal is raised here. A turn that comes
    meanwhile goes first: the write goes on alone, and the next try waits for it (rule 6)."""
    if work.writing is not None:
        await _unless_preempted(work.writing, lock)
        work.writing = None


async def _pillow(platform: Platform, work: _Work, lock: asyncio.Lock) -> None:
    """Pillow, loaded once per call and only when a thumbnail must be made here (rule 7)."""
    if work.pillow is None:
        work.pillow = asyncio.ensure_future(platform.load_package("pillow"))
    await _unless_preempted(work.pillow, lock)


def _thumbnail(url: str, side: int) -> tuple[str, dict[str, int]] | None:
    from . import codec as image_codec  # loaded: the caller awaited Pillow (margin.images.parts, rule 3)

    try:
        data = parse_data_url(url).decode()
        thumb = image_codec.downscale(data, side)
    except (MarginError, image_codec.CodecError):
        return None  # unreadable: keep it as it is, never destroy
    if thumb is None:
        return None
    return build_data_url(thumb.mime, thumb.data), {
        "width": thumb.width,
        "height": thumb.height,
        "bytes": len(data),
    }


def _applied(records: list[Record], plan: dict[Position, dict[str, Any]]) -> list[Record]:
    touched = {ri for ri, _ in plan}
    return [
        Record(r.role, [plan.get((ri, pi), p) for pi, p in enumerate(r.parts)], dict(r.fields))
        if ri in touched
        else r
        for ri, r in enumerate(records)
    ]


async def _collect(
    platform: Platform, stored: list[Record], work: _Work, listing: asyncio.Future[list[str]] | None
) -> None:
    """Rule 3: the originals nothing refers to go; `stored` is what `history` holds now. The
    originals of its unseen inline images stay (stored ahead: margin.images.originals, rule 7)."""
    names = await listing if listing is not None else None
    await image_originals.collect_garbage(platform.local, history=stored, digests=work.digests, names=names)


async def store_ahead(
    platform: Platform, records: list[Record], *, turn_running: Any, limit_bytes: int | None = None
) -> list[str]:
    """Rule 7: after a turn that left images unseen (margin.turn.chat rule 13), store the original of
    each image the next bound will shrink and, when Pillow is loaded (the turn's attachment check
    loaded it; it is not loaded for this), the thumbnail it would make, so that the bound reads
    and writes `history` and little else. Those images are the bound's own choice: the oldest
    unseen ones outside the newest record with images, until what stays (thumbnails counted) is
    under the limit; none while the total is under it. Returns the keys written."""
    limit_bytes = UNSEEN_LIMIT_BYTES if limit_bytes is None else limit_bytes
    total = _unseen_bytes(records)
    maker = _thumbnail_ahead if "PIL.Image" in sys.modules else None
    written: list[str] = []
    for ri, pi in _candidates(records):
        if total <= limit_bytes:
            break
        part = records[ri].parts[pi]
        url = image_url_of(part)
        if image_originals.reference_of(part) is not None:
            continue  # thumbnailed already: its original is stored
        try:
            shrunk = await image_originals.store_one_ahead(
                platform.local, url, turn_running=turn_running, thumbnail=maker, written=written
            )
        except image_originals.TurnStarted:
            break
        total -= len(url) - shrunk
    return written


def _thumbnail_ahead(url: str) -> dict[str, Any] | None:
    side = THUMBNAIL_SIDES[0]
    made = _thumbnail(url, side)
    if made is None or len(made[0]) >= len(url):
        return None
    return {"url": made[0], "side": side, "from": made[1]}


async def handle_bound(platform: Platform, payload: dict) -> dict[str, int]:
    """`images.bound`: the panel calls it once when it opens. Then the originals nothing refers to
    any more (after "New session", an edit, a session opened over this one) are removed."""
    return await bound_unseen_image_bytes(platform, collect_garbage=True)
