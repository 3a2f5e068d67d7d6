"""What every provider module does with HTTP the same way: send, read a bounded body, and read
an answer that streams as Server-Sent Events through the module's own parser.

Rules:
1. `send` maps a transport failure (refused, timed out, aborted) into the shared ProviderError.
2. `read_body` reads at most `BODY_LIMIT` characters within `BODY_TIMEOUT` seconds and always
   closes the response: an error body or a short non-streaming answer, never a stream.
3. `SSEChatStream` is the one reading loop: body chunks go through `margin.base.sse` to the module's
   `EventParser`, which turns events into text pieces and knows when the answer is whole
   (`done`) or cut (`check_end` raises). Whatever failed, the text that had arrived is kept on
   the error (`partial_text`) and the response is closed.
4. Bounded: a line of the event stream longer than `margin.base.sse.LINE_LIMIT` ends the answer with
   "stream_garbage"; an answer longer than `ANSWER_LIMIT` bytes (UTF-8) ends with
   "answer_too_long" ("The answer was cut at 2 MB"). Both keep the text that arrived (cut at the
   limit), which `margin.turn.chat` stores marked incomplete; no piece past the limit is handed out.
5. "Test connection" ends in one of three sentences (`connection_verdict`): connected, the
   provider's own error, or "answered, but not like <the API>" with where the Base URL usually
   points.
6. `ParserBase` is what every provider's stream parser shares: the text so far (`pieces`), the
   tool calls (`calls`), `done` and `finish_reason`, and the opening of `feed`: an event's data
   is JSON (`decode_event`, else `bad_stream` in the provider's own sentence, `NOT_A_STREAM`)
   and an object (`event_object`, else a `bad_reply`); `failed` is where a parser adds to an
   error it raises (Gemini keeps the text that arrived).
7. Nothing leaves with an API key over plain http:// to another machine unless the provider
   says so (`margin.providers.plain_http`, rule 2); a redirect is never followed (the transport refuses
   it, `margin.platform.ports` rule 4) and is the error `redirect_refused`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any, Protocol

from ..base.errors import ProviderError
from ..base.sentences import Sentence, say, sentence
from ..base.sse import LINE_LIMIT, LineTooLong, SSEDecoder, SSEEvent
from ..base.wire_json import NotJSON, Source, bad_reply, decode, decode_or_none, kind_name
from ..platform.ports import HttpRequest, Transport, TransportError
from ..sandbox.tool_loop import CallPieces, ToolCall
from . import extract_error_message, header, host_of, plain_http, quote, stream_cut, transport_error

# Seconds to wait for the status line and headers (a local server may load the model first).
HEADERS_TIMEOUT = 120.0
# Seconds to read an error body or a non-streaming answer; bytes kept of it.
BODY_TIMEOUT = 30.0
BODY_LIMIT = 256 * 1024
# Bytes of one answer's text (UTF-8) kept; past it the answer is cut (rule 4).
MIB = 1024 * 1024
ANSWER_LIMIT = 2 * MIB


def answer_too_long(limit: int = ANSWER_LIMIT) -> ProviderError:
    return ProviderError.said("answer_too_long", "py_error_answer_too_long", max(1, limit // MIB))


def stream_garbage(provider: dict[str, Any], limit: int) -> ProviderError:
    host = host_of(provider.get("baseUrl", ""))
    return ProviderError.said("stream_garbage", "py_error_stream_garbage", host, max(1, limit // MIB))


def post(url: str, headers: dict[str, str], body: Any) -> HttpRequest:
    """A request to a provider: POST, the body as `dumps` writes it, `HEADERS_TIMEOUT` for the headers."""
    return HttpRequest(method="POST", url=url, headers=headers, body=dumps(body), timeout=HEADERS_TIMEOUT)


def json_headers(
    provider: dict[str, Any], *, stream: bool, key_header: str, key_prefix: str = ""
) -> dict[str, str]:
    """JSON in, an event stream out when streaming, and the API key (if any) in `key_header`."""
    headers = {"Content-Type": "application/json"}
    if stream:
        headers["Accept"] = "text/event-stream"
    key = (provider.get("apiKey") or "").strip()
    if key:
        headers[key_header] = f"{key_prefix}{key}"
    return headers


def add_turn(turns: list[dict[str, Any]], role: str, key: str, items: list[Any]) -> bool:
    """Add a turn of `items` (under `key`) for an API whose roles alternate: merged into the last
    turn when that has the same role. False when there is nothing to add."""
    if not items:
        return False
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})
    return True


def dumps(value: Any) -> str:
    """A request body: compact JSON, Unicode kept (the same bytes for the same request), finite
    numbers only (NaN is not JSON: a provider would refuse the whole request)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


async def send(transport: Transport, request: HttpRequest, provider: dict[str, Any]) -> Any:
    """Rules 1 and 5."""
    exposed = plain_http.key_exposed(provider, request.url)
    if exposed is not None:
        raise plain_http.refused_at_request(exposed)
    try:
        return await transport.open(request)
    except TransportError as error:
        raise transport_error(error, provider) from None


