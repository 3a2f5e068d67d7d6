"""The `run_python` tool on each provider's wire (sans-IO): offering it, reading the calls a
stream makes, and replaying stored calls and results (margin.tool_loop holds the loop itself).

Rules:
1. `ToolOffer(description, forbid)` is what a request offers: the tool with that description;
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

from .history import Record
from .tool_loop import PARAMETERS, RUN_PYTHON, CallPieces, ToolCall, result_text, rounds_as_text


@dataclass(frozen=True)
class ToolOffer:
    description: str
    forbid: bool = False


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


def _object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(call.get("arguments") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# -- OpenAI Chat Completions -------------------------------------------------------------------


def openai_tools(offer: ToolOffer) -> dict[str, Any]:
    tool = {
        "type": "function",
        "function": {"name": RUN_PYTHON, "description": offer.description, "parameters": PARAMETERS},
    }
    body: dict[str, Any] = {"tools": [tool]}
    if offer.forbid:
        body["tool_choice"] = "none"
    return body


def openai_messages(record: Record) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for round_ in rounds_of(record):
        calls = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in round_["calls"]
        ]
        messages.append({"role": "assistant", "content": round_["text"] or None, "tool_calls": calls})
        messages.extend(
            {"role": "tool", "tool_call_id": c["id"], "content": result_text(c)} for c in round_["calls"]
        )
    if record.text:
        messages.append({"role": "assistant", "content": record.text})
    return messages


def openai_feed(pieces: CallPieces, delta: dict[str, Any]) -> None:
    calls = delta.get("tool_calls")
    if not isinstance(calls, list):
        return
    for position, call in enumerate(calls):
        if not isinstance(call, dict):
            continue
        key = call.get("index", position)
        found = call.get("function")
        function: dict[str, Any] = found if isinstance(found, dict) else {}
        pieces.begin(key, _str(call.get("id")), _str(function.get("name")))
        if isinstance(function.get("arguments"), str):
            pieces.add(key, function["arguments"])


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- Anthropic Messages -------------------------------------------------------------------------


def anthropic_tools(offer: ToolOffer) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tools": [{"name": RUN_PYTHON, "description": offer.description, "input_schema": PARAMETERS}]
    }
    if offer.forbid:
        body["tool_choice"] = {"type": "none"}
    return body


def anthropic_turns(record: Record) -> list[tuple[str, list[dict[str, Any]]]]:
    """(role, blocks) pairs for the record's rounds and then its text."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for round_ in rounds_of(record):
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": round_["text"]}] if round_["text"].strip() else []
        )
        blocks.extend(
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": _object_arguments(c)}
            for c in round_["calls"]
        )
        turns.append(("assistant", blocks))
        results = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": result_text(c)}
            for c in round_["calls"]
        ]
        turns.append(("user", results))
    if record.text.strip():
        turns.append(("assistant", [{"type": "text", "text": record.text}]))
    return turns


def anthropic_block_start(pieces: CallPieces, index: Any, block: Any) -> None:
    if isinstance(block, dict) and block.get("type") == "tool_use":
        pieces.begin(index, _str(block.get("id")), _str(block.get("name")))
        initial = block.get("input")
        if isinstance(initial, dict) and initial:
            pieces.add(index, json.dumps(initial, ensure_ascii=False))


def anthropic_delta(pieces: CallPieces, index: Any, delta: dict[str, Any]) -> None:
    partial = delta.get("partial_json")
    if delta.get("type") == "input_json_delta" and isinstance(partial, str) and pieces.has(index):
        pieces.add(index, partial)


# -- Gemini ---------------------------------------------------------------------------------------


def gemini_tools(offer: ToolOffer) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tools": [
            {
                "functionDeclarations": [
                    {"name": RUN_PYTHON, "description": offer.description, "parameters": PARAMETERS}
                ]
            }
        ]
    }
    if offer.forbid:
        body["toolConfig"] = {"functionCallingConfig": {"mode": "NONE"}}
    return body


def gemini_contents(record: Record) -> list[tuple[str, list[dict[str, Any]]]]:
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for round_ in rounds_of(record):
        parts: list[dict[str, Any]] = [{"text": round_["text"]}] if round_["text"] else []
        for call in round_["calls"]:
            part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": _object_arguments(call)}}
            if call.get("signature"):
                part["thoughtSignature"] = call["signature"]
            parts.append(part)
        turns.append(("model", parts))
        responses = [
            {"functionResponse": {"name": c["name"], "response": {"result": result_text(c)}}}
            for c in round_["calls"]
        ]
        turns.append(("user", responses))
    if record.text:
        turns.append(("model", [{"text": record.text}]))
    return turns


def gemini_part(calls: list[ToolCall], part: dict[str, Any]) -> None:
    call = part.get("functionCall")
    if not isinstance(call, dict):
        return
    args = call.get("args")
    name = _str(call.get("name")) or ""
    call_id = _str(call.get("id")) or f"call_{len(calls) + 1}"
    signature = _str(part.get("thoughtSignature"))
    calls.append(
        ToolCall(
            call_id, name, json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False), signature
        )
    )


# -- OpenAI Responses -----------------------------------------------------------------------------


def responses_tools(offer: ToolOffer) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tools": [
            {
                "type": "function",
                "name": RUN_PYTHON,
                "description": offer.description,
                "parameters": PARAMETERS,
            }
        ]
    }
    if offer.forbid:
        body["tool_choice"] = "none"
    return body


def responses_outputs(round_: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function_call_output", "call_id": c["id"], "output": result_text(c)}
        for c in round_["calls"]
    ]


def responses_items(record: Record) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for round_ in rounds_of(record):
        if round_["text"]:
            items.append({"role": "assistant", "content": round_["text"]})
        items.extend(
            {"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]}
            for c in round_["calls"]
        )
        items.extend(responses_outputs(round_))
    if record.text:
        items.append({"role": "assistant", "content": record.text})
    return items


def responses_event(pieces: CallPieces, kind: str, data: dict[str, Any]) -> None:
    if kind == "response.output_item.added":
        item = data.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            key = item.get("id") or item.get("call_id")
            pieces.begin(key, _str(item.get("call_id")), _str(item.get("name")))
            if isinstance(item.get("arguments"), str):
                pieces.add(key, item["arguments"])
    elif kind == "response.function_call_arguments.delta":
        key = data.get("item_id")
        if pieces.has(key) and isinstance(data.get("delta"), str):
            pieces.add(key, data["delta"])
