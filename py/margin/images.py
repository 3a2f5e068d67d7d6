"""Images in the conversation: pixels are never destroyed, compression happens on the request side.

The concept (docs/storage-model.md, "Images: pixels are never destroyed"):
an image lives in a record as an `image_url` part whose `url` is a data URL, plus an optional
`meta` object `{name, alt, source, capturedAt}` (capturedAt in ms since the epoch).

Rule 1: what the user sent is stored byte for byte and never degraded. Nothing in this module
  rewrites the pixels of a SEEN record (one stamped `imagesSeen: True`).
Rule 2: `stamp_images_seen` runs only after a SUCCESSFUL turn; a failed or stopped turn stamps
  nothing, so the next try sends the pixels again.
Rule 3: `prepare_history_for_model` (every request builder) replaces the images of SEEN records by
  a deterministic text placeholder `[Figure N: ...]` (`[图N：...]` in Chinese) and passes UNSEEN
  images with their pixels, each preceded by the same label so the model can match later
  placeholders to what it saw. N numbers every image of the conversation in order of appearance,
  so it is stable turn after turn and the request prefix stays byte-identical.
Rule 4: formats the model cannot take and images over the provider limits are converted or
  downscaled for the REQUEST only (`margin.image_codec`, Pillow); storage keeps the original.
Rule 5: `bound_unseen_image_bytes` (when the panel opens) keeps parked UNSEEN pixels under 8 MB
  by downscaling the OLDEST unseen images to thumbnails, never by replacing them with labels; the
  newest record with images is never touched; a downscale is recorded in `meta.downscaledFrom`,
  and running it again changes nothing more.
Rule 6: Pillow is imported lazily, only when pixels must be touched; everything else here is
  stdlib (header sniffing reads the first bytes of the data URL only).
"""

from __future__ import annotations

import binascii
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any

from . import clock
from .errors import MarginError, StorageError
from .history import Record, read_history, write_history
from .ports import Platform

# -- limits -------------------------------------------------------------------------------------

# Formats every supported provider takes as they are.
MODEL_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
# Request-side limits (the strictest of the providers): bigger images are downscaled for the
# request only.
REQUEST_MAX_IMAGE_BYTES = 20 * 1024 * 1024
REQUEST_MAX_SIDE = 8000
# What an attachment may be at all (decoded bytes, and pixels against decompression bombs).
ATTACHMENT_MAX_BYTES = 32 * 1024 * 1024
ATTACHMENT_MAX_PIXELS = 100_000_000
# Parked unseen pixels, counted as data-URL characters (what chrome.storage holds).
UNSEEN_LIMIT_BYTES = 8 * 1024 * 1024
THUMBNAIL_SIDES = (512, 256)

ATTACHMENT_SOURCES = ("file", "paste", "drop", "screenshot")
SCREENSHOT_NAME_PREFIX = "Screenshot of "
_HEAD_BASE64_CHARS = 349_528  # ~256 KB decoded: enough for the dimensions of nearly every file
_LABEL_MAX_CHARS = 80


# -- data URLs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataUrl:
    mime: str  # lower case, as declared
    base64: str  # the payload, untouched

    @property
    def decoded_size(self) -> int:
        n = len(self.base64)
        return n * 3 // 4 - self.base64[-2:].count("=")

    def head(self) -> bytes:
        """The first bytes of the image (enough to sniff the format and usually the size)."""
        chunk = self.base64[: _HEAD_BASE64_CHARS]
        chunk = chunk[: len(chunk) - len(chunk) % 4]
        try:
            return binascii.a2b_base64(chunk)
        except binascii.Error:
            return b""

    def decode(self) -> bytes:
        """Every byte; raises MarginError("image_corrupt") when the base64 is broken."""
        try:
            return binascii.a2b_base64(self.base64, strict_mode=True)
        except (binascii.Error, ValueError):
            raise MarginError(
                "image_corrupt",
                "This image's data is damaged, so it cannot be sent. Attach the file again.",
            ) from None


