"""Errors the user may see: a machine code plus a plain sentence that says what to do next.

Rule 1: every failure that crosses the message boundary is a `MarginError`; the API module turns
  it into `{ok: false, error: {code, message}}`. Anything else is a bug and is reported as
  `internal`.
Rule 2: a sentence said in more than one place is built here, by a small constructor named for
  the failure (`not_an_image()`, `image_too_large(max_bytes)`, ...), so its wording has one source.
"""

from __future__ import annotations

_IMAGE_FORMATS = "Attach a PNG, JPEG, WebP or GIF picture."


class MarginError(Exception):
    """A failure with a stable `code` (for code and tests) and a `message` (for people)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message}


class StorageError(MarginError):
    """chrome.storage refused a read or write (quota, a corrupt database, a closed context)."""


class ProviderError(MarginError):
    """The model provider failed: HTTP status, network, timeout or a malformed stream.

    `partial_text` is what had streamed before a stream broke (None when nothing had).
    """

    partial_text: str | None = None


# -- images ---------------------------------------------------------------------------------------


def not_an_image() -> MarginError:
    """The attachment does not even claim to be an image (not `data:image/...;base64,`)."""
    return MarginError("not_an_image", f"That file is not an image. {_IMAGE_FORMATS}")


def not_a_readable_image() -> MarginError:
    """It claims to be an image, but its bytes are of no type Margin can read."""
    return MarginError("not_an_image", f"That file is not an image Margin can read. {_IMAGE_FORMATS}")


def image_damaged() -> MarginError:
    return MarginError("image_corrupt", "This image is damaged and cannot be read. Attach the file again.")


def image_too_large(max_bytes: int) -> MarginError:
    return MarginError(
        "image_too_large",
        f"This image is larger than {max_bytes // (1024 * 1024)} MB. Use a smaller picture.",
    )


def image_too_many_pixels(size: tuple[int, int] | None = None) -> MarginError:
    """Over the pixel cap (`margin.images.MAX_PIXELS`); `size` = (width, height) when known."""
    from .images import MAX_PIXELS  # here: margin.images imports this module

    limit = f"Margin accepts up to {MAX_PIXELS // 1_000_000} megapixels."
    if size is None:
        return MarginError("image_too_large", f"This image has too many pixels. {limit}")
    width, height = size
    return MarginError("image_too_large", f"This image is too large: {width}×{height} pixels; {limit}")


def image_format_unsupported(mime: str | None) -> MarginError:
    label = (mime or "image").split("/")[-1].upper()
    return MarginError(
        "image_format_unsupported",
        f"Margin cannot read {label} images. Save the picture as PNG or JPEG and attach it again.",
    )


def image_codec_failure(kind: str, mime: str | None, size: tuple[int, int] | None = None) -> MarginError:
    """What the user is told when Pillow fails (`margin.image_codec.CodecError.kind`) on bytes
    that sniff as `mime` (`size`: the refused image's, when too large)."""
    if kind == "too_large":
        return image_too_many_pixels(size)
    if kind == "unsupported" or mime in ("image/heic", "image/avif"):
        return image_format_unsupported(mime)
    return image_damaged()


def screenshot_refused() -> MarginError:
    return MarginError(
        "screenshot_failed",
        "Chrome did not allow a screenshot of this page. Click the page once, then try again.",
    )
