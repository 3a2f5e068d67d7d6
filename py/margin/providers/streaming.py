"""What every provider module does with HTTP the same way: send, read a bounded body, and read
an answer that streams as Server-Sent Events through the module's own parser.

Rules:
1. `send` maps a transport failure (refused, timed out, aborted) into the shared ProviderError.
2. `read_body` reads at most `BODY_LIMIT` characters within `BODY_TIMEOUT` seconds and always
   closes the response: an error body or a short non-streaming answer, never a stream.
3. `SSEChatStream` is the one reading loop: body chunks go through `margin.sse` to the module's
   `EventParser`, which turns events into text pieces and knows when the answer is whole
   (`done`) or cut (`check_end` raises). Whatever failed, the text that had arrived is kept on
   the error (`partial_text`) and the response is closed.
4. "Test connection" ends in one of three sentences (`connection_verdict`): connected, the
   provider's own error, or "answered, but not like <the API>" with where the Base URL usually
   points.
5. Nothing leaves with an API key over plain http:// to another machine unless the provider
   says so (`margin.plain_http`, rule 2); a redirect is never followed (the transport refuses
   it, `margin.ports` rule 4) and is the error `redirect_refused`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any, Protocol

from .. import plain_http
from ..errors import ProviderError
from ..ports import HttpRequest, Transport, TransportError
from ..sse import SSEDecoder, SSEEvent
from . import extract_error_message, header, host_of, quote, transport_error

# Seconds to wait for the status line and headers (a local server may load the model first).
HEADERS_TIMEOUT = 120.0
# Seconds to read an error body or a non-streaming answer; bytes kept of it.
BODY_TIMEOUT = 30.0
BODY_LIMIT = 256 * 1024


def dumps(value: Any) -> str:
    """A request body: compact JSON, Unicode kept (the same bytes for the same request)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


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
        self, response: Any, provider: dict[str, Any], parser: EventParser, *, usage_unsupported: bool = False
    ):
        self._response = response
        self._provider = provider
        self._decoder = SSEDecoder()
        self._parser = parser
        self._finished = False
        self.usage_unsupported = usage_unsupported

    @property
    def text(self) -> str:
        return self._parser.text

    @property
    def usage(self) -> dict[str, Any] | None:
        return self._parser.usage

    @property
    def finish_reason(self) -> str | None:
        return self._parser.finish_reason

    async def read(self) -> list[str] | None:
        if self._finished:
            return None
        try:
            chunk = await self._response.read_chunk()
        except TransportError as error:
            self._finished = True
            raised = transport_error(error, self._provider)
            raised.partial_text = self.text
            raise raised from None
        try:
            if chunk is None:
                self._finished = True
                pieces = self._feed(self._decoder.close())
                self._parser.check_end()
                return pieces or None
            pieces = self._feed(self._decoder.feed(chunk))
        except ProviderError as error:
            if error.partial_text is None:
                error.partial_text = self.text
            await self.aclose()
            raise
        if self._parser.done:
            await self.aclose()
        return pieces

    def _feed(self, events: list[SSEEvent]) -> list[str]:
        pieces: list[str] = []
        for event in events:
            pieces.extend(self._parser.feed(event))
        return pieces

    async def aclose(self) -> None:
        self._finished = True
        with contextlib.suppress(Exception):  # as in read_body
            await self._response.aclose()


def connection_verdict(
    provider: dict[str, Any], body: str, looks_right: Callable[[Any], bool], *, api: str, usual: str
) -> dict[str, Any]:
    """Rule 4, for a successful status: does `body` look like this provider's answer?"""
    host = host_of(provider["baseUrl"])
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if looks_right(answer):
        return {"ok": True, "message": f"Connected to {host}: model {provider['model']} answered."}
    said = extract_error_message(body)
    if said:
        return {"ok": False, "message": f"{host} answered with an error: {quote(said)}."}
    return {"ok": False, "message": f"{host} answered, but not like {api}. Check the Base URL ({usual})."}
