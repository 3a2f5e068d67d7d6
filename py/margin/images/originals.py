"""Originals of thumbnailed images: each one's exact bytes under a key of its own, read by address.

When `images.bound` (margin.images.bound) shrinks an image in `history` to a thumbnail, the data URL
the user sent moves, byte for byte, to `imageOriginal_<32 hex>` (the first 32 hex digits of the
sha256 of the data URL's text: content-addressed, so the same picture twice is one key) and the
part keeps the thumbnail plus `meta.originalKey`. docs/storage-model.md ("Images") says why.

Rules:
1. Crash-safe order: the original is written BEFORE the `history` write that replaces its inline
   bytes (`originals_items` gives the caller the items; the bound writes them first, then
   history), so at every moment the bytes are in `history`, in their key, or in both.
2. A key holds `{url, sha256}`; it is trusted only when the sha256 of `url` matches the key. A
   reference whose key is gone or damaged resolves to the thumbnail (the best copy left).
3. Session bodies never hold references: `inline()` puts every original back in its part (the
   part becomes exactly what the user sent: `originalKey` and `downscaledFrom` leave its meta) and
   `margin.sessions.actions` saves bodies through it; backups must export `history` through it too. So a
   body, an export or a backup is self-contained, whatever happens to the keys.
4. `collect_garbage` removes an original only when no `history` value references it: `history`
   and every parked copy of it (`historyUnreadable...`), the parts kept in an answer's versions
   included (margin.storage.versions rule 5); by rule 3 nothing else can. An unseen
   part whose image is still inline references the key of its data URL (rule 7). The caller
   holds `storage.lock_for(area)`, so no bound is between its two writes meanwhile.
5. The request gets the best copy: `for_request` swaps each UNSEEN thumbnail for its original
   (margin.images.request_images converts the original when it is over the provider's limits).
6. `images.original` (`handle_original`) reads one original by address for the panel's viewer.
7. Stored ahead, off the bound's path: after a turn that leaves images UNSEEN (failed or stopped:
   they stay parked), the originals of the images the next bound will shrink (its choice:
   margin.images.bound `store_ahead`, which calls `store_one_ahead` for each) are stored under
   their keys, in the background, once the turn has ended (margin.turn.chat), one write at a time and
   never while a turn runs (it stops when one starts, so a turn that starts meanwhile waits at
   most for the write or the thumbnail in progress; the bound stores what it left). When Pillow is
   loaded (the turn's attachment check loaded it) it also stores the bound's thumbnail of the
   image under `imageThumbnail_<the same 32 hex>` (`{url, side, from}`): derived data, never the
   only copy of anything. It never writes `history`, so a crash between its writes loses nothing,
   and it holds no lock (content-addressed: writing a key twice writes the same value). The part
   is not changed: its reference is added by the bound, which then only checks the original is
   there whole (`is_stored`: its size, by getBytesInUse, without reading it), takes the thumbnail
   made ahead (`read_thumbnail`, checked to be an image smaller than the original, made from an
   image of the original's size; else Pillow makes it), and so writes only the smaller `history`.
   While its image is still inline in an unseen part, an original and its thumbnail are kept (rule
   4 counts the key of the part's data URL as referenced); a thumbnail whose image is no longer
   inline in an unseen part is removed by the same collector.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform, StorageArea
from ..storage import versions
from ..storage.history import Record, parse_history
from ..storage.keys import HISTORY, HISTORY_UNREADABLE, IMAGE_ORIGINAL_PREFIX, IMAGE_THUMBNAIL_PREFIX
from .data_urls import parse_data_url
from .parts import image_url_of, is_image_part, is_seen

_DIGEST_CHARS = 32
_KEY_PATTERN = re.compile(rf"^{IMAGE_ORIGINAL_PREFIX}[0-9a-f]{{{_DIGEST_CHARS}}}$")
_THUMBNAIL_KEY_PATTERN = re.compile(rf"^{IMAGE_THUMBNAIL_PREFIX}[0-9a-f]{{{_DIGEST_CHARS}}}$")
# The meta fields the bound adds to a thumbnailed part (and `inline` removes).
BOUND_META_FIELDS = ("originalKey", "downscaledFrom")


def url_digest(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def original_key(url: str) -> str:
    return key_of_digest(url_digest(url))


def key_of_digest(digest: str) -> str:
    """The key of the original whose data URL has this sha256 (hex)."""
    return IMAGE_ORIGINAL_PREFIX + digest[:_DIGEST_CHARS]


def is_original_key(key: Any) -> bool:
    return isinstance(key, str) and _KEY_PATTERN.match(key) is not None


def reference_of(part: Any) -> str | None:
    """The original's key a (thumbnailed) image part refers to, or None."""
    if not is_image_part(part) or not isinstance(part.get("meta"), dict):
        return None
    key = part["meta"].get("originalKey")
    return key if is_original_key(key) else None


