"""The toolbar icons: an indigo rounded square, a white margin rule, three pale lines of text beside it.

Rules:
1. Drawn pixel by pixel and written as PNG with zlib alone (no Pillow: the build is standard
   library only); the same size always gives the same bytes.
2. Shapes snap to whole pixels so the small sizes stay crisp; only the rounded corners are
   anti-aliased (4x4 supersampling of the pixel's coverage).
"""

from __future__ import annotations

import struct
import zlib

ICON_SIZES = (16, 32, 48, 128)
INDIGO = (0x4F, 0x46, 0xE5)
WHITE = (0xFF, 0xFF, 0xFF)
PALE = (0xC7, 0xD2, 0xFE)  # indigo-200: the "text" stays quieter than the margin rule


def _png(width: int, height: int, rgba_rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + row for row in rgba_rows)  # filter type 0 on every row
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def _rounded_coverage(x: int, y: int, size: int, radius: float, samples: int = 4) -> float:
    """How much of pixel (x, y) lies inside the rounded square: smooth corners, exact edges."""
    inside = 0
    for sy in range(samples):
        for sx in range(samples):
            px = x + (sx + 0.5) / samples
            py = y + (sy + 0.5) / samples
            cx = min(max(px, radius), size - radius)
            cy = min(max(py, radius), size - radius)
            if (px - cx) ** 2 + (py - cy) ** 2 <= radius * radius:
                inside += 1
    return inside / (samples * samples)


def icon_png(size: int) -> bytes:
    """The icon at size x size pixels. Shapes snap to whole pixels so small sizes stay crisp."""

    def span(start: float, stop: float) -> range:
        a = round(start * size)
        return range(a, max(a + 1, round(stop * size)))

    rule_x = span(0.25, 0.33)
    rule_y = span(0.22, 0.78)
    gap = max(1, round(0.08 * size))
    text_x0 = rule_x[-1] + 1 + gap
    line_ends = (0.76, 0.76, 0.76, 0.58) if size >= 32 else (0.76, 0.76, 0.6)
    step = 0.56 / len(line_ends)
    thickness = 0.065 if size >= 32 else 0.07
    centres = [0.22 + step * (i + 0.5) for i in range(len(line_ends))]
    text_rows = [
        (span(c - thickness / 2, c + thickness / 2), end) for c, end in zip(centres, line_ends, strict=True)
    ]

    paint: dict[tuple[int, int], tuple[int, int, int]] = {}
    for y in rule_y:
        for x in rule_x:
            paint[x, y] = WHITE
    for ys, end in text_rows:
        for y in ys:
            for x in range(text_x0, max(text_x0 + 1, round(end * size))):
                paint[x, y] = PALE

    radius = size * 0.22
    rows = []
    for y in range(size):
        row = bytearray()
        for x in range(size):
            alpha = _rounded_coverage(x, y, size, radius)
            row += bytes(paint.get((x, y), INDIGO)) + bytes([round(alpha * 255)])
        rows.append(bytes(row))
    return _png(size, size, rows)
