"""Google Gemini (the Generative Language API's `generateContent`), streamed as Server-Sent Events.

Rules:
1. A turn is `POST {baseUrl}/models/{model}:streamGenerateContent?alt=sse`; the key travels only
   in the `x-goog-api-key` header, never in a URL (URLs end up in logs and in error pages).
2. Records become `contents` of role "user" or "model" with `text` / `inline_data` parts; only
   wire keys are sent. Consecutive records of one role (an attached page and the question) are
   merged into one content, and empty records are skipped. The provider's `systemPrompt` and any
   system records go, in that order, into `systemInstruction` (Gemini has no system role).
   Bodies are compact, deterministic JSON so a turn's prefix is byte-identical to the last turn's.
3. Each SSE event is a whole `GenerateContentResponse`: the text is the first candidate's
   non-thought parts. A `finishReason` ends the answer honestly; SAFETY-like reasons and a
   `promptFeedback.blockReason` are "content_refused" (the partial text stays on the error); a
   body that ends with no `finishReason` was cut ("stream_cut", with the partial text).
4. `usageMetadata` is reported in `margin.providers.usage`'s shape `{input, cachedInput, output}`
   (cached input from `cachedContentTokenCount`; thinking tokens count as output, as billed), so
   callers read every provider's usage alike.
5. Errors `{"error": {code, message, status, details}}` map to the shared codes: an invalid key
   (`API_KEY_INVALID`, 401, 403 `PERMISSION_DENIED`) is "bad_key"; 429 waits the `RetryInfo`
   delay; the token-count message is a context overflow; the rest as `http_error` says. An error
   object inside a 200 stream maps the same way.
6. The model list keeps models that can `generateContent`, follows `nextPageToken`, and drops
   the "models/" prefix.
7. Replies are read through `margin.base.wire_json`: unreadable JSON and wrong shapes (`candidates`,
   `parts`, `models` or `supportedGenerationMethods` not a list, a candidate, `content` or part
   not an object, `text` or `finishReason` not text) are "provider_bad_reply"; absent fields are
   fine. An error body's odd `details` are ignored (the status still decides the error).
8. With the `run_python` tool offered (`tools`, margin.providers.tool_wire), the body carries `tools` and an
   answer's tool rounds go as `functionCall` / `functionResponse` parts; the stream's
   `functionCall` parts are the parser's `tool_calls`.

HTTP and the reading loop are `margin.providers.streaming`'s, shared with the other providers.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import quote as url_quote
from urllib.parse import urlencode

from ..base.errors import ProviderError
from ..base.sentences import Sentence, sentence
from ..base.sse import SSEEvent
from ..base.wire_json import NotJSON, bad_reply, decode, decode_or_none, item_of, kind_name, member
from ..platform.ports import HttpRequest, Platform, Transport
from ..sandbox.tool_loop import RUN_PYTHON, ToolCall, result_text
from ..storage.history import Record
from . import (
    extract_error_message,
    header,
    host_of,
    http_error,
    normalize_base_url,
    quote,
    stream_cut,
    streaming,
)
from .tool_wire import Config, Offer, ToolOffer, flatten, object_arguments, rounds_of, text_or_none
from .usage import field, shape, total

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
# Reasons that mean Google withheld the answer, not that it ended.
REFUSED_REASONS = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"}
)
MODEL_PAGES = 10  # a guard against a server that always answers with a next page
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.DOTALL)


def source_of(provider: dict[str, Any]) -> Sentence:
    return sentence("py_error_source_google", host_of(provider.get("baseUrl", "")))


def model_url(provider: dict[str, Any], method: str) -> str:
    model = str(provider["model"]).removeprefix("models/")
    return f"{normalize_base_url(provider['baseUrl'])}/models/{url_quote(model, safe='-._~')}:{method}"


def headers_for(provider: dict[str, Any], *, stream: bool) -> dict[str, str]:
    return streaming.json_headers(provider, stream=stream, key_header="x-goog-api-key")


# -- requests (sans-IO) ---------------------------------------------------------------------


def wire_parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type")
        if kind == "text" and part.get("text"):
            parts.append({"text": str(part["text"])})
        elif kind == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            match = _DATA_URL.match(url)
            if match:
                parts.append({"inline_data": {"mime_type": match.group(1), "data": match.group(2)}})
            elif url:  # Gemini fetches no URLs: say where the image was
                parts.append({"text": f"[Image: {url}]"})
    return parts


def wire_contents(
    records: list[Record], tools: ToolOffer | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(contents, system parts) for the records (rule 2); tool rounds as calls (rule 8)."""
    contents: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    for record in records if tools is not None else flatten(records):
        if rounds_of(record):
            turns = gemini_contents(record)
        else:
            parts = wire_parts(record.content)
            if record.role == "system":
                system.extend(parts)
                continue
            turns = [("model" if record.role == "assistant" else "user", parts)]
        for role, parts in turns:
            streaming.add_turn(contents, role, "parts", parts)
    return contents, system


