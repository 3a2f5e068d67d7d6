"""The Gemini half of the fake provider: `/v1beta/...` requests, answered as Google answers them.

Concept: `fake_provider.FakeProvider` records every request and routes paths under `/v1beta/` here,
so one server, one recording and one behaviour queue serve every protocol.

Rules:
1. `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` streams `GenerateContentResponse`
   events (`data: {...}` + CRLF CRLF, as Google frames them); the last carries `finishReason:
   "STOP"` and `usageMetadata`. `:generateContent` answers one JSON body.
   `GET /v1beta/models` lists `models/<id>` entries, one of them an embedding model that cannot
   `generateContent` (the client must filter it out).
2. Behaviours come from the same queue as OpenAI's (`FakeProvider.script`): `Reply`,
   `HttpError`, `Cut`, `Hang`. An empty queue answers "You said: <last user text>".
3. With `api_key` set, a request whose `x-goog-api-key` differs (or that carries the key in the
   URL) gets Google's 400 `API_KEY_INVALID`; with `models` set, another model gets Google's 404.
"""

from __future__ import annotations

import contextlib
import json
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from fake_provider import RecordedRequest, _Handler

PREFIX = "/v1beta/"
DEFAULT_MODEL = "gemini-fake"

BAD_KEY_BODY = {
    "error": {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ],
    }
}


def model_not_found_body(model: str) -> dict[str, Any]:
    return {
        "error": {
            "code": 404,
            "message": f"models/{model} is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their supported "
            "methods.",
            "status": "NOT_FOUND",
        }
    }


def handles(path: str) -> bool:
    return path.startswith(PREFIX)


def last_user_text(body: Any) -> str:
    contents = body.get("contents") if isinstance(body, dict) else None
    for content in reversed(contents if isinstance(contents, list) else []):
        if isinstance(content, dict) and content.get("role") == "user":
            return "\n".join(p["text"] for p in content.get("parts") or [] if isinstance(p.get("text"), str))
    return ""


def response(text: str, finish: str | None = None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    value: dict[str, Any] = {"candidates": [candidate], "modelVersion": DEFAULT_MODEL}
    if usage:
        value["usageMetadata"] = usage
    return value


def usage_for(body: Any, text: str) -> dict[str, int]:
    prompt = len(json.dumps(body)) // 4
    output = max(1, len(text) // 4)
    return {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}


def respond(handler: _Handler, request: RecordedRequest) -> None:
    """Answer one `/v1beta/...` request (rules 1-3)."""
    from fake_provider import Cut, Hang, HttpError, Reply, split_text

    fake = handler.fake
    url = urlsplit(request.path)
    if fake.api_key is not None and (
        request.headers.get("x-goog-api-key") != fake.api_key or "key" in parse_qs(url.query)
    ):
        handler._send_json(400, BAD_KEY_BODY)
        return
    path = url.path.rstrip("/")
    if path == "/v1beta/models":
        names = fake.models or [DEFAULT_MODEL]
        models = [
            {
                "name": f"models/{n}",
                "displayName": n,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            }
            for n in names
        ]
        models.append({"name": "models/text-embedding-004", "supportedGenerationMethods": ["embedContent"]})
        handler._send_json(200, {"models": models})
        return
    model, _, method = path.removeprefix("/v1beta/models/").partition(":")
    if method not in ("streamGenerateContent", "generateContent") or request.method != "POST":
        handler._send_json(
            404, {"error": {"code": 404, "message": f"Unknown path {path}", "status": "NOT_FOUND"}}
        )
        return
    if fake.models is not None and model not in fake.models:
        handler._send_json(404, model_not_found_body(model))
        return
    behaviour = fake._next_behaviour(path)
    if isinstance(behaviour, HttpError):
        handler._send_json(behaviour.status, behaviour.body, behaviour.headers)
        return
    if isinstance(behaviour, Hang):
        fake.sleep(behaviour.seconds)
        handler.close_connection = True
        return
    import fake_tool_calls

    if isinstance(behaviour, fake_tool_calls.ToolCall):  # a functionCall (fake_tool_calls rule 3)
        fake_tool_calls.stream_gemini(handler, request, behaviour)
        return
    text = (
        behaviour.text if isinstance(behaviour, (Reply, Cut)) else f"You said: {last_user_text(request.body)}"
    )
    if method == "generateContent":
        handler._send_json(200, response(text, "STOP", usage_for(request.body, text)))
        return

    def event(value: dict[str, Any]) -> None:
        handler._chunk(f"data: {json.dumps(value)}\r\n\r\n".encode())

    handler._start_stream()
    pieces = split_text(text, behaviour.chunks if isinstance(behaviour, (Reply, Cut)) else 4)
    for i, piece in enumerate(pieces):
        if isinstance(behaviour, Reply) and i and behaviour.delay and not fake.sleep(behaviour.delay):
            return
        last = i == len(pieces) - 1 and not isinstance(behaviour, Cut)
        event(response(piece, "STOP" if last else None, usage_for(request.body, text) if last else None))
    if isinstance(behaviour, Cut):
        if behaviour.pause and not fake.sleep(behaviour.pause):
            return
        handler.close_connection = True
        with contextlib.suppress(OSError):
            handler.connection.shutdown(socket.SHUT_RDWR)
        return
    handler._end_stream()
