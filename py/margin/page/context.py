"""Page-context records: what "Attach page" and "Explain" put into the conversation.

The concept (docs/storage-model.md, "One global, flat history"): an attachment is a user
record of the one flat history whose text starts with `PAGE_CONTEXT_PREFIX` (margin.storage.history),
shown as a card, not a bubble, and answered by the next question.

Rules:
1. The text the model reads is the record's `content`: a header (what it is, the title, the URL,
   when it was attached, and a note when something was cut or is missing; in the words of the
   model language's catalogue, margin.i18n.catalogue, after the fixed PAGE_CONTEXT_PREFIX), a blank line, then
   the body (the page as compact Markdown, a transcript with `[m:ss]` times, or a selection).
   The same inputs give the same bytes: a stable request prefix for the provider's cache.
2. `attachment` = `{kind: "page" | "video" | "selection" | "pdf", title, url, site, chars,
   truncated, originalChars, method, capturedAt}`: what the card shows without parsing the text;
   a PDF's also holds `pages` (its page count) and `bytes` (its size; margin.page.pdf).
3. A video record is stamped `videoSrc` (what the capsules of later answers seek) and `video`
   = `{tabId, windowId, pageUrl, src, index, duration, title, transcript: {source, label, lang,
   cues}}`: enough to find the tab again, or to reopen the page at a time.
4. Nothing here reads a tab or storage: `margin.page.attach` and `margin.turn.explain` do, and hand the
   payload over.
5. An attachment is named, across requests and ports, by its `attachment.capturedAt` and
   `attachment.url` (`identity_of`, `find_attachment`); two records with the same pair are the
   same attachment, and the newest holding it is the one meant.
6. A fresh copy (`fresh_copy`, "Attach again") is the same record attached now: a new
   `capturedAt`/`createdAt` and header time, everything else of the header and body kept, and
   none of what slimming added to the old one (`summary`, `trimmedFrom`) nor `imagesSeen`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from ..base.errors import MarginError
from ..i18n import catalogue
from ..storage.history import PAGE_CONTEXT_PREFIX, Record
from .text import MAX_PAGE_CHARS, site_of

KIND_KEYS = {
    "page": "py_header_page",
    "video": "py_header_video",
    "selection": "py_header_selection",
    "pdf": "py_header_pdf",
}
SELECTION_MAX_CHARS = 20_000
_ATTACHED_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def attached_at(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _one_line(text: Any, limit: int = 300) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def header(
    kind: str, title: str, url: str, captured_at: int, notes: list[str], *, language: str = "en"
) -> str:
    """Rule 1's header, in the words of `language` (margin.i18n.catalogue); the prefix is not a word."""
    words = catalogue.words(language)
    name = _one_line(title) or site_of(url) or words.text("py_untitled")
    lines = [
        f"{PAGE_CONTEXT_PREFIX} {words.text('py_header_title', words.text(KIND_KEYS[kind]), name)}",
        words.text("py_header_url", url),
        words.text("py_header_attached", attached_at(captured_at)),
    ]
    lines += [words.text("py_header_note", note) for note in notes]
    return "\n".join(lines)


def truncation_note(shown: int, original: int, *, language: str = "en") -> str:
    words = catalogue.words(language)
    return words.text(
        "py_note_truncated", words.number(shown), words.number(original), words.number(MAX_PAGE_CHARS)
    )


def attachment_record(
    payload: dict[str, Any],
    *,
    captured_at: int,
    tab: dict[str, Any] | None = None,
    language: str = "en",
) -> Record:
    """The record for an extracted page (`margin.page.attach.page_payload`'s result).

    `payload` = {kind, title, url, body, method, truncated, originalChars, notes, video?}; `tab` =
    {id, windowId} of the tab it was read from (video records keep it to find the tab again)."""
    kind = payload["kind"]
    title = _one_line(payload.get("title"))
    url = str(payload.get("url") or "")
    body = str(payload.get("body") or "")
    notes = [str(n) for n in payload.get("notes") or []]
    text = header(kind, title, url, captured_at, notes, language=language) + "\n\n" + body
    fields: dict[str, Any] = {
        "attachment": {
            "kind": kind,
            "title": title,
            "url": url,
            "site": site_of(url),
            "chars": len(body),
            "truncated": bool(payload.get("truncated")),
            "originalChars": int(payload.get("originalChars") or len(body)),
            "method": payload.get("method") or "",
            "capturedAt": captured_at,
        },
        "createdAt": captured_at,
    }
    pdf = payload.get("pdf")
    if kind == "pdf" and isinstance(pdf, dict):
        fields["attachment"].update(pages=int(pdf.get("pages") or 0), bytes=int(pdf.get("bytes") or 0))
    video = payload.get("video")
    if kind == "video" and isinstance(video, dict):
        fields["videoSrc"] = video.get("src") or url
        fields["video"] = {
            **video,
            "pageUrl": url,
            "tabId": (tab or {}).get("id"),
            "windowId": (tab or {}).get("windowId"),
        }
    return Record("user", text, fields)


