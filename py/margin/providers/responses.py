"""OpenAI's Responses API, an agent provider: `POST {baseUrl}/responses`, where the provider keeps
the conversation and each turn sends only what is new with `previous_response_id`.

Rules:
1. The body is compact, deterministic JSON: `{model, input, stream, store: true}`, plus
   `instructions` (the provider's `systemPrompt`, sent every turn: the API does not carry it over
   from the previous response) and `previous_response_id` when the turn continues one.
   Which records go in `input` is the agent turn's business (`margin.turn.agent`).
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
7. Replies are read through `margin.base.wire_json`: unreadable JSON and wrong shapes (an event or
   `response` that is not an object, `type`, a text `delta` or `response.id` that is not text)
   are "provider_bad_reply"; absent fields are fine.
8. With the `run_python` tool offered (`tools`, margin.providers.tool_wire), the body carries `tools` and an
   answer's tool rounds go as `function_call` / `function_call_output` items; the stream's
   `function_call` output items and their argument deltas are the parser's `tool_calls`.
"""

from __future__ import annotations

import re
from typing import Any

from ..base.errors import ProviderError
from ..base.sentences import sentence
from ..base.sse import SSEEvent
from ..base.wire_json import decode_or_none, member
from ..platform.ports import HttpRequest, Platform, Transport
from ..sandbox.tool_loop import CallPieces, result_text
from ..storage.history import Record
from . import DEFAULT_BASE_URLS, host_of, http_error, normalize_base_url, part_text, streaming
from . import openai as openai_provider
from .tool_wire import ToolOffer, flatten, rounds_of, text_or_none

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
        if kind == "text" and (text := part_text(part)):
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
    return streaming.post(responses_url(provider["baseUrl"]), headers_for(provider, stream=stream), body)


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


class StreamParser(streaming.ParserBase):
    """SSE events of a Responses stream in, text pieces out (rule 3)."""

    NOT_A_STREAM = ("py_error_not_responses_stream", DEFAULT_BASE_URLS["openai-responses"])

    def __init__(self, provider: dict[str, Any]) -> None:
        super().__init__(sentence("py_error_source_responses", host_of(provider.get("baseUrl", ""))))
        self.provider = provider
        self.response_id: str | None = None
        self.usage: dict[str, int] | None = None

    def feed(self, event: SSEEvent) -> list[str]:
        if self.done or not event.data.strip() or event.data.strip() == "[DONE]":
            return []
        data = self.event_object(event.data)
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
        # margin.providers.usage knows the Responses API's field names (input_tokens_details.cached_tokens).
        self.usage = normalize_usage(usage) or self.usage

    def _stream_error(self, error: dict[str, Any]) -> ProviderError:
        code = str(error.get("code") or "")
        message = str(error.get("message") or "")
        body = streaming.dumps({"error": {"code": code, "message": message, "param": error.get("param")}})
        # http_error (through map_error) also finds a context overflow in the message.
        raised = map_error(_STATUS_OF_CODE.get(code, 500), body, {}, self.provider)
        raised.partial_text = self.text or None
        return raised


class ResponsesStream(streaming.SSEChatStream):
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
    response = await streaming.open_events(transport, request, provider, map_error, _not_a_stream)
    return ResponsesStream(response, provider, StreamParser(provider))


def _not_a_stream(content_type: str, body: str) -> ProviderError:
    where = DEFAULT_BASE_URLS["openai-responses"]
    return ProviderError.said("bad_stream", "py_error_not_a_stream_at", content_type, where)


# -- "Test connection" and the model list ----------------------------------------------------


async def test_connection(platform: Platform, provider: dict[str, Any]) -> dict[str, Any]:
    """Rule 6: a sentence the options page shows as it is."""
    body = {"model": provider["model"], "input": "Reply with OK.", "max_output_tokens": 16, "store": False}
    request, where = _post(provider, body, stream=False), DEFAULT_BASE_URLS["openai-responses"]
    api, usual = sentence("py_notice_api_responses"), sentence("py_notice_usual_is", where)
    return await streaming.connection_test(platform, request, provider, map_error, _is_response, api, usual)


def _is_response(answer: Any) -> bool:
    return isinstance(answer, dict) and answer.get("object") == "response"


async def list_models(platform: Platform, provider: dict[str, Any]) -> list[str]:
    return await openai_provider.list_models(platform, provider)


# -- the run_python tool on this wire (margin.providers.tool_wire, rules 1, 2 and 4) ----------


def responses_tools(offer: ToolOffer) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tools": [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}
            for t in offer.tools()
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
            pieces.begin(key, text_or_none(item.get("call_id")), text_or_none(item.get("name")))
            if isinstance(item.get("arguments"), str):
                pieces.add(key, item["arguments"])
    elif kind == "response.function_call_arguments.delta":
        key = data.get("item_id")
        if pieces.has(key) and isinstance(data.get("delta"), str):
            pieces.add(key, data["delta"])


# -- usage (margin.providers.usage, rule 2): the Responses API's usage, read as OpenAI's ------------

normalize_usage = openai_provider.normalize_usage
