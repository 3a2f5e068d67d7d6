"""A turn's MCP tools: what is offered to the model, and each call asked, made and kept
(docs/protocol.md, "Tool calls"; margin.sandbox.tool_turn rule 6 runs them in the round).

Rules:
1. Offered: every tool the user left ticked on every stored server (margin.tools.servers), to a
   provider with tool calling (margin.sandbox.tool_loop rules 1 and 7), whether `run_python` is
   offered or not; each under the name margin.tools.names gives it, described with its server's
   name, its schema as the server listed it.
2. Consent: a call goes to the panel as `{event: "tool_call", call: {id, mcp: {serverName, tool,
   arguments}, mode}}`, mode "ask" unless the user chose "Always allow" for that tool before
   ("auto": shown, not asked). The turn waits for the panel's `{action: "tool_result", callId,
   outcome: "allow" | "always" | "deny"}` (other messages are ignored; any other outcome is a
   denial). "deny" never contacts the server: the call is stored "declined" and the model is
   told the user declined. "always" stores `alwaysAllow` for that tool, then calls it.
3. The call: one MCP session (initialize, tools/call, end), raced against Stop and the code time
   limit (the setting `codeTimeLimitSeconds`): Stop ends the turn as stopped (the call stays
   "stopped"); the time limit, a server that fails or dies, or an answer that is not MCP store the
   call "failed" with one sentence (model language), which the model gets as its result.
4. A result is kept bounded (margin.sandbox.mcp_results), shown by the panel as the
   `{event: "tool_done", callId, call}` event, and sent to the model as text. A result never
   makes a call itself: only the model asks for calls, and each is asked for again (rule 2).
5. Arguments that are not a JSON object are refused without asking (stored "refused").
6. A `notifications/tools/list_changed` seen during the call lists that server's tools again
   afterwards (margin.tools.servers rule 3); a failure of that listing loses nothing.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from ..base.errors import MarginError, ProviderError
from ..base.sentences import sentence
from ..base.stoppable import race
from ..platform.ports import Platform
from ..providers.plain_http import target_host
from ..providers.tool_wire import OfferedTool
from ..sandbox import mcp_results, tool_loop
from ..sandbox.tool_loop import ToolCall, stored_call
from ..sandbox.tool_turn import ToolRunner
from . import servers as stored_servers
from .legacy_session import Session, open_session
from .mcp import PROBLEM_KEYS, McpProblem
from .names import unique_names

ANSWERS = ("allow", "always", "deny")


@dataclass(frozen=True)
class Entry:
    model_name: str
    server: dict[str, Any]
    tool: dict[str, Any]


class TurnTools:
    """margin.sandbox.tool_turn's `OtherTools` for one turn."""

    def __init__(self, platform: Platform, servers: list[dict[str, Any]], time_limit: float):
        self.platform = platform
        self.time_limit = time_limit
        pairs = [(s, t) for s in servers for t in s["tools"] if t["enabled"]]
        names = unique_names([(s["name"], t["name"]) for s, t in pairs])
        self.entries = {n: Entry(n, s, t) for n, (s, t) in zip(names, pairs, strict=True)}

    @classmethod
    async def load(cls, platform: Platform, time_limit: Any) -> TurnTools:
        seconds = time_limit if isinstance(time_limit, int) and not isinstance(time_limit, bool) else 30
        return cls(platform, await stored_servers.read_servers(platform.local), float(max(1, seconds)))

    def offered(self) -> tuple[OfferedTool, ...]:
        """Rule 1."""
        return tuple(
            OfferedTool(
                e.model_name,
                f"{e.tool['description'] or e.tool['name']}\n(Tool “{e.tool['name']}” of the user's MCP "
                f"server “{e.server['name']}”; each call needs the user's consent.)",
                e.tool["inputSchema"],
            )
            for e in self.entries.values()
        )

    def handles(self, name: str) -> bool:
        return name in self.entries

    def _mcp(self, entry: Entry, result: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "server": entry.server["id"],
            "serverName": entry.server["name"][: mcp_results.NAME_CHARS],
            "tool": entry.tool["name"][: mcp_results.NAME_CHARS],
            "result": result,
        }

    def placeholder(self, call: ToolCall) -> dict[str, Any]:
        return stored_call(call, "", "stopped", None, "", self._mcp(self.entries[call.name]))

    async def run(self, call: ToolCall, runner: ToolRunner) -> dict[str, Any]:
        entry = self.entries[call.name]
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):  # rule 5
            note = runner.words.text("py_mcp_arguments_not_object")
            runner.emit({"event": "tool_call", "call": {"id": call.id, "code": "", "refusal": note}})
            return stored_call(call, "", "refused", None, note, self._mcp(entry))
        always = entry.tool["alwaysAllow"]
        shown = {
            "serverName": entry.server["name"],
            "tool": entry.tool["name"],
            "arguments": json.dumps(arguments, ensure_ascii=False, indent=2)[: tool_loop.ARGUMENTS_CHARS],
        }
        runner.emit(
            {"event": "tool_call", "call": {"id": call.id, "mcp": shown, "mode": "auto" if always else "ask"}}
        )
        if not always:
            answer = await self._consent(call.id, runner)
            if answer == "deny":  # rule 2: the server is never contacted
                stored = stored_call(call, "", "declined", None, "", self._mcp(entry))
                runner.emit({"event": "tool_done", "callId": call.id, "call": stored})
                return stored
            if answer == "always":
                with contextlib.suppress(MarginError):  # only a convenience is lost
                    await stored_servers.set_tool(
                        self.platform, entry.server["id"], entry.tool["name"], {"alwaysAllow": True}
                    )
        stored = await self._call(call, entry, arguments, runner)
        runner.emit({"event": "tool_done", "callId": call.id, "call": stored})
        return stored

    async def _consent(self, call_id: str, runner: ToolRunner) -> str:
        """Rule 2: the user's answer; Stop (or the panel going away) raises Stopped."""
        if runner.receive is None:
            return "deny"
        while True:
            message = await race(runner.receive(), runner.stop, what=sentence("py_error_waited_code_run"))
            if not isinstance(message, dict) or message.get("action") != "tool_result":
                continue
            if message.get("callId") != call_id:
                continue
            outcome = message.get("outcome")
            return outcome if outcome in ANSWERS else "deny"

    async def _call(
        self, call: ToolCall, entry: Entry, arguments: dict[str, Any], runner: ToolRunner
    ) -> dict[str, Any]:
        """Rule 3."""
        server = entry.server
        opened: list[Session] = []

        async def talk() -> Any:
            session, _ = await open_session(
                self.platform.transport, server["url"], server["authorization"], self.time_limit
            )
            opened.append(session)
            try:
                return await session.call(entry.tool["name"], arguments)
            finally:
                await session.close()

        host = target_host(server["url"]) or server["url"][:100]
        try:
            raw = await race(talk(), runner.stop, timeout=self.time_limit)
        except McpProblem as problem:
            key = PROBLEM_KEYS.get(problem.kind, "py_error_mcp_not_mcp")
            return stored_call(
                call, "", "failed", None, runner.words.text(key, host, problem.detail), self._mcp(entry)
            )
        except ProviderError as error:
            if error.code != "timeout":
                raise
            note = runner.words.text("py_mcp_time_limit", server["name"], int(self.time_limit))
            return stored_call(call, "", "failed", None, note, self._mcp(entry))
        if opened and opened[0].list_changed:  # rule 6
            with contextlib.suppress(MarginError):
                await race(
                    stored_servers.relist(self.platform, server["id"]), runner.stop, timeout=self.time_limit
                )
        return stored_call(call, "", "ran", None, "", self._mcp(entry, mcp_results.from_server(raw)))


def offer_tools(provider: dict[str, Any]) -> bool:
    """Rule 1: whether this provider can be offered the user's tools at all."""
    return (
        provider.get("type") in tool_loop.TOOL_PROVIDER_TYPES and provider.get("supportsTools") is not False
    )
