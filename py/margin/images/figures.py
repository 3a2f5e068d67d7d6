"""Figures: the conversation as the model gets it, each image numbered and labelled in text.

Rule 1: `prepare_history_for_model` (every request builder) replaces the images of SEEN records by
  a deterministic text placeholder `[Figure N: ...]` (`[图N：...]` in Chinese; its words from
  margin.i18n.catalogue, in the language of `options.model_language`) and passes UNSEEN
  images with their pixels, each preceded by the same label so the model can match later
  placeholders to what it saw. N numbers every image of the conversation in order of appearance,
  so it is stable turn after turn and the request prefix stays byte-identical.
Rule 2: an UNSEEN image that cannot be sent (unreadable, unsupported) becomes its label with a
  note saying so, never an error: one bad parked image must not fail every later turn.
Rule 4: a SEEN image's placeholder is resent on every later turn, so it is terse: its number, its
  kind and its name or title, without the capture time that the label sent with its pixels
  carries (docs/performance.md: seen images cost at most 1% of a request's bytes).
Rule 3: an UNSEEN image the bound thumbnailed is sent from its original (`prepare_request_history`
  reads it by address), converted only when it is over the provider's limits: the model never
  gets the thumbnail while the original exists.
Rule 4: a SEEN image's placeholder is resent on every later turn, so it is terse: its number, its
  kind and its name or title, without the capture time that the label sent with its pixels
  carries (docs/performance.md: seen images cost at most 1% of a request's bytes).
"""

from __future__ import annotations

import time
from typing import Any

from ..base.errors import MarginError
from ..i18n import catalogue
from ..platform.ports import Platform
from ..sandbox import code_runs
from ..storage.history import Record
from . import originals as image_originals
from .parts import ATTACHMENT_SOURCES, SCREENSHOT_NAME_PREFIX, has_images, is_image_part, is_seen
from .request_images import ensure_request_ready, request_image_part

_LABEL_MAX_CHARS = 80


def _clean_label(value: Any) -> str:
    """One line, no brackets or quotes that would break the placeholder, bounded length."""
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    text = text.translate(str.maketrans('[]"「」', "()'()"))
    if len(text) > _LABEL_MAX_CHARS:
        text = text[: _LABEL_MAX_CHARS - 1].rstrip() + "…"
    return text


def format_captured_at(value: Any) -> str:
    """ms since the epoch -> `2026-11-30 14:05 UTC`; "" when absent or not a sane time."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    seconds = value / 1000
    if not (0 < seconds < 253402300799):  # year 9999
        return ""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


_KIND_KEYS = {"screenshot": "py_figure_screenshot", "paste": "py_figure_pasted", "drop": "py_figure_dropped"}


def figure_label(
    number: int, meta: Any, *, language: str = "en", note: str = "", with_time: bool = True
) -> str:
    """The deterministic text that stands for image `number`: `[Figure 2: ...]` / `[图2：...]`,
    in the words of `language`'s catalogue (margin.i18n.catalogue). `with_time=False` (a SEEN
    image's placeholder, rule 4) leaves out when it was captured."""
    words = catalogue.words(language)
    meta = meta if isinstance(meta, dict) else {}
    source = meta.get("source") if meta.get("source") in ATTACHMENT_SOURCES else ""
    name = _clean_label(meta.get("name"))
    alt = _clean_label(meta.get("alt"))
    when = format_captured_at(meta.get("capturedAt")) if with_time else ""
    title = ""
    if source == "screenshot" and isinstance(meta.get("name"), str):
        # A screenshot's name is its tab's title (margin.images.screenshot); one stored before says
        # "Screenshot of <title>": the same title, so the same placeholder.
        raw = " ".join(meta["name"].split())
        title, name = _clean_label(raw.removeprefix(SCREENSHOT_NAME_PREFIX)), ""
    if not (source or name or alt or when):
        body = words.text("py_figure_unknown")
    else:
        # Terse on purpose (rule 4): a placeholder is resent on every later turn.
        kind = words.text(_KIND_KEYS[source]) if source in _KIND_KEYS else ""
        if title:
            kind = words.text("py_figure_titled", kind or words.text("py_figure_image"), title)
        fields = [
            kind,
            words.text("py_figure_name", name) if name else "",
            words.text("py_figure_alt", alt) if alt else "",
            when,
        ]
        body = words.text("py_list_separator").join(f for f in fields if f) or words.text("py_figure_image")
    if note:
        body += words.text("py_parenthesized", note)
    return words.text("py_figure", number, body)


def prepare_history_for_model(records: list[Record], *, language: str = "en") -> list[Record]:
    """The conversation as the model gets it (storage is untouched; the input is never mutated).

    SEEN records: each image part becomes a text part `[Figure N: ...]` in its place.
    UNSEEN records: each image part becomes `[Figure N: ...]` followed by the pixels, as a plain
    `{type: "image_url", image_url: {url}}` (the stored `meta` is left out). Pixels in a format
    the model cannot take, or over the provider limits, are converted here with Pillow: call
    `await ensure_request_ready(platform, records)` first (or use `prepare_request_history`), which
    loads Pillow only when such an image is present.
    """
    number = 0
    prepared: list[Record] = []
    for record in map(code_runs.for_model, records):  # an answer's code output follows its text
        if not has_images(record):
            prepared.append(record)
            continue
        seen = is_seen(record)
        parts: list[dict[str, Any]] = []
        for part in record.parts:  # has_images: the content is this list of parts
            if not is_image_part(part):
                parts.append(dict(part))
                continue
            number += 1
            meta = part.get("meta")
            if seen:
                label = figure_label(number, meta, language=language, with_time=False)
                parts.append({"type": "text", "text": label})
                continue
            try:
                pixels = request_image_part(part)
            except MarginError as error:
                if error.code == "image_tools_not_loaded":
                    raise
                # Never let one unreadable parked image poison every later turn.
                note = catalogue.words(language).text("py_figure_not_sendable")
                parts.append(
                    {"type": "text", "text": figure_label(number, meta, language=language, note=note)}
                )
                continue
            parts.append({"type": "text", "text": figure_label(number, meta, language=language)})
            parts.append(pixels)
        prepared.append(Record(record.role, parts, dict(record.fields)))
    return prepared


async def prepare_request_history(
    platform: Platform, records: list[Record], *, language: str = "en"
) -> list[Record]:
    """What the chat turn calls: each unseen thumbnail swapped for its original (the best copy;
    margin.images.originals), `ensure_request_ready`, then `prepare_history_for_model`."""
    await catalogue.ensure(platform, language)
    records = await image_originals.for_request(platform.local, records)
    await ensure_request_ready(platform, records)
    return prepare_history_for_model(records, language=language)


def unseen_image_labels(records: list[Record], *, language: str = "en") -> list[str]:
    """The `[Figure N: ...]` labels of the UNSEEN images, numbered as `prepare_history_for_model`
    numbers them: what a model that refuses images gets in their place (margin.turn.chat rule 10),
    so a notice can name exactly what was sent."""
    number = 0
    labels: list[str] = []
    for record in records:
        if not has_images(record):
            continue
        seen = is_seen(record)
        for part in record.parts:
            if not is_image_part(part):
                continue
            number += 1
            if not seen:
                labels.append(figure_label(number, part.get("meta"), language=language))
    return labels
