"""One MCP session over Streamable HTTP, through the platform's HTTP transport (docs/protocol.md,
"MCP servers"): initialize, list the tools, call one, end.

Rules:
1. Every POST carries `Content-Type: application/json`, `Accept: application/json,
   text/event-stream`, the user's Authorization header when one is stored, and after the
   handshake `Mcp-Session-Id` (when the server gave one) and `MCP-Protocol-Version` (the version
   negotiated, margin.tools.mcp rule 1).
2. `open()` is the handshake: `initialize`, then the `notifications/initialized` notification
   (answered 202 with no body). A session lives for one use only (adding a server, one tool
   call): nothing of it is kept across an await in the worker, which Chrome may stop at any time.
   `close()` ends it with a DELETE when the server gave a session id (best effort).
3. HTTP answers: 401 is "needs OAuth" when no Authorization header was sent, else "refused the
   header", as is 403; 404 once a session exists is "session gone"; any other status outside
   2xx, a redirect (never followed: margin.platform.ports rule 4) or a body that is not JSON-RPC
   is "not an MCP server". The transport's failures are "unreachable" or "timeout".
4. `tools()` follows `nextCursor` for at most MAX_PAGES pages. `notifications/tools/list_changed`
   seen in any answer sets `list_changed`, so the caller lists the tools again.
5. Each failure is a `McpProblem` (margin.tools.mcp rule 5); `problem_error` makes it the one
   sentence the user reads, naming the server by its host.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..base.errors import MarginError
from ..platform.ports import HttpRequest, Transport, TransportError
from ..providers.plain_http import target_host
from . import mcp
from .mcp import LIST_CHANGED, McpProblem, ResponseReader, ServerInfo

MAX_PAGES = 20
CONNECT_TIMEOUT = 20.0


def header(headers: dict[str, str], name: str) -> str:
    """The value of the header `name` (lower case), whatever its case in `headers`; "" when absent."""
    return next((v for k, v in headers.items() if k.lower() == name), "")


def problem_error(problem: McpProblem, url: str) -> MarginError:
    """Rule 5."""
    key = mcp.PROBLEM_KEYS.get(problem.kind, "py_error_mcp_not_mcp")
    return MarginError.said(f"mcp_{problem.kind}", key, target_host(url) or url[:100], problem.detail)


class Exchange:
    """What both transports share: the session's fields, request ids, and the requests made of
    `_send` (one JSON-RPC message out, its result back; None for a notification)."""

    def __init__(
        self, transport: Transport, url: str, authorization: str = "", timeout: float = CONNECT_TIMEOUT
    ):
        self.transport = transport
        self.url = url
        self.authorization = authorization
        self.timeout = timeout
        self.list_changed = False  # rule 4
        self._next_id = 0

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def _send(self, message: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def tools(self) -> list[dict[str, Any]]:
        """Rule 4: every page of `tools/list`."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page, cursor = mcp.read_tools_page(await self._send(mcp.list_tools(self._id(), cursor)))
            tools.extend(page)
            if cursor is None:
                break
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """`tools/call`: the result as the server sent it (margin.sandbox.mcp_results reads it)."""
        return await self._send(mcp.call_tool(self._id(), name, arguments))


class McpSession(Exchange):
    def __init__(
        self, transport: Transport, url: str, authorization: str = "", timeout: float = CONNECT_TIMEOUT
    ):
        super().__init__(transport, url, authorization, timeout)
        self.session_id = ""
        self.version = mcp.PROTOCOL_VERSION
        self.opened = False

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.authorization:
            headers["Authorization"] = self.authorization
        if self.opened:
            headers["MCP-Protocol-Version"] = self.version
            if self.session_id:
                headers["Mcp-Session-Id"] = self.session_id
        return headers

    async def _send(self, message: dict[str, Any]) -> Any:
        """POST one message; the result of a request, None for a notification (rules 1 and 3)."""
        request = HttpRequest("POST", self.url, self._headers(), json.dumps(message), self.timeout)
        try:
            response = await self.transport.open(request)
        except TransportError as error:
            raise transport_problem(error) from error
        try:
            if not 200 <= response.status < 300:
                self._check_status(response.status, response.headers, await _said(response))
            if not self.opened and message.get("method") == "initialize":
                self.session_id = header(response.headers, "mcp-session-id")[:200]
            if "id" not in message:
                return None
            reader = ResponseReader(message["id"], header(response.headers, "content-type"))
            while not reader.answered:
                try:
                    chunk = await response.read_chunk()
                except TransportError as error:
                    raise transport_problem(error) from error
                if chunk is None:
                    break
                reader.feed(chunk)
            result = reader.finish()
            if LIST_CHANGED in reader.notifications:
                self.list_changed = True
            return result
        finally:
            await response.aclose()

    def _check_status(self, status: int, headers: dict[str, str], said: str) -> None:
        """Rule 3; `said` is the start of the body, when it is short text (the server's reason)."""
        if status == 401 and not self.authorization:
            raise McpProblem("needs_oauth", header(headers, "www-authenticate")[:200])
        if status in (401, 403) and self.authorization:
            raise McpProblem("auth_refused", str(status))
        if status == 404 and self.opened and self.session_id:
            raise McpProblem("session_gone", str(status))
        raise McpProblem("not_mcp", f"HTTP {status}: {said}" if said else f"HTTP {status}")

    async def open(self) -> ServerInfo:
        """Rule 2: the handshake."""
        info = mcp.read_initialize(await self._send(mcp.initialize(self._id())))
        self.version = info.protocol_version
        self.opened = True
        await self._send(mcp.notification("notifications/initialized"))
        return info

    async def close(self) -> None:
        """Rule 2: end the session (best effort: a server may not allow it)."""
        if not self.session_id:
            return
        request = HttpRequest("DELETE", self.url, self._headers(), None, 5.0)
        with contextlib.suppress(TransportError):
            response = await self.transport.open(request)
            await response.aclose()


async def _said(response: Any) -> str:
    """Rule 3: the first line of a refusal's body when it is plain text ("Invalid Origin header"),
    else "": an HTML page is not read out."""
    kind = header(response.headers, "content-type").lower()
    if kind and not kind.startswith("text/plain"):
        return ""
    try:
        chunk = await response.read_chunk()
    except TransportError:
        return ""
    line = (chunk or "").strip().splitlines()[0] if (chunk or "").strip() else ""
    return line[:120]


def transport_problem(error: TransportError) -> McpProblem:
    if error.kind == "timeout":
        return McpProblem("timeout", "")
    if error.kind == "redirect":
        return McpProblem("not_mcp", f"redirect {error.detail[:200]}".strip())
    return McpProblem("unreachable", error.detail[:200] or error.kind)