def originals_items(urls: Iterable[str]) -> dict[str, dict[str, str]]:
    """The items that store these originals (rule 1: written before the history write)."""
    return dict(original_item(url, url_digest(url)) for url in urls)


def original_item(url: str, digest: str) -> tuple[str, dict[str, str]]:
    """(key, value) storing one original whose sha256 the caller has (a 3 MB hash costs)."""
    return key_of_digest(digest), {"url": url, "sha256": digest}


# Printable ASCII but for what Chromium's JSON writer may escape (it writes `<` as \u003C): copied
# as it is, so a value made of these alone has a known size.
_PLAIN_BYTES = bytes(range(0x20, 0x7F)).translate(None, b'"\\<>&')


def _plain(text: str) -> bool:
    # translate() deletes the plain bytes in one C pass: 3 ms for 3 MB, half of str.isprintable()
    return text.isascii() and not text.encode("ascii").translate(None, _PLAIN_BYTES)


def stored_size(key: str, value: dict[str, str]) -> int | None:
    """What chrome.storage's getBytesInUse counts for this item (the key's length plus the value's
    compact JSON), or None when the value holds a character a JSON writer may escape."""
    if not all(_plain(text) for text in (*value, *value.values())):
        return None
    return len(key) + 2 + sum(len(name) + len(text) + 6 for name, text in value.items()) - 1


async def is_stored(area: StorageArea, url: str, digest: str) -> bool:
    """Whether the original of `url` is stored whole under its key (rule 7). The key is content-
    addressed and only this module writes it, always as `{url, sha256}`: a stored value of exactly
    that size is that original, so its size is checked (getBytesInUse), not the 3 MB value read.
    A URL with characters whose escaping is not known is read and checked instead (rule 2)."""
    key, value = original_item(url, digest)
    size = stored_size(key, value)
    if size is None:
        return (await read_originals(area, [key])).get(key) == url
    return await area.bytes_in_use([key]) == size


def inline_keys(records: list[Record], digests: dict[str, str] | None = None) -> set[str]:
    """The keys of the originals of the UNSEEN parts whose image is still inline (rules 4 and 7).
    `digests` (data URL -> sha256) is a cache the caller may share; it is filled here."""
    cache = {} if digests is None else digests
    keys: set[str] = set()
    for url in unseen_inline_urls(records):
        if url not in cache:
            cache[url] = url_digest(url)
        keys.add(key_of_digest(cache[url]))
    return keys


# A thumbnail made ahead: `{url, side, from}` (the thumbnail's data URL, its longest side, and the
# `downscaledFrom` the bound records), or None when the image is not worth shrinking.
ThumbnailMaker = Callable[[str], dict[str, Any] | None]


class TurnStarted(Exception):
    """Storing ahead stops: a turn started (rule 7)."""