def build_body(
    provider: dict[str, Any], records: list[Record], tools: ToolOffer | None = None, **config: Any
) -> dict[str, Any]:
    contents, system = wire_contents(records, tools)
    prompt = provider.get("systemPrompt")
    if isinstance(prompt, str) and prompt.strip():
        system = [{"text": prompt}, *system]
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": system}
    if config:
        body["generationConfig"] = config
    if tools is not None:
        body.update(gemini_tools(tools))
    return body


def build_chat_request(
    provider: Config, records: list[Record], *, stream: bool, include_usage: bool = True, tools: Offer = None
) -> HttpRequest:
    """`include_usage` is accepted for the shared seam; Gemini always reports usage."""
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return HttpRequest(
        method="POST",
        url=model_url(provider, method),
        headers=headers_for(provider, stream=stream),
        body=streaming.dumps(build_body(provider, records, tools)),
        timeout=streaming.HEADERS_TIMEOUT,
    )


# -- errors ---------------------------------------------------------------------------------


def _error_object(body: Any) -> dict[str, Any]:
    value = decode_or_none(body) if isinstance(body, str) else body
    if isinstance(value, list) and value:
        value = value[0]
    error = value.get("error") if isinstance(value, dict) else None
    return error if isinstance(error, dict) else {}


def _status_of(error: dict[str, Any]) -> int:
    code = error.get("code")
    return code if isinstance(code, int) and not isinstance(code, bool) else 500


def _details(error: dict[str, Any]) -> list[dict[str, Any]]:
    details = error.get("details")
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def retry_seconds(error: dict[str, Any]) -> int | None:
    """RetryInfo's `retryDelay` ("37s", "1.5s") in whole seconds."""
    for detail in _details(error):
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and re.fullmatch(r"\d+(\.\d+)?s", delay.strip()):
            return math.ceil(float(delay.strip()[:-1]))
    return None


def gemini_error(status: int, body: str, headers: dict[str, str], provider: dict[str, Any]) -> ProviderError:
    """The ProviderError for a Gemini error body (rule 5)."""
    error = _error_object(body)
    reasons = {d.get("reason") for d in _details(error)}
    if "API_KEY_INVALID" in reasons or status == 401 or error.get("status") == "PERMISSION_DENIED":
        # Google says 400 for a bad key; the sentence is the shared one all the same.
        said = extract_error_message(body)
        tail = sentence("py_error_provider_said", quote(said)) if said else ""
        return ProviderError.said("bad_key", "py_error_bad_key", status, tail)
    if status == 429:
        seconds = retry_seconds(error)
        if seconds is not None and header(headers, "retry-after") is None:
            headers = {**headers, "retry-after": str(seconds)}
    return http_error(status, body, headers, provider)


def refused(reason: str) -> ProviderError:
    return ProviderError.said("content_refused", "py_error_content_refused", reason)


# -- the stream (sans-IO) -------------------------------------------------------------------


class StreamParser(streaming.ParserBase):
    """SSE events of a `streamGenerateContent?alt=sse` body in, text pieces out (rule 3). Gemini has
    no end-of-stream event (usage may follow the finish reason): the body's end ends it, so `done`
    stays False. Its calls come whole (`functionCall` parts), not in pieces."""

    NOT_A_STREAM = ("py_error_not_gemini_stream", DEFAULT_BASE_URL)

    def __init__(self, provider: dict[str, Any]) -> None:
        super().__init__(source_of(provider))
        self.provider = provider
        self.usage: dict[str, int] | None = None
        self.whole_calls: list[ToolCall] = []

    @property
    def tool_calls(self) -> list[ToolCall]:
        return self.whole_calls

    def failed(self, error: ProviderError) -> ProviderError:
        if self.pieces:
            error.partial_text = self.text
        return error

    def feed(self, event: SSEEvent) -> list[str]:
        data = event.data.strip()
        if not data or self.finish_reason is not None:
            return []
        chunk = self.decode_event(data)
        if isinstance(chunk, list) and len(chunk) == 1:
            chunk = chunk[0]
        if not isinstance(chunk, dict):
            raise self.failed(bad_reply(self.source, sentence("py_error_reply_item", kind_name(chunk))))
        try:
            return self._read(chunk, data)
        except ProviderError as error:
            raise self.failed(error) from None

    def _read(self, chunk: dict[str, Any], data: str) -> list[str]:
        source = self.source
        error = chunk.get("error")
        if isinstance(error, dict):
            raise gemini_error(_status_of(error), data, {}, self.provider)
        usage = chunk.get("usageMetadata")
        if isinstance(usage, dict):
            self.usage = normalize_usage(usage) or self.usage
        feedback = member(chunk, "promptFeedback", dict, source)
        if feedback and feedback.get("blockReason"):
            raise refused(str(feedback["blockReason"]))
        candidates = member(chunk, "candidates", list, source) or [{}]
        candidate = item_of(candidates[0], source, "candidates[0]")
        content = member(candidate, "content", dict, source, "candidates[0]") or {}
        out: list[str] = []
        for position, found in enumerate(
            member(content, "parts", list, source, "candidates[0].content") or []
        ):
            part = item_of(found, source, f"candidates[0].content.parts[{position}]")
            text = member(part, "text", str, source, f"candidates[0].content.parts[{position}]")
            if text and not part.get("thought"):
                out.append(text)
            gemini_part(self.whole_calls, part)
        self.pieces.extend(out)
        reason = member(candidate, "finishReason", str, source, "candidates[0]")
        if reason and reason != "FINISH_REASON_UNSPECIFIED":
            if reason in REFUSED_REASONS:
                raise refused(reason)
            self.finish_reason = reason
        return out

    def check_end(self) -> None:
        """The body ended: fine after a finishReason; otherwise the stream was cut."""
        if self.finish_reason is not None:
            return
        raise stream_cut(self.text)


