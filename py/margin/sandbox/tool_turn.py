"""One turn's `run_python` calls, over the turn's port (docs/protocol.md, "Tool calls").

The code never runs here: this Python holds the storage and the keys. Each call goes to the
side panel as an event, the panel runs it in the code sandbox (or the user declines it) and
answers on the same port; margin.sandbox.tool_loop decides what is stored and sent back.

Rules:
1. For each call of a round, in order: a call that cannot run (tool_loop rule 3) or is past the
   bound (rule 2) is stored "refused" with its reason and shown (`tool_call` with `refusal`),
   with nothing to wait for; any other is sent as `{event: "tool_call", call: {id, code, mode},
   files}` (`files`: margin.page.sandbox_files, what the sandbox gets under /data/) and the turn waits
   for the panel's `{action: "tool_result", callId, outcome, run?, note?}`.
2. The wait has no time limit of its own (in "ask" mode the user decides when), but it races the
   turn's stop: Stop, or the panel's port closing (the panel went away), ends it at once. The
   call and every call after it in the round are then stored "stopped" and the turn ends as
   stopped (margin.turn.chat rule 3): the rounds so far are kept with the answer.
3. A result is input: its `callId` must be the call waited for (others are ignored), its
   `outcome` one of "ran" (with a run `code_runs.clean_run` accepts), "declined" or "failed";
   anything else is stored as "failed" with a sentence, and the model is told so.
4. The round is in `LoopState.rounds` from its first call on, every call pre-filled "stopped", so
   whatever ends the turn, each call the model made has a result to replay.
5. Before a call goes to the panel and after its result, `on_progress` keeps the answer so far
   (margin.turn.unsaved_answers rule 6): if the worker stops while the panel runs the code, the
   rounds already run, and this call as "stopped", are not lost.
6. A call of another tool than `run_python` that `others` (`OtherTools`: the user's MCP tools,
   margin.tools.turn_tools) knows is theirs: they store it, pre-filled "stopped" (rule 4), and
   run it (asking the user over the same port) within the same bound (tool_loop rule 2). With
   `run_python` off, a `run_python` call is refused like an unknown tool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..base.errors import MarginError
from ..base.sentences import sentence
from ..base.stoppable import Stopped, race
from ..i18n.catalogue import Words
from . import code_runs
from .tool_loop import MAX_ROUND_CALLS, LoopState, ToolCall, limit_note, read_call, stored_call

Receive = Callable[[], Awaitable[Any]]


class OtherTools(Protocol):
    """Rule 6: the tools of a turn that are not `run_python`."""

    def handles(self, name: str) -> bool: ...

    def placeholder(self, call: ToolCall) -> dict[str, Any]: ...

    async def run(self, call: ToolCall, runner: ToolRunner) -> dict[str, Any]: ...


def _result(message: Any, call_id: str, words: Words) -> tuple[str, dict[str, Any] | None, str] | None:
    """Rule 3: (outcome, run, note) of the panel's answer to `call_id`, None for another message."""
    if not isinstance(message, dict) or message.get("action") != "tool_result":
        return None
    if message.get("callId") != call_id:
        return None
    outcome = message.get("outcome")
    note = message.get("note") if isinstance(message.get("note"), str) else ""
    if outcome == "ran":
        try:
            return "ran", code_runs.clean_run(message.get("run")), ""
        except MarginError:
            return "failed", None, words.text("py_tool_output_unreadable")
    if outcome == "declined":
        return "declined", None, ""
    if outcome == "failed":
        return "failed", None, note or words.text("py_tool_panel_failed")
    return "failed", None, words.text("py_tool_panel_confused")


class ToolRunner:
    def __init__(
        self,
        emit: Callable[[dict], None],
        receive: Receive | None,
        stop: asyncio.Event,
        mode: str,
        files: list[dict[str, Any]],
        state: LoopState,
        words: Words,
    ):
        self.emit = emit
        self.receive = receive
        self.stop = stop
        self.mode = mode
        self.files = files
        self.state = state
        self.words = words  # the model language's: a call's reasons are read by the model and the user
        # Keeps the answer so far where a stopped worker cannot lose it (margin.turn.chat rule 12).
        self.on_progress: Callable[[], Awaitable[None]] | None = None
        self.others: OtherTools | None = None  # rule 6

    async def _progress(self) -> None:
        if self.on_progress is not None:
            await self.on_progress()

    async def run_round(self, text: str, calls: list[ToolCall]) -> None:
        """Rules 1-4; raises Stopped when the turn is stopped while a call waits."""
        calls = calls[:MAX_ROUND_CALLS]
        others = self.others
        stored = [
            others.placeholder(c)
            if others is not None and others.handles(c.name)
            else stored_call(c, read_call(c, self.words).code, "stopped", None, "")
            for c in calls
        ]
        self.state.rounds.append({"text": text, "calls": stored})
        for position, call in enumerate(calls):
            if others is not None and others.handles(call.name):  # rule 6
                if not self.state.take_turn():
                    self.state.forbidden = True
                    stored[position] = {
                        **stored[position],
                        "outcome": "refused",
                        "note": limit_note(self.words),
                    }
                    self.emit(
                        {
                            "event": "tool_call",
                            "call": {"id": call.id, "code": "", "refusal": stored[position]["note"]},
                        }
                    )
                    continue
                await self._progress()
                stored[position] = await others.run(call, self)
                await self._progress()
                continue
            reading = read_call(call, self.words)
            refusal = reading.refusal
            if not refusal and self.mode == "off":  # rule 6: run_python is not offered
                refusal = self.words.text("py_tool_not_offered", call.name[:80])
            if not refusal and not self.state.take_turn():
                refusal = limit_note(self.words)
                self.state.forbidden = True
            if refusal:
                stored[position] = stored_call(call, reading.code, "refused", None, refusal)
                self.emit(
                    {"event": "tool_call", "call": {"id": call.id, "code": reading.code, "refusal": refusal}}
                )
                continue
            await self._progress()  # rule 5
            outcome, run, note = await self._ask_panel(call, reading.code)
            stored[position] = stored_call(call, reading.code, outcome, run, note)
            await self._progress()
        self.state.end_round()

    async def _ask_panel(self, call: ToolCall, code: str) -> tuple[str, dict[str, Any] | None, str]:
        if self.receive is None:
            return "failed", None, self.words.text("py_tool_no_panel")
        self.emit(
            {
                "event": "tool_call",
                "call": {"id": call.id, "code": code, "mode": self.mode},
                "files": self.files,
            }
        )
        if self.stop.is_set():
            raise Stopped()
        while True:
            message = await race(self.receive(), self.stop, what=sentence("py_error_waited_code_run"))
            answer = _result(message, call.id, self.words)
            if answer is not None:
                return answer