def parse_data_url(url: Any) -> DataUrl:
    """`data:image/<type>[;params];base64,<payload>`, or MarginError("not_an_image")."""
    if not isinstance(url, str) or not url[:5].lower() == "data:" or "," not in url:
        raise MarginError("not_an_image", "That file is not an image. Attach a PNG, JPEG, WebP or GIF picture.")
    header, payload = url[5:].split(",", 1)
    params = [p.strip().lower() for p in header.split(";")]
    mime = params[0]
    if not mime.startswith("image/") or "base64" not in params[1:]:
        raise MarginError("not_an_image", "That file is not an image. Attach a PNG, JPEG, WebP or GIF picture.")
    return DataUrl(mime, payload)


def build_data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{binascii.b2a_base64(data, newline=False).decode('ascii')}"


def sniff_mime(head: bytes) -> str | None:
    """The image type the bytes really are (magic numbers), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:2] == b"BM":
        return "image/bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return "image/avif"
        if brand in (b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1"):
            return "image/heic"
    if head[:4] == b"\x00\x00\x01\x00":
        return "image/x-icon"
    return None


def sniff_size(head: bytes, mime: str | None) -> tuple[int, int] | None:
    """(width, height) read from the file header, or None when it cannot be told cheaply."""
    try:
        if mime == "image/png" and head[12:16] == b"IHDR":
            return struct.unpack(">II", head[16:24])
        if mime == "image/gif":
            return struct.unpack("<HH", head[6:10])
        if mime == "image/bmp":
            width, height = struct.unpack("<ii", head[18:26])
            return abs(width), abs(height)
        if mime == "image/webp":
            return _webp_size(head)
        if mime == "image/jpeg":
            return _jpeg_size(head)
    except struct.error:
        return None
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and head[20:21] == b"\x2f":
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    return None


_JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    pos = 2
    while pos + 9 <= len(head):
        if head[pos] != 0xFF:
            return None
        marker = head[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _JPEG_SOF:
            height, width = struct.unpack(">HH", head[pos + 5 : pos + 9])
            return width, height
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        (length,) = struct.unpack(">H", head[pos + 2 : pos + 4])
        pos += 2 + length
    return None


# -- parts and records ----------------------------------------------------------------------------


def is_image_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image_url"


def image_url_of(part: dict[str, Any]) -> str:
    image_url = part.get("image_url")
    if isinstance(image_url, dict):
        url = image_url.get("url")
        return url if isinstance(url, str) else ""
    return image_url if isinstance(image_url, str) else ""


def is_seen(record: Record) -> bool:
    return bool(record.fields.get("imagesSeen"))


def has_images(record: Record) -> bool:
    return isinstance(record.content, list) and any(is_image_part(p) for p in record.content)


def stamp_images_seen(records: list[Record]) -> list[Record]:
    """After a SUCCESSFUL turn: every record holding images is stamped `imagesSeen: True`."""
    return [r.with_fields(imagesSeen=True) if has_images(r) and not is_seen(r) else r for r in records]


# -- placeholders -----------------------------------------------------------------------------------


def _clean_label(value: Any) -> str:
    """One line, no brackets or quotes that would break the placeholder, bounded length."""
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    text = text.translate(str.maketrans({"[": "(", "]": ")", '"': "'", "「": "(", "」": ")"}))
    if len(text) > _LABEL_MAX_CHARS:
        text = text[: _LABEL_MAX_CHARS - 1].rstrip() + "…"
    return text


def format_captured_at(value: Any) -> str:
    """ms since the epoch -> `2026-11-30 14:05 UTC`; "" when absent or not a sane time."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    seconds = value / 1000
    if not (0 < seconds < 253402300799):  # year 9999
        return ""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def figure_label(number: int, meta: Any, *, language: str = "en", note: str = "") -> str:
    """The deterministic text that stands for image `number`: `[Figure 2: ...]` / `[图2：...]`."""
    meta = meta if isinstance(meta, dict) else {}
    source = meta.get("source") if meta.get("source") in ATTACHMENT_SOURCES else ""
    name = _clean_label(meta.get("name"))
    alt = _clean_label(meta.get("alt"))
    when = format_captured_at(meta.get("capturedAt"))
    title = ""
    if source == "screenshot" and isinstance(meta.get("name"), str):
        raw = " ".join(meta["name"].split())
        if raw.startswith(SCREENSHOT_NAME_PREFIX):
            title, name = _clean_label(raw[len(SCREENSHOT_NAME_PREFIX):]), ""
    chinese = language.lower().startswith("zh")
    known = bool(source or name or alt or when)
    if chinese:
        if not known:
            body = "用户之前发送的图片"
        else:
            kind = {"screenshot": "截图", "paste": "粘贴", "drop": "拖入"}.get(source, "")
            if title:
                kind = f"{kind or '图片'}「{title}」"
            fields = [kind, f"「{name}」" if name else "", f"“{alt}”" if alt else "", when]
            body = "，".join(f for f in fields if f) or "图片"
        if note:
            body += f"（{note}）"
        return f"[图{number}：{body}]"
    if not known:
        body = "an image the user sent earlier"
    else:
        # Terse on purpose: a placeholder is resent on every later turn, so each byte counts
        # (the bound: seen images may cost at most 1% of the request).
        kind = {"screenshot": "screenshot", "paste": "pasted", "drop": "dropped"}.get(source, "")
        if title:
            kind = f'{kind or "image"} "{title}"'
        fields = [kind, name, f'"{alt}"' if alt else "", when]
        body = ", ".join(f for f in fields if f) or "image"
    if note:
        body += f" ({note})"
    return f"[Figure {number}: {body}]"


