"""Writes the hostile-image corpus next to this file: small files only (each under 64 KB).

A bomb here is a small file whose header claims huge dimensions; images that are big once decoded
(8,000 x 8,000 of one colour) are generated at test time by test_hostile_images.py.
Run: .venv/bin/python tests/reliability/corpus/hostile_images/make_corpus.py
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

from PIL import Image

HERE = Path(__file__).resolve().parent


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_header_claiming(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" + b"\x00" * 30)  # one short row: the rest is missing
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def saved(image: Image.Image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def frames(mode: str = "RGB") -> list[Image.Image]:
    return [Image.new(mode, (32, 24), colour) for colour in ("red", "green", "blue")]


def corpus() -> dict[str, bytes]:
    png = saved(Image.new("RGB", (64, 48), "teal"), "PNG")
    jpeg = saved(Image.new("RGB", (64, 48), "olive"), "JPEG", quality=90)
    palette = Image.new("P", (40, 40), 0)
    palette.putpalette([255, 0, 0, 0, 255, 0] + [0] * 762)
    palette.info["transparency"] = 0
    first, *rest = frames()
    gif_screen = bytearray(saved(Image.new("P", (8, 8), 0), "GIF"))
    gif_screen[6:10] = struct.pack("<HH", 65535, 65535)  # the logical screen, not the frame
    return {
        "bomb_png_100k.png": png_header_claiming(100_000, 100_000),
        "truncated.png": png[: len(png) // 2],
        "truncated.jpg": jpeg[: len(jpeg) // 2],
        "png_named_jpeg.jpg": png,
        "cmyk.jpg": saved(Image.new("CMYK", (40, 30), (10, 200, 30, 5)), "JPEG"),
        "sixteen_bit.png": saved(Image.new("I;16", (40, 30), 40000), "PNG"),
        "animated.gif": saved(
            first.convert("P"), "GIF", save_all=True, append_images=[f.convert("P") for f in rest]
        ),
        "animated.webp": saved(first, "WEBP", save_all=True, append_images=rest),
        "animated.png": saved(first, "PNG", save_all=True, append_images=rest),
        "palette_transparency.png": saved(palette, "PNG"),
        "zero_size.png": b"",
        "giant_gif_screen.gif": bytes(gif_screen),
    }


if __name__ == "__main__":
    for name, data in corpus().items():
        (HERE / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")
