"""Images in the conversation: pixels are never destroyed, compression happens on the request side.

The concept (docs/storage-model.md, "Images: pixels are never destroyed"):
an image lives in a record as an `image_url` part whose `url` is a data URL, plus an optional
`meta` object `{name, alt, source, capturedAt}` (capturedAt in ms since the epoch). This module
reads those parts and the record's `imagesSeen` stamp; the rest of the image work is split by job:

- `margin.images.data_urls`: parse and build data URLs, sniff the real format and size (stdlib);
- `margin.images.attachments`: check an attached image and turn it into a stored part;
- `margin.images.screenshot`: `tab.screenshot`, the visible tab as an attachment;
- `margin.images.figures`: `[Figure N: ...]` labels and `prepare_history_for_model`, the request's view;
- `margin.images.request_images`: one image as the request carries it (converted when it must be);
- `margin.images.bound`: `images.bound`, the bound on parked unseen pixels;
- `margin.images.codec`: the Pillow work itself.

Rule 1: what the user sent is stored byte for byte and never degraded. Nothing in these modules
  rewrites the pixels of a SEEN record (one stamped `imagesSeen: True`).
Rule 2: `stamp_images_seen` runs only after a SUCCESSFUL turn; a failed or stopped turn stamps
  nothing, so the next try sends the pixels again.
Rule 3: Pillow is imported lazily, only when pixels must be touched; everything else in these
  modules is stdlib (header sniffing reads the first bytes of the data URL only).
"""

from __future__ import annotations

from typing import Any

from ..base.errors import MAX_PIXELS as MAX_PIXELS  # the pixel cap, defined with its sentence
from ..storage.history import Record

# The `meta.source` values an image part may carry.
ATTACHMENT_SOURCES = ("file", "paste", "drop", "screenshot")
# A screenshot stored before its name became the tab's title alone is named "Screenshot of <title>"
# in English (margin.images.screenshot): what reads its name takes this prefix off.
SCREENSHOT_NAME_PREFIX = "Screenshot of "


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


def unseen_image_urls(records: list[Record]) -> list[str]:
    return [
        image_url_of(p)
        for r in records
        if not is_seen(r) and has_images(r)
        for p in r.parts  # has_images: the content is this list of parts
        if is_image_part(p)
    ]
