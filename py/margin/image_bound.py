"""The bound on parked unseen pixels: `images.bound`, run once when the panel opens.

Rule 1: `bound_unseen_image_bytes` (when the panel opens) keeps parked UNSEEN pixels under 8 MB
  by downscaling the OLDEST unseen images to thumbnails, never by replacing them with labels; the
  newest record with images is never touched; a downscale is recorded in `meta.downscaledFrom`,
  and running it again changes nothing more.
Rule 2: an image Pillow cannot read is kept as it is (never destroyed), and history is written
  once, only when something changed, against what is stored at that moment.
"""

from __future__ import annotations

from typing import Any

from .data_urls import build_data_url, parse_data_url
from .errors import MarginError
from .history import Record, read_history, write_history
from .images import has_images, image_url_of, is_image_part, is_seen, unseen_image_urls
from .ports import Platform

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
            image_url = dict(part["image_url"]) if isinstance(part.get("image_url"), dict) else {}
            new_part = {**part, "image_url": {**image_url, "url": new_url}, "meta": meta}
            original_url = image_url_of(records[position[0]].parts[position[1]])
            replaced[original_url] = new_part
            current[position] = new_part
            total -= len(url) - len(new_url)
    if not replaced:
        return {"changed": 0, "bytesBefore": before, "bytesAfter": before}

    # Pillow's load awaited: a turn may have written meanwhile. Apply to what is stored now, in the
    # same synchronous stretch as the write.
    fresh = await read_history(platform.local)
    updated, changed = _apply_replacements(fresh.records, replaced)
    if not changed:
        after = _unseen_bytes(fresh.records)
        return {"changed": 0, "bytesBefore": before, "bytesAfter": after}
    await write_history(platform.local, updated, fresh)  # a refusal keeps the old value
    return {"changed": changed, "bytesBefore": before, "bytesAfter": _unseen_bytes(updated)}


def _apply_replacements(
    records: list[Record], replaced: dict[str, dict[str, Any]]
) -> tuple[list[Record], int]:
    allowed = set(_candidates(records))
    changed = 0
    out: list[Record] = []
    for ri, record in enumerate(records):
        if not has_images(record) or is_seen(record):
            out.append(record)
            continue
        parts = []
        for pi, part in enumerate(record.parts):  # has_images: the content is this list of parts
            new_part = (
                replaced.get(image_url_of(part)) if is_image_part(part) and (ri, pi) in allowed else None
            )
            if new_part is not None:
                changed += 1
                parts.append(new_part)
            else:
                parts.append(part)
        out.append(Record(record.role, parts, dict(record.fields)) if parts != record.content else record)
    return out, changed


async def handle_bound(platform: Platform, payload: dict) -> dict[str, int]:
    """`images.bound`: the panel calls it once when it opens."""
    return await bound_unseen_image_bytes(platform)