_NOT_SENDABLE_NOTE = {"en": "could not be sent to the model: unreadable or unsupported format",
                      "zh": "无法发送给模型：格式无法读取或不受支持"}


def prepare_history_for_model(records: list[Record], *, language: str = "en") -> list[Record]:
    """The conversation as the model gets it (storage is untouched; the input is never mutated).

    SEEN records: each image part becomes a text part `[Figure N: ...]` in its place.
    UNSEEN records: each image part becomes `[Figure N: ...]` followed by the pixels, as a plain
    `{type: "image_url", image_url: {url}}` (the stored `meta` is left out). Pixels in a format
    the model cannot take, or over the provider limits, are converted here with Pillow: call
    `await ensure_request_ready(platform, records)` first (or use `prepare_request_history`), which
    loads Pillow only when such an image is present.
    """
    lang_key = "zh" if language.lower().startswith("zh") else "en"
    number = 0
    prepared: list[Record] = []
    for record in records:
        if not has_images(record):
            prepared.append(record)
            continue
        seen = is_seen(record)
        parts: list[dict[str, Any]] = []
        for part in record.content:  # type: ignore[union-attr]
            if not is_image_part(part):
                parts.append(dict(part))
                continue
            number += 1
            meta = part.get("meta")
            if seen:
                parts.append({"type": "text", "text": figure_label(number, meta, language=language)})
                continue
            try:
                pixels = request_image_part(part)
            except MarginError as error:
                if error.code == "image_tools_not_loaded":
                    raise
                # Never let one unreadable parked image poison every later turn.
                note = _NOT_SENDABLE_NOTE[lang_key]
                parts.append({"type": "text", "text": figure_label(number, meta, language=language, note=note)})
                continue
            parts.append({"type": "text", "text": figure_label(number, meta, language=language)})
            parts.append(pixels)
        prepared.append(Record(record.role, parts, dict(record.fields)))
    return prepared


# -- request-side conversion --------------------------------------------------------------------------


def request_conversion_needed(url: str) -> str | None:
    """Why this image cannot go to the model as it is: "format", "size", or None (it can).

    Stdlib only: reads the declared type, the magic number and the header's dimensions.
    """
    data_url = parse_data_url(url)
    head = data_url.head()
    actual = sniff_mime(head) or data_url.mime
    if actual not in MODEL_MIME_TYPES:
        return "format"
    if data_url.decoded_size > REQUEST_MAX_IMAGE_BYTES:
        return "size"
    size = sniff_size(head, actual)
    if size and max(size) > REQUEST_MAX_SIDE:
        return "size"
    return None


