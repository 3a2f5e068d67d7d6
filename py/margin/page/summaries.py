"""One summary pass for a long attachment (docs/protocol.md, "A summary"; docs/storage-model.md,
"Request-side slimming").

An attachment with more characters than the `summarizeAboveChars` setting (margin.settings.options, rule 6)
gets ONE compression pass by the active provider after it is stored; from then on the summary is
what requests carry for it (margin.turn.slimming, rule 1), while storage keeps the raw text, which the
panel can still show.

Rules:
1. The record is named by `attachment.capturedAt` + `attachment.url` (`page_context.find_attachment`).
2. Never twice: a record that has a `summary` is refused (`already_summarized`); a record being
   summarized in this process is refused to a second port (`summary_in_progress`).
3. One request to the active provider: an instruction (keep facts, numbers, names and headings;
   Markdown; about a tenth of the page, at most `SUMMARY_MAX_CHARS`) and the record's stored text.
   The record's content is never changed: image parts, if any, stay as they are.
4. Events: `progress {chars}` while the summary streams (at most one per `PROGRESS_STEP`
   characters), then ONE terminal event: `done {chars}`, `cancelled`, or
   `error {error: {code, message}}`.
5. Only a whole, usable answer is written (not empty, not cut off, shorter than the page), under
   `storage.lock_for(local)`, into a fresh read of `history`: `attachment.summary = {text, model,
   chars, createdAt}` on the same record, if it is still there, still has no summary, and the
   pass was not stopped. Every other outcome (a provider error, a useless answer, a stop, a closed
   port, a refused write) leaves storage exactly as it was.
6. Stop is prompt: every wait on the network races the stop event; `emit` failing (the panel's
   port is gone) is a stop too. The body has an idle timeout (`BODY_IDLE_TIMEOUT`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..base import clock
from ..base.errors import MarginError, ProviderError
from ..base.sentences import sentence
from ..base.stoppable import Emit, Stopped, guarded_emit, race
from ..platform.ports import Platform
from ..providers import provider_module
from ..settings import options
from ..storage.history import HistoryRead, Record, read_history, write_history
from ..storage.keys import lock_for
from .context import find_attachment, identity_of

# Seconds without a body chunk before the summary is given up as timed out.
BODY_IDLE_TIMEOUT = 60.0
# A progress event at most every this many characters of summary.
PROGRESS_STEP = 250
SUMMARY_MIN_CHARS = 1_500
SUMMARY_MAX_CHARS = 6_000

# (capturedAt, url) of the records being summarized in this process (rule 2).
_running: set[tuple[int, str]] = set()

# -- the request, sans-IO --------------------------------------------------------------------


def target_chars(page_chars: int) -> int:
    """About a tenth of the page, within [SUMMARY_MIN_CHARS, SUMMARY_MAX_CHARS]."""
    return max(SUMMARY_MIN_CHARS, min(SUMMARY_MAX_CHARS, page_chars // 1000 * 100))


def instruction(page_chars: int) -> str:
    target = target_chars(page_chars)
    return (
        "You compress a web page so that later questions about it can be answered from your "
        "summary alone. The first lines of the user's message name the page (title, URL, when it "
        "was attached); the page's text follows them.\n"
        f"Write a summary of about {target:,} characters, never more than {SUMMARY_MAX_CHARS:,}, "
        "as Markdown:\n"
        "- keep the page's headings, in their order, as Markdown headings;\n"
        "- keep every fact, number, date, amount, name, quotation and conclusion that matters; "
        "keep units and exact figures;\n"
        "- leave out navigation, advertising, repetition and filler;\n"
        "- write in the page's own language; add nothing that is not in the page.\n"
        "Answer with the summary only: no preface, no closing remark."
    )


def summary_request(record: Record) -> list[Record]:
    """The one request of a pass (rule 3): the instruction, then the stored text."""
    chars = len(record.text.split("\n\n", 1)[-1])
    return [Record("system", instruction(chars)), Record("user", record.text)]


def usable_summary(text: str, record: Record, finish_reason: str | None) -> str:
    """The summary to store, or the MarginError that says why it is not usable (rule 5)."""
    summary = text.strip()
    if not summary:
        raise MarginError.said("summary_empty", "py_error_summary_empty")
    if finish_reason == "length":
        raise MarginError.said("summary_cut", "py_error_summary_cut")
    body = record.text.split("\n\n", 1)[-1]
    if len(summary) >= len(body):
        raise MarginError.said("summary_not_shorter", "py_error_summary_not_shorter")
    return summary


def with_summary(record: Record, summary: dict[str, Any]) -> Record:
    """The same record, its `attachment` gaining `summary`; content untouched."""
    return record.with_fields(attachment={**record.fields["attachment"], "summary": summary})


def has_summary(record: Record) -> bool:
    return record.fields["attachment"].get("summary") is not None


# -- the pass ------------------------------------------------------------------------------


async def summarize(platform: Platform, ident: Any, emit: Emit, stop: asyncio.Event) -> None:
    """Run one summary pass for the attachment `ident` = {capturedAt, url}; events go to `emit`.
    Emits every MarginError itself and lets only bugs escape."""
    send = guarded_emit(emit, stop)
    try:
        key = identity_of(ident)
    except MarginError as error:
        send(_error_event(error))
        return
    if key in _running:
        send(_error_event(MarginError.said("summary_in_progress", "py_error_summary_in_progress")))
        return
    _running.add(key)
    try:
        send(await _run(platform, key, send, stop))
    finally:
        _running.discard(key)


async def _run(platform: Platform, key: tuple[int, str], send: Emit, stop: asyncio.Event) -> dict[str, Any]:
    """The pass; returns its terminal event (rule 4)."""
    stream = None
    try:
        provider = options.active_provider_of(await options.read_options(platform))
        record = _find(await read_history(platform.local), key)
        if has_summary(record):
            raise _already_summarized()
        module = provider_module(provider["type"])
        stream = await race(
            module.open_stream(platform.transport, provider, summary_request(record)),
            stop,
            what="the summary",
        )
        reported = 0
        while True:
            got = await race(
                stream.read(), stop, timeout=BODY_IDLE_TIMEOUT, what=sentence("py_error_waited_summary")
            )
            if got is None:
                break
            if len(stream.text) >= reported + PROGRESS_STEP:
                reported = len(stream.text)
                send({"event": "progress", "chars": reported})
            if stop.is_set():
                raise Stopped()
        text = usable_summary(stream.text, record, getattr(stream, "finish_reason", None))
        summary = {
            "text": text,
            "model": provider["model"],
            "chars": len(text),
            "createdAt": clock.now_ms(),
        }
        await _store(platform, key, summary, stop)
        return {"event": "done", "chars": len(text)}
    except Stopped:
        return {"event": "cancelled"}
    except MarginError as error:
        if isinstance(error, ProviderError) and error.code == "aborted":  # our own abort
            return {"event": "cancelled"}
        return _error_event(error)
    finally:
        if stream is not None:
            await stream.aclose()


async def _store(
    platform: Platform, key: tuple[int, str], summary: dict[str, Any], stop: asyncio.Event
) -> None:
    """Rule 5: the summary goes into a fresh read, onto the same record, or nowhere."""
    async with lock_for(platform.local):
        if stop.is_set():
            raise Stopped()
        read = await read_history(platform.local)
        index = find_attachment(read.records, *key)
        if index is None:
            raise _gone()
        record = read.records[index]
        if has_summary(record):
            raise _already_summarized()
        records = list(read.records)
        records[index] = with_summary(record, summary)
        await write_history(platform.local, records, read)  # a refusal: StorageError, nothing changed


def _find(read: HistoryRead, key: tuple[int, str]) -> Record:
    index = find_attachment(read.records, *key)
    if index is None:
        raise _gone()
    return read.records[index]


def _gone() -> MarginError:
    return MarginError.said("attachment_gone", "py_error_summary_page_gone")


def _already_summarized() -> MarginError:
    return MarginError.said("already_summarized", "py_error_already_summarized")


def _error_event(error: MarginError) -> dict[str, Any]:
    return {"event": "error", "error": error.to_json()}
