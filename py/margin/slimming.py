"""Request-side context slimming: what an attachment costs on each request (docs/storage-model.md,
"Request-side context slimming").

Storage keeps every attachment whole; this module decides what the MODEL gets for it. Sans-IO:
records in, records out, never mutated.

Rules:
1. The text sent for an attachment (`sent_text`) is its stored text, or, once it has a summary
   (`attachment.summary = {text, model, chars, createdAt}`, written by `margin.summaries`), its
   header followed by the summary. Parts that are not text (`image_url`) are kept, in order.
2. Aging (`age_stale_attachments`): an attachment is COLD when it is not the newest attachment of
   the conversation, at least `AGING_MIN_USER_TURNS` questions were asked after it, and what
   would be sent for it is at least `AGING_MIN_CHARS` characters. A cold attachment goes to the
   model as one line (`stub_text`) that names it (title, URL, size) and says it was shortened.
   Records that are not attachments (a question's images included) are never aged.
3. The stub depends only on the record's stored `attachment` object, so the same record gives the
   same bytes on every request. An attachment only ever turns cold (questions are only added
   after it), so after that one-time break each request's messages extend the previous
   request's byte for byte, and the provider's prompt cache keeps hitting.
4. The panel shows which cards are stubbed with the same rule (extension/panel/slimming.js, tested
   against this module); the thresholds reach it through `margin.contract`.
"""

from __future__ import annotations

from typing import Any

from .history import PAGE_CONTEXT_PREFIX, Record

AGING_MIN_CHARS = 8_000
AGING_MIN_USER_TURNS = 3


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


def sent_text(record: Record) -> str:
    """Rule 1: the text the model gets for an attachment that is not cold."""
    summary = summary_of(record)
    if summary is None:
        return record.text
    original = _meta(record).get("chars")
    size = f" of its {original:,} characters" if isinstance(original, int) else ""
    return (
        f"{_header_of(record.text)}\n"
        f"Note: this is a summary{size}, made by {summary.get('model') or 'the model'}; "
        "the user can see the full text.\n\n"
        f"{summary['text'].strip()}"
    )


def with_sent_text(record: Record) -> Record:
    """The attachment as the model gets it when it is not cold (its summary, when it has one)."""
    return _with_text(record, sent_text(record)) if summary_of(record) is not None else record


def stub_text(record: Record) -> str:
    """Rule 3: one deterministic line for a cold attachment."""
    meta = _meta(record)
    title = " ".join(str(meta.get("title") or "").split()) or "untitled"
    url = str(meta.get("url") or "")
    chars = meta.get("chars")
    size = f", {chars:,} characters" if isinstance(chars, int) and not isinstance(chars, bool) else ""
    where = f" ({url}{size})" if url else (f" ({size[2:]})" if size else "")
    return (
        f"{PAGE_CONTEXT_PREFIX} Shortened: “{title}”{where} was attached earlier in this "
        "conversation; its text is left out here to keep the request short. If it is needed, ask "
        "the user to attach it again."
    )


def aged_indices(records: list[Record]) -> list[int]:
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
        and len(sent_text(records[i])) >= AGING_MIN_CHARS
    ]


def age_stale_attachments(records: list[Record]) -> list[Record]:
    """Records as the model gets them: cold attachments as stubs, the others as `sent_text`."""
    cold = set(aged_indices(records))
    out: list[Record] = []
    for i, record in enumerate(records):
        if i in cold:
            out.append(_with_text(record, stub_text(record)))
        elif record.is_attachment:
            out.append(with_sent_text(record))
        else:
            out.append(record)
    return out