async def read_body(response: Any, limit: int = BODY_LIMIT, timeout: float = BODY_TIMEOUT) -> str:
    """Rule 2: the whole (bounded) body as text; what arrived before a failure or timeout."""
    pieces: list[str] = []
    size = 0

    async def collect() -> None:
        nonlocal size
        while size < limit:
            chunk = await response.read_chunk()
            if chunk is None:
                return
            pieces.append(chunk)
            size += len(chunk)

    try:
        await asyncio.wait_for(collect(), timeout)
    except (TimeoutError, TransportError):
        pass
    finally:
        # Aborting a fetch that already finished may complain; there is nothing left to do.
        with contextlib.suppress(Exception):
            await response.aclose()
    return "".join(pieces)[:limit]


MapError = Callable[[int, str, dict[str, str], dict[str, Any]], ProviderError]


async def fetch_text(
    transport: Transport,
    request: HttpRequest,
    provider: dict[str, Any],
    map_error: MapError,
    limit: int = BODY_LIMIT,
) -> str:
    """A request answered by a whole body: its text, or the provider's mapped error (rules 1, 2)."""
    response = await send(transport, request, provider)
    body = await read_body(response, limit)
    if not 200 <= response.status < 300:
        raise map_error(response.status, body, response.headers, provider)
    return body


async def raise_unless_success(response: Any, provider: dict[str, Any], map_error: MapError) -> None:
    """A streaming request's status: anything but success is the provider's mapped error."""
    if not 200 <= response.status < 300:
        raise map_error(response.status, await read_body(response), response.headers, provider)


def not_an_event_stream(response: Any) -> str | None:
    """The response's content type when it says the body is not an event stream (no type: trusted)."""
    content_type = (header(response.headers, "content-type") or "").lower()
    return content_type if content_type and "text/event-stream" not in content_type else None


class ParserBase:
    """Rule 6: what every provider's stream parser shares. A subclass names its `NOT_A_STREAM`
    sentence (its key, then the arguments after the quoted data) and writes its own `feed`."""

    NOT_A_STREAM: tuple[str, ...] = ("py_error_not_a_chat_stream",)

    def __init__(self, source: Source) -> None:
        self.source = source  # who sent the stream, for the sentences of its errors
        self.pieces: list[str] = []
        self.done = False
        self.finish_reason: str | None = None
        self.calls = CallPieces()

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return self.calls.finished()

    def failed(self, error: ProviderError) -> ProviderError:
        """The error a parse failure raises; a parser may add to it."""
        return error

    def check_end(self) -> None:
        """The body ended: fine once the stream said it was done; otherwise it was cut."""
        if self.done:
            return
        raise stream_cut(self.text)

    def decode_event(self, data: str) -> Any:
        """An event's data as JSON, or `bad_stream` in the provider's words."""
        try:
            return decode(data, self.source)
        except NotJSON:
            key, *args = self.NOT_A_STREAM
            raise self.failed(ProviderError.said("bad_stream", key, quote(data), *args)) from None

    def event_object(self, data: str, what: str = "py_error_reply_event") -> dict[str, Any]:
        """An event's data as a JSON object; anything else is a `bad_reply` naming its kind."""
        decoded = self.decode_event(data)
        if not isinstance(decoded, dict):
            raise self.failed(bad_reply(self.source, sentence(what, kind_name(decoded))))
        return decoded


class EventParser(Protocol):
    """A wire protocol's stream events -> the answer (each provider module has one)."""

    @property
    def text(self) -> str: ...

    @property
    def usage(self) -> dict[str, Any] | None: ...

    @property
    def finish_reason(self) -> str | None: ...

    @property
    def done(self) -> bool: ...

    def feed(self, event: SSEEvent) -> list[str]: ...

    def check_end(self) -> None: ...


