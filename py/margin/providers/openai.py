"""OpenAI Chat Completions, and every server that speaks it (Ollama, LM Studio, llama.cpp,
vLLM, OpenRouter, Groq): the provider is chosen by its base URL.

Rules:
1. Requests are compact, deterministic JSON (fixed key order, no spaces, UTF-8 kept), so the
   prefix of turn N+1's body is byte-identical to turn N's: providers' prompt caches keep hitting.
2. Records become wire messages with `role` and `content` only; parts keep only wire keys
   (`text`; `image_url.url`/`detail`), never our own (`meta`, `createdAt`, `imagesSeen`, ...).
   A parts list holding text only is sent as one string: older local servers accept nothing else.
3. `Authorization` is sent only when there is a key (local servers need none).
4. The stream parser is sans-IO (SSE events in, text pieces out). `[DONE]` or a `finish_reason`
   ends a stream honestly; a body that ends with neither was cut ("stream_cut"), and the partial
   text stays on the stream for the caller.
5. `stream_options.include_usage` is asked for unless the provider said it cannot
   (`supportsUsage: false`); a 400 that names `stream_options` is retried once without it and the
   stream reports `usage_unsupported` so the caller can remember.
6. A context overflow is the same `ContextOverflowError` whether it comes as an HTTP status or, as
   some llama.cpp builds send it, as an error event at the start of a 200 stream.
7. A non-empty `systemPrompt` is the first message, `{"role": "system", "content": ...}`, before
   the records (so the cached prefix stays stable turn after turn).
8. `list_models` is `GET {baseUrl}/models` → `data[].id` (OpenAI, and Ollama's and LM Studio's
   OpenAI-compatible lists), sorted, without duplicates.
9. The stream's `usage` is `margin.providers.usage`'s shape `{input, cachedInput, output}` (cached input
   from `prompt_tokens_details.cached_tokens`), or None when no usage chunk came.
10. Every reply is read through `margin.base.wire_json`: unreadable JSON (too deep, a number
   too long or not finite) and a wrong shape (`choices` not a list, a choice or `delta` not an
   object, `content` or `finish_reason` not text) are "provider_bad_reply", naming the server and
   the field; absent or null fields are fine (servers leave them out).
11. With the `run_python` tool offered (`tools`, margin.providers.tool_wire), the body carries `tools` and
   an answer's tool rounds go as `tool_calls` and `tool` messages; the stream's calls (its
   `delta.tool_calls` pieces) are the parser's `tool_calls`. Without it, rounds go as text. A
   400/422 naming tools is asked again without them, once (`tools_unsupported`, tool_loop rule 7).
"""

from __future__ import annotations

from typing import Any

from ..base.errors import ProviderError
from ..base.sentences import Sentence, sentence
from ..base.sse import SSEEvent
from ..base.wire_json import NotJSON, Source, bad_reply, decode, item_of, kind_name, member
from ..platform.ports import HttpRequest, Platform, Transport
from ..sandbox.tool_loop import CallPieces, refuses_tools, result_text
from ..storage.history import Record
from . import extract_error_message, host_of, http_error, normalize_base_url, quote, stream_cut, streaming
from .overflow import ContextOverflowError, context_overflow, too_long_for
from .tool_wire import Config, Offer, ToolOffer, flatten, rounds_of, text_or_none
from .usage import field, shape


def chat_url(base_url: str) -> str:
    return normalize_base_url(base_url) + "/chat/completions"


