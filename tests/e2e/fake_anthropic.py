"""The fake provider's Anthropic side: `POST /v1/messages` (Messages API, SSE) and `GET /v1/models`.

Concept: `fake_provider.FakeProvider` records every request and routes Anthropic-shaped ones
here (a path ending in `/messages`, or `/models` asked with an `anthropic-version` header); this
module answers as api.anthropic.com does, with the same scripted behaviours (`Reply`, `Cut`,
`HttpError`, `Hang`, `Garbage`).

Rules:
1. A stream is the documented event sequence: `message_start` (with usage), `content_block_start`,
   a `ping`, one `content_block_delta` `text_delta` per piece, `content_block_stop`,
   `message_delta` (stop reason, output usage), `message_stop`, each as `event: <type>` plus
   `data: <json>`.
2. Failures look like Anthropic's: `{type: "error", error: {type, message}}`; a missing or wrong
   `x-api-key` (when the server has an `api_key`) is a 401 `authentication_error`, an unknown model
   (when it has `models`) a 404 `not_found_error`, a body without `max_tokens` a 400.
3. A `Cut` stream stops after its text without `message_stop`, the connection dropped.
4. The default answer is "You said: <last user text>", as on the OpenAI side.
5. A `fake_tool_calls.ToolCall` streams a `tool_use` block instead (fake_tool_calls rule 2).
"""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any

from fake_behaviours import DEFAULT_SUMMARY, Cut, Garbage, Hang, HttpError, Reply
from fake_requests import RecordedRequest, last_user_text, split_text


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}


BAD_KEY_BODY = error_body("authentication_error", "invalid x-api-key")


def is_anthropic(request: RecordedRequest) -> bool:
    path = request.path.split("?", 1)[0].rstrip("/")
    return path.endswith("/messages") or (path.endswith("/models") and "anthropic-version" in request.headers)


def respond(handler: Any, request: RecordedRequest) -> None:
    """Answer one Anthropic request on `handler` (a fake_provider `_Handler`)."""
    fake = handler.fake
    path = request.path.split("?", 1)[0].rstrip("/")
    if fake.api_key is not None and request.headers.get("x-api-key") != fake.api_key:
        handler._send_json(401, BAD_KEY_BODY)
        return
    behaviour = fake._next_behaviour(path, summary=request.is_summary)
    if isinstance(behaviour, HttpError):
        handler._send_json(behaviour.status, behaviour.body, behaviour.headers)
        return
    if isinstance(behaviour, Hang):
        fake.sleep(behaviour.seconds)
        handler.close_connection = True
        return
    if path.endswith("/models"):
        names = fake.models or ["fake-model"]
        handler._send_json(
            200,
            {
                "data": [
                    {"type": "model", "id": n, "display_name": n, "created_at": "2025-01-01T00:00:00Z"}
                    for n in names
                ],
                "has_more": False,
                "first_id": names[0],
                "last_id": names[-1],
            },
        )
        return
    body = request.body
    if handler.command != "POST" or not isinstance(body, dict) or "max_tokens" not in body:
        handler._send_json(400, error_body("invalid_request_error", "max_tokens: Field required"))
        return
    model = str(body.get("model"))
    if fake.models is not None and model not in fake.models:
        handler._send_json(404, error_body("not_found_error", f"model: {model}"))
        return
    if behaviour is None:
        behaviour = Reply(DEFAULT_SUMMARY if request.is_summary else f"You said: {last_user_text(body)}")
    text = behaviour.text if isinstance(behaviour, (Reply, Cut)) else ""
    if not body.get("stream"):
        handler._send_json(200, _message(model, [{"type": "text", "text": text}], "end_turn", body, text))
        return
    _stream(handler, body, behaviour)


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    return {
        "input_tokens": len(json.dumps(body.get("messages", []))) // 4,
        "output_tokens": max(1, len(text) // 4),
    }


def _message(
    model: str, content: list[Any], stop: str | None, body: dict[str, Any], text: str
) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(body, text),
    }


def _event(handler: Any, value: Any) -> None:
    if isinstance(value, str):
        handler._chunk(f"event: message_start\ndata: {value}\n\n".encode())
        return
    handler._chunk(f"event: {value['type']}\ndata: {json.dumps(value)}\n\n".encode())


def _stream(handler: Any, body: dict[str, Any], behaviour: Any) -> None:
    import fake_tool_calls

    if isinstance(behaviour, fake_tool_calls.ToolCall):  # rule 5
        fake_tool_calls.stream_anthropic(handler, body, behaviour)
        return
    model = str(body.get("model"))
    text = behaviour.text if isinstance(behaviour, (Reply, Cut)) else ""
    start = _message(model, [], None, body, text)
    start["usage"] = {**start["usage"], "output_tokens": 1}
    handler._start_stream()
    if isinstance(behaviour, Garbage):
        _event(handler, "{not json")
        handler._end_stream()
        return
    _event(handler, {"type": "message_start", "message": start})
    _event(
        handler, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    )
    _event(handler, {"type": "ping"})
    if (
        isinstance(behaviour, Reply)
        and behaviour.first_delay
        and not handler.fake.sleep(behaviour.first_delay)
    ):
        return
    pieces = split_text(text, behaviour.chunks)
    for i, piece in enumerate(pieces):
        if isinstance(behaviour, Reply) and i and behaviour.delay and not handler.fake.sleep(behaviour.delay):
            return
        _event(
            handler,
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
        )
    if isinstance(behaviour, Cut):  # rule 3
        if behaviour.pause and not handler.fake.sleep(behaviour.pause):
            return
        handler.close_connection = True
        with contextlib.suppress(OSError):
            handler.connection.shutdown(socket.SHUT_RDWR)
        return
    _event(handler, {"type": "content_block_stop", "index": 0})
    _event(
        handler,
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": _usage(body, text)["output_tokens"]},
        },
    )
    _event(handler, {"type": "message_stop"})
    handler._end_stream()
