"""Recorded Streamable HTTP exchanges of an MCP server, for the CPython tests: what the official
Python SDK's server answers (an SSE event per message, `Mcp-Session-Id` on `initialize`, 202 for a
notification), replayed through the memory platform's ScriptedTransport."""

import json

from platform_memory import ScriptedResponse

SESSION = "5f1c0e8a9d2b4c7e"
TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    },
]


def sse_message(message, event="message"):
    return f"event: {event}\ndata: {json.dumps(message)}\n\n"


def rpc_result(request_id, result):
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def initialize_result(version="2025-11-25", name="notes-server", list_changed=True):
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": list_changed}},
        "serverInfo": {"name": name, "version": "1.4.0"},
    }


def sse_response(*messages, headers=None):
    return ScriptedResponse(
        chunks=[sse_message(m) for m in messages],
        headers={"content-type": "text/event-stream", **(headers or {})},
    )


class McpServer:
    """A handler for ScriptedTransport that answers like the SDK's server, recording each request
    (`received`: the JSON-RPC messages) and answering `tools/call` with `on_call(name, arguments)`."""

    def __init__(self, tools=None, version="2025-11-25", on_call=None, name="notes-server", pages=1):
        self.tools = TOOLS if tools is None else tools
        self.version = version
        self.name = name
        self.pages = pages
        self.on_call = on_call or (
            lambda name, arguments: {"content": [{"type": "text", "text": json.dumps(arguments)}]}
        )
        self.received = []
        self.requests = []
        self.deleted = False

    def __call__(self, request):
        self.requests.append(request)
        if request.method == "DELETE":
            self.deleted = True
            return ScriptedResponse(status=200, chunks=[], headers={})
        message = json.loads(request.body)
        self.received.append(message)
        method = message.get("method")
        if "id" not in message:
            return ScriptedResponse(status=202, chunks=[], headers={})
        if method == "initialize":
            return sse_response(
                rpc_result(message["id"], initialize_result(self.version, self.name)),
                headers={"mcp-session-id": SESSION},
            )
        if method == "tools/list":
            cursor = (message.get("params") or {}).get("cursor")
            page = int(cursor or 0)
            size = max(1, -(-len(self.tools) // self.pages))
            chunk = self.tools[page * size : (page + 1) * size]
            result = {"tools": chunk}
            if (page + 1) * size < len(self.tools):
                result["nextCursor"] = str(page + 1)
            return sse_response(rpc_result(message["id"], result))
        if method == "tools/call":
            params = message["params"]
            answer = self.on_call(params["name"], params["arguments"])
            if isinstance(answer, ScriptedResponse):
                return answer
            return sse_response(rpc_result(message["id"], answer))
        return sse_response(
            {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}
        )

    def methods(self):
        return [m.get("method") for m in self.received]

    def calls(self):
        return [m["params"] for m in self.received if m.get("method") == "tools/call"]
