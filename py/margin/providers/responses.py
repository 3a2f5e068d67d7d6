"""OpenAI's Responses API, an agent provider: `POST {baseUrl}/responses`, where the provider keeps
the conversation and each turn sends only what is new with `previous_response_id`.

Rules:
1. The body is compact, deterministic JSON: `{model, input, stream, store: true}`, plus
   `instructions` (the provider's `systemPrompt`, sent every turn: the API does not carry it over
   from the previous response) and `previous_response_id` when the turn continues one.
   Which records go in `input` is the agent turn's business (`margin.agent_turn`).
2. Input items are messages `{role, content: [parts]}`: user (and system) parts are `input_text`
   and `input_image` (`image_url` = the data URL); assistant parts are `output_text`. Empty text
   is never sent; a record with nothing left is left out.
3. The stream parser is sans-IO: `response.created` gives the new response's id,
   `response.output_text.delta` the text, `response.completed` (or `response.incomplete`) ends it
   with `response.id` and `usage`; other events are ignored. `response.failed` and `error` are
   ProviderErrors mapped like the same error over HTTP; a body that ends before the end event was
   cut ("stream_cut"), and the partial text stays on the stream and the error.
4. Usage is `{input, cachedInput, output}` from `input_tokens`,
   `input_tokens_details.cached_tokens`, `output_tokens`.
5. An unknown or expired `previous_response_id` (code `previous_response_not_found`, or a 400/404
   whose message says the previous response was not found) is the ProviderError code
   `conversation_forgotten`, so the agent turn can replay the full history once.
6. `test_connection` is one tiny non-streaming, unstored response; `list_models` is `GET /models`
   as for OpenAI (`margin.providers.openai`).
7. Replies are read through `margin.wire_json`: unreadable JSON and wrong shapes (an event or
   `response` that is not an object, `type`, a text `delta` or `response.id` that is not text)
   are "provider_bad_reply"; absent fields are fine.
8. With the `run_python` tool offered (`tools`, margin.tool_wire), the body carries `tools` and an
   answer's tool rounds go as `function_call` / `function_call_output` items; the stream's
   `function_call` output items and their argument deltas are the parser's `tool_calls`.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ProviderError
from ..history import Record
from ..ports import HttpRequest, Platform, Transport
from ..sentences import sentence
from ..sse import SSEEvent
from ..tool_loop import CallPieces, ToolCall
from ..tool_wire import ToolOffer, flatten, responses_event, responses_items, responses_tools, rounds_of
from ..usage import normalize as normalize_usage
from ..wire_json import NotJSON, bad_reply, decode, decode_or_none, kind_name, member
from . import DEFAULT_BASE_URLS, host_of, http_error, normalize_base_url, quote, stream_cut
from . import openai as openai_provider
from .streaming import (
    HEADERS_TIMEOUT,
    SSEChatStream,
    connection_verdict,
    dumps,
    fetch_text,
    not_an_event_stream,
    raise_unless_success,
    read_body,
    send,
)

FORGOTTEN = "conversation_forgotten"
_FORGOTTEN_MESSAGE = re.compile(r"previous[ _]response.*not found", re.IGNORECASE)

# HTTP status that an error code inside a 200 stream stands for.
_STATUS_OF_CODE = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "invalid_prompt": 400,
    "previous_response_not_found": 404,
    "context_length_exceeded": 400,
}


def responses_url(base_url: str) -> str:
    return normalize_base_url(base_url) + "/responses"


def headers_for(provider: dict[str, Any], *, stream: bool) -> dict[str, str]:
    return openai_provider.headers_for(provider, stream=stream)


# -- the request, sans-IO --------------------------------------------------------------------


def input_parts(record: Record) -> list[dict[str, Any]]:
    """Rule 2: a record's content as Responses input parts."""
    text_type = "output_text" if record.role == "assistant" else "input_text"
    parts: list[dict[str, Any]] = []
    for part in record.parts:
        kind = part.get("type")
        if kind == "text":
            text = str(part.get("text", ""))
            if text.strip():
                parts.append({"type": text_type, "text": text})
        elif kind == "image_url" and record.role != "assistant":
            image = part.get("image_url") or {}
            url = str(image.get("url", ""))
            if url:
                item: dict[str, Any] = {"type": "input_image", "image_url": url}
                if image.get("detail") in ("auto", "low", "high"):
                    item["detail"] = image["detail"]
                parts.append(item)
    return parts


