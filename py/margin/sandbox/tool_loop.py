"""The `run_python` tool loop: the model asks to run code, the side panel's sandbox runs it, the
output goes back to the model, until the model answers in text (docs/protocol.md, "A turn").

This module is sans-IO: what a turn offers, how a call is read, what is stored and what the
model is sent back. `margin.turn.chat` drives it; `margin.providers.tool_wire` speaks each provider's wire.

Rules:
1. The setting `runPython` (margin.settings.options) is one of MODES: "off" (no tool is offered), "ask"
   (the default: the panel shows the code with "Run" / "Don't run") or "auto" (it runs at once).
   Only providers of TOOL_PROVIDER_TYPES are offered the tool.
2. Bounded: at most MAX_CALLS calls run per turn. A call past the bound is not run: its result
   says the limit was reached, and the next request forbids tools (`tool_choice` none), so the
   model must answer in text; calls it still makes then end the loop (`LoopState.allowed`). A
   turn has at most MAX_CALLS rounds (calls that cannot run count too), of at most
   MAX_ROUND_CALLS calls each (the rest are dropped, never stored nor replayed). The answer's
   `usage` is the sum over every request of the turn (`LoopState.total_usage`).
3. A call's arguments are JSON `{"code": "<python>"}`. Anything else (not JSON, not an object, no
   `code` string, an unknown tool name, code over code_runs.CODE_CHARS) is not run: the call is
   stored with outcome "refused" and the reason, and the model gets the reason as its result.
   Reasons are in the model language (`py_tool_*`, docs/i18n.md): the panel shows them after
   "Not run:".
4. A call's outcome is one of OUTCOMES: "ran" (the run, a margin.sandbox.code_runs run, is stored with
   it), "declined" (the user pressed "Don't run"), "refused" (rule 3 or 2), "stopped" (Stop, or
   the panel went away, before a result came), "failed" (the panel could not run it: its note).
5. What is stored: the answer record's `toolRounds`, a list of at most MAX_CALLS + 1 rounds
   `{text, calls: [{id, name, arguments, code, outcome, run, note, signature?, mcp?}]}` (`mcp`: a
   call of one of the user's MCP tools, margin.sandbox.mcp_results; its `code` is "");
   `text` is what the model wrote before its calls, the record's `content` what it wrote after
   the last round. `is_tool_rounds` accepts only what `clean_round` would keep unchanged
   (margin.storage.stored_values' RECORD_FIELDS check), so a stored round is never larger or of another
   shape than a fresh one.
6. What the model is sent back for a call (`result_text`) is the run's compact form
   (`code_runs.run_text`) or a sentence for the outcome: never pixels, never the whole output.
   For an MCP call, the result's text (mcp_results rule 4) or a sentence for the outcome.
7. A server that refuses a request with the tool (a 400 or 422 naming tools, `refuses_tools`: a
   local model without tool calling) is asked again without it, once; the provider is then
   marked `supportsTools: false` and offered no tool again (margin.settings.options rule 5). The OpenAI
   module retries by itself (before the status becomes an error); for the others the turn
   does, on a `bad_request` whose sentence names tools or function calling (`refused_tools`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import MarginError
from ..i18n.catalogue import Words
from . import code_runs, mcp_results
from .code_runs import exact_text, unreadable_result

RUN_PYTHON = "run_python"
MODES = ("off", "ask", "auto")
DEFAULT_MODE = "ask"
TOOL_PROVIDER_TYPES = ("openai", "anthropic", "gemini", "openai-responses")
MAX_CALLS = 6
MAX_ROUND_CALLS = 24  # calls kept of one round (a model asking for more: the rest are dropped)
OUTCOMES = ("ran", "declined", "refused", "stopped", "failed")
ARGUMENTS_CHARS = code_runs.CODE_CHARS + 1_000
ID_CHARS = 200
NOTE_CHARS = 500
SIGNATURE_CHARS = 20_000

DESCRIPTION = (
    "Run Python 3.12 code in a locked sandbox (Pyodide in the user's browser: no network, no "
    "packages to install; numpy, pandas and matplotlib are available). Use it to compute, check "
    "or chart data instead of guessing. The result holds what the code printed, the value of its "
    "last expression (a pandas DataFrame as a table), figures drawn with matplotlib (shown to the "
    "user) and the traceback on error. Each call starts with a fresh namespace."
)


@dataclass
class ToolCall:
    """One call as the provider sent it; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str
    signature: str | None = None  # Gemini's thoughtSignature, returned with the call when replayed