class SSEChatStream:
    """Rule 3. An open streaming answer: `read()` gives text pieces per body chunk, None at the end."""

    def __init__(
        self,
        response: Any,
        provider: dict[str, Any],
        parser: EventParser,
        *,
        usage_unsupported: bool = False,
        answer_limit: int = ANSWER_LIMIT,
        line_limit: int = LINE_LIMIT,
    ):
        self._response = response
        self._provider = provider
        self._decoder = SSEDecoder(line_limit)
        self._parser = parser
        self._finished = False
        self.usage_unsupported = usage_unsupported
        self.tools_unsupported = (
            False  # the server refused the run_python tool (margin.sandbox.tool_loop rule 7)
        )
        self._answer_limit = answer_limit
        self._room = answer_limit  # bytes of answer still allowed (rule 4)
        self._kept: list[str] | None = None  # the answer, once it was cut at the limit
        self._handed = 0  # characters of the answer handed out by read()
        self._cut_reported = False

    @property
    def text(self) -> str:
        return "".join(self._kept) if self._kept is not None else self._parser.text

    @property
    def usage(self) -> dict[str, Any] | None:
        return self._parser.usage

    @property
    def finish_reason(self) -> str | None:
        return self._parser.finish_reason

    @property
    def tool_calls(self) -> list[Any]:
        """The `run_python` calls the answer made (margin.providers.tool_wire rule 4); [] for none."""
        return list(getattr(self._parser, "tool_calls", []))

    async def read(self) -> list[str] | None:
        if self._kept is not None and not self._cut_reported:
            self._cut_reported = True
            raise self._with_text(answer_too_long(self._answer_limit))
        if self._finished:
            return None
        try:
            chunk = await self._response.read_chunk()
        except TransportError as error:
            self._finished = True
            raise self._with_text(transport_error(error, self._provider)) from None
        try:
            if chunk is None:
                self._finished = True
                pieces = self._feed(self._decoder.close())
                self._parser.check_end()
                return self._bounded(pieces) or None
            pieces = self._feed(self._decoder.feed(chunk))
        except LineTooLong as error:
            # The events decoded before the long line still count (margin.base.sse rule 8).
            self._bounded(self._feed_quietly(error.events))
            await self.aclose()
            raise self._with_text(stream_garbage(self._provider, error.limit)) from None
        except ProviderError as error:
            if error.partial_text is None:
                error.partial_text = self.text
            await self.aclose()
            raise
        pieces = self._bounded(pieces)
        if self._parser.done or self._kept is not None:
            await self.aclose()  # a cut answer still reports the cut at the next read
        return pieces

    def _with_text(self, error: ProviderError) -> ProviderError:
        error.partial_text = self.text
        return error

    def _feed(self, events: list[SSEEvent]) -> list[str]:
        pieces: list[str] = []
        for event in events:
            pieces.extend(self._parser.feed(event))
        return pieces

    def _feed_quietly(self, events: list[SSEEvent]) -> list[str]:
        """Events before a failure: their text is kept; a bad one among them ends the feeding."""
        pieces: list[str] = []
        with contextlib.suppress(ProviderError):
            for event in events:
                pieces.extend(self._parser.feed(event))
        return pieces

    def _bounded(self, pieces: list[str]) -> list[str]:
        """Rule 4: the pieces that fit in the answer's room; past it the answer is cut for good."""
        if self._kept is not None:
            return []
        out: list[str] = []
        for piece in pieces:
            size = len(piece.encode("utf-8"))
            if size > self._room:
                head = piece.encode("utf-8")[: self._room].decode("utf-8", errors="ignore")
                if head:
                    out.append(head)
                self._handed += len(head)
                # The pieces handed out are the start of the parser's text, in order.
                self._kept = [self._parser.text[: self._handed]]
                break
            self._room -= size
            self._handed += len(piece)
            out.append(piece)
        return out

    async def aclose(self) -> None:
        self._finished = True
        with contextlib.suppress(Exception):  # as in read_body
            await self._response.aclose()


def connection_verdict(
    provider: dict[str, Any], body: str, looks_right: Callable[[Any], bool], *, api: Sentence, usual: Sentence
) -> dict[str, Any]:
    """Rule 4, for a successful status: does `body` look like this provider's answer? (`api` names
    the API, `usual` hints at its usual Base URL; the caller loaded the user's language.)"""
    host = host_of(provider["baseUrl"])
    answer = decode_or_none(body)
    if looks_right(answer):
        return {"ok": True, "message": say(sentence("py_notice_connected", host, provider["model"]))}
    said = extract_error_message(body)
    if said:
        return {"ok": False, "message": say(sentence("py_notice_connection_error", host, quote(said)))}
    return {"ok": False, "message": say(sentence("py_notice_connection_not_api", host, api, usual))}


async def open_events(
    transport: Transport,
    request: HttpRequest,
    provider: dict[str, Any],
    map_error: MapError,
    not_a_stream: Callable[[str, str], ProviderError],
) -> Any:
    """Send a streaming request: its response once an event stream is coming; else the provider's
    mapped error, or `not_a_stream(content_type, body)` for a success that is not a stream."""
    response = await send(transport, request, provider)
    await raise_unless_success(response, provider, map_error)
    if content_type := not_an_event_stream(response):
        body = await read_body(response)  # read what there is, and close the response
        raise not_a_stream(content_type, body)
    return response


async def connection_test(
    platform: Any,
    request: HttpRequest,
    provider: dict[str, Any],
    map_error: MapError,
    looks_right: Callable[[Any], bool],
    api: Sentence,
    usual: Sentence,
) -> dict[str, Any]:
    """Rule 5 with one request: its failure in the provider's words, or the verdict on its answer."""
    try:
        text = await fetch_text(platform.transport, request, provider, map_error)
    except ProviderError as error:
        return {"ok": False, "message": error.in_language()}
    return connection_verdict(provider, text, looks_right, api=api, usual=usual)
