"""Request-side context slimming: what an attachment costs on each request (docs/storage-model.md,
"Request-side context slimming").

Storage keeps every attachment whole; this module decides what the MODEL gets for it. Sans-IO:
records in, records out, never mutated.

Rules:
1. The text sent for an attachment (`sent_text`) is its stored text, or, once it has a summary
   (`attachment.summary = {text, model, chars, createdAt}`, written by `margin.page.summaries`), its
   header followed by a note (`py_summary_note`, in the model language) and the summary. Parts
   that are not text (`image_url`) are kept, in order.
2. Aging (`age_stale_attachments`): an attachment is COLD when it is not the newest attachment of
   the conversation, at least `AGING_MIN_USER_TURNS` questions were asked after it, and what
   would be sent for it is at least `AGING_MIN_CHARS` characters. A cold attachment goes to the
   model as one line (`stub_text`) that names it (title, URL, size) and says it was shortened.
   Records that are not attachments (a question's images included) are never aged.
3. The stub depends only on the record's stored `attachment` object (and the model language, whose
   catalogue gives its words: margin.i18n.catalogue), so the same record gives the
   same bytes on every request. An attachment only ever turns cold (questions are only added
   after it), so after that one-time break each request's messages extend the previous
   request's byte for byte, and the provider's prompt cache keeps hitting.
4. The panel shows which cards are stubbed with the same rule (extension/panel/slimming.js, tested
   against this module); the thresholds reach it through `margin.app.contract`.
5. Trimming (`trim_for_overflow`, for a turn the provider refused as too long, `margin.turn.rescue`)
   shortens the STORED text of the large attachments that go to the model whole (not cold, no
   summary: what is sent for those is already short), so the record the rescue stores after a
   successful retry is exactly what the model read. With the provider's numbers, the request
   shrinks by (requested - limit) tokens plus `TRIM_HEADROOM` of the limit, at `CHARS_PER_TOKEN`
   characters a token, taken from the largest bodies first (all cut down to one common length);
   without numbers, each large body is cut to `TRIM_FRACTION_WITHOUT_NUMBERS` of itself. A body
   keeps at least `TRIM_KEEP_MIN_CHARS`, is cut at a paragraph or line end, and the header gains
   the line `Note: shortened to fit the model's context: the first N of M characters.` (in the
   model language: `py_trim_note_start` and `py_trim_note`; a note in that language or English
   is replaced, not repeated);
   `attachment.chars` becomes N and `attachment.trimmedFrom` keeps M (the length before the first
   trim). Nothing to trim = nothing changed.
"""

from __future__ import annotations

import math
from typing import Any

from ..i18n import catalogue
from ..providers.overflow import Overflow
from ..storage.history import PAGE_CONTEXT_PREFIX, Record

AGING_MIN_CHARS = 8_000
AGING_MIN_USER_TURNS = 3

# Rule 5. ~4 characters a token is right for Latin text and cuts more than needed for others,
# which is the safe side: the rescue retries once only.
CHARS_PER_TOKEN = 4
TRIM_HEADROOM = 0.15
TRIM_MIN_BODY_CHARS = 2_000  # a smaller body is not worth cutting
TRIM_KEEP_MIN_CHARS = 1_000
TRIM_FRACTION_WITHOUT_NUMBERS = 0.5


def _meta(record: Record) -> dict[str, Any]:
    meta = record.fields.get("attachment")
    return meta if isinstance(meta, dict) else {}


def summary_of(record: Record) -> dict[str, Any] | None:
    """The attachment's stored summary, when it has a usable one."""
    summary = _meta(record).get("summary")
    if isinstance(summary, dict) and isinstance(summary.get("text"), str) and summary["text"].strip():
        return summary
    return None


def _header_of(text: str) -> str:
    return text.split("\n\n", 1)[0]


def _with_text(record: Record, text: str) -> Record:
    """`record` with its text parts replaced by `text`; image parts kept in order after it."""
    if isinstance(record.content, str):
        return Record(record.role, text, dict(record.fields))
    others = [dict(part) for part in record.content if part.get("type") != "text"]
    return Record(record.role, [{"type": "text", "text": text}, *others], dict(record.fields))


def sent_text(record: Record, language: str = "en") -> str:
    """Rule 1: the text the model gets for an attachment that is not cold."""
    summary = summary_of(record)
    if summary is None:
        return record.text
    words = catalogue.words(language)
    original = _meta(record).get("chars")
    size = words.text("py_summary_size", words.number(original)) if isinstance(original, int) else ""
    model = summary.get("model") or words.text("py_summary_the_model")
    note = words.text("py_summary_note", size, model)
    return f"{_header_of(record.text)}\n{note}\n\n{summary['text'].strip()}"


def with_sent_text(record: Record, language: str = "en") -> Record:
    """The attachment as the model gets it when it is not cold (its summary, when it has one)."""
    return _with_text(record, sent_text(record, language)) if summary_of(record) is not None else record


def stub_text(record: Record, language: str = "en") -> str:
    """Rule 3: one deterministic line for a cold attachment, in the words of `language`."""
    words = catalogue.words(language)
    meta = _meta(record)
    title = " ".join(str(meta.get("title") or "").split()) or words.text("py_untitled")
    url = str(meta.get("url") or "")
    chars = meta.get("chars")
    size = (
        words.text("py_chars", words.number(chars))
        if isinstance(chars, int) and not isinstance(chars, bool)
        else ""
    )
    details = words.text("py_list_separator").join(part for part in (url, size) if part)
    where = words.text("py_parenthesized", details) if details else ""
    return f"{PAGE_CONTEXT_PREFIX} {words.text('py_stub', title, where)}"


