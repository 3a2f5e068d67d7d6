"""The Model Context Protocol's messages, without I/O: JSON-RPC requests out, responses read from
an `application/json` body or a `text/event-stream` (Streamable HTTP, MCP 2025-03-26 and later).
margin.tools.session sends them over the platform's HTTP transport.

Rules:
1. Margin offers PROTOCOL_VERSION (the latest stable revision reached by the `initialize`
   handshake) and accepts a server's answer in SUPPORTED_VERSIONS (older revisions it still
   reads the same way); any other version is refused with a sentence (`version`).
2. A request is `{jsonrpc: "2.0", id, method, params}`; a notification has no id. The client
   declares no capabilities: it only lists and calls tools.
3. Reading a response (`ResponseReader`): text in, in any chunking. A JSON body is one message
   (or a batch); an event stream is read event by event, each event's data one message (or a
   batch), until the response with the request's id arrives; server notifications before it
   are collected by method (`notifications/tools/list_changed` makes Margin list the tools
   again). Requests from the server (sampling, elicitation) are ignored: Margin declares no
   capability that invites them.
4. Bounded: a response larger than RESPONSE_CHARS characters is refused (`too_large`) before it
   is parsed; a body that is not JSON-RPC 2.0 is `not_mcp`; a JSON-RPC error is `rpc_error` with
   the server's message (cut to 300 characters).
5. Every failure is a `McpProblem` with a `kind` (the keys of PROBLEM_KEYS); margin.tools.session
   turns it into one sentence naming the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..base.sse import LineTooLong, SSEDecoder

PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
CLIENT_INFO = {"name": "Margin", "version": "0.1.0"}
RESPONSE_CHARS = 16 * 1024 * 1024
LIST_CHANGED = "notifications/tools/list_changed"
ERROR_CHARS = 300

# Rule 5: each kind of failure and the catalogue key of its sentence ($1 is the server's address).
PROBLEM_KEYS = {
    "unreachable": "py_error_mcp_unreachable",
    "timeout": "py_error_mcp_timeout",
    "not_mcp": "py_error_mcp_not_mcp",
    "needs_oauth": "py_error_mcp_needs_oauth",
    "auth_refused": "py_error_mcp_auth_refused",
    "version": "py_error_mcp_version",
    "rpc_error": "py_error_mcp_rpc_error",
    "too_large": "py_error_mcp_too_large",
    "no_tools": "py_error_mcp_no_tools",
    "session_gone": "py_error_mcp_session_gone",
}


class McpProblem(Exception):
    """Rule 5: `kind` names what went wrong, `detail` what the server or the network said."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method}


def initialize(request_id: int) -> dict[str, Any]:
    return request(
        request_id,
        "initialize",
        {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
    )


def list_tools(request_id: int, cursor: str | None) -> dict[str, Any]:
    return request(request_id, "tools/list", {"cursor": cursor} if cursor else {})


def call_tool(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": name, "arguments": arguments})


@dataclass(frozen=True)
class ServerInfo:
    name: str
    version: str
    protocol_version: str
    has_tools: bool
    list_changed: bool


def read_initialize(result: Any) -> ServerInfo:
    """Rule 1: the server's answer to `initialize`."""
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        raise McpProblem("not_mcp", "initialize")
    version = result["protocolVersion"]
    if version not in SUPPORTED_VERSIONS:
        raise McpProblem("version", version[:40])
    info = _member(result, "serverInfo")
    name = info.get("title") or info.get("name")
    tools = _member(result, "capabilities").get("tools")
    return ServerInfo(
        name=name.strip()[:100] if isinstance(name, str) and name.strip() else "",
        version=str(info.get("version", ""))[:40],
        protocol_version=version,
        has_tools=isinstance(tools, dict),
        list_changed=isinstance(tools, dict) and tools.get("listChanged") is True,
    )


def _member(value: dict[str, Any], key: str) -> dict[str, Any]:
    member = value.get(key)
    return member if isinstance(member, dict) else {}


def read_tools_page(result: Any) -> tuple[list[dict[str, Any]], str | None]:
    """A `tools/list` page: its tools as sent (margin.tools.servers keeps what it can use) and the
    cursor of the next page (None at the last)."""
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        raise McpProblem("not_mcp", "tools/list")
    cursor = result.get("nextCursor")
    tools = [t for t in result["tools"] if isinstance(t, dict)]
    return tools, cursor if isinstance(cursor, str) and cursor else None


@dataclass
class ResponseReader:
    """Rule 3: a POST's answer, fed as text; `response` is the JSON-RPC result once it arrived."""

    request_id: int | None
    content_type: str
    response: Any = None
    answered: bool = False
    notifications: list[str] = field(default_factory=list)
    _chars: int = 0
    _body: list[str] = field(default_factory=list)
    _decoder: SSEDecoder | None = None

    def __post_init__(self) -> None:
        kind = self.content_type.split(";")[0].strip().lower()
        if kind == "text/event-stream":
            self._decoder = SSEDecoder(line_limit=RESPONSE_CHARS)
        elif kind != "application/json":
            raise McpProblem("not_mcp", kind[:80] or "no content type")

    def feed(self, text: str) -> None:
        """Rule 3; `answered` turns true once the response arrived (the rest need not be read)."""
        self._chars += len(text)
        if self._chars > RESPONSE_CHARS:
            raise McpProblem("too_large", str(RESPONSE_CHARS))
        if self._decoder is None:
            self._body.append(text)
            return
        try:
            events = self._decoder.feed(text)
        except LineTooLong as error:
            raise McpProblem("too_large", str(RESPONSE_CHARS)) from error
        for event in events:
            if event.data and not self.answered:
                self._messages(event.data)

    def finish(self) -> Any:
        """The body ended: the result, or the problem that there was none."""
        if self._decoder is not None:
            for event in self._decoder.close():
                if event.data and not self.answered:
                    self._messages(event.data)
        elif self._body:
            self._messages("".join(self._body))
        if not self.answered:
            raise McpProblem("not_mcp", "no response")
        return self.response

    def take(self, data: str) -> None:
        """One event's data (or a whole JSON body): its messages read (rule 3)."""
        self._messages(data)

    def _messages(self, data: str) -> None:
        try:
            value = json.loads(data)
        except ValueError as error:
            raise McpProblem("not_mcp", "not JSON") from error
        for message in value if isinstance(value, list) else [value]:
            self._message(message)

    def _message(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise McpProblem("not_mcp", "not JSON-RPC 2.0")
        method = message.get("method")
        if isinstance(method, str):
            if "id" not in message:
                self.notifications.append(method[:100])
            return  # rule 3: a server's request is ignored
        if message.get("id") != self.request_id:
            return
        if "error" in message:
            error = message["error"]
            said = error.get("message") if isinstance(error, dict) else None
            raise McpProblem("rpc_error", str(said if isinstance(said, str) else error)[:ERROR_CHARS])
        if "result" not in message:
            raise McpProblem("not_mcp", "a response without a result")
        self.response = message["result"]
        self.answered = True
