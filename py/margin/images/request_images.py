"""One stored image part as the model request carries it: the right type, within the limits.

Rule 1: formats the model cannot take and images over the provider limits are converted or
  downscaled for the REQUEST only (`margin.images.codec`, Pillow); storage keeps the original.
Rule 2: whether an image needs that is told with stdlib sniffing (`request_conversion_needed`),
  so Pillow is loaded (`ensure_request_ready`) only when an UNSEEN image really needs it.
Rule 3: the one module-level memory is the last conversions (a retry converts the same parked
  image again), keyed by the sha256 of the stored data URL, never by the URL itself (that would
  keep a copy of history's pixels alive after the turn), and at most `CONVERSION_CACHE_BYTES`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..base.errors import MarginError, image_codec_failure
from ..platform.ports import Platform
from ..storage.history import Record
from .data_urls import build_data_url, jpeg_components, parse_data_url, sniff_mime, sniff_size
from .parts import image_url_of, unseen_image_urls

# Formats every supported provider takes as they are.
MODEL_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
# Request-side limits (the strictest of the providers): bigger images are downscaled for the
# request only.
REQUEST_MAX_IMAGE_BYTES = 20 * 1024 * 1024
REQUEST_MAX_SIDE = 8000
# What the last conversions may hold in all (rule 3); a bigger result is not kept.
CONVERSION_CACHE_BYTES = 8 * 1024 * 1024


def request_conversion_needed(url: str) -> str | None:
    """Why this image cannot go to the model as it is: "format", "size", or None (it can).

    Stdlib only: reads the declared type, the magic number and the header's dimensions.
    """
    data_url = parse_data_url(url)
    head = data_url.head()
    actual = sniff_mime(head) or data_url.mime
    if actual not in MODEL_MIME_TYPES:
        return "format"
    if actual == "image/jpeg" and jpeg_components(head) == 4:
        return "format"  # CMYK: not every provider decodes it, and colours go wrong where one does
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


_conversion_cache: dict[str, str] = {}  # sha256 of the stored data URL -> the converted one


def conversion_cache_bytes() -> int:
    return sum(len(converted) for converted in _conversion_cache.values())


def _converted_for_request(url: str) -> str:
    # The same parked image is converted again on every retry: keep the last results (rule 3).
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()
    if digest in _conversion_cache:
        return _conversion_cache[digest]
    try:
        from . import codec as image_codec  # here: it imports Pillow, loaded only when pixels are touched
    except ImportError:
        raise MarginError.said("image_tools_not_loaded", "py_error_image_not_prepared") from None
    data = parse_data_url(url).decode()
    try:
        mime, converted = image_codec.for_request(
            data, max_bytes=REQUEST_MAX_IMAGE_BYTES, max_side=REQUEST_MAX_SIDE
        )
    except image_codec.CodecError as error:
        raise image_codec_failure(error.kind, sniff_mime(data[:64]), error.size) from None
    result = build_data_url(mime, converted)
    if len(result) <= CONVERSION_CACHE_BYTES:
        while _conversion_cache and conversion_cache_bytes() + len(result) > CONVERSION_CACHE_BYTES:
            _conversion_cache.pop(next(iter(_conversion_cache)))
        _conversion_cache[digest] = result
    return result


async def ensure_request_ready(platform: Platform, records: list[Record]) -> None:
    """Load Pillow when (and only when) an UNSEEN image must be converted for the request."""
    for url in unseen_image_urls(records):
        try:
            if request_conversion_needed(url):
                await platform.load_package("pillow")
                return
        except MarginError:
            continue  # prepare_history_for_model turns it into a labelled placeholder
