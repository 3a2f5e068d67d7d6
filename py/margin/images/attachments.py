"""An attached image (an `Attachment` of docs/protocol.md): checked, normalized, stored as a part.

Rule 1: the data URL is stored exactly as sent; only the other fields are normalized.
Rule 2: an attachment is refused with a sentence that says what to do: not an image, damaged,
  or too large (over `ATTACHMENT_MAX_BYTES` decoded, or `ATTACHMENT_MAX_PIXELS` = the project's
  cap `margin.images.parts.MAX_PIXELS`, 50 MP, against decompression bombs: the sentence names the
  image's size).
Rule 3: the cheap check (`validate_attachment`) is stdlib sniffing, plus a full decode when
  Pillow is already loaded; the thorough one (`check_attachment`, what a turn runs) always loads
  Pillow and decodes every attachment (`image_codec.verify`, memory-bounded), whatever its
  format: a truncated PNG sniffs fine and would otherwise be stored, to fail later.
"""

from __future__ import annotations

import sys
from typing import Any

from ..base.errors import (
    MarginError,
    image_codec_failure,
    image_damaged,
    image_too_large,
    image_too_many_pixels,
    not_a_readable_image,
    not_an_image,
)
from ..platform.ports import Platform
from .data_urls import HEAD_BASE64_CHARS, parse_data_url, sniff_mime, sniff_size
from .parts import ATTACHMENT_SOURCES, MAX_PIXELS
from .request_images import MODEL_MIME_TYPES

# What an attachment may be at all (decoded bytes, and pixels against decompression bombs).
ATTACHMENT_MAX_BYTES = 32 * 1024 * 1024
ATTACHMENT_MAX_PIXELS = MAX_PIXELS


def _pillow_loaded() -> bool:
    return "PIL.Image" in sys.modules


def validate_attachment(att: Any) -> dict[str, Any]:
    """A cheap check of one `Attachment` (docs/protocol.md); returns it normalized.

    The data URL itself is returned untouched (storage keeps exactly what the user sent).
    Raises MarginError: "not_an_image" (not `data:image/...;base64,`, or bytes of no known image
    type), "image_corrupt" (broken base64, empty), "image_too_large". Decodes the pixels fully
    only when Pillow is already loaded; `check_attachment` is the async, thorough variant.
    """
    if not isinstance(att, dict):
        raise not_an_image()
    url = att.get("dataUrl")
    data_url = parse_data_url(url)
    if data_url.decoded_size > ATTACHMENT_MAX_BYTES:
        raise image_too_large(ATTACHMENT_MAX_BYTES)
    data = data_url.decode()
    if not data:
        raise MarginError.said("image_corrupt", "py_error_image_empty")
    mime = sniff_mime(data[:64])
    if mime is None and not _pillow_loaded():
        if data_url.mime in MODEL_MIME_TYPES:
            # Declared as a type we know, yet the bytes are not that type.
            raise image_damaged()
        raise not_a_readable_image()
    size = sniff_size(data[:HEAD_BASE64_CHARS], mime)
    if size and size[0] * size[1] > ATTACHMENT_MAX_PIXELS:
        raise image_too_many_pixels(size)
    if _pillow_loaded():
        _verify_with_pillow(data, mime, data_url.mime)
    return normalize_attachment(att)


def _verify_with_pillow(data: bytes, mime: str | None, declared: str) -> None:
    from . import codec as image_codec  # here: it imports Pillow, loaded only when pixels are touched

    try:
        image_codec.verify(data, max_pixels=ATTACHMENT_MAX_PIXELS)
    except image_codec.CodecError as error:
        if mime is None and error.kind != "too_large" and declared not in MODEL_MIME_TYPES:
            raise not_a_readable_image() from None
        raise image_codec_failure(error.kind, mime, error.size) from None


async def check_attachment(platform: Platform, att: Any) -> dict[str, Any]:
    """The thorough check the chat turn runs before storing a user record with images (rule 3):
    Pillow is loaded (if need be) and every attachment decoded, whatever its format."""
    if not isinstance(att, dict):
        raise not_an_image()
    parse_data_url(att.get("dataUrl"))  # not an image at all: refused before Pillow loads
    await platform.load_package("pillow")
    from . import codec as image_codec  # noqa: F401  (imports PIL.Image: validate_attachment decodes)

    return validate_attachment(att)


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
