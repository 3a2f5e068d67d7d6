"""The fake OpenAI provider's tool calls: a scripted answer that calls a function, as OpenAI streams it.

Concept: `ToolCall(code)` is one more behaviour for `FakeProvider.script(...)` (fake_provider.py
rule 2): the stream says some text, then calls `name` with `{"code": code}` as its arguments, the
arguments split into `pieces` deltas (OpenAI sends `id` and `function.name` once, then the
arguments in pieces), and ends with `finish_reason: "tool_calls"`. The next request then carries
the tool's result, which a test reads with `tool_results(body)`.
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


def tool_results(body: Any) -> list[dict[str, Any]]:
    """The `tool` messages of a recorded Chat Completions body, in order."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return [m for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
