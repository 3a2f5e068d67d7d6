"""Errors the user may see: a machine code plus a plain sentence that says what to do next.

Rule 1: every failure that crosses the message boundary is a `MarginError`; the API module turns
  it into `{ok: false, error: {code, message}}`. Anything else is a bug and is reported as
  `internal`.
Rule 2: a sentence said in more than one place is built here, by a small constructor named for
  the failure (`not_an_image()`, `image_too_large(max_bytes)`, ...), so its wording has one source.
Rule 3: a sentence from the catalogue is made with `Error.said(code, key, *args)`
  (margin.base.sentences): `message` is its English; `to_json` says it in the user's language.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any, Self

from .sentences import Sentence, say, sentence

# The most pixels Margin decodes (width x height): what a model can use, and a bound on the memory
# one image takes (Pyodide never gives memory back). margin.images.codec sets Pillow's cap to it;
# margin.images.parts re-exports it. It is here because `image_too_many_pixels` names it.
MAX_PIXELS = 50_000_000

_IMAGE_FORMATS = sentence("py_error_image_formats")


class MarginError(Exception):
    """A failure with a stable `code` (for code and tests) and a `message` (for people)."""

    sentence: Sentence | None = None

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def said(cls, code: str, key: str, *args: Any) -> Self:
        """Rule 3: the error whose sentence is the catalogue's `key` with `args`."""
        spoken = sentence(key, *args)
        error = cls(code, spoken.english())
        error.sentence = spoken
        return error

    def in_language(self) -> str:
        """The sentence in the user's language (margin.base.sentences, rule 3); else `message`."""
        return self.message if self.sentence is None else say(self.sentence)

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.in_language()}


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
    return MarginError.said("not_an_image", "py_error_not_an_image", _IMAGE_FORMATS)


def not_a_readable_image() -> MarginError:
    """It claims to be an image, but its bytes are of no type Margin can read."""
    return MarginError.said("not_an_image", "py_error_not_a_readable_image", _IMAGE_FORMATS)


def image_damaged() -> MarginError:
    return MarginError.said("image_corrupt", "py_error_image_damaged")


def image_too_large(max_bytes: int) -> MarginError:
    return MarginError.said("image_too_large", "py_error_image_too_large", max_bytes // (1024 * 1024))


def image_too_many_pixels(size: tuple[int, int] | None = None) -> MarginError:
    """Over the pixel cap (`MAX_PIXELS`); `size` = (width, height) when known."""
    limit = sentence("py_error_megapixels", MAX_PIXELS // 1_000_000)
    if size is None:
        return MarginError.said("image_too_large", "py_error_too_many_pixels", limit)
    width, height = size
    return MarginError.said("image_too_large", "py_error_image_too_large_size", width, height, limit)


def image_format_unsupported(mime: str | None) -> MarginError:
    label = (mime or "image").split("/")[-1].upper()
    return MarginError.said("image_format_unsupported", "py_error_image_format", label)


def image_codec_failure(kind: str, mime: str | None, size: tuple[int, int] | None = None) -> MarginError:
    """What the user is told when Pillow fails (`margin.images.codec.CodecError.kind`) on bytes
    that sniff as `mime` (`size`: the refused image's, when too large)."""
    if kind == "too_large":
        return image_too_many_pixels(size)
    if kind == "unsupported" or mime in ("image/heic", "image/avif"):
        return image_format_unsupported(mime)
    return image_damaged()


def screenshot_refused() -> MarginError:
    return MarginError.said("screenshot_failed", "py_error_screenshot_refused")


def internal_error(exc: BaseException) -> MarginError:
    """Rule 1: anything that is not a MarginError is a bug: logged with its traceback, and said as
    `internal` with a sentence that says the data is safe (margin.app.api, rule 3)."""
    traceback.print_exception(exc, file=sys.stderr)
    return MarginError.said("internal", "py_error_internal", type(exc).__name__, exc)
