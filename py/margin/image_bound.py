"""The bound on parked unseen pixels: `images.bound`, run once when the panel opens.

Rule 1: `bound_unseen_image_bytes` (when the panel opens) keeps parked UNSEEN pixels under 8 MB
  by downscaling the OLDEST unseen images to thumbnails, never by replacing them with labels; the
  newest record with images is never touched; a downscale is recorded in `meta.downscaledFrom`,
  and running it again changes nothing more.
Rule 2: an image Pillow cannot read is kept as it is (never destroyed), and history is written
  once, only when something changed, against what is stored at that moment.
Rule 3: nothing is degraded: the exact data URL of each image it shrinks is first stored under its
  own key (margin.image_originals: `imageOriginal_<digest>`, read by address), and only then is
  `history` written with the thumbnail and `meta.originalKey`; a part that already refers to an
  original keeps that reference. Both writes run under `storage.lock_for(local)`; `handle_bound`
  then removes the originals nothing refers to any more, under the same lock.
"""

from __future__ import annotations

from typing import Any

from . import image_originals
from .data_urls import build_data_url, parse_data_url
from .errors import MarginError
from .history import Record, read_history, write_history
from .images import has_images, image_url_of, is_image_part, is_seen, unseen_image_urls
from .ports import Platform
from .storage import lock_for

# Parked unseen pixels, counted as data-URL characters (what chrome.storage holds).
UNSEEN_LIMIT_BYTES = 8 * 1024 * 1024
THUMBNAIL_SIDES = (512, 256)


def _unseen_bytes(records: list[Record]) -> int:
    return sum(len(url) for url in unseen_image_urls(records))


def _protected_index(records: list[Record]) -> int | None:
    for index in range(len(records) - 1, -1, -1):
        if has_images(records[index]):
            return index
    return None


def _candidates(records: list[Record]) -> list[tuple[int, int]]:
    """(record, part) positions the bound may shrink: unseen, not the protected record, oldest first."""
    protected = _protected_index(records)
    return [
        (ri, pi)
        for ri, r in enumerate(records)
        if ri != protected and not is_seen(r) and has_images(r)
        for pi, p in enumerate(r.parts)  # has_images: the content is this list of parts
        if is_image_part(p)
    ]


async def bound_unseen_image_bytes(
    platform: Platform, *, limit_bytes: int = UNSEEN_LIMIT_BYTES
) -> dict[str, int]:
    """Keep parked UNSEEN pixels under `limit_bytes` (data-URL characters) by downscaling the oldest.

    Returns `{changed, bytesBefore, bytesAfter}`; `changed` counts image parts downscaled.
    Writes history once, only when something changed. Raises StorageError (`storage_full` or
    `storage_failed`, as chrome.storage refused) when the write fails; what was stored stays as it was.
    """
    read = await read_history(platform.local)
    records = read.records
    before = _unseen_bytes(records)
    candidates = _candidates(records)
    if before <= limit_bytes or not candidates:
        return {"changed": 0, "bytesBefore": before, "bytesAfter": before}

    await platform.load_package("pillow")
    from . import image_codec

    current = {(ri, pi): records[ri].parts[pi] for ri, pi in candidates}
    replaced: dict[str, dict[str, Any]] = {}  # original url -> new part
    total = before
    for side in THUMBNAIL_SIDES:
        for position in candidates:
            if total <= limit_bytes:
                break
            part = current[position]
            url = image_url_of(part)
            try:
                data = parse_data_url(url).decode()
                thumb = image_codec.downscale(data, side)
            except (MarginError, image_codec.CodecError):
                continue  # unreadable: keep it as it is, never destroy
            if thumb is None:
                continue
            new_url = build_data_url(thumb.mime, thumb.data)
            if len(new_url) >= len(url):
                continue
            meta = dict(part.get("meta") or {}) if isinstance(part.get("meta"), dict) else {}
            meta.setdefault(
                "downscaledFrom", {"width": thumb.width, "height": thumb.height, "bytes": len(data)}
            )
            original_url = image_url_of(records[position[0]].parts[position[1]])
            meta.setdefault("originalKey", image_originals.original_key(original_url))
            image_url = dict(part["image_url"]) if isinstance(part.get("image_url"), dict) else {}
            new_part = {**part, "image_url": {**image_url, "url": new_url}, "meta": meta}
            replaced[original_url] = new_part
            current[position] = new_part
            total -= len(url) - len(new_url)
    if not replaced:
        return {"changed": 0, "bytesBefore": before, "bytesAfter": before}

    # Pillow's load awaited: a turn may have written meanwhile. Apply to what is stored now, under
    # the lock every history writer holds.
    async with lock_for(platform.local):
        fresh = await read_history(platform.local)
        updated, changed, moved = _apply_replacements(fresh.records, replaced)
        if changed:
            # Rule 3: the originals first, so their bytes are never only in memory.
            await platform.local.set(image_originals.originals_items(moved))
            await write_history(platform.local, updated, fresh)  # a refusal keeps the old value
    if not changed:
        return {"changed": 0, "bytesBefore": before, "bytesAfter": _unseen_bytes(fresh.records)}
    return {"changed": changed, "bytesBefore": before, "bytesAfter": _unseen_bytes(updated)}


def _apply_replacements(
    records: list[Record], replaced: dict[str, dict[str, Any]]
) -> tuple[list[Record], int, list[str]]:
    """(the new records, how many parts changed, the URLs whose bytes leave `history` for a key)."""
    allowed = set(_candidates(records))
    changed = 0
    moved: list[str] = []
    out: list[Record] = []
    for ri, record in enumerate(records):
        if not has_images(record) or is_seen(record):
            out.append(record)
            continue
        parts = []
        for pi, part in enumerate(record.parts):  # has_images: the content is this list of parts
            url = image_url_of(part) if is_image_part(part) else ""
            new_part = replaced.get(url) if url and (ri, pi) in allowed else None
            if new_part is not None:
                changed += 1
                if image_originals.reference_of(part) is None:
                    moved.append(url)
                parts.append(new_part)
            else:
                parts.append(part)
        out.append(Record(record.role, parts, dict(record.fields)) if parts != record.content else record)
    return out, changed, moved


async def handle_bound(platform: Platform, payload: dict) -> dict[str, int]:
    """`images.bound`: the panel calls it once when it opens. Then the originals nothing refers to
    any more (after "New session", an edit, a session opened over this one) are removed."""
    result = await bound_unseen_image_bytes(platform)
    async with lock_for(platform.local):
        await image_originals.collect_garbage(platform.local)
    return result
