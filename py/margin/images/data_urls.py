"""Data URLs of images: parse and build them, tell the real format and size from the first bytes.

An image in a record is a data URL (`margin.images.parts`); this module reads one without Pillow.

Rule 1: stdlib only; header sniffing reads the first bytes of the data URL only (`DataUrl.head`,
  ~256 KB decoded), never the whole payload, so checking a 30 MB image stays cheap.
Rule 2: the declared MIME type is what the URL says; `sniff_mime` says what the bytes are (magic
  numbers), and the two may disagree.
"""

from __future__ import annotations

import binascii
import struct
from dataclasses import dataclass
from typing import Any

from ..base.errors import MarginError, not_an_image

HEAD_BASE64_CHARS = 349_528  # ~256 KB decoded: enough for the dimensions of nearly every file


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
        chunk = self.base64[:HEAD_BASE64_CHARS]
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
            raise MarginError.said("image_corrupt", "py_error_image_data_damaged") from None


def parse_data_url(url: Any) -> DataUrl:
    """`data:image/<type>[;params];base64,<payload>`, or MarginError("not_an_image")."""
    if not isinstance(url, str) or not url[:5].lower() == "data:" or "," not in url:
        raise not_an_image()
    header, payload = url[5:].split(",", 1)
    params = [p.strip().lower() for p in header.split(";")]
    mime = params[0]
    if not mime.startswith("image/") or "base64" not in params[1:]:
        raise not_an_image()
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
    frame = _jpeg_frame(head)
    return frame[:2] if frame else None


def jpeg_components(head: bytes) -> int | None:
    """How many colour components a JPEG's frame has (1 grey, 3 YCbCr, 4 CMYK), or None."""
    frame = _jpeg_frame(head)
    return frame[2] if frame else None


def _jpeg_frame(head: bytes) -> tuple[int, int, int] | None:
    """(width, height, components) from the first SOF segment."""
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
            components = head[pos + 9] if pos + 9 < len(head) else 0
            return width, height, components
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        (length,) = struct.unpack(">H", head[pos + 2 : pos + 4])
        pos += 2 + length
    return None
