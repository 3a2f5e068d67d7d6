"""The `run_python` tool on each provider's wire (sans-IO): offering it, reading the calls a
stream makes, and replaying stored calls and results (margin.sandbox.tool_loop holds the loop itself).
What every provider shares is here; each provider's own shape (its `*_tools`, its replay, its
stream's call pieces) is in its module (margin.providers.openai, anthropic, gemini, responses).

Rules:
1. `ToolOffer(description, forbid, others)` is what a request offers: `run_python` with that
   description (none when `description` is None: the setting is off), then `others`, the
   user's MCP tools (margin.tools.turn_tools: each name, description and JSON schema, the names
   already valid for every provider; Gemini gets their schema as `parametersJsonSchema`);
   `forbid` (the bound is reached, tool_loop rule 2) keeps the tool defined but forbids calling
   it (OpenAI and Responses `tool_choice: "none"`, Anthropic `{"type": "none"}`, Gemini
   `functionCallingConfig.mode: "NONE"`): a history holding calls must still define the tool.
2. Replay, in each API's own shape, for an assistant record with `toolRounds`, each round being
   the model's text and calls, then the results:
   - OpenAI: `{role: assistant, content: text | null, tool_calls: [{id, type: function,
     function: {name, arguments}}]}`, then one `{role: tool, tool_call_id, content}` per call;
   - Anthropic: an assistant message of `text` + `tool_use {id, name, input}` blocks, then a user
     message of `tool_result {tool_use_id, content}` blocks;
   - Gemini: a `model` content of `text` + `functionCall {name, args}` parts (with the call's
     `thoughtSignature` when it had one), then a `user` content of `functionResponse {name,
     response: {result}}` parts;
   - Responses: `function_call {call_id, name, arguments}` items, then `function_call_output
     {call_id, output}` items (`message` items for the text).
   Then the record's own text, when it has any, as the answer after the last round. The
   arguments replayed are the ones the model sent; those that were not a JSON object become `{}`
   where the API wants an object (Anthropic's `input`, Gemini's `args`).
3. A request that offers no tool sends no call: each round goes as text (tool_loop
   `rounds_as_text`) before the answer's text (`flatten`), so the model still knows what ran.
   Likewise an earlier answer whose rounds call a tool this request does not offer (`run_python`
   turned off, an MCP tool unticked or its server removed) goes as text (`flatten_unoffered`): a
   provider may refuse a call of a tool it was not given.
4. Reading a stream: OpenAI's `delta.tool_calls[]` pieces (by `index`: `id` and `function.name`
   once, `function.arguments` in pieces), Anthropic's `content_block_start` `tool_use` then
   `input_json_delta` pieces (by block index), Gemini's whole `functionCall` parts, Responses'
   `response.output_item.added` `function_call` then `response.function_call_arguments.delta`
   (by item id). A stream that ended with calls says so by `tool_calls` (never empty text
   pieces); whether its text is whole is the parser's own rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..sandbox.tool_loop import PARAMETERS, RUN_PYTHON, rounds_as_text
from ..storage.history import Record


@dataclass(frozen=True)
class OfferedTool:
    """Rule 1: one tool besides run_python, as every provider's wire offers it."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolOffer:
    description: str | None
    forbid: bool = False
    others: tuple[OfferedTool, ...] = ()

    def tools(self) -> list[OfferedTool]:
        """Rule 1: every tool offered, run_python first."""
        own = [OfferedTool(RUN_PYTHON, self.description, PARAMETERS)] if self.description is not None else []
        return [*own, *self.others]


Offer = ToolOffer | None  # what a request offers: the tool, or nothing
Config = dict[str, Any]  # a provider's config (margin.providers, rule 1)


def rounds_of(record: Record) -> list[dict[str, Any]]:
    rounds = record.fields.get("toolRounds") if record.role == "assistant" else None
    return rounds if isinstance(rounds, list) else []


def flatten(records: list[Record]) -> list[Record]:
    """Rule 3: every assistant record's rounds as text before its own text."""
    out = []
    for record in records:
        rounds = rounds_of(record)
        if not rounds:
            out.append(record)
            continue
        text = "\n\n".join(t for t in (rounds_as_text(rounds), record.text) if t)
        fields = {k: v for k, v in record.fields.items() if k != "toolRounds"}
        out.append(Record(record.role, text, fields))
    return out


def flatten_unoffered(records: list[Record], offered: set[str]) -> list[Record]:
    """Rule 3, per record: those whose rounds call a tool not in `offered` go as text."""
    out = []
    for record in records:
        names = {c.get("name") for r in rounds_of(record) for c in r.get("calls", [])}
        out.append(flatten([record])[0] if names - offered else record)
    return out


def object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(call.get("arguments") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def text_or_none(value: Any) -> str | None:
    """A non-empty string read off the wire, or None."""
    return value if isinstance(value, str) and value else None
