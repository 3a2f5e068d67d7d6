"""Pixel work with Pillow: verify, thumbnail and request-side conversion of image bytes.

Rule 1: this module is imported only when pixels must be touched (in Pyodide, after
  `await platform.load_package("pillow")`); `margin.images.attachments`, `margin.images.request_images`
  and `margin.images.bound` decide when, with stdlib sniffing (`margin.images.data_urls`).
Rule 2: bytes in, bytes out; no storage, no data URLs, no records. Failures are `CodecError`
  with a `kind` ("unidentified", "unsupported", "corrupt", "too_large").
Rule 3: orientation is applied (EXIF) before resizing, so a thumbnail looks like the bubble did;
  the aspect ratio is kept (each side rounded to the nearest pixel, at least 1).
Rule 4: transparency is kept as PNG; everything opaque is encoded as JPEG (quality 80 for
  thumbnails, 90 for the request), except few-colour pictures (diagrams, text) sent as PNG.
Rule 5: memory is bounded before any pixel is decoded. `Image.MAX_IMAGE_PIXELS` is the project's
  cap (`margin.images.parts.MAX_PIXELS`, 50 MP) and every open checks it against the header's size
  (`CodecError("too_large")` carries that size). A JPEG is decoded at the smallest scale that is
  still big enough (`draft()`: 1/2, 1/4 or 1/8 in libjpeg itself); anything else is `reduce()`d by
  an integer factor right after decoding, before it is oriented, converted or resampled, so one
  full-size buffer exists at a time. `verify` decodes a JPEG at 1/8 scale: every byte of the
  stream is still decoded, into 1/64 of the memory.
"""

from __future__ import annotations

import contextlib
import io
import struct
import warnings
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from .data_urls import sniff_mime, sniff_size
from .parts import MAX_PIXELS

# Pillow's own bomb check (a warning above this, an error above twice this) at the project's cap;
# `_open` refuses anything over it first, with the size.
Image.MAX_IMAGE_PIXELS = MAX_PIXELS

THUMBNAIL_JPEG_QUALITY = 80
REQUEST_JPEG_QUALITY = 90
_FEW_COLOURS = 256
_SWAPPING_ORIENTATIONS = (5, 6, 7, 8)
# What Pillow raises on a damaged EXIF block (parsed by TiffImagePlugin; its own ImageFile turns
# the same list into "not this format"), and OSError/ValueError from the decoder it may run.
_BAD_METADATA = (OSError, SyntaxError, ValueError, EOFError, IndexError, KeyError, TypeError, struct.error)


class CodecError(Exception):
    def __init__(self, kind: str, detail: str = "", *, size: tuple[int, int] | None = None):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.size = size  # (width, height) of an image refused as too large, when known


@dataclass(frozen=True)
class Thumbnail:
    mime: str
    data: bytes
    # The size of the picture it was made from, as displayed (EXIF orientation applied).
    width: int
    height: int


def _too_large(width: int, height: int) -> CodecError:
    return CodecError("too_large", f"{width}x{height}", size=(width, height))


def _open(data: bytes) -> Image.Image:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # refused below
            image = Image.open(io.BytesIO(data))
    except UnidentifiedImageError as error:
        raise CodecError("unidentified", str(error)) from None
    except Image.DecompressionBombError as error:
        size = sniff_size(data[:262_144], sniff_mime(data[:64]))
        raise CodecError("too_large", str(error), size=size) from None
    except Exception as error:  # broad on purpose, see below
        # Untrusted bytes go through whichever Pillow plugin claims them, and what a plugin raises
        # on damaged data varies by plugin and version (OSError, SyntaxError, ValueError,
        # struct.error, EOFError, IndexError, ...). Every such failure means "these bytes cannot be
        # decoded" and must become a CodecError: one that escaped would turn a damaged parked image
        # into a failure of every later turn, or of the bound, instead of a labelled placeholder.
        raise CodecError("corrupt", str(error)) from None
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise _too_large(width, height)
    return image


def _load(image: Image.Image) -> None:
    try:
        image.load()
    except Image.DecompressionBombError as error:
        raise CodecError("too_large", str(error)) from None
    except Exception as error:  # broad on purpose: untrusted bytes, see _open
        raise CodecError("corrupt", str(error)) from None


def _orientation(image: Image.Image) -> int | None:
    try:
        value = image.getexif().get(0x0112)
    except _BAD_METADATA:
        return None
    return value if isinstance(value, int) else None


def _displayed_size(image: Image.Image) -> tuple[int, int]:
    width, height = image.size
    return (height, width) if _orientation(image) in _SWAPPING_ORIENTATIONS else (width, height)


# EXIF orientation -> the transpose that shows the picture upright (what ImageOps.exif_transpose
# does, without its full-size copy when there is nothing to do).
_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


