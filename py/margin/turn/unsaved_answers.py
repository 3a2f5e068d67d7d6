"""An answer whose final save failed: kept on screen, kept in chrome.storage.session, saved again
on "Retry save" (docs/protocol.md, "A turn"; docs/storage-model.md, "An answer that was not saved").

Rules:
1. A turn whose final write is refused (`storage_full`, `storage_failed`, `not_finite_number`, or
   `conversation_changed`) does not drop its answer: its one terminal event is
   `{event: "error", error: {code, message}, unsaved: Unsaved}`, the code the cause's own, and
   `Unsaved = {id, question: {index, createdAt, digest}, answer: Record}` carries the answer record
   whole (`digest`: sha256 of the question's text).
2. The same entry is kept in chrome.storage.session under `unsavedAnswers` (a list, oldest
   first), so a panel reload or a stopped worker loses nothing: that area is not the one that is
   full, outlives the panel and the worker, and is cleared when the browser closes. A refusal
   there is swallowed: the panel still holds the event's copy.
3. `history.save_answer {unsaved}` ("Retry save") puts the answer right after its question,
   exactly once, in a fresh read under the history lock:
   - the question is the user record with that createdAt and digest, wherever it now sits;
   - if an assistant record with the answer's createdAt and text follows it, it is already saved:
     nothing is written (`{saved: true, already: true}`), the retry was pressed twice;
   - if nothing but waiting attachments follows it, the answer goes in before them
     (`{saved: true, already: false}`);
   - another answer or question after it is `answer_question_moved`, no such question
     `answer_question_gone`: nothing is written, the entry stays for Copy.
   Saved (or found saved), the entry leaves `unsavedAnswers`.
4. What the panel sends back is input: `answer` must be an assistant record with text content,
   and only the fields a turn writes are kept (createdAt, model, usage, cost, stopped,
   incomplete, responseId, responseProviderId, toolRounds: margin.sandbox.tool_loop rule 5; an answer
   of tool rounds only may have no text), each of its type, numbers finite
   (`margin.base.wire`); anything else is `bad_payload`.
5. A whole answer (neither stopped nor incomplete) stamps the images of the question it answers
   as seen, as the turn's own save would have (chat rule 4). Attachments a rescue shortened are
   not shortened again: only an optimisation is lost, the next turn shortens them anew.
6. A turn that runs code for the model (margin.sandbox.tool_turn) keeps its answer so far here too,
   marked `inProgress` and `incomplete`, before each call goes to the panel and after each
   result (`keep_progress`, one entry per turn, replaced in place): a worker that stops
   mid-call (Chrome ends it, the extension reloads) loses none of the rounds already run; the
   panel shows the entry once the turn is over, with "Retry save". The turn removes it
   (`forget`) once its own save has succeeded or reported.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from typing import Any

from ..base import wire
from ..base.errors import MarginError, StorageError
from ..base.sentences import say, sentence
from ..images import parts as images
from ..platform.ports import Platform
from ..providers import usage as token_usage
from ..sandbox.tool_loop import is_tool_rounds
from ..storage import versions
from ..storage.history import Record, read_history, write_history
from ..storage.keys import UNSAVED_ANSWERS, lock_for
from ..storage.stored_values import Read, Unreadable, park, read_list

# The answer fields a turn writes (rule 4), and what each must be.
_STRING_FIELDS = ("model", "responseId", "responseProviderId")
_FLAG_FIELDS = ("stopped", "incomplete")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry(question: Record, index: int, answer: Record) -> dict[str, Any]:
    """Rule 1's `Unsaved` for `answer`, which answers `question` (at `index` of the conversation)."""
    return {
        "id": uuid.uuid4().hex,
        "question": {
            "index": index,
            "createdAt": question.fields.get("createdAt"),
            "digest": digest(question.text),
        },
        "answer": answer.to_json(),
    }


def error_event(cause: MarginError, unsaved: dict[str, Any]) -> dict[str, Any]:
    """The turn's terminal event when its answer could not be stored (rule 1)."""
    message = say(sentence("py_error_answer_kept", cause.sentence or cause.message))
    return {"event": "error", "error": {"code": cause.code, "message": message}, "unsaved": unsaved}


async def keep(platform: Platform, unsaved: dict[str, Any]) -> None:
    """Rule 2: add the entry to `unsavedAnswers` in chrome.storage.session; never raises."""
    with contextlib.suppress(StorageError):
        async with lock_for(platform.session):
            read = await _entries(platform)
            await platform.session.set(
                {UNSAVED_ANSWERS: [*read.value, unsaved], **park(UNSAVED_ANSWERS, read)}
            )


async def keep_progress(platform: Platform, unsaved: dict[str, Any]) -> None:
    """Rule 6: the running turn's entry, put in place of its earlier copy (same id); never raises."""
    with contextlib.suppress(StorageError):
        async with lock_for(platform.session):
            read = await _entries(platform)
            rest = [e for e in read.value if e.get("id") != unsaved["id"]]
            entry = {**unsaved, "inProgress": True}
            await platform.session.set({UNSAVED_ANSWERS: [*rest, entry], **park(UNSAVED_ANSWERS, read)})