def request_image_part(part: dict[str, Any]) -> dict[str, Any]:
    """One stored image part as the model takes it: `{type: "image_url", image_url: {url, ...}}`.

    The stored `meta` is left out. The declared MIME type is corrected to what the bytes are; an
    image in another format or over the limits is converted/downscaled (Pillow; request only).
    Raises MarginError("image_corrupt" / "image_format_unsupported") when that is impossible, and
    MarginError("image_tools_not_loaded") when Pillow is needed but was not loaded.
    """
    url = image_url_of(part)
    image_url = part.get("image_url")
    extra = {k: v for k, v in image_url.items() if k != "url"} if isinstance(image_url, dict) else {}
    data_url = parse_data_url(url)
    reason = request_conversion_needed(url)
    if reason is None:
        actual = sniff_mime(data_url.head())
        if actual and actual != data_url.mime:
            url = f"data:{actual};base64,{data_url.base64}"
    else:
        url = _converted_for_request(url)
    return {"type": "image_url", "image_url": {"url": url, **extra}}


_conversion_cache: dict[str, str] = {}


def _converted_for_request(url: str) -> str:
    # The same parked image is converted again on every retry: keep the last few results.
    if url in _conversion_cache:
        return _conversion_cache[url]
    try:
        from . import image_codec
    except ImportError:
        raise MarginError(
            "image_tools_not_loaded",
            "Margin could not prepare an image for sending. Send the message again.",
        ) from None
    data = parse_data_url(url).decode()
    try:
        mime, converted = image_codec.for_request(data, max_bytes=REQUEST_MAX_IMAGE_BYTES, max_side=REQUEST_MAX_SIDE)
    except image_codec.CodecError as error:
        raise _codec_error_to_margin(error, sniff_mime(data[:64])) from None
    result = build_data_url(mime, converted)
    if len(_conversion_cache) >= 4:
        _conversion_cache.pop(next(iter(_conversion_cache)))
    _conversion_cache[url] = result
    return result


def unseen_image_urls(records: list[Record]) -> list[str]:
    return [image_url_of(p) for r in records if not is_seen(r) and has_images(r)
            for p in r.content if is_image_part(p)]  # type: ignore[union-attr]


async def ensure_request_ready(platform: Platform, records: list[Record]) -> None:
    """Load Pillow when (and only when) an UNSEEN image must be converted for the request."""
    for url in unseen_image_urls(records):
        try:
            if request_conversion_needed(url):
                await platform.load_package("pillow")
                return
        except MarginError:
            continue  # prepare_history_for_model turns it into a labelled placeholder


async def prepare_request_history(platform: Platform, records: list[Record], *, language: str = "en") -> list[Record]:
    """What the chat turn calls: `ensure_request_ready`, then `prepare_history_for_model`."""
    await ensure_request_ready(platform, records)
    return prepare_history_for_model(records, language=language)


# -- attachments ---------------------------------------------------------------------------------


def _pillow_loaded() -> bool:
    return "PIL.Image" in sys.modules


def _codec_error_to_margin(error: Exception, mime: str | None) -> MarginError:
    kind = getattr(error, "kind", "corrupt")
    if kind == "too_large":
        return MarginError("image_too_large", "This image has too many pixels to send. Use a smaller picture.")
    if kind == "unsupported" or mime in ("image/heic", "image/avif"):
        label = (mime or "image").split("/")[-1].upper()
        return MarginError(
            "image_format_unsupported",
            f"Margin cannot read {label} images. Save the picture as PNG or JPEG and attach it again.",
        )
    return MarginError("image_corrupt", "This image is damaged and cannot be read. Attach the file again.")