def verify(data: bytes, *, max_pixels: int = MAX_PIXELS) -> tuple[str, int, int]:
    """Decode every byte of the first frame. Returns (Pillow format, width, height)."""
    image = _open(data)
    width, height = image.size
    if width * height > max_pixels:
        raise _too_large(width, height)
    if image.format == "JPEG":
        image.draft(image.mode, (max(1, width // 8), max(1, height // 8)))
    _load(image)
    return image.format or "", width, height


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info


def _normalized(image: Image.Image) -> Image.Image:
    """RGB, L or RGBA: what JPEG/PNG encoders take, with deep and odd modes mapped sensibly."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        image = image.convert("I").point(lambda value: value * (1 / 256)).convert("L")
    if _has_alpha(image):
        return image.convert("RGBA")
    if image.mode in ("RGB", "L"):
        return image
    if image.mode == "1":
        return image.convert("L")
    return image.convert("RGB")


def _alpha_in_use(image: Image.Image) -> bool:
    return image.mode == "RGBA" and image.getchannel("A").getextrema() != (255, 255)


def _fitted(width: int, height: int, longest: int) -> tuple[int, int]:
    scale = longest / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


# Modes Image.reduce() takes; others (P, 1, I;16...) are normalized first.
_REDUCIBLE_MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "I", "F")


def _reduced(image: Image.Image, target_longest: int) -> Image.Image:
    """Shrunk by the largest integer factor that keeps it at least twice the target (the margin
    LANCZOS needs to look as good as from the full size: Pillow's own `reducing_gap=2.0`)."""
    factor = max(image.size) // (2 * target_longest)
    if factor < 2:
        return image
    if image.mode not in _REDUCIBLE_MODES:
        image = _normalized(image)
    return image.reduce(factor)


def _prepared(data: bytes, target_longest: int) -> tuple[Image.Image, int, int]:
    """Opened, decoded small (rule 5), oriented and normalized; plus the displayed size."""
    image = _open(data)
    width, height = _displayed_size(image)
    orientation = _orientation(image)
    if image.format == "JPEG" and max(width, height) > target_longest:
        raw_w, raw_h = image.size
        image.draft("RGB", _fitted(raw_w, raw_h, target_longest))
    _load(image)
    image = _reduced(image, target_longest)
    method = _TRANSPOSE.get(orientation) if orientation is not None else None
    if method is not None:
        with contextlib.suppress(*_BAD_METADATA):  # odd pixels: keep them as stored
            image = image.transpose(method)
    return _normalized(image), width, height


def _encode(image: Image.Image, *, jpeg_quality: int, prefer_png: bool = False) -> tuple[str, bytes]:
    out = io.BytesIO()
    if _alpha_in_use(image) or prefer_png:
        image.save(out, "PNG")
        return "image/png", out.getvalue()
    if image.mode == "RGBA":
        image = image.convert("RGB")
    image.save(out, "JPEG", quality=jpeg_quality)
    return "image/jpeg", out.getvalue()


def downscale(data: bytes, longest_side: int) -> Thumbnail | None:
    """A thumbnail whose longest side is `longest_side`, or None when the image is not bigger."""
    image, width, height = _prepared(data, longest_side)
    if max(width, height) <= longest_side:
        return None
    size = _fitted(width, height, longest_side)
    thumb = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=2.0)
    mime, encoded = _encode(thumb, jpeg_quality=THUMBNAIL_JPEG_QUALITY)
    return Thumbnail(mime, encoded, width, height)


def _few_colours(image: Image.Image) -> bool:
    width, height = image.size
    probe = (
        image
        if max(width, height) <= 1024
        else image.resize(_fitted(width, height, 1024), Image.Resampling.NEAREST)
    )
    return probe.getcolors(maxcolors=_FEW_COLOURS) is not None


def for_request(data: bytes, *, max_bytes: int, max_side: int) -> tuple[str, bytes]:
    """The image as a PNG or JPEG the model takes: within `max_side` pixels and `max_bytes`."""
    image, width, height = _prepared(data, max_side)
    prefer_png = _few_colours(image)
    longest = min(max(width, height), max_side)
    while True:
        sized = (
            image
            if longest >= max(width, height)
            else image.resize(_fitted(width, height, longest), Image.Resampling.LANCZOS, reducing_gap=2.0)
        )
        mime, encoded = _encode(sized, jpeg_quality=REQUEST_JPEG_QUALITY, prefer_png=prefer_png)
        if len(encoded) <= max_bytes:
            return mime, encoded
        if prefer_png:
            prefer_png = False  # try JPEG at the same size first
            continue
        if longest <= 64:
            raise CodecError("too_large", "cannot fit the request limit")
        longest = int(longest * 0.75)
