"""The fake provider's tool calls: a scripted answer that calls a function, as each API streams it.

Concept: `ToolCall(code)` is one more behaviour for `FakeProvider.script(...)` (fake_provider.py
rule 2): the stream says some text, then calls `name` with `{"code": code}` as its arguments, and
the next request carries the tool's result (`tool_results(body)` reads it, whatever the API).

Rules, one per wire:
1. OpenAI (`stream`): `id` and `function.name` once, the arguments in `pieces` deltas,
   `finish_reason: "tool_calls"`.
2. Anthropic (`stream_anthropic`): a `text` block, then a `tool_use` block whose input comes as
   `input_json_delta` pieces, `stop_reason: "tool_use"`.
3. Gemini (`stream_gemini`): one chunk with the text and a whole `functionCall` part, `STOP`.
4. Responses (`stream_responses`): a `function_call` output item, its arguments as
   `response.function_call_arguments.delta` pieces, then `response.completed`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class ToolCall:
    code: str
    text: str = ""
    name: str = "run_python"
    call_id: str = "call_fake_1"
    pieces: int = 4
    # Raw arguments instead of {"code": code} (malformed JSON, another shape).
    arguments: str | None = None
    applies_to_models: bool = False


def split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream(handler: Any, request: Any, behaviour: ToolCall) -> None:
    """Streams `behaviour` on `handler` (a fake_provider handler with its stream started)."""
    model = request.body.get("model")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    handler._event(chunk({"role": "assistant", "content": behaviour.text or None}))
    arguments = json.dumps({"code": behaviour.code}) if behaviour.arguments is None else behaviour.arguments
    head = {
        "index": 0,
        "id": behaviour.call_id,
        "type": "function",
        "function": {"name": behaviour.name, "arguments": ""},
    }
    handler._event(chunk({"tool_calls": [head]}))
    for piece in split(arguments, behaviour.pieces):
        handler._event(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    handler._event(chunk({}, "tool_calls"))
    handler._event("[DONE]")
    handler._end_stream()


def _arguments(behaviour: ToolCall) -> str:
    return json.dumps({"code": behaviour.code}) if behaviour.arguments is None else behaviour.arguments


def _named(handler: Any, value: dict[str, Any]) -> None:
    handler._chunk(f"event: {value['type']}\ndata: {json.dumps(value)}\n\n".encode())


def stream_anthropic(handler: Any, body: dict[str, Any], behaviour: ToolCall) -> None:
    """Rule 2."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    start: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": [],
        "usage": usage,
    }
    handler._start_stream()
    _named(handler, {"type": "message_start", "message": start})
    index = 0
    if behaviour.text:
        _named(
            handler,
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        _named(
            handler,
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": behaviour.text},
            },
        )
        _named(handler, {"type": "content_block_stop", "index": 0})
        index = 1
    block = {"type": "tool_use", "id": behaviour.call_id, "name": behaviour.name, "input": {}}
    _named(handler, {"type": "content_block_start", "index": index, "content_block": block})
    for piece in split(_arguments(behaviour), behaviour.pieces):
        delta = {"type": "input_json_delta", "partial_json": piece}
        _named(handler, {"type": "content_block_delta", "index": index, "delta": delta})
    _named(handler, {"type": "content_block_stop", "index": index})
    _named(
        handler,
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
    )
    _named(handler, {"type": "message_stop"})
    handler._end_stream()


def stream_gemini(handler: Any, request: Any, behaviour: ToolCall) -> None:
    """Rule 3."""
    try:
        args = json.loads(_arguments(behaviour))
    except ValueError:
        args = {}
    parts: list[dict[str, Any]] = [{"text": behaviour.text}] if behaviour.text else []
    parts.append({"functionCall": {"name": behaviour.name, "args": args}})
    chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    handler._start_stream()
    handler._chunk(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
    handler._end_stream()


def stream_responses(handler: Any, request: Any, behaviour: ToolCall, response: dict[str, Any]) -> None:
    """Rule 4; `response` is the fake's `{id, object, status, model}` of this response."""
    handler._start_stream()
    _named(handler, {"type": "response.created", "response": response})
    item = {
        "type": "function_call",
        "id": "fc_fake",
        "call_id": behaviour.call_id,
        "name": behaviour.name,
        "arguments": "",
    }
    _named(handler, {"type": "response.output_item.added", "output_index": 0, "item": item})
    arguments = _arguments(behaviour)
    for piece in split(arguments, behaviour.pieces):
        _named(
            handler,
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_fake",
                "output_index": 0,
                "delta": piece,
            },
        )
    _named(
        handler,
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_fake",
            "output_index": 0,
            "arguments": arguments,
        },
    )
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5}
    _named(
        handler,
        {"type": "response.completed", "response": {**response, "status": "completed", "usage": usage}},
    )
    handler._end_stream()


def tool_results(body: Any) -> list[dict[str, Any]]:
    """The tool results of a recorded request body, in order, as `{id, content}` whatever the API:
    OpenAI `tool` messages, Anthropic `tool_result` blocks, Gemini `functionResponse` parts,
    Responses `function_call_output` items."""
    if not isinstance(body, dict):
        return []
    found: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            found.append({"id": message.get("tool_call_id"), "content": message.get("content")})
        elif isinstance(message.get("content"), list):
            found += [
                {"id": b.get("tool_use_id"), "content": b.get("content")}
                for b in message["content"]
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
    for content in body.get("contents", []):
        for part in content.get("parts", []):
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if response:
                found.append(
                    {"id": response.get("name"), "content": response.get("response", {}).get("result")}
                )
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            found.append({"id": item.get("call_id"), "content": item.get("output")})
    return found