def input_items(records: list[Record], tools: ToolOffer | None = None) -> list[dict[str, Any]]:
    items = []
    for record in records if tools is not None else flatten(records):
        if rounds_of(record):  # rule 8
            for item in responses_items(record):
                if "role" in item:
                    item = {
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": item["content"]}],
                    }
                items.append(item)
            continue
        parts = input_parts(record)
        if parts:
            items.append({"role": record.role, "content": parts})
    return items


def build_chat_request(
    provider: dict[str, Any],
    records: list[Record],
    *,
    stream: bool,
    include_usage: bool = True,
    previous_response_id: str | None = None,
    tools: ToolOffer | None = None,
) -> HttpRequest:
    """Rule 1. `include_usage` is accepted for the common signature: usage always comes."""
    body: dict[str, Any] = {
        "model": provider["model"],
        "input": input_items(records, tools),
        "stream": stream,
    }
    instructions = str(provider.get("systemPrompt") or "").strip()
    if instructions:
        body["instructions"] = instructions
    body["store"] = True
    if previous_response_id:
        body["previous_response_id"] = previous_response_id
    if tools is not None:
        body.update(responses_tools(tools))
    return _post(provider, body, stream=stream)


def _post(provider: dict[str, Any], body: dict[str, Any], *, stream: bool) -> HttpRequest:
    return HttpRequest(
        method="POST",
        url=responses_url(provider["baseUrl"]),
        headers=headers_for(provider, stream=stream),
        body=dumps(body),
        timeout=HEADERS_TIMEOUT,
    )


# -- errors ----------------------------------------------------------------------------------


def _error_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        return value["error"]
    return value if isinstance(value, dict) else {}


def is_forgotten(status: int, error: dict[str, Any]) -> bool:
    """Rule 5."""
    if error.get("code") == "previous_response_not_found":
        return True
    message = str(error.get("message") or "")
    return status in (400, 404) and (
        bool(_FORGOTTEN_MESSAGE.search(message))
        or (error.get("param") == "previous_response_id" and "not found" in message.lower())
    )


def map_error(status: int, body: str, headers: dict[str, str], provider: dict[str, Any]) -> ProviderError:
    error = _error_object(decode_or_none(body))
    if is_forgotten(status, error):
        return ProviderError.said(FORGOTTEN, "py_error_conversation_forgotten")
    return http_error(status, body, headers, provider)


# -- the stream, sans-IO ---------------------------------------------------------------------