def validate_attachment(att: Any) -> dict[str, Any]:
    """A cheap check of one `Attachment` (docs/protocol.md); returns it normalized.

    The data URL itself is returned untouched (storage keeps exactly what the user sent).
    Raises MarginError: "not_an_image" (not `data:image/...;base64,`, or bytes of no known image
    type), "image_corrupt" (broken base64, empty), "image_too_large". Decodes the pixels fully
    only when Pillow is already loaded; `check_attachment` is the async, thorough variant.
    """
    if not isinstance(att, dict):
        raise MarginError("not_an_image", "That file is not an image. Attach a PNG, JPEG, WebP or GIF picture.")
    url = att.get("dataUrl")
    data_url = parse_data_url(url)
    if data_url.decoded_size > ATTACHMENT_MAX_BYTES:
        raise MarginError(
            "image_too_large",
            f"This image is larger than {ATTACHMENT_MAX_BYTES // (1024 * 1024)} MB. Use a smaller picture.",
        )
    data = data_url.decode()
    if not data:
        raise MarginError("image_corrupt", "This image is empty. Attach the file again.")
    mime = sniff_mime(data[:64])
    if mime is None and not _pillow_loaded():
        if data_url.mime in MODEL_MIME_TYPES:
            # Declared as a type we know, yet the bytes are not that type.
            raise MarginError("image_corrupt", "This image is damaged and cannot be read. Attach the file again.")
        raise MarginError("not_an_image", "That file is not an image Margin can read. Attach a PNG, JPEG, WebP or GIF picture.")
    size = sniff_size(data[:_HEAD_BASE64_CHARS], mime)
    if size and size[0] * size[1] > ATTACHMENT_MAX_PIXELS:
        raise MarginError("image_too_large", "This image has too many pixels to send. Use a smaller picture.")
    if _pillow_loaded():
        _verify_with_pillow(data, mime, data_url.mime)
    return normalize_attachment(att)


def _verify_with_pillow(data: bytes, mime: str | None, declared: str) -> None:
    from . import image_codec

    try:
        image_codec.verify(data, max_pixels=ATTACHMENT_MAX_PIXELS)
    except image_codec.CodecError as error:
        if mime is None and error.kind != "too_large" and declared not in MODEL_MIME_TYPES:
            raise MarginError(
                "not_an_image", "That file is not an image Margin can read. Attach a PNG, JPEG, WebP or GIF picture."
            ) from None
        raise _codec_error_to_margin(error, mime) from None


async def check_attachment(platform: Platform, att: Any) -> dict[str, Any]:
    """The thorough check the chat turn runs before storing a user record with images.

    Loads Pillow only when the bytes are not a format the model takes as it is (TIFF, BMP, HEIC,
    unknown): then they must be readable, or the image would fail every later turn.
    """
    cheap_error: MarginError | None = None
    try:
        normalized = validate_attachment(att)
    except MarginError as error:
        if error.code != "not_an_image" or not isinstance(att, dict) or _pillow_loaded():
            raise
        cheap_error = error  # an unknown header: Pillow may still read it (ICO, PPM, ...)
    data_url = parse_data_url(att.get("dataUrl"))
    mime = sniff_mime(data_url.head())
    if cheap_error is None and mime in MODEL_MIME_TYPES:
        return normalized
    await platform.load_package("pillow")
    _verify_with_pillow(data_url.decode(), mime, data_url.mime)
    return normalize_attachment(att)


def normalize_attachment(att: dict[str, Any]) -> dict[str, Any]:
    """`{dataUrl, name?, alt?, source?, capturedAt?}` with only well-typed, non-empty fields."""
    out: dict[str, Any] = {"dataUrl": att["dataUrl"]}
    for key in ("name", "alt"):
        value = att.get(key)
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()[:500]
    if att.get("source") in ATTACHMENT_SOURCES:
        out["source"] = att["source"]
    captured = att.get("capturedAt")
    if isinstance(captured, (int, float)) and not isinstance(captured, bool) and captured > 0:
        out["capturedAt"] = int(captured)
    return out


def attachment_to_part(att: dict[str, Any]) -> dict[str, Any]:
    """The stored part for a (validated) attachment: the data URL as sent, plus its `meta`."""
    normalized = normalize_attachment(att)
    meta = {k: v for k, v in normalized.items() if k != "dataUrl"}
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": normalized["dataUrl"]}}
    if meta:
        part["meta"] = meta
    return part


