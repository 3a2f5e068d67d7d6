"""A chat turn (docs/protocol.md, "A turn"): store the question, stream the answer, store it.

Rules:
1. The user's message is stored BEFORE the request goes out (`started` says so); if anything
   later fails, it stays stored and the panel shows it with the error.
2. One send = one user bubble: regenerate drops the old answer, edit drops the edited bubble and
   everything after it, each before the new turn (`margin.storage.history`); what they drop is
   kept as versions, pending on the question and moved onto the new answer in the write that
   stores it (`margin.storage.versions` rules 2 and 3).
3. The answer is stored once, at the end: `done` -> the full answer; `stopped` -> what arrived,
   marked `stopped: True` (nothing if nothing arrived); `error` after some text arrived (a cut
   stream, an idle timeout, a broken transport) -> what arrived, marked `incomplete: True` so it
   never looks whole, then the error event; `error` before any text -> no answer record at all.
4. Images are stamped `imagesSeen` only after a successful answer, so a failed or stopped turn
   sends the pixels again next time.
5. Storage is never trusted across an await: the answer is put into a fresh read, right after this
   turn's question, and only if that conversation still holds the question (a clear or a session
   switch meanwhile means the answer is not saved into someone else's conversation). Pages
   attached while the answer streamed stay after it, for the next question; every
   read-modify-write of `history` holds `storage.lock_for(local)`.
6. Stop is prompt: every wait on the network races the stop event; the panel's port closing
   (emit failing) is a stop too. The body has an idle timeout (`BODY_IDLE_TIMEOUT`).
7. One turn at a time per process (`turn_running()` says whether one runs; `images.bound` waits
   for it). Every outcome (`Outcome`: done, stopped, failed) is ONE terminal event (`done`,
   `stopped` or `error`; storing the answer may still turn done or stopped into `error`); the
   stream is closed in one place, whatever the outcome. `run_turn` emits MarginErrors itself (a
   storage refusal is a `StorageError`) and lets only bugs escape.
8. Overflow rescue (`margin.turn.rescue`): a request the provider refuses as too long
   (`ContextOverflowError`), before any delta, is sent once more with the large attached pages
   shortened (the retry races stop and has the same idle timeout). The shortened attachments are
   stored only with the retry's successful answer, in the same write (rule 5's fresh read); a
   failed or stopped retry stores nothing of them. A second overflow is the error "This
   conversation is too long for <model> even with the attached pages shortened. ..."; with
   nothing to shorten, the provider's overflow sentence stands.
9. An agent provider (`margin.turn.agent`) is sent only what is new since its last stored
   answer, with that answer's `responseId`; a provider that forgot the conversation gets the
   full history once, after a `notice` event. A done answer stores the new response's id as
   `responseId`, with the provider's id as `responseProviderId` (a stopped one does not, so the
   next turn sends its text again).
10. Image refusal (`margin.providers.image_refusal`): a request refused with `images_refused`, before any
   delta, is sent once more with every image replaced by its `[Figure N: ...]` placeholder
   (request side only: storage keeps the pixels), after ONE `notice` event that says the model
   did not see them and names the exact text sent in their place (`images_not_seen_sentence`:
   the labels, never a description that was not sent), and the provider is marked
   `supportsImages: false`; later turns to it send placeholders at once, with no notice. A
   refusal of the retry is reported as itself.
11. A refused final write loses no answer (`margin.turn.unsaved_answers`): the error event carries the
   answer record (`unsaved`) with the cause's own code (`storage_full`, `storage_failed`,
   `not_finite_number`, `conversation_changed`), the entry is kept in chrome.storage.session, and
   "Retry save" (`history.save_answer`) stores it after its question once. Numbers stored with an
   answer are finite at the source (`margin.providers.usage`, `margin.base.wire`). A bug while the answer
   streams is a failure like any other (rule 3): what arrived is stored incomplete, then the
   `internal` error.
12. The `run_python` tool (margin.sandbox.tool_loop, margin.sandbox.tool_turn): when the setting
   `runPython` is not "off" and the provider has tool calling, each request offers it, described with the
   conversation's files (margin.page.sandbox_files). An answer that ends with calls is not the end of
   the turn: the calls run in the side panel's sandbox over this turn's port, and the request is
   sent again with the round (the model's text, its calls, their results) after the question,
   until the model answers in text or the bound is reached (tool_loop rule 2). Every round is
   stored with the answer (`toolRounds`), whether it is done, stopped or failed; the deltas of
   every request stream as one answer. Without the tool, stored rounds are sent as text. The
   user's MCP tools (margin.tools.turn_tools) are offered and called in the same loop, each call
   asked for first unless the user always allows that tool. Until
   the answer is stored, the rounds so far are kept in chrome.storage.session before and after
   each call (margin.turn.unsaved_answers rule 6), so a worker that stops mid-call loses none of them.
13. A turn that leaves images unseen (failed, stopped, or its answer not stored) has the
   originals (and thumbnails) of the parked images the next `images.bound` will shrink stored
   ahead once it has ended, in the background (margin.images.bound rule 7, margin.images.originals
   rule 7): never while a turn runs, never writing `history`, so the bound only checks them and
   writes the smaller `history`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from enum import Enum
from typing import Any

from ..base import clock
from ..base.errors import MarginError, ProviderError, StorageError, internal_error
from ..base.sentences import say
from ..base.stoppable import Stopped, guarded_emit, race
from ..i18n import catalogue
from ..images import bound as image_bound
from ..images import figures
from ..images import parts as images
from ..images.attachments import attachment_to_part, check_attachment
from ..page import sandbox_files
from ..platform.ports import Platform
from ..providers import provider_module
from ..providers import usage as token_usage
from ..providers.image_refusal import ImagesRefusedError, images_not_seen_sentence
from ..providers.tool_wire import ToolOffer, flatten, flatten_unoffered
from ..sandbox import tool_loop
from ..sandbox.tool_turn import Receive, ToolRunner
from ..settings import options
from ..storage import versions
from ..storage.history import Record, for_edit, for_regenerate, read_history, user_record, write_history
from ..storage.keys import CODE_TIME_LIMIT, RUN_PYTHON_MODE, lock_for, set_turn_running
from ..storage.keys import turn_running as turn_running  # rule 7; re-exported
from ..tools.turn_tools import TurnTools, offer_tools
from . import agent as agent_turn
from . import explain, rescue, slimming, unsaved_answers

# Seconds without a body chunk before the answer is given up as timed out.
BODY_IDLE_TIMEOUT = 60.0


class Outcome(Enum):
    """How the streaming part of a turn ended; each has exactly one terminal event (rule 7)."""

    DONE = "done"  # the whole answer arrived: stored, then `done`
    STOPPED = "stopped"  # stop, a closed panel, or our own abort: what arrived is stored, then `stopped`
    FAILED = "failed"  # the provider or storage failed: what arrived is stored incomplete, then `error`


async def run_turn(
    platform: Platform,
    start: dict,
    emit: Callable[[dict], None],
    stop: asyncio.Event,
    receive: Receive | None = None,
) -> None:
    if turn_running():
        guarded_emit(emit, stop)(
            _error_event(MarginError.said("turn_in_progress", "py_error_turn_in_progress")),
        )
        return
    set_turn_running(True)
    turn = _Turn(platform, emit, stop, receive)
    try:
        await turn.run(start)
    finally:
        set_turn_running(False)
    if turn.parked:
        _store_originals_ahead(platform, turn.parked)


_storing_ahead: asyncio.Future[None] | None = None


def _store_originals_ahead(platform: Platform, records: list[Record]) -> None:
    """Rule 13: after the turn, in the background, one task at a time (each waits for the one
    before; what it stored is then checked, not written again)."""
    global _storing_ahead
    before = _storing_ahead

    async def store() -> None:
        if before is not None:
            with contextlib.suppress(Exception):
                await before
        with contextlib.suppress(StorageError):  # only an optimisation is lost: the bound stores it
            await image_bound.store_ahead(platform, records, turn_running=turn_running)

    _storing_ahead = asyncio.ensure_future(store())


def _error_event(error: MarginError) -> dict[str, Any]:
    return {"event": "error", "error": error.to_json()}


# -- the records a turn stores --------------------------------------------------------------


async def new_user_record(platform: Platform, text: Any, attachments: Any) -> Record:
    """The user's bubble: the text as typed, each attachment checked and kept as an image part."""
    if not isinstance(text, str):
        text = ""
    if attachments is None:
        attachments = []
    if not isinstance(attachments, list):
        raise MarginError.said("not_an_image", "py_error_images_unreadable")
    parts = [attachment_to_part(await check_attachment(platform, a)) for a in attachments]
    if not text.strip() and not parts:
        raise MarginError.said("empty_message", "py_error_empty_message")
    return user_record(text, parts, createdAt=clock.now_ms())