def selection_record(
    selection: str, *, title: str, url: str, captured_at: int, language: str = "en"
) -> Record:
    """The attachment "Explain" sends: the selected text and the page it came from."""
    text = " ".join(selection.split()) if "\n" not in selection else selection.strip()
    notes = []
    original = len(text)
    if original > SELECTION_MAX_CHARS:
        text = text[:SELECTION_MAX_CHARS].rstrip() + "…"
        words = catalogue.words(language)
        notes.append(
            words.text("py_note_selection_cut", words.number(SELECTION_MAX_CHARS), words.number(original))
        )
    payload = {
        "kind": "selection",
        "title": title,
        "url": url,
        "body": text,
        "method": "selection",
        "truncated": bool(notes),
        "originalChars": original,
        "notes": notes,
    }
    return attachment_record(payload, captured_at=captured_at, language=language)


def same_attachment(a: Record, b: Record) -> bool:
    """The same page attached twice (the header's time aside)."""
    if not (a.is_attachment and b.is_attachment):
        return False
    meta_a, meta_b = a.fields["attachment"], b.fields["attachment"]
    return (
        meta_a.get("kind") == meta_b.get("kind")
        and meta_a.get("url") == meta_b.get("url")
        and meta_a.get("name") == meta_b.get("name")
        and _body_of(a) == _body_of(b)
        and a.fields.get("file") == b.fields.get("file")  # a data file's head alone is not the file
    )


def _body_of(record: Record) -> str:
    return record.text.split("\n\n", 1)[-1]


def trailing_attachments(records: list[Record]) -> list[Record]:
    """The attachments after the last question or answer: they wait for the next question."""
    run: list[Record] = []
    for record in reversed(records):
        if not record.is_attachment:
            break
        run.append(record)
    return run[::-1]


def card(record: Record) -> dict[str, Any]:
    """What a reply tells the panel about an attachment it just added."""
    meta = record.fields["attachment"]
    keys = ("kind", "title", "url", "site", "chars", "truncated", "capturedAt")
    shown = {key: meta.get(key) for key in keys}
    if meta.get("kind") == "pdf":
        shown.update(pages=meta.get("pages"), bytes=meta.get("bytes"))
    return shown


def identity_of(payload: Any) -> tuple[int, str]:
    """Rule 5: `{capturedAt, url}` of a request, checked."""
    captured_at = payload.get("capturedAt") if isinstance(payload, dict) else None
    url = payload.get("url") if isinstance(payload, dict) else None
    if not isinstance(captured_at, int) or isinstance(captured_at, bool) or not isinstance(url, str):
        raise MarginError.said("bad_payload", "py_error_which_page")
    return captured_at, url


def find_attachment(records: list[Record], captured_at: int, url: str) -> int | None:
    """Rule 5: the index of the newest attachment with this `capturedAt` and `url`, or None."""
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        if record.is_attachment:
            meta = record.fields["attachment"]
            if meta.get("capturedAt") == captured_at and meta.get("url") == url:
                return index
    return None


SLIMMING_FIELDS = ("summary", "trimmedFrom")


def fresh_copy(record: Record, captured_at: int) -> Record:
    """Rule 6: `record` attached again at `captured_at`."""
    head, separator, body = record.text.partition("\n\n")
    # The header's time is found by its shape, so a header in any language gets the new one.
    lines = head.split("\n")
    for i in range(1, len(lines)):
        if _ATTACHED_TIME.search(lines[i]):
            lines[i] = _ATTACHED_TIME.sub(attached_at(captured_at), lines[i], count=1)
            break
    text = "\n".join(lines) + separator + body
    meta = {k: v for k, v in record.fields["attachment"].items() if k not in SLIMMING_FIELDS}
    meta["capturedAt"] = captured_at
    fields = {k: v for k, v in record.fields.items() if k != "imagesSeen"}
    fields.update(attachment=meta, createdAt=captured_at)
    if isinstance(record.content, str):
        return Record(record.role, text, fields)
    others = [dict(part) for part in record.content if part.get("type") != "text"]
    return Record(record.role, [{"type": "text", "text": text}, *others], fields)
