"""The fake provider's Responses side: `POST /v1/responses` (OpenAI Responses API, SSE).

Concept: `fake_provider.FakeProvider` records every request and routes a path ending in
`/responses` here; this module answers as api.openai.com does, with the same scripted behaviours
(`Reply`, `Cut`, `HttpError`, `Hang`), and keeps the responses it stored, as the real API does.

Rules:
1. A stream is the documented event sequence: `response.created`, `response.in_progress`, one
   `response.output_text.delta` per piece, `response.output_text.done`, `response.completed`
   (with the response's `id` and `usage`), each as `event: <type>` plus `data: <json>`.
2. Each answered response with `store` not false is remembered by id; a `previous_response_id`
   the fake does not remember is the real 400 `previous_response_not_found`. `forget(fake)` makes
   it forget everything (an expired conversation).
3. A wrong key (when the server has an `api_key`) is a 401 `invalid_api_key`.
4. The default answer is "You said: <last user text>", as on the other sides.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
from typing import Any

from fake_behaviours import BAD_KEY_BODY, Cut, Hang, HttpError, Reply
from fake_requests import RecordedRequest, split_text

_stored: dict[int, set[str]] = {}
_ids = itertools.count(1)


def handles(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/responses")


def forget(fake: Any) -> None:
    """Rule 2: the provider no longer knows any stored response."""
    _stored.pop(id(fake), None)


def forgotten_body(response_id: str) -> dict[str, Any]:
    return {
        "error": {
            "message": f"Previous response with id '{response_id}' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }


def last_input_text(body: Any) -> str:
    try:
        items = body["input"]
        if isinstance(items, str):
            return items
        for item in reversed(items):
            if item.get("role") == "user":
                content = item["content"]
                if isinstance(content, str):
                    return content
                return "\n".join(p.get("text", "") for p in content if p.get("type") == "input_text")
    except (KeyError, TypeError, AttributeError):
        pass
    return ""


def respond(handler: Any, request: RecordedRequest) -> None:
    """Answer one Responses request on `handler` (a fake_provider `_Handler`)."""
    fake = handler.fake
    if fake.api_key is not None and request.headers.get("authorization") != f"Bearer {fake.api_key}":
        handler._send_json(401, BAD_KEY_BODY)
        return
    behaviour = fake._next_behaviour("/responses")
    if isinstance(behaviour, HttpError):
        handler._send_json(behaviour.status, behaviour.body, behaviour.headers)
        return
    if isinstance(behaviour, Hang):
        fake.sleep(behaviour.seconds)
        handler.close_connection = True
        return
    body = request.body if isinstance(request.body, dict) else {}
    previous = body.get("previous_response_id")
    stored = _stored.setdefault(id(fake), set())
    if previous is not None and previous not in stored:
        handler._send_json(400, forgotten_body(str(previous)))
        return
    response_id = f"resp_fake{next(_ids)}"
    if body.get("store", True) is not False:
        stored.add(response_id)
    text = behaviour.text if isinstance(behaviour, (Reply, Cut)) else f"You said: {last_input_text(body)}"
    usage = {
        "input_tokens": len(json.dumps(body.get("input", []))) // 4,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": max(1, len(text) // 4),
    }
    response = {"id": response_id, "object": "response", "status": "in_progress", "model": body.get("model")}
    if not body.get("stream"):
        output = [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        ]
        handler._send_json(200, {**response, "status": "completed", "output": output, "usage": usage})
        return
    import fake_tool_calls

    if isinstance(behaviour, fake_tool_calls.ToolCall):  # a function_call (fake_tool_calls rule 4)
        fake_tool_calls.stream_responses(handler, request, behaviour, response)
        return
    handler._start_stream()
    _event(handler, {"type": "response.created", "response": response})
    _event(handler, {"type": "response.in_progress", "response": response})
    chunks = behaviour.chunks if isinstance(behaviour, (Reply, Cut)) else 3
    for i, piece in enumerate(split_text(text, chunks)):
        if isinstance(behaviour, Reply) and i and behaviour.delay and not fake.sleep(behaviour.delay):
            return
        _event(
            handler,
            {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": piece},
        )
    if isinstance(behaviour, Cut):
        handler.close_connection = True
        with contextlib.suppress(OSError):
            handler.connection.shutdown(socket.SHUT_RDWR)
        return
    _event(
        handler, {"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": text}
    )
    _event(
        handler,
        {"type": "response.completed", "response": {**response, "status": "completed", "usage": usage}},
    )
    handler._end_stream()


def _event(handler: Any, value: dict[str, Any]) -> None:
    handler._chunk(f"event: {value['type']}\ndata: {json.dumps(value)}\n\n".encode())