async def conversation_for(platform: Platform, start: Any, records: list[Record]) -> tuple[list[Record], int]:
    """The conversation to store for this turn (old bubbles removed, the new question appended),
    and how many of its records the answer answers (the rest are attachments that wait)."""
    action = start.get("action") if isinstance(start, dict) else None
    if action == "send":
        conversation = [*records, await new_user_record(platform, start.get("text"), start.get("images"))]
        return conversation, len(conversation)
    if action == "regenerate":
        return for_regenerate(records)
    if action == "edit":
        index = start.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise MarginError.said("edit_target_gone", "py_error_edit_target_gone")
        kept, pending = for_edit(records, index)
        question = versions.with_pending(
            await new_user_record(platform, start.get("text"), start.get("images")), pending
        )
        conversation = [*kept, question]
        versions.check_depth(conversation)  # margin.storage.versions rule 7
        return conversation, len(conversation)
    if action == "explain":
        conversation = records + await explain.take_request(platform, start.get("requestId"))
        return conversation, len(conversation)
    raise MarginError.said("bad_turn", "py_error_bad_turn")


def _same_question(a: Record, b: Record) -> bool:
    return (
        a.role == b.role == "user"
        and a.text == b.text
        and a.fields.get("createdAt") == b.fields.get("createdAt")
    )