def aged_indices(records: list[Record], language: str = "en") -> list[int]:
    """Rule 2: the indices of the cold attachments."""
    attachments = [i for i, r in enumerate(records) if r.is_attachment]
    if not attachments:
        return []
    newest = attachments[-1]
    questions_after = [0] * len(records)
    count = 0
    for i in range(len(records) - 1, -1, -1):
        questions_after[i] = count
        if records[i].is_question:
            count += 1
    return [
        i
        for i in attachments
        if i != newest
        and questions_after[i] >= AGING_MIN_USER_TURNS
        and len(sent_text(records[i], language)) >= AGING_MIN_CHARS
    ]


def age_stale_attachments(records: list[Record], language: str = "en") -> list[Record]:
    """Records as the model gets them: cold attachments as stubs (in the words of `language`),
    the others as `sent_text`."""
    cold = set(aged_indices(records, language))
    out: list[Record] = []
    for i, record in enumerate(records):
        if i in cold:
            out.append(_with_text(record, stub_text(record, language)))
        elif record.is_attachment:
            out.append(with_sent_text(record, language))
        else:
            out.append(record)
    return out


# -- trimming (rule 5) ----------------------------------------------------------------------


def _body_of(text: str) -> str:
    return text.split("\n\n", 1)[1] if "\n\n" in text else ""


def _trimmable(records: list[Record], language: str) -> list[int]:
    cold = set(aged_indices(records, language))
    return [
        i
        for i, record in enumerate(records)
        if record.is_attachment
        and i not in cold
        and summary_of(record) is None
        and len(_body_of(record.text)) >= TRIM_MIN_BODY_CHARS
    ]


def _chars_to_cut(records: list[Record], overflow: Overflow, language: str) -> int | None:
    """How many characters the request must lose, from the provider's numbers (None: no numbers)."""
    excess = overflow.excess_tokens
    if excess is None:
        return None
    requested = overflow.requested_tokens
    if requested is None or overflow.limit_tokens is None:
        # Ollama names only the excess: the request's own size stands in for what was asked.
        sent = sum(len(r.text) for r in age_stale_attachments(records, language))
        requested = max(sent // CHARS_PER_TOKEN, excess)
    limit = requested - excess
    tokens = requested - limit * (1 - TRIM_HEADROOM)
    return math.ceil(tokens * CHARS_PER_TOKEN)


def _common_length(bodies: list[int], cut: int) -> int:
    """The longest length L such that cutting every body down to L loses at least `cut`
    characters (never below TRIM_KEEP_MIN_CHARS): the largest bodies give first."""

    def lost(length: int) -> int:
        return sum(max(0, body - length) for body in bodies)

    low, high = TRIM_KEEP_MIN_CHARS, max(bodies)
    if lost(low) <= cut:
        return low
    while low < high:  # lost() shrinks as the length grows: find the last length that loses enough
        middle = (low + high + 1) // 2
        if lost(middle) >= cut:
            low = middle
        else:
            high = middle - 1
    return low


def _cut_at_boundary(body: str, keep: int) -> str:
    """The beginning of `body`, at most `keep` characters, ending at a paragraph, line or word end
    when there is one in its last fifth."""
    if len(body) <= keep:
        return body
    window = body[:keep]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator)
        if at >= keep * 0.8:
            return window[:at].rstrip()
    return window.rstrip()


def trimmed_attachment(record: Record, keep: int, language: str = "en") -> Record:
    """The attachment with its body cut to at most `keep` characters and the header noting it."""
    text = record.text
    header, body = _header_of(text), _body_of(text)
    meta = _meta(record)
    kept = _cut_at_boundary(body, keep)
    original = meta.get("trimmedFrom")
    if not isinstance(original, int) or isinstance(original, bool):
        original = len(body)
    words = catalogue.words(language)
    starts = tuple({words.text("py_trim_note_start"), catalogue.words("en").text("py_trim_note_start")})
    lines = [line for line in header.split("\n") if not line.startswith(starts)]
    start = words.text("py_trim_note_start")
    lines.append(words.text("py_trim_note", start, words.number(len(kept)), words.number(original)))
    shortened = _with_text(record, "\n".join(lines) + "\n\n" + kept)
    return shortened.with_fields(attachment={**meta, "chars": len(kept), "trimmedFrom": original})


def trim_for_overflow(
    records: list[Record], overflow: Overflow, language: str = "en"
) -> tuple[list[Record], list[int]]:
    """Rule 5: the records with their large attachments cut to fit, and the indices cut."""
    candidates = _trimmable(records, language)
    if not candidates:
        return list(records), []
    bodies = {i: len(_body_of(records[i].text)) for i in candidates}
    cut = _chars_to_cut(records, overflow, language)
    if cut is None:
        keeps = {
            i: max(TRIM_KEEP_MIN_CHARS, int(size * TRIM_FRACTION_WITHOUT_NUMBERS))
            for i, size in bodies.items()
        }
    else:
        # Each cut page gains its Note line (under 100 characters): count those too.
        length = _common_length(list(bodies.values()), cut + 100 * len(candidates))
        keeps = dict.fromkeys(bodies, length)
    out = list(records)
    trimmed: list[int] = []
    for i in candidates:
        if keeps[i] < bodies[i]:
            out[i] = trimmed_attachment(records[i], keeps[i], language)
            trimmed.append(i)
    return out, trimmed