@dataclass
class CallPieces:
    """A provider that streams a call's arguments in pieces (OpenAI, Anthropic, Responses):
    pieces are keyed by the provider's index or item id, in the order calls began."""

    calls: dict[Any, ToolCall] = field(default_factory=dict)

    @staticmethod
    def _key(key: Any) -> Any:
        """A provider's index or item id; anything else (a list, a float) is one key of its own."""
        return key if isinstance(key, (int, str)) and not isinstance(key, bool) else repr(key)[:100]

    def has(self, key: Any) -> bool:
        return self._key(key) in self.calls

    def begin(self, key: Any, call_id: str | None, name: str | None) -> None:
        call = self.calls.setdefault(self._key(key), ToolCall("", "", ""))
        if call_id:
            call.id = call_id
        if name:
            call.name = name

    def add(self, key: Any, arguments: str) -> None:
        call = self.calls.setdefault(self._key(key), ToolCall("", "", ""))
        if len(call.arguments) + len(arguments) <= ARGUMENTS_CHARS:  # bounded, like the stored field
            call.arguments += arguments

    def finished(self) -> list[ToolCall]:
        out = []
        for position, call in enumerate(self.calls.values()):
            out.append(ToolCall(call.id or f"call_{position + 1}", call.name, call.arguments, call.signature))
        return out


def tool_mode(value: Any) -> str:
    return value if value in MODES else DEFAULT_MODE


def offers_tools(mode: str, provider: dict[str, Any]) -> bool:
    """Rules 1 and 7."""
    return (
        mode != "off"
        and provider.get("type") in TOOL_PROVIDER_TYPES
        and provider.get("supportsTools") is not False
    )


def refused_tools(error: Any) -> bool:
    """Rule 7, after the fact: a provider's "bad request" whose sentence names tools or function
    calling (Gemini: "Function calling is not enabled for models/…")."""
    message = str(getattr(error, "message", "")).lower()
    return getattr(error, "code", None) == "bad_request" and (
        "tool" in message or "function calling" in message
    )


def refuses_tools(status: int, body: str) -> bool:
    """Rule 7: a 400 that names tools (Ollama: "<model> does not support tools")."""
    return status in (400, 422) and "tool" in body.lower()


def description(files: list[dict[str, Any]]) -> str:
    """The tool's description: what it is, and the files of the conversation under /data."""
    if not files:
        return DESCRIPTION + " No files are attached."
    listed = "\n".join(f"- {f['path']} ({f['about']})" for f in files)
    return f"{DESCRIPTION} The conversation's attachments are files the code can read:\n{listed}"


PARAMETERS = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The Python code to run."}},
    "required": ["code"],
}


@dataclass
class Reading:
    """Rule 3: a call read, its code or why it cannot run."""

    code: str
    refusal: str  # "" when the call can run


def read_call(call: ToolCall, words: Words) -> Reading:
    """Rule 3; `words` are the model language's."""
    if call.name != RUN_PYTHON:
        return Reading("", words.text("py_tool_no_such_tool", call.name[:80], RUN_PYTHON))
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return Reading("", words.text("py_tool_arguments_not_json"))
    code = value.get("code") if isinstance(value, dict) else None
    if not isinstance(code, str) or not code.strip():
        return Reading("", words.text("py_tool_no_code"))
    if len(code) > code_runs.CODE_CHARS:
        return Reading("", words.text("py_tool_code_too_long", words.number(code_runs.CODE_CHARS)))
    return Reading(code, "")


def limit_note(words: Words) -> str:
    """Rule 2: the reason a call past the bound is not run (the panel says "Not run:" before it)."""
    return words.text("py_tool_limit", MAX_CALLS)