# -- the turn -------------------------------------------------------------------------------


class _Turn:
    def __init__(
        self,
        platform: Platform,
        emit: Callable[[dict], None],
        stop: asyncio.Event,
        receive: Receive | None = None,
    ):
        self.platform = platform
        self.emit = guarded_emit(emit, stop)
        self.stop = stop
        self.receive = receive
        self.delta_sent = False
        self.language = "en"  # the model language of the turn (run), for its notices
        self.tool_mode = "off"
        self.loop = tool_loop.LoopState()
        self.tools: TurnTools | None = None  # the user's MCP tools (rule 12)
        self.progress: dict[str, Any] | None = None  # the kept answer so far (rule 12)
        self.stamped = False  # the answer was stored with the `imagesSeen` stamp (rule 4)
        self.parked: list[Record] = []  # what the turn left with unseen images (rule 13)

    async def run(self, start: dict) -> None:
        try:
            settings, provider, question = await self._store_question(start)
        except MarginError as error:
            # Nothing new is stored: the panel keeps the draft.
            await options.ensure_spoken(self.platform)
            self.emit(_error_event(error))
            return
        self.emit({"event": "started"})

        language = options.model_language(settings, self.platform.browser_language)
        self.language = language
        self.tool_mode = tool_loop.tool_mode(settings.get(RUN_PYTHON_MODE))
        with contextlib.suppress(StorageError):  # unreadable servers: the turn goes on without them
            self.tools = await TurnTools.load(self.platform, settings.get(CODE_TIME_LIMIT))
        text_only = provider.get("supportsImages") is False  # rule 10
        outcome, failure, stream = await self._attempt(provider, question, language, text_only=text_only)
        if isinstance(failure, ImagesRefusedError) and not self.delta_sent and not text_only:
            text_only = True
            labels = figures.unseen_image_labels(question, language=language)
            if labels:  # what the model got instead, named exactly as it was sent (rule 10)
                self.emit({"event": "notice", "text": say(images_not_seen_sentence(labels))})
            with contextlib.suppress(StorageError):  # only an optimisation is lost; the answer matters
                await options.mark_images_unsupported(self.platform, provider["id"])
            outcome, failure, stream = await self._attempt(provider, question, language, text_only=True)
        # Rule 8: an overflow before any delta is retried once, with the attached pages shortened.
        plan = (
            rescue.plan(question, failure, language)
            if outcome is Outcome.FAILED and not self.delta_sent
            else None
        )
        if plan is not None:
            outcome, failure, stream = await self._attempt(
                provider, plan.records, language, text_only=text_only
            )
            if failure is not None:
                failure = rescue.retry_failure(failure, provider["model"])

        # Rule 7: the outcome decides the one terminal event.
        if outcome is Outcome.FAILED:
            assert failure is not None
            await self._finish_failed(question, provider, failure, _arrived_text(failure, stream))
        elif outcome is Outcome.STOPPED:
            await self._finish_stopped(question, provider, stream.text if stream is not None else "")
        else:
            assert stream is not None
            await self._finish_done(question, provider, stream, plan)
        if not self.stamped:  # rule 13: the images stay parked unseen
            self.parked = [r for r in question if images.has_images(r) and not images.is_seen(r)]

    async def _attempt(
        self, provider: dict[str, Any], records: list[Record], language: str, *, text_only: bool = False
    ) -> tuple[Outcome, MarginError | None, Any]:
        """One request and its streamed answer: (outcome, failure, stream). The stream is closed
        here, in one place, whatever happened (rule 7). `text_only` sends every image as its
        placeholder, as if already seen (rule 10; a copy: storage is untouched)."""
        stream = None
        if text_only:
            records = images.stamp_images_seen(records)
        try:
            await catalogue.ensure(self.platform, language)
            request_records = await figures.prepare_request_history(
                self.platform, slimming.age_stale_attachments(records, language), language=language
            )
            module = provider_module(provider["type"])
            offers = tool_loop.offers_tools(self.tool_mode, provider)  # rule 12
            others = self.tools.offered() if self.tools is not None and offer_tools(provider) else ()
            files = sandbox_files.conversation_files(records) if offers else []
            if not (offers or others):
                request_records = flatten(request_records)
            else:  # tool_wire rule 3: a past call of a tool not offered now goes as text
                offered = {t.name for t in others} | ({tool_loop.RUN_PYTHON} if offers else set())
                request_records = flatten_unoffered(request_records, offered)
            while True:
                described = tool_loop.description(sandbox_files.listing(files)) if offers else None
                offer = ToolOffer(described, self.loop.forbidden, others)
                try:
                    stream = await race(
                        self._open(module, provider, request_records, offer if offers or others else None),
                        self.stop,
                    )
                except ProviderError as error:
                    if not ((offers or others) and not self.loop.rounds and tool_loop.refused_tools(error)):
                        raise
                    # tool_loop rule 7, for a provider module that does not retry by itself
                    stream = await race(self._open(module, provider, request_records, None), self.stop)
                    stream.tools_unsupported = True
                if getattr(stream, "tools_unsupported", False):  # tool_loop rule 7: sent without the tool
                    offers, others = False, ()
                    with contextlib.suppress(StorageError):  # only an optimisation is lost
                        await options.mark_tools_unsupported(self.platform, provider["id"])
                while True:
                    got = await race(stream.read(), self.stop, timeout=BODY_IDLE_TIMEOUT)
                    if got is None:
                        break
                    for piece in got:
                        self.delta_sent = True
                        self.emit({"event": "delta", "text": piece})
                    if self.stop.is_set():
                        raise Stopped()
                calls = stream.tool_calls if offers or others else []
                if not self.loop.allowed(calls):
                    break
                self.delta_sent = True  # a retry would run the calls again (rules 8 and 10)
                await stream.aclose()
                text = stream.text
                self.loop.add_usage(stream.usage)
                stream = None
                runner = ToolRunner(
                    self.emit,
                    self.receive,
                    self.stop,
                    self.tool_mode,
                    files,
                    self.loop,
                    catalogue.words(language),
                )
                runner.on_progress = lambda: self._keep_progress(records, provider)
                runner.others = self.tools if others else None
                await runner.run_round(text, calls)
            return Outcome.DONE, None, stream
        except Stopped:
            return Outcome.STOPPED, None, stream
        except MarginError as error:
            # "aborted" is our own abort, seen by the transport.
            if isinstance(error, ProviderError) and error.code == "aborted":
                return Outcome.STOPPED, None, stream
            return Outcome.FAILED, error, stream
        except Exception as exc:  # a bug in a stream's parser: keep what arrived (rule 11)
            return Outcome.FAILED, internal_error(exc), stream
        finally:
            if stream is not None:
                await stream.aclose()

    def _open(
        self, module: Any, provider: dict[str, Any], records: list[Record], offer: ToolOffer | None
    ) -> Any:
        """One request of the turn: the records, then this turn's tool rounds so far (rule 12)."""
        rounds = self.loop.rounds
        if rounds:
            records = [*records, Record("assistant", "", {"toolRounds": rounds})]
        if agent_turn.is_agent_provider(provider):  # rule 9
            return agent_turn.open_agent_stream(
                module, self.platform.transport, provider, records, self._notify_replay, tools=offer
            )
        if offer is None:
            return module.open_stream(self.platform.transport, provider, records)
        return module.open_stream(self.platform.transport, provider, records, tools=offer)

    async def _keep_progress(self, question: list[Record], provider: dict[str, Any]) -> None:
        """Rule 12: the rounds so far, kept where a stopped worker cannot lose them."""
        fields = {**self._answer_fields(provider, None), **self._rounds_field(), "incomplete": True}
        entry = unsaved_answers.entry(question[-1], len(question) - 1, Record("assistant", "", fields))
        if self.progress is not None:
            entry["id"] = self.progress["id"]
        self.progress = entry
        await unsaved_answers.keep_progress(self.platform, entry)

    async def _forget_progress(self) -> None:
        if self.progress is not None:
            await unsaved_answers.forget(self.platform, self.progress["id"])
            self.progress = None

    def _notify_replay(self) -> None:
        self.emit(
            {"event": "notice", "text": catalogue.words(self.language).text(agent_turn.REPLAY_NOTICE_KEY)}
        )

    async def _finish_done(
        self, question: list[Record], provider: dict[str, Any], stream: Any, plan: rescue.Rescue | None
    ) -> None:
        if stream.usage_unsupported:
            with contextlib.suppress(StorageError):  # only an optimisation is lost; the answer matters
                await options.mark_usage_unsupported(self.platform, provider["id"])
        fields = {
            **self._answer_fields(provider, self.loop.total_usage(stream.usage)),
            **self._rounds_field(),
        }
        response_id = getattr(stream, "response_id", None)
        if isinstance(response_id, str) and response_id:  # rule 9
            fields["responseId"] = response_id
            fields["responseProviderId"] = provider["id"]
        answer = Record("assistant", stream.text, fields)
        if await self._save_answer_or_report(question, answer, stamp=True, shortened=plan):
            self.stamped = True
            self.emit({"event": "done"})

    async def _store_question(self, start: dict) -> tuple[dict[str, Any], dict[str, Any], list[Record]]:
        """Store the question; returns the settings, the provider and the conversation the answer
        answers (rule 1). The options are read under the lock, first: a save that arrived before
        this turn is what it uses (margin.settings.options, rule 9)."""
        async with lock_for(self.platform.local):
            settings = await options.read_options(self.platform)
            provider = options.active_provider_of(settings)
            read = await read_history(self.platform.local)
            conversation, answered = await conversation_for(self.platform, start, read.records)
            # Compared by value, not length: editing an unanswered last question keeps the length.
            unchanged = conversation == read.records and read.unreadable_raw is None
            if not unchanged:
                await write_history(self.platform.local, conversation, read)
        return settings, provider, conversation[:answered]

    async def _store_answer(
        self, question: list[Record], answer: Record, *, stamp: bool, shortened: rescue.Rescue | None = None
    ) -> bool:
        """Put `answer` right after its question in a fresh read of the conversation (rule 5), with
        the attachments a rescue shortened (rule 8) in the same write; False if that conversation
        is not ours any more."""
        async with lock_for(self.platform.local):
            read = await read_history(self.platform.local)
            current = read.records
            n = len(question)
            if len(current) < n or not _same_question(current[n - 1], question[n - 1]):
                return False
            waiting = current[n:]
            if not all(r.is_attachment for r in waiting):
                return False
            answered = current[:n] if shortened is None else rescue.apply(current[:n], shortened)
            answered = images.stamp_images_seen(answered) if stamp else answered
            question_now, answer = versions.settle(answered[-1], answer)  # rule 2's pending versions
            await write_history(self.platform.local, [*answered[:-1], question_now, answer, *waiting], read)
            return True

    async def _finish_stopped(self, question: list[Record], provider: dict[str, Any], text: str) -> None:
        if text or self.loop.rounds:
            fields = {**self._answer_fields(provider, None), **self._rounds_field(), "stopped": True}
            answer = Record("assistant", text, fields)
            if not await self._save_answer_or_report(question, answer, stamp=False):
                return
        self.emit({"event": "stopped"})

    async def _finish_failed(
        self, question: list[Record], provider: dict[str, Any], failure: MarginError, text: str
    ) -> None:
        """Rule 3: text that arrived before the failure is kept, marked incomplete; no
        `imagesSeen` stamp (rule 4). A storage failure is then the one error reported (rule 7)."""
        if text or self.loop.rounds:
            fields = {**self._answer_fields(provider, None), **self._rounds_field(), "incomplete": True}
            answer = Record("assistant", text, fields)
            if not await self._save_answer_or_report(question, answer, stamp=False):
                return
        self.emit(_error_event(failure))

    async def _save_answer_or_report(
        self, question: list[Record], answer: Record, *, stamp: bool, shortened: rescue.Rescue | None = None
    ) -> bool:
        """Store the answer; when that fails, the answer is not dropped (rule 11): it is kept in
        chrome.storage.session and comes back in the one error event, then False."""
        try:
            saved = await self._store_answer(question, answer, stamp=stamp, shortened=shortened)
            failure = None if saved else _conversation_changed()
        except MarginError as error:
            failure = error
        await self._forget_progress()  # rule 12: stored, or kept below as unsaved
        if failure is None:
            return True
        unsaved = unsaved_answers.entry(question[-1], len(question) - 1, answer)
        await unsaved_answers.keep(self.platform, unsaved)
        self.emit(unsaved_answers.error_event(failure, unsaved))
        return False

    def _rounds_field(self) -> dict[str, Any]:
        """Rule 12: the turn's tool rounds, stored with its answer whatever the outcome."""
        return {"toolRounds": self.loop.rounds} if self.loop.rounds else {}

    @staticmethod
    def _answer_fields(provider: dict[str, Any], usage: dict[str, Any] | None) -> dict[str, Any]:
        """The answer record's own fields; `usage` is the normalized shape (margin.providers.usage rule 1),
        `cost` its estimate in US dollars when the provider has prices."""
        fields: dict[str, Any] = {"createdAt": clock.now_ms(), "model": provider["model"]}
        kept = token_usage.clean(usage)
        if kept:
            fields["usage"] = kept
            dollars = token_usage.cost(kept, provider.get("prices"))
            if dollars is not None and math.isfinite(dollars):  # margin.base.wire rule 3
                fields["cost"] = round(dollars, 6)
        return fields


def _arrived_text(failure: MarginError, stream: Any) -> str:
    """What had streamed before `failure`: the error's `partial_text`, else the open stream's
    text (an idle timeout is raised by the race, not by the stream)."""
    if isinstance(failure, ProviderError) and failure.partial_text:
        return failure.partial_text
    text = getattr(stream, "text", "") if stream is not None else ""
    return text if isinstance(text, str) else ""


def _conversation_changed() -> MarginError:
    return MarginError.said("conversation_changed", "py_error_conversation_changed")