async def store_one_ahead(
    area: StorageArea,
    url: str,
    *,
    turn_running: Callable[[], bool],
    thumbnail: ThumbnailMaker | None = None,
    written: list[str],
) -> int:
    """Rule 7 for one image: its original, unless stored whole, and (with `thumbnail`) the
    thumbnail the bound would make of it, unless one is stored. Appends the keys it writes to
    `written`; returns the length of the image's data URL once thumbnailed (the thumbnail's,
    about, when one is stored; the whole URL when none is made). Raises TurnStarted before any
    write or Pillow work when a turn runs."""

    def look() -> None:
        if turn_running():
            raise TurnStarted()

    await asyncio.sleep(0)  # a message that arrived starts its task first
    look()
    digest = url_digest(url)
    if not await is_stored(area, url, digest):
        look()
        key, value = original_item(url, digest)
        await area.set({key: value})
        written.append(key)
    made_key = thumbnail_key(digest)
    stored = await area.bytes_in_use([made_key])
    if stored:
        return min(len(url), stored)
    if thumbnail is None:
        return len(url)
    await asyncio.sleep(0)
    look()
    made = thumbnail(url)  # Pillow's work (~50 ms for a 3 MB photo in Pyodide)
    if made is None:
        return len(url)
    look()
    await area.set({made_key: made})
    written.append(made_key)
    return len(made["url"])


def unseen_inline_urls(records: list[Record]) -> list[str]:
    """The data URLs of the unseen parts whose image is inline, oldest first, each once."""
    urls: dict[str, None] = {}
    for record in records:
        if is_seen(record) or not isinstance(record.content, list):
            continue
        for part in record.content:
            url = image_url_of(part) if is_image_part(part) and reference_of(part) is None else ""
            if url:
                urls.setdefault(url)
    return list(urls)


def thumbnail_key(digest: str) -> str:
    """The key of the thumbnail made ahead of the image whose data URL has this sha256."""
    return IMAGE_THUMBNAIL_PREFIX + digest[:_DIGEST_CHARS]


def is_thumbnail_key(key: Any) -> bool:
    return isinstance(key, str) and _THUMBNAIL_KEY_PATTERN.match(key) is not None


def original_key_of_thumbnail(key: str) -> str:
    return IMAGE_ORIGINAL_PREFIX + key[len(IMAGE_THUMBNAIL_PREFIX) :]


def _int_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


async def read_thumbnail(
    area: StorageArea, digest: str, url: str, side: int
) -> tuple[str, dict[str, int]] | None:
    """The thumbnail made ahead of `url` (sha256 `digest`) at this `side`: (its data URL, the
    `downscaledFrom` to record), or None when there is none that fits: another side, not a
    readable image data URL, not smaller than `url`, or made from an image of another size."""
    key = thumbnail_key(digest)
    value = (await area.get([key])).get(key)
    if not isinstance(value, dict) or value.get("side") != side:
        return None
    thumb, source = value.get("url"), value.get("from")
    if not isinstance(thumb, str) or len(thumb) >= len(url) or not isinstance(source, dict):
        return None
    if not all(_int_size(source.get(k)) for k in ("width", "height", "bytes")):
        return None
    try:
        if not parse_data_url(thumb).mime.startswith("image/"):
            return None
        if source["bytes"] != parse_data_url(url).decoded_size:
            return None
    except MarginError:
        return None
    return thumb, {k: source[k] for k in ("width", "height", "bytes")}


def _trusted_url(key: str, value: Any) -> str | None:
    if not isinstance(value, dict) or not isinstance(value.get("url"), str):
        return None
    url = value["url"]
    return url if original_key(url) == key else None


async def read_originals(area: StorageArea, keys: Iterable[str]) -> dict[str, str]:
    """key -> the original data URL, for the keys that are present and intact (rule 2)."""
    wanted = sorted({k for k in keys if is_original_key(k)})
    if not wanted:
        return {}
    stored = await area.get(wanted)
    found = {key: _trusted_url(key, stored.get(key)) for key in wanted}
    return {key: url for key, url in found.items() if url is not None}


def restored_part(part: dict[str, Any], url: str) -> dict[str, Any]:
    """The part as the user sent it: the original URL, the bound's meta fields gone."""
    meta = {k: v for k, v in part["meta"].items() if k not in BOUND_META_FIELDS}
    image_url = dict(part["image_url"]) if isinstance(part.get("image_url"), dict) else {}
    restored = {k: v for k, v in part.items() if k != "meta"}
    restored["image_url"] = {**image_url, "url": url}
    if meta:
        restored["meta"] = meta
    return restored


def _raw_references(raw: Any) -> set[str]:
    """Every original key referenced inside a stored history value (any shape, read defensively)."""
    found: set[str] = set()
    if not isinstance(raw, list):
        return found
    for record in raw:
        for content in versions.walk_contents(record):  # an answer's versions too (rule 4)
            found.update(key for key in map(reference_of, content) if key)
    return found