class LoopState:
    """Rule 2: how many calls ran this turn, and whether tools are still allowed."""

    def __init__(self, max_calls: int = MAX_CALLS):
        self.max_calls = max_calls
        self.calls_run = 0
        self.rounds: list[dict[str, Any]] = []
        self.forbidden = False  # the last request said tool_choice none
        self.usage: dict[str, int] = {}  # the tokens of the rounds' requests so far

    @property
    def tools_allowed(self) -> bool:
        return self.calls_run < self.max_calls

    def allowed(self, calls: list[ToolCall]) -> bool:
        """False when the model called tools after being told not to: the loop ends."""
        return bool(calls) and not self.forbidden

    def add_usage(self, usage: dict[str, Any] | None) -> None:
        """A round's request used these tokens: the answer's usage is every request's sum."""
        if not isinstance(usage, dict):
            return
        for key, value in usage.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[key] = self.usage.get(key, 0) + value

    def total_usage(self, last: dict[str, Any] | None) -> dict[str, Any] | None:
        """The last request's usage plus every round's before it (None when none was told)."""
        if not self.usage:
            return last
        total = dict(self.usage)
        for key, value in (last or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
        return total

    def end_round(self) -> None:
        """After a round: the bound reached, in calls run or in rounds, forbids tools (rule 2)."""
        if self.calls_run >= self.max_calls or len(self.rounds) >= self.max_calls:
            self.forbidden = True

    def take_turn(self) -> bool:
        """One call is about to run; False when the bound is reached (rule 2)."""
        if self.calls_run >= self.max_calls:
            return False
        self.calls_run += 1
        return True


# -- what is stored (rule 5) ---------------------------------------------------------------------


def stored_call(
    call: ToolCall,
    code: str,
    outcome: str,
    run: dict[str, Any] | None,
    note: str,
    mcp: dict[str, Any] | None = None,
) -> dict[str, Any]:
    kept: dict[str, Any] = {
        "id": call.id[:ID_CHARS],
        "name": call.name[:80],
        "arguments": call.arguments[:ARGUMENTS_CHARS],
        "code": code,
        "outcome": outcome,
        "run": run,
        "note": note[:NOTE_CHARS],
    }
    if call.signature:
        kept["signature"] = call.signature[:SIGNATURE_CHARS]
    if mcp is not None:  # a call of one of the user's MCP tools (margin.sandbox.mcp_results)
        kept["mcp"] = mcp
    return kept


def clean_call(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or value.get("outcome") not in OUTCOMES:
        raise unreadable_result("a call")
    run = value.get("run")
    kept: dict[str, Any] = {
        "id": exact_text(value.get("id"), ID_CHARS, "id"),
        "name": exact_text(value.get("name"), 80, "name"),
        "arguments": exact_text(value.get("arguments"), ARGUMENTS_CHARS, "arguments"),
        "code": exact_text(value.get("code"), code_runs.CODE_CHARS, "code"),
        "outcome": value["outcome"],
        "run": None if run is None else code_runs.clean_run(run),
        "note": exact_text(value.get("note", ""), NOTE_CHARS, "note"),
    }
    if "signature" in value:
        kept["signature"] = exact_text(value["signature"], SIGNATURE_CHARS, "signature")
    if "mcp" in value:
        kept["mcp"] = mcp_results.clean_mcp(value["mcp"])
    return kept


def clean_round(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("calls"), list) or not value["calls"]:
        raise unreadable_result("a round")
    return {
        "text": exact_text(value.get("text", ""), 2 * 1024 * 1024, "text"),
        "calls": [clean_call(c) for c in value["calls"][:MAX_ROUND_CALLS]],
    }


def is_tool_rounds(value: Any) -> bool:
    if not isinstance(value, list) or not value or len(value) > MAX_CALLS + 1:
        return False
    try:
        return all(clean_round(r) == r for r in value)
    except MarginError:
        return False


# -- what the model is sent back (rule 6) -----------------------------------------------------------

OUTCOME_TEXT = {
    "declined": "The user chose not to run this code.",
    "stopped": "The run was stopped before it finished.",
}


def result_text(call: dict[str, Any]) -> str:
    outcome = call["outcome"]
    if isinstance(call.get("mcp"), dict):
        return _mcp_result(call)
    if outcome == "ran" and call.get("run"):
        return _run_result(call["run"])
    if outcome in OUTCOME_TEXT:
        return OUTCOME_TEXT[outcome]
    return call.get("note") or "The code could not be run."


MCP_OUTCOME_TEXT = {
    "declined": (
        "The user declined this tool call: the tool was not called. Do not call it again unless asked."
    ),
    "stopped": "The tool call was stopped before the tool answered.",
}


def _mcp_result(call: dict[str, Any]) -> str:
    result = call["mcp"].get("result")
    if call["outcome"] == "ran" and result:
        return mcp_results.result_text(result)
    if call["outcome"] in MCP_OUTCOME_TEXT:
        return MCP_OUTCOME_TEXT[call["outcome"]]
    return call.get("note") or "The tool could not be called."


def _run_result(run: dict[str, Any]) -> str:
    """The run's compact form, its first line naming the status rather than a code block."""
    _, _, rest = code_runs.run_text(run).partition("\n")
    status = f"[status: {run['status']}]"
    return f"{status}\n{rest}" if rest else status


def round_as_text(round_: dict[str, Any]) -> str:
    """A round as plain text, for a request that offers no tools (the setting is off, or another
    provider): the code and its result, so the model still knows what ran."""
    parts = [round_["text"]] if round_["text"] else []
    for call in round_["calls"]:
        parts.append(f"```python\n{call['code']}\n```" if call["code"] else f"[{call['name']} call]")
        parts.append(f"[{call['name'] if call.get('mcp') else RUN_PYTHON} result]\n{result_text(call)}")
    return "\n\n".join(parts)


def rounds_as_text(rounds: list[dict[str, Any]]) -> str:
    return "\n\n".join(round_as_text(r) for r in rounds)