async def forget(platform: Platform, unsaved_id: str) -> None:
    """Rule 6: the running turn's entry leaves once its answer is stored (or reported unsaved)."""
    await _forget(platform, unsaved_id)


def _entry(value: Any) -> tuple[dict[str, Any], bool]:
    if not isinstance(value, dict):
        raise Unreadable("an unsaved answer is not an object")
    return value, False


async def _entries(platform: Platform) -> Read:
    """The stored list, read by margin.storage.stored_values (what is not an entry is parked on the next
    write, never dropped)."""
    return read_list((await platform.session.get([UNSAVED_ANSWERS])).get(UNSAVED_ANSWERS), _entry)


async def _forget(platform: Platform, unsaved_id: str) -> None:
    with contextlib.suppress(StorageError):
        async with lock_for(platform.session):
            read = await _entries(platform)
            rest = [e for e in read.value if e.get("id") != unsaved_id]
            if len(rest) != len(read.value):
                await platform.session.set({UNSAVED_ANSWERS: rest, **park(UNSAVED_ANSWERS, read)})


# -- Retry save ------------------------------------------------------------------------------


def _bad(what: str) -> MarginError:
    return MarginError.said("bad_payload", "py_error_answer_unreadable", what)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= wire.MAX_SAFE_INTEGER


def checked_answer(value: Any) -> Record:
    """Rule 4: the answer record as the panel sent it back, or `bad_payload`."""
    if not isinstance(value, dict) or value.get("role") != "assistant":
        raise _bad("not an answer")
    content = value.get("content")
    rounds = value.get("toolRounds")
    if rounds is not None and not is_tool_rounds(rounds):
        raise _bad("toolRounds")
    if not isinstance(content, str) or not (content or rounds):
        raise _bad("no text")
    fields: dict[str, Any] = {}
    if not _count(value.get("createdAt")):
        raise _bad("no time")
    fields["createdAt"] = value["createdAt"]
    for key in _STRING_FIELDS:
        if key in value:
            if not isinstance(value[key], str):
                raise _bad(key)
            fields[key] = value[key]
    for key in _FLAG_FIELDS:
        if key in value:
            if not isinstance(value[key], bool):
                raise _bad(key)
            fields[key] = value[key]
    if "usage" in value:
        kept = token_usage.clean(value["usage"])
        if kept is None:
            raise _bad("usage")
        fields["usage"] = kept
    if "cost" in value:
        cost = wire.finite_or_none(value["cost"])
        if cost is None or cost < 0:
            raise _bad("cost")
        fields["cost"] = cost
    if rounds is not None:
        fields["toolRounds"] = rounds
    return Record("assistant", content, fields)


def _question_ident(value: Any) -> tuple[Any, str]:
    if not isinstance(value, dict) or not isinstance(value.get("digest"), str):
        raise _bad("no question")
    return value.get("createdAt"), value["digest"]


def question_gone() -> MarginError:
    return MarginError.said("answer_question_gone", "py_error_answer_question_gone")


def question_moved() -> MarginError:
    return MarginError.said("answer_question_moved", "py_error_answer_question_moved")


def _same_answer(record: Record, answer: Record) -> bool:
    return (
        record.role == "assistant"
        and record.text == answer.text
        and record.fields.get("createdAt") == answer.fields.get("createdAt")
    )


async def save(platform: Platform, unsaved: Any) -> dict[str, Any]:
    """Rule 3: store the unsaved answer after its question, once."""
    if not isinstance(unsaved, dict):
        raise _bad("no answer")
    answer = checked_answer(unsaved.get("answer"))
    created_at, question_digest = _question_ident(unsaved.get("question"))
    async with lock_for(platform.local):
        read = await read_history(platform.local)
        records = read.records
        at = next(
            (
                i
                for i in range(len(records) - 1, -1, -1)
                if records[i].is_question
                and records[i].fields.get("createdAt") == created_at
                and digest(records[i].text) == question_digest
            ),
            None,
        )
        if at is None:
            raise question_gone()
        after = records[at + 1 :]
        answered = next((r for r in after if not r.is_attachment), None)
        already = answered is not None and _same_answer(answered, answer)
        if not already:
            if answered is not None:
                raise question_moved()
            whole = not answer.fields.get("stopped") and not answer.fields.get("incomplete")
            head = images.stamp_images_seen(records[: at + 1]) if whole else records[: at + 1]
            question, stored = versions.settle(head[-1], answer)  # its pending versions come with it
            await write_history(platform.local, [*head[:-1], question, stored, *after], read)
    if isinstance(unsaved.get("id"), str):
        await _forget(platform, unsaved["id"])
    return {"saved": True, "already": already}


async def handle_save_answer(platform: Platform, payload: dict) -> dict[str, Any]:
    """`history.save_answer {unsaved}`: "Retry save" (rule 3)."""
    return await save(platform, payload.get("unsaved"))
