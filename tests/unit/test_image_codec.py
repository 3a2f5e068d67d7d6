"""Pixel work: thumbnails keep the picture (aspect, orientation, transparency), request conversion fits."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from margin.images import codec as image_codec


def encoded(image: Image.Image, fmt: str, **save) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **save)
    return out.getvalue()


def noise(width: int, height: int, mode: str = "RGB", seed: int = 0) -> Image.Image:
    return Image.frombytes(mode, (width, height), random.Random(seed).randbytes(width * height * len(mode)))


def opened(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def test_a_thumbnail_keeps_the_aspect_ratio_and_becomes_jpeg_when_opaque():
    thumb = image_codec.downscale(encoded(noise(1234, 567), "PNG"), 512)
    image = opened(thumb.data)
    assert thumb.mime == "image/jpeg" and image.format == "JPEG"
    assert image.size == (512, 235)  # 567 * 512 / 1234 = 235.3
    assert (thumb.width, thumb.height) == (1234, 567)


def test_a_thumbnail_stays_recognisably_the_same_picture():
    picture = Image.new("RGB", (1000, 800), (250, 250, 250))
    picture.paste((200, 20, 20), (0, 0, 500, 400))  # a red top-left quarter
    image = opened(image_codec.downscale(encoded(picture, "PNG"), 256).data).convert("RGB")
    assert image.size == (256, 205)
    red = image.getpixel((60, 50))
    white = image.getpixel((200, 150))
    assert red[0] > 150 and red[1] < 70 and min(white) > 220


def test_transparency_is_kept_as_png():
    image = noise(900, 600, "RGBA")
    thumb = image_codec.downscale(encoded(image, "PNG"), 512)
    assert thumb.mime == "image/png"
    assert opened(thumb.data).mode == "RGBA"


def test_exif_orientation_is_applied_before_resizing():
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees: displayed portrait
    data = encoded(noise(1000, 500), "JPEG", exif=exif.tobytes())
    thumb = image_codec.downscale(data, 512)
    assert (thumb.width, thumb.height) == (500, 1000)
    assert opened(thumb.data).size == (256, 512)


def test_images_not_bigger_than_the_thumbnail_are_left_alone():
    assert image_codec.downscale(encoded(noise(512, 100), "PNG"), 512) is None


def test_request_conversion_fits_the_byte_limit():
    data = encoded(noise(1500, 1000), "TIFF")
    mime, out = image_codec.for_request(data, max_bytes=200_000, max_side=8000)
    assert mime == "image/jpeg" and len(out) <= 200_000
    width, height = opened(out).size
    assert abs(width / height - 1.5) < 0.01


def test_few_colour_pictures_are_sent_as_png():
    diagram = Image.new("RGB", (300, 200), "white")
    diagram.paste((0, 0, 0), (10, 10, 290, 20))
    mime, out = image_codec.for_request(encoded(diagram, "BMP"), max_bytes=10**7, max_side=8000)
    assert mime == "image/png"
    assert opened(out).convert("RGB").tobytes() == diagram.tobytes()  # lossless


def test_sixteen_bit_images_convert_to_something_visible():
    row = (40000).to_bytes(2, "little") * 32 + (500).to_bytes(2, "little") * 32
    deep = Image.frombytes("I;16", (64, 64), row * 64)
    _, out = image_codec.for_request(encoded(deep, "TIFF"), max_bytes=10**7, max_side=8000)
    image = opened(out).convert("L")
    assert image.getpixel((5, 5)) > 100 and image.getpixel((60, 5)) < 10


@pytest.mark.parametrize(
    "data, kind",
    [
        (b"not an image at all", "unidentified"),
        (encoded(noise(100, 100), "PNG")[:-200], "corrupt"),
    ],
)
def test_unreadable_bytes_raise_codec_errors(data, kind):
    with pytest.raises(image_codec.CodecError) as raised:
        image_codec.verify(data)
    assert raised.value.kind == kind


def test_too_many_pixels_is_refused_before_decoding():
    with pytest.raises(image_codec.CodecError) as raised:
        image_codec.verify(encoded(Image.new("L", (300, 300)), "PNG"), max_pixels=50_000)
    assert raised.value.kind == "too_large"


@pytest.mark.parametrize("error", [SyntaxError("bad IFD"), ValueError("bad rational"), OSError("truncated")])
def test_a_broken_exif_block_keeps_the_pixels_as_stored(monkeypatch, error):
    def broken_exif(self):
        raise error

    monkeypatch.setattr(Image.Image, "getexif", broken_exif)
    thumb = image_codec.downscale(encoded(noise(600, 300), "JPEG"), 300)
    assert (thumb.width, thumb.height) == (600, 300)
    assert opened(thumb.data).size == (300, 150)