# -- the bound on parked unseen pixels -------------------------------------------------------------


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
    return [(ri, pi) for ri, r in enumerate(records) if ri != protected and not is_seen(r) and has_images(r)
            for pi, p in enumerate(r.content) if is_image_part(p)]  # type: ignore[union-attr]


async def bound_unseen_image_bytes(platform: Platform, *, limit_bytes: int = UNSEEN_LIMIT_BYTES) -> dict[str, int]:
    """Keep parked UNSEEN pixels under `limit_bytes` (data-URL characters) by downscaling the oldest.

    Returns `{changed, bytesBefore, bytesAfter}`; `changed` counts image parts downscaled.
    Writes history once, only when something changed. Raises StorageError("storage_failed") when
    storage refuses the write; what was stored stays as it was.
    """
    read = await read_history(platform.local)
    records = read.records
    before = _unseen_bytes(records)
    candidates = _candidates(records)
    if before <= limit_bytes or not candidates:
        return {"changed": 0, "bytesBefore": before, "bytesAfter": before}

    await platform.load_package("pillow")
    from . import image_codec

    current = {(ri, pi): records[ri].content[pi] for ri, pi in candidates}  # type: ignore[index]
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
            meta.setdefault("downscaledFrom", {"width": thumb.width, "height": thumb.height, "bytes": len(data)})
            image_url = dict(part["image_url"]) if isinstance(part.get("image_url"), dict) else {}
            new_part = {**part, "image_url": {**image_url, "url": new_url}, "meta": meta}
            original_url = image_url_of(records[position[0]].content[position[1]])  # type: ignore[index]
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
    try:
        await write_history(platform.local, updated, fresh)
    except MarginError:
        raise
    except Exception as error:  # quota, a closed context: chrome.storage kept the old value
        raise StorageError(
            "storage_failed",
            "Chrome's storage refused to save smaller copies of your unsent images (it may be full). "
            "Nothing was lost; delete some old sessions and reopen the panel.",
        ) from error
    return {"changed": changed, "bytesBefore": before, "bytesAfter": _unseen_bytes(updated)}


def _apply_replacements(records: list[Record], replaced: dict[str, dict[str, Any]]) -> tuple[list[Record], int]:
    allowed = set(_candidates(records))
    changed = 0
    out: list[Record] = []
    for ri, record in enumerate(records):
        if not has_images(record) or is_seen(record):
            out.append(record)
            continue
        parts = []
        for pi, part in enumerate(record.content):  # type: ignore[arg-type]
            new_part = replaced.get(image_url_of(part)) if is_image_part(part) and (ri, pi) in allowed else None
            if new_part is not None:
                changed += 1
                parts.append(new_part)
            else:
                parts.append(part)
        out.append(Record(record.role, parts, dict(record.fields)) if parts != record.content else record)
    return out, changed


# -- handlers ------------------------------------------------------------------------------------



async def handle_bound(platform: Platform, payload: dict) -> dict[str, int]:
    """`images.bound`: the panel calls it once when it opens."""
    return await bound_unseen_image_bytes(platform)


async def handle_screenshot(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tab.screenshot`: the visible part of the active web tab, as an Attachment plus title/url."""
    tab = await platform.tabs.active_web_tab()
    if tab is None:
        raise MarginError("no_web_tab", "Switch to a web page (http, https or file) and try again.")
    try:
        data_url = await platform.tabs.capture_visible(tab.window_id)
    except Exception as error:
        raise MarginError(
            "screenshot_failed",
            "Chrome did not allow a screenshot of this page. Click the page once, then try again.",
        ) from error
    if not isinstance(data_url, str) or not data_url.startswith("data:image/"):
        raise MarginError(
            "screenshot_failed",
            "Chrome did not allow a screenshot of this page. Click the page once, then try again.",
        )
    title = " ".join((tab.title or "").split()) or tab.url
    return {
        "dataUrl": data_url,
        "name": f"{SCREENSHOT_NAME_PREFIX}{title}",
        "source": "screenshot",
        "title": tab.title,
        "url": tab.url,
        "capturedAt": clock.now_ms(),
    }