async def inline(area: StorageArea, history: Any) -> Any:
    """`history` (a stored value) with every original put back in its part (rule 3).

    Works on the raw stored value: items that are not records are kept as they are; a reference
    whose original is gone stays a thumbnail with its reference. The input is not mutated."""
    originals = await read_originals(area, _raw_references(history))
    if not originals:
        return history

    def restored(content: list[Any]) -> list[Any]:
        if not any(reference_of(p) in originals for p in content):
            return content
        return [
            restored_part(p, originals[key]) if (key := reference_of(p)) in originals else p for p in content
        ]

    # An answer's versions hold parts too (an edited question's images): inlined alike.
    return [versions.map_contents(record, restored) for record in history]


async def for_request(area: StorageArea, records: list[Record]) -> list[Record]:
    """The conversation with each UNSEEN thumbnail replaced by its original (rule 5)."""
    keys = {
        key
        for r in records
        if not is_seen(r) and isinstance(r.content, list)
        for key in map(reference_of, r.content)
    }
    originals = await read_originals(area, (k for k in keys if k))
    if not originals:
        return records
    out: list[Record] = []
    for record in records:
        if is_seen(record) or not isinstance(record.content, list):
            out.append(record)
            continue
        parts = [
            restored_part(p, originals[key]) if (key := reference_of(p)) in originals else p
            for p in record.content
        ]
        out.append(Record(record.role, parts, dict(record.fields)) if parts != record.content else record)
    return out


def references_in(records: list[Record]) -> set[str]:
    """Every original key the parts of these records refer to."""
    return _raw_references([r.to_json() for r in records])


async def collect_garbage(
    area: StorageArea,
    *,
    history: list[Record] | None = None,
    digests: dict[str, str] | None = None,
    names: list[str] | None = None,
) -> list[str]:
    """Remove the originals no `history` value references (rule 4), and the thumbnails made ahead
    whose image is no longer inline in an unseen part of `history` (rule 7); returns the keys
    removed.

    `history`: its records, when the caller holds the lock and knows what is stored
    (`images.bound` just read or wrote it), so the heavy value is not read again; `digests` a
    cache of `inline_keys`. The inline images are hashed only when a key may be theirs: an
    original nothing refers to, or a thumbnail of one (a thumbnail whose original a part refers
    to was used: that image is thumbnailed). `names`: the key names, listed by a caller that
    holds the lock since before its last write of `history`, which parked nothing (so no key
    that refers to an original can have appeared since)."""
    names = await area.keys() if names is None else names
    originals = [k for k in names if is_original_key(k)]
    thumbnails = [k for k in names if is_thumbnail_key(k)]
    if not originals and not thumbnails:
        return []
    holders = [k for k in names if (k == HISTORY and history is None) or k.startswith(HISTORY_UNREADABLE)]
    records = history or []
    referenced = references_in(records)
    for key in holders:  # one value at a time: a parked history can be as heavy as history
        raw = (await area.get([key])).get(key)
        referenced |= _raw_references(raw)
        if key == HISTORY:
            records = parse_history(raw).records
    maybe_inline = [k for k in originals if k not in referenced]
    maybe_inline += [k for k in thumbnails if original_key_of_thumbnail(k) not in referenced]
    still_inline = inline_keys(records, digests) if maybe_inline else set()
    orphans = [k for k in originals if k not in referenced and k not in still_inline]
    orphans += [k for k in thumbnails if original_key_of_thumbnail(k) not in still_inline]
    if orphans:
        await area.remove(orphans)
    return orphans


async def handle_original(platform: Platform, payload: dict) -> dict[str, str]:
    """`images.original` {key}: the original data URL behind a thumbnail, for the viewer."""
    key = payload.get("key") if isinstance(payload, dict) else None
    if not is_original_key(key):
        raise MarginError.said("bad_request", "py_error_which_image")
    assert isinstance(key, str)
    url = (await read_originals(platform.local, [key])).get(key)
    if url is None:
        raise MarginError.said("image_original_missing", "py_error_original_gone")
    return {"dataUrl": url}