def wire_part(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": str(part.get("text", ""))}
    if kind == "image_url":
        image = part.get("image_url") or {}
        wired: dict[str, Any] = {"url": image.get("url", "")}
        if image.get("detail") in ("auto", "low", "high"):
            wired["detail"] = image["detail"]
        return {"type": "image_url", "image_url": wired}
    return None  # a part type this wire does not carry


def wire_message(record: Record) -> dict[str, Any]:
    if isinstance(record.content, str):
        return {"role": record.role, "content": record.content}
    parts = [w for w in (wire_part(p) for p in record.content) if w is not None]
    if all(p["type"] == "text" for p in parts):
        return {"role": record.role, "content": "\n".join(p["text"] for p in parts)}
    return {"role": record.role, "content": parts}


def system_messages(provider: dict[str, Any]) -> list[dict[str, Any]]:
    """Rule 7: the provider's system prompt as a leading message, or nothing."""
    prompt = provider.get("systemPrompt")
    if isinstance(prompt, str) and prompt.strip():
        return [{"role": "system", "content": prompt.strip()}]
    return []


def headers_for(provider: dict[str, Any], *, stream: bool) -> dict[str, str]:
    return streaming.json_headers(provider, stream=stream, key_header="Authorization", key_prefix="Bearer ")


def wire_messages(records: list[Record], tools: ToolOffer | None) -> list[dict[str, Any]]:
    """Rule 11: an answer's tool rounds as the API's own calls and results, when tools are offered."""
    if tools is None:
        return [wire_message(r) for r in flatten(records)]
    out: list[dict[str, Any]] = []
    for record in records:
        out.extend(openai_messages(record) if rounds_of(record) else [wire_message(record)])
    return out


def build_chat_request(
    provider: Config, messages: list[Record], *, stream: bool, include_usage: bool = True, tools: Offer = None
) -> HttpRequest:
    body: dict[str, Any] = {
        "model": provider["model"],
        "messages": system_messages(provider) + wire_messages(messages, tools),
        "stream": stream,
    }
    if stream and include_usage:
        body["stream_options"] = {"include_usage": True}
    if tools is not None:
        body.update(openai_tools(tools))
    return _chat_post(provider, body, stream=stream)


# -- the stream, sans-IO --------------------------------------------------------------------


class StreamParser(streaming.ParserBase):
    """SSE events of a Chat Completions stream in, text pieces out."""

    NOT_A_STREAM = ("py_error_not_a_chat_stream",)

    def __init__(self, model: str = "", source: Source = "") -> None:
        # Who sent the stream, for rule 10's sentences.
        super().__init__(source or sentence("py_error_source_provider"))
        self.model = model
        self.raw_usage: dict[str, Any] | None = None  # `done`: "[DONE]" arrived

    @property
    def usage(self) -> dict[str, int] | None:
        """Rule 9: the last usage chunk, normalized."""
        return normalize_usage(self.raw_usage)

    def feed(self, event: SSEEvent) -> list[str]:
        if self.done:
            return []
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            return []
        if not data:
            return []
        chunk = self.decode_event(data)
        said = _error_in(chunk)
        if event.event == "error" and said is None:
            said = data
        if said is not None:
            overflow = context_overflow(400, data) if not self.pieces else None
            if overflow is not None:  # rule 6
                raise ContextOverflowError(too_long_for(self.model), overflow)
            raise ProviderError.said("provider_error", "py_error_stopped_with_error", quote(said))
        if not isinstance(chunk, dict):
            raise bad_reply(self.source, sentence("py_error_reply_item", kind_name(chunk)))
        out: list[str] = []
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.raw_usage = usage
        for position, found in enumerate(member(chunk, "choices", list, self.source) or []):
            choice = item_of(found, self.source, f"choices[{position}]")
            if choice.get("index", 0) != 0:
                continue
            delta = member(choice, "delta", dict, self.source, "choices[]") or {}
            content = member(delta, "content", str, self.source, "choices[].delta")
            if content:
                out.append(content)
            openai_feed(self.calls, delta)
            reason = member(choice, "finish_reason", str, self.source, "choices[]")
            if reason:
                self.finish_reason = reason
        self.pieces.extend(out)
        return out

    def check_end(self) -> None:
        """The body ended: fine after [DONE] or a finish_reason; otherwise the stream was cut."""
        if self.done or self.finish_reason is not None:
            return
        raise stream_cut(self.text)


def _error_in(chunk: Any) -> str | None:
    if not isinstance(chunk, dict):
        return None
    error = chunk.get("error")
    if error is None:
        return None
    if isinstance(error, dict):
        return str(error.get("message") or streaming.dumps(error))
    return str(error)


async def open_stream(
    transport: Transport, provider: Config, records: list[Record], *, tools: Offer = None
) -> streaming.SSEChatStream:
    """Send the request; raise the mapped ProviderError unless an event stream is coming."""
    include_usage = provider.get("supportsUsage", True) is not False
    usage_unsupported = tools_unsupported = False
    request = build_chat_request(provider, records, stream=True, include_usage=include_usage, tools=tools)
    response = await streaming.send(transport, request, provider)
    if response.status in (400, 422) and (include_usage or tools is not None):
        body = await streaming.read_body(response)
        if include_usage and "stream_options" in body:
            usage_unsupported, include_usage = True, False
        elif tools is not None and refuses_tools(response.status, body):  # margin.sandbox.tool_loop rule 7
            tools_unsupported, tools = True, None
        else:
            raise http_error(response.status, body, response.headers, provider)
        request = build_chat_request(provider, records, stream=True, include_usage=include_usage, tools=tools)
        response = await streaming.send(transport, request, provider)
    await streaming.raise_unless_success(response, provider, http_error)
    if content_type := streaming.not_an_event_stream(response):
        body = await streaming.read_body(response)
        said = extract_error_message(body)
        if said and "choices" not in body:
            raise ProviderError.said("provider_error", "py_error_answered_with_error", quote(said))
        raise ProviderError.said("bad_stream", "py_error_not_a_stream_openai", content_type)
    parser = StreamParser(str(provider.get("model") or ""), source_of(provider))
    stream = streaming.SSEChatStream(response, provider, parser, usage_unsupported=usage_unsupported)
    stream.tools_unsupported = tools_unsupported
    return stream


# -- "Test connection" ----------------------------------------------------------------------


def _test_request(provider: dict[str, Any], *, max_tokens: bool) -> HttpRequest:
    body: dict[str, Any] = {
        "model": provider["model"],
        "messages": [{"role": "user", "content": "Reply with OK."}],
        "stream": False,
    }
    if max_tokens:
        body["max_tokens"] = 1
    return _chat_post(provider, body, stream=False)


def _chat_post(provider: dict[str, Any], body: dict[str, Any], *, stream: bool) -> HttpRequest:
    return streaming.post(chat_url(provider["baseUrl"]), headers_for(provider, stream=stream), body)


async def test_connection(platform: Platform, provider: dict[str, Any]) -> dict[str, Any]:
    """One tiny non-streaming request; a sentence the options page shows as it is."""
    try:
        response = await streaming.send(
            platform.transport, _test_request(provider, max_tokens=True), provider
        )
        body = await streaming.read_body(response)
        if response.status == 400 and "max_tokens" in body:
            # Some OpenAI models accept only max_completion_tokens: ask again without a limit.
            response = await streaming.send(
                platform.transport, _test_request(provider, max_tokens=False), provider
            )
            body = await streaming.read_body(response)
        if not 200 <= response.status < 300:
            raise http_error(response.status, body, response.headers, provider)
    except ProviderError as error:
        return {"ok": False, "message": error.in_language()}
    return streaming.connection_verdict(
        provider,
        body,
        lambda answer: isinstance(answer, dict) and isinstance(answer.get("choices"), list),
        api=sentence("py_notice_api_openai"),
        usual=sentence("py_notice_usual_ends_v1"),
    )


# -- the model picker -----------------------------------------------------------------------


def models_request(provider: dict[str, Any]) -> HttpRequest:
    headers = headers_for(provider, stream=False)
    headers.pop("Content-Type", None)
    return HttpRequest(
        method="GET",
        url=normalize_base_url(provider["baseUrl"]) + "/models",
        headers=headers,
        body=None,
        timeout=streaming.BODY_TIMEOUT,
    )


def source_of(provider: dict[str, Any]) -> Sentence:
    return sentence("py_error_source_server", host_of(provider.get("baseUrl", "")))


def model_ids(body: str, source: Source) -> list[str] | None:
    """`data[].id` of a model list (rule 8), or None when the body is not one (not JSON, or no
    `data` list); JSON that cannot be read is rule 10's error."""
    try:
        value = decode(body, source)
    except NotJSON:
        return None
    data = value.get("data") if isinstance(value, dict) else None
    if not isinstance(data, list):
        return None
    ids = {str(item["id"]).strip() for item in data if isinstance(item, dict) and item.get("id")}
    return sorted(i for i in ids if i)


async def list_models(platform: Platform, provider: dict[str, Any]) -> list[str]:
    """The models the server offers; a ProviderError with a sentence when it will not say."""
    body = await streaming.fetch_text(platform.transport, models_request(provider), provider, http_error)
    ids = model_ids(body, source_of(provider))
    if ids is None:
        raise ProviderError.said("bad_models", "py_error_no_model_list_v1", host_of(provider["baseUrl"]))
    return ids


# -- the run_python tool on this wire (margin.providers.tool_wire, rules 1, 2 and 4) ----------


def openai_tools(offer: ToolOffer) -> dict[str, Any]:
    tools = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in offer.tools()
    ]
    body: dict[str, Any] = {"tools": tools}
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
        pieces.begin(key, text_or_none(call.get("id")), text_or_none(function.get("name")))
        if isinstance(function.get("arguments"), str):
            pieces.add(key, function["arguments"])


# -- usage (margin.providers.usage, rule 2) ----------------------------------------------------------


def normalize_usage(raw: Any) -> dict[str, int] | None:
    """Chat Completions' `prompt_tokens`, `prompt_tokens_details.cached_tokens`, `completion_tokens`;
    the Responses API's `input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`."""
    if not isinstance(raw, dict):
        return None
    if "prompt_tokens" in raw or "completion_tokens" in raw:
        return shape(
            field(raw, "prompt_tokens"),
            field(raw, "prompt_tokens_details", "cached_tokens"),
            field(raw, "completion_tokens"),
        )
    return shape(
        field(raw, "input_tokens"),
        field(raw, "input_tokens_details", "cached_tokens"),
        field(raw, "output_tokens"),
    )