class StreamParser:
    """SSE events of a Responses stream in, text pieces out (rule 3)."""

    def __init__(self, provider: dict[str, Any]) -> None:
        self.provider = provider
        self.source = sentence("py_error_source_responses", host_of(provider.get("baseUrl", "")))
        self.pieces: list[str] = []
        self.done = False
        self.finish_reason: str | None = None
        self.response_id: str | None = None
        self.usage: dict[str, int] | None = None
        self.calls = CallPieces()

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return self.calls.finished()

    def feed(self, event: SSEEvent) -> list[str]:
        if self.done or not event.data.strip() or event.data.strip() == "[DONE]":
            return []
        try:
            data = decode(event.data, self.source)
        except NotJSON:
            raise ProviderError.said(
                "bad_stream",
                "py_error_not_responses_stream",
                quote(event.data),
                DEFAULT_BASE_URLS["openai-responses"],
            ) from None
        if not isinstance(data, dict):
            raise bad_reply(self.source, sentence("py_error_reply_event", kind_name(data)))
        kind = member(data, "type", str, self.source) or event.event
        response: dict[str, Any] = member(data, "response", dict, self.source) or {}
        response_id = member(response, "id", str, self.source, "response")
        if response_id:
            self.response_id = response_id
        responses_event(self.calls, kind, data)
        if kind == "response.output_text.delta":
            delta = member(data, "delta", str, self.source)
            if delta:
                self.pieces.append(delta)
                return [delta]
        elif kind in ("response.completed", "response.incomplete"):
            self._take_usage(response.get("usage"))
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            # "length" as in Chat Completions, so callers (summaries) read a cut-short answer alike.
            self.finish_reason = "length" if reason == "max_output_tokens" else str(reason or "stop")
            self.done = True
        elif kind == "response.failed":
            raise self._stream_error(_error_object(response))
        elif kind == "error":
            raise self._stream_error(_error_object(data))
        return []

    def _take_usage(self, usage: Any) -> None:
        # margin.usage knows the Responses API's field names (input_tokens_details.cached_tokens).
        self.usage = normalize_usage(usage, "openai") or self.usage

    def _stream_error(self, error: dict[str, Any]) -> ProviderError:
        code = str(error.get("code") or "")
        message = str(error.get("message") or "")
        body = dumps({"error": {"code": code, "message": message, "param": error.get("param")}})
        # http_error (through map_error) also finds a context overflow in the message.
        raised = map_error(_STATUS_OF_CODE.get(code, 500), body, {}, self.provider)
        raised.partial_text = self.text or None
        return raised

    def check_end(self) -> None:
        if self.done:
            return
        raise stream_cut(self.text)


class ResponsesStream(SSEChatStream):
    """An SSE answer that also tells the new response's id (for the answer's `responseId`)."""

    def __init__(self, response: Any, provider: dict[str, Any], parser: StreamParser) -> None:
        super().__init__(response, provider, parser)
        self._responses_parser = parser

    @property
    def response_id(self) -> str | None:
        return self._responses_parser.response_id


async def open_stream(
    transport: Transport,
    provider: dict[str, Any],
    records: list[Record],
    *,
    previous_response_id: str | None = None,
    tools: ToolOffer | None = None,
) -> ResponsesStream:
    """Send the request; raise the mapped ProviderError unless an event stream is coming."""
    request = build_chat_request(
        provider, records, stream=True, previous_response_id=previous_response_id, tools=tools
    )
    response = await send(transport, request, provider)
    await raise_unless_success(response, provider, map_error)
    if content_type := not_an_event_stream(response):
        await read_body(response)
        raise ProviderError.said(
            "bad_stream", "py_error_not_a_stream_at", content_type, DEFAULT_BASE_URLS["openai-responses"]
        )
    return ResponsesStream(response, provider, StreamParser(provider))


# -- "Test connection" and the model list ----------------------------------------------------


async def test_connection(platform: Platform, provider: dict[str, Any]) -> dict[str, Any]:
    """Rule 6: a sentence the options page shows as it is."""
    body = {"model": provider["model"], "input": "Reply with OK.", "max_output_tokens": 16, "store": False}
    try:
        text = await fetch_text(platform.transport, _post(provider, body, stream=False), provider, map_error)
    except ProviderError as error:
        return {"ok": False, "message": error.in_language()}
    return connection_verdict(
        provider,
        text,
        lambda answer: isinstance(answer, dict) and answer.get("object") == "response",
        api=sentence("py_notice_api_responses"),
        usual=sentence("py_notice_usual_is", DEFAULT_BASE_URLS["openai-responses"]),
    )


async def list_models(platform: Platform, provider: dict[str, Any]) -> list[str]:
    return await openai_provider.list_models(platform, provider)
