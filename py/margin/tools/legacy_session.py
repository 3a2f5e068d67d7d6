"""One MCP session over the older HTTP+SSE transport (MCP 2024-11-05), for servers that do not
speak Streamable HTTP yet; the same interface as margin.tools.session's `McpSession` (both are
an `Exchange`: listing and calling tools is the same over either transport).

Rules:
1. `open_session` tries Streamable HTTP first; only when that `initialize` POST is refused with
   an HTTP 4xx (404, 405: the spec's way to tell an old server) does it try this transport, and
   when this fails too, the first refusal is the one said.
2. The session is a GET of the server's address (`Accept: text/event-stream`); its first event,
   `endpoint`, names where to POST. That address must have the same origin as the server's (the
   Authorization header never goes to another host); anything else is `not_mcp`.
3. Each message is a POST to the endpoint (answered 2xx, its body not read); the response to a
   request arrives on the GET's stream as a `message` event, read by margin.tools.mcp's
   `ResponseReader` (the same checks and bounds: RESPONSE_CHARS per response).
4. `close()` ends the GET (there is no DELETE in this transport).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..base.sse import LineTooLong, SSEDecoder, SSEEvent
from ..platform.ports import HttpRequest, HttpResponse, Transport, TransportError
from . import mcp
from .mcp import LIST_CHANGED, McpProblem, ResponseReader, ServerInfo
from .session import CONNECT_TIMEOUT, Exchange, McpSession, header, transport_problem


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class LegacySession(Exchange):
    def __init__(
        self, transport: Transport, url: str, authorization: str = "", timeout: float = CONNECT_TIMEOUT
    ):
        super().__init__(transport, url, authorization, timeout)
        self.endpoint = ""
        self._stream: HttpResponse | None = None
        self._decoder = SSEDecoder(line_limit=mcp.RESPONSE_CHARS)
        self._events: list[SSEEvent] = []

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept}
        if self.authorization:
            headers["Authorization"] = self.authorization
        return headers

    async def _event(self, budget: list[int]) -> SSEEvent | None:
        """The stream's next event (None at its end); `budget` counts the characters read."""
        assert self._stream is not None
        while not self._events:
            try:
                chunk = await self._stream.read_chunk()
            except TransportError as error:
                raise transport_problem(error) from error
            if chunk is None:
                return None
            budget[0] += len(chunk)
            if budget[0] > mcp.RESPONSE_CHARS:
                raise McpProblem("too_large", str(mcp.RESPONSE_CHARS))
            try:
                self._events.extend(self._decoder.feed(chunk))
            except LineTooLong as error:
                raise McpProblem("too_large", str(mcp.RESPONSE_CHARS)) from error
        return self._events.pop(0)

    async def _connect(self) -> None:
        """Rule 2."""
        request = HttpRequest("GET", self.url, self._headers("text/event-stream"), None, self.timeout)
        try:
            self._stream = await self.transport.open(request)
        except TransportError as error:
            raise transport_problem(error) from error
        kind = header(self._stream.headers, "content-type")
        if not 200 <= self._stream.status < 300 or not kind.lower().startswith("text/event-stream"):
            raise McpProblem("not_mcp", f"HTTP {self._stream.status}")
        budget = [0]
        while (event := await self._event(budget)) is not None:
            if event.event == "endpoint":
                endpoint = urljoin(self.url, event.data.strip())
                if _origin(endpoint) != _origin(self.url):
                    raise McpProblem("not_mcp", "an endpoint on another host")
                self.endpoint = endpoint
                return
        raise McpProblem("not_mcp", "no endpoint")

    async def _send(self, message: dict[str, Any]) -> Any:
        """Rule 3."""
        headers = {**self._headers("application/json"), "Content-Type": "application/json"}
        request = HttpRequest("POST", self.endpoint, headers, json.dumps(message), self.timeout)
        try:
            posted = await self.transport.open(request)
        except TransportError as error:
            raise transport_problem(error) from error
        await posted.aclose()
        if not 200 <= posted.status < 300:
            raise McpProblem("not_mcp", f"HTTP {posted.status}")
        if "id" not in message:
            return None
        reader = ResponseReader(message["id"], "application/json")
        budget = [0]
        while not reader.answered:
            event = await self._event(budget)
            if event is None:
                raise McpProblem("unreachable", "the event stream ended")
            if event.event == "message" and event.data:
                reader.take(event.data)
        if LIST_CHANGED in reader.notifications:
            self.list_changed = True
        return reader.response

    async def open(self) -> ServerInfo:
        await self._connect()
        info = mcp.read_initialize(await self._send(mcp.initialize(self._id())))
        await self._send(mcp.notification("notifications/initialized"))
        return info

    async def close(self) -> None:
        """Rule 4."""
        if self._stream is not None:
            await self._stream.aclose()


Session = McpSession | LegacySession


async def open_session(
    transport: Transport, url: str, authorization: str = "", timeout: float = CONNECT_TIMEOUT
) -> tuple[Session, ServerInfo]:
    """Rule 1: a session opened (the handshake done) over whichever transport the server speaks.
    On failure every session tried is closed before the problem is raised."""
    session = McpSession(transport, url, authorization, timeout)
    try:
        return session, await session.open()
    except McpProblem as problem:
        await session.close()
        if problem.kind != "not_mcp" or not problem.detail.startswith("HTTP 4"):
            raise
        first = problem
    legacy = LegacySession(transport, url, authorization, timeout)
    try:
        return legacy, await legacy.open()
    except McpProblem:
        await legacy.close()
        raise first from None