async def open_stream(
    transport: Transport, provider: Config, records: list[Record], *, tools: Offer = None
) -> streaming.SSEChatStream:
    """Send the turn; raise the mapped ProviderError unless an event stream is coming."""
    request = build_chat_request(provider, records, stream=True, tools=tools)

    def not_a_stream(content_type: str, body: str) -> ProviderError:
        error = _error_object(body)
        if error:
            return gemini_error(_status_of(error), body, {}, provider)
        return ProviderError.said(
            "bad_stream", "py_error_google_not_a_stream", content_type, DEFAULT_BASE_URL
        )

    response = await streaming.open_events(transport, request, provider, gemini_error, not_a_stream)
    return streaming.SSEChatStream(response, provider, StreamParser(provider))


# -- "Test connection" and the model list ---------------------------------------------------


async def test_connection(platform: Platform, provider: dict[str, Any]) -> dict[str, Any]:
    """One tiny non-streaming request; a sentence the options page shows as it is."""
    request = HttpRequest(
        method="POST",
        url=model_url(provider, "generateContent"),
        headers=headers_for(provider, stream=False),
        body=streaming.dumps(build_body(provider, [Record("user", "Reply with OK.")], maxOutputTokens=1)),
        timeout=streaming.HEADERS_TIMEOUT,
    )
    api, usual = sentence("py_notice_api_gemini"), sentence("py_notice_usual", DEFAULT_BASE_URL)
    return await streaming.connection_test(platform, request, provider, gemini_error, _is_answer, api, usual)


def _is_answer(answer: Any) -> bool:
    return isinstance(answer, dict) and ("candidates" in answer or "promptFeedback" in answer)


async def list_models(platform: Platform, provider: dict[str, Any]) -> list[str]:
    """Model ids that can chat, across every page (rule 6); a ProviderError if the list fails."""
    ids: list[str] = []
    token = ""
    for _ in range(MODEL_PAGES):
        query = {"pageSize": "1000", **({"pageToken": token} if token else {})}
        request = HttpRequest(
            method="GET",
            url=f"{normalize_base_url(provider['baseUrl'])}/models?{urlencode(query)}",
            headers=headers_for(provider, stream=False),
            body=None,
            timeout=streaming.HEADERS_TIMEOUT,
        )
        body = await streaming.fetch_text(
            platform.transport, request, provider, gemini_error, streaming.BODY_LIMIT * 8
        )
        source = source_of(provider)
        try:
            page = decode(body, source)
        except NotJSON:
            page = None
        if not isinstance(page, dict):
            raise ProviderError.said("bad_response", "py_error_no_model_list", host_of(provider["baseUrl"]))
        for found in member(page, "models", list, source) or []:
            model = item_of(found, source, "models[]")
            name = member(model, "name", str, source, "models[]")
            methods = member(model, "supportedGenerationMethods", list, source, "models[]") or []
            if name and "generateContent" in methods:
                ids.append(name.removeprefix("models/"))
        token = page.get("nextPageToken") or ""
        if not isinstance(token, str) or not token:
            break
    return ids


# -- the run_python tool on this wire (margin.providers.tool_wire, rules 1, 2 and 4) ----------


def gemini_tools(offer: ToolOffer) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        ("parameters" if t.name == RUN_PYTHON else "parametersJsonSchema"): t.parameters,
                    }
                    for t in offer.tools()
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
            part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": object_arguments(call)}}
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
    name = text_or_none(call.get("name")) or ""
    call_id = text_or_none(call.get("id")) or f"call_{len(calls) + 1}"
    signature = text_or_none(part.get("thoughtSignature"))
    calls.append(
        ToolCall(
            call_id, name, json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False), signature
        )
    )


# -- usage (margin.providers.usage, rule 2) ----------------------------------------------------------


def normalize_usage(raw: Any) -> dict[str, int] | None:
    """`promptTokenCount`, `cachedContentTokenCount`, and thinking billed as output."""
    if not isinstance(raw, dict):
        return None
    output = total(field(raw, "candidatesTokenCount"), field(raw, "thoughtsTokenCount"))
    return shape(field(raw, "promptTokenCount"), field(raw, "cachedContentTokenCount"), output)
