"""The user's MCP servers as stored: each server's address, its Authorization header, its name
and its tools, each tool offered to the model or not and always allowed or not
(docs/storage-model.md, `mcpServers`; the options page's "Tools" section, docs/protocol.md).

Rules:
1. `mcpServers` in chrome.storage.local is a list of at most MAX_SERVERS servers `{id, url,
   authorization, name, protocolVersion, tools}`; each tool is `{name, title, description,
   inputSchema, enabled, alwaysAllow}`, at most MAX_TOOLS of them. It is read by address, never
   by get_all (margin.storage.keys rule 3): a page is never sent the Authorization header, only
   whether there is one (`public`).
2. Adding a server connects first (initialize, tools/list: margin.tools.session) and stores it
   only when both answered; a server that cannot be reached, is not MCP, needs OAuth or offers
   no tool is refused with one sentence and nothing is stored. The address must be http(s); an
   Authorization header is never sent over plain http:// to another machine (the same rule as
   an API key, margin.providers.plain_http). A server already stored (same address) is refused.
3. A new server's tools are all offered (the user added it to use them) and none is always
   allowed. Tools listed again (`notifications/tools/list_changed`, or "Refresh") keep their
   flags by name; a tool that is new then is NOT offered until the user ticks it: the user has
   not seen it.
4. A tool is kept only with a name (at most NAME_CHARS) and an `inputSchema` that is a JSON
   object of at most SCHEMA_CHARS characters (`type: "object"` is added when missing; a tool
   listed with no schema at all takes no arguments: `{type: "object", properties: {}}`). A
   schema of another type (a provider can only be offered objects) leaves the tool out, and
   "Add server" and "Refresh tools" name the tools left out (`leftOut`). Its `title` (the
   tool's own, else `annotations.title`: a name for people) is cut to TITLE_CHARS, its
   description to DESCRIPTION_CHARS. A stored value that is not a list of servers reads as none,
   and a server or tool Margin cannot read is skipped, never raised.
5. Every read-modify-write holds `storage.lock_for(local)`, and reads afresh under it.
6. Backups (margin.backup): the servers go with the settings (`settings.mcpServers`), each
   Authorization header blanked ("") unless the user ticked "Include API keys", as API keys are.
   An import adds the servers whose address is not stored yet, as `servers_from_backup` reads
   them (what it cannot read is left out), never replacing one, within MAX_SERVERS.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform, StorageArea
from ..providers.plain_http import is_local_host, scheme_and_host
from ..storage.keys import MCP_SERVERS, lock_for
from .legacy_session import open_session
from .mcp import McpProblem
from .session import CONNECT_TIMEOUT, problem_error

MAX_SERVERS = 20
MAX_TOOLS = 200
NAME_CHARS = 128
DESCRIPTION_CHARS = 2_000
SCHEMA_CHARS = 50_000
TITLE_CHARS = 200
NO_ARGUMENTS = {"type": "object", "properties": {}}
URL_CHARS = 2_000
AUTHORIZATION_CHARS = 8_000


def clean_tool(raw: Any, enabled: bool, always: bool = False) -> dict[str, Any] | None:
    """Rule 4: a tool as listed by the server, or None when Margin cannot offer it."""
    if not isinstance(raw, dict):
        return None
    name = raw.get("name")
    schema = raw.get("inputSchema", NO_ARGUMENTS)
    if not isinstance(name, str) or not name or len(name) > NAME_CHARS or not isinstance(schema, dict):
        return None
    if "type" not in schema:
        schema = {"type": "object", **schema}
    try:
        written = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError):
        return None
    if len(written) > SCHEMA_CHARS or schema.get("type") != "object":
        return None
    said = raw.get("description")
    description = said if isinstance(said, str) else ""
    annotations = raw.get("annotations")
    title = raw.get("title") or (annotations.get("title") if isinstance(annotations, dict) else None)
    return {
        "name": name,
        "title": title.strip()[:TITLE_CHARS] if isinstance(title, str) else "",
        "description": description[:DESCRIPTION_CHARS],
        "inputSchema": json.loads(written),
        "enabled": enabled,
        "alwaysAllow": always,
    }


def _clean_server(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    if not all(isinstance(raw.get(k), str) for k in ("id", "url", "name")):
        return None
    tools = []
    listed = raw.get("tools")
    for tool in listed if isinstance(listed, list) else []:
        kept = (
            clean_tool(tool, tool.get("enabled") is True, tool.get("alwaysAllow") is True)
            if isinstance(tool, dict)
            else None
        )
        if kept is not None:
            tools.append(kept)
    authorization = raw.get("authorization")
    return {
        "id": raw["id"],
        "url": raw["url"],
        "authorization": authorization if isinstance(authorization, str) else "",
        "name": raw["name"],
        "protocolVersion": str(raw.get("protocolVersion", "")),
        "tools": tools[:MAX_TOOLS],
    }


async def read_servers(area: StorageArea) -> list[dict[str, Any]]:
    """Rule 4: the stored servers Margin can read."""
    stored = (await area.get([MCP_SERVERS])).get(MCP_SERVERS)
    servers = [_clean_server(s) for s in stored] if isinstance(stored, list) else []
    return [s for s in servers if s is not None][:MAX_SERVERS]


def public(server: dict[str, Any]) -> dict[str, Any]:
    """Rule 1: a server as a page may see it."""
    shown = {k: v for k, v in server.items() if k != "authorization"}
    shown["hasAuthorization"] = bool(server["authorization"])
    shown["tools"] = [{k: v for k, v in t.items() if k != "inputSchema"} for t in server["tools"]]
    return shown


def _check_url(url: Any, authorization: str) -> str:
    """Rule 2."""
    if not isinstance(url, str) or not url.strip() or len(url) > URL_CHARS:
        raise MarginError.said("mcp_bad_url", "py_error_mcp_bad_url")
    url = url.strip()
    scheme, host = scheme_and_host(url)
    if scheme not in ("http", "https") or not host:
        raise MarginError.said("mcp_bad_url", "py_error_mcp_bad_url")
    if authorization and scheme == "http" and not is_local_host(host):
        raise MarginError.said("mcp_header_over_http", "py_error_mcp_header_over_http", host)
    return url


def listed_tools(raw: list[dict[str, Any]], before: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Rule 3: the tools as listed now, with the flags they had (`before` None: a new server)."""
    known = {t["name"]: t for t in before or []}
    tools: list[dict[str, Any]] = []
    for tool in raw:
        old = known.get(tool.get("name")) if isinstance(tool.get("name"), str) else None
        if old is not None:
            kept = clean_tool(tool, old["enabled"], old["alwaysAllow"])
        else:
            kept = clean_tool(tool, before is None)
        if kept is not None and all(t["name"] != kept["name"] for t in tools):
            tools.append(kept)
    return tools[:MAX_TOOLS]


def left_out(raw: list[dict[str, Any]], kept: list[dict[str, Any]]) -> list[str]:
    """Rule 4: the names of the listed tools Margin cannot offer, for the user to read."""
    offered = {t["name"] for t in kept}
    names = [t.get("name") for t in raw]
    return [n[:NAME_CHARS] for n in names if isinstance(n, str) and n and n not in offered][:MAX_TOOLS]


async def connect(platform: Platform, url: str, authorization: str) -> tuple[Any, list[dict[str, Any]]]:
    """Rule 2: the server's handshake and its tools, or the one sentence that says why not."""

    async def talk() -> tuple[Any, list[dict[str, Any]]]:
        session, info = await open_session(platform.transport, url, authorization)
        try:
            return info, await session.tools()
        finally:
            await session.close()

    try:
        return await asyncio.wait_for(talk(), CONNECT_TIMEOUT)
    except TimeoutError as error:
        raise problem_error(McpProblem("timeout"), url) from error
    except McpProblem as problem:
        raise problem_error(problem, url) from problem


async def add_server(platform: Platform, url: Any, authorization: Any) -> tuple[dict[str, Any], list[str]]:
    """Rule 2: the server stored, and the names of its tools left out (rule 4)."""
    authorization = authorization.strip() if isinstance(authorization, str) else ""
    if len(authorization) > AUTHORIZATION_CHARS:
        raise MarginError.said("mcp_bad_header", "py_error_mcp_bad_header")
    url = _check_url(url, authorization)
    known = await read_servers(platform.local)
    if any(s["url"] == url for s in known):
        raise MarginError.said("mcp_already_added", "py_error_mcp_already_added")
    if len(known) >= MAX_SERVERS:
        raise MarginError.said("mcp_too_many", "py_error_mcp_too_many", MAX_SERVERS)
    info, raw_tools = await connect(platform, url, authorization)
    tools = listed_tools(raw_tools, None)
    if not tools:
        raise problem_error(McpProblem("no_tools"), url)
    server = {
        "id": "mcp-" + secrets.token_hex(8),
        "url": url,
        "authorization": authorization,
        "name": info.name or scheme_and_host(url)[1],
        "protocolVersion": info.protocol_version,
        "tools": tools,
    }
    async with lock_for(platform.local):  # rule 5
        servers = await read_servers(platform.local)
        if any(s["url"] == url for s in servers):
            raise MarginError.said("mcp_already_added", "py_error_mcp_already_added")
        await platform.local.set({MCP_SERVERS: [*servers, server]})
    return server, left_out(raw_tools, tools)


async def change(platform: Platform, server_id: Any, edit: Any) -> list[dict[str, Any]]:
    """Rule 5: `edit(server)` returns the server to store (None removes it); the servers after."""
    async with lock_for(platform.local):
        servers = await read_servers(platform.local)
        if not any(s["id"] == server_id for s in servers):
            raise MarginError.said("mcp_server_gone", "py_error_mcp_server_gone")
        kept = []
        for server in servers:
            changed = edit(server) if server["id"] == server_id else server
            if changed is not None:
                kept.append(changed)
        await platform.local.set({MCP_SERVERS: kept})
        return kept


def _with_tool_flags(tool_name: Any, flags: dict[str, bool]) -> Any:
    def edit(server: dict[str, Any]) -> dict[str, Any]:
        tools = [{**t, **flags} if t["name"] == tool_name else t for t in server["tools"]]
        return {**server, "tools": tools}

    return edit


async def set_tool(
    platform: Platform, server_id: Any, tool_name: Any, flags: dict[str, bool]
) -> list[dict[str, Any]]:
    return await change(platform, server_id, _with_tool_flags(tool_name, flags))


async def relist(platform: Platform, server_id: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rule 3: the server's tools listed again (its flags kept by name): the servers after, and
    the names of the tools left out (rule 4)."""
    server = next((s for s in await read_servers(platform.local) if s["id"] == server_id), None)
    if server is None:
        raise MarginError.said("mcp_server_gone", "py_error_mcp_server_gone")
    _, raw_tools = await connect(platform, server["url"], server["authorization"])
    servers = await change(platform, server_id, lambda s: {**s, "tools": listed_tools(raw_tools, s["tools"])})
    return servers, left_out(raw_tools, listed_tools(raw_tools, None))


# -- backups (rule 6) -------------------------------------------------------------------------------


def for_backup(stored: Any, include_headers: bool) -> dict[str, Any]:
    """The settings' `mcpServers` member of a backup ({} when there is no server)."""
    servers = [_clean_server(s) for s in stored] if isinstance(stored, list) else []
    kept = [s if include_headers else {**s, "authorization": ""} for s in servers if s is not None]
    return {MCP_SERVERS: kept} if kept else {}


def servers_from_backup(value: Any) -> list[dict[str, Any]]:
    """A backup's `mcpServers`, what Margin can read of it (never raises)."""
    servers = [_clean_server(s) for s in value] if isinstance(value, list) else []
    return [s for s in servers if s is not None and _sendable(s["url"], s["authorization"])]


def _sendable(url: str, authorization: str) -> bool:
    """Rule 2, for a server read from a file: http(s), and no header over plain http to another machine."""
    try:
        _check_url(url, authorization)
    except MarginError:
        return False
    return True


def merged_servers(ours: Any, theirs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The servers after an import (None when nothing is added)."""
    kept = [s for s in (_clean_server(s) for s in ours) if s is not None] if isinstance(ours, list) else []
    known = {s["url"] for s in kept}
    added: list[dict[str, Any]] = []
    for server in theirs:
        if server["url"] not in known and len(kept) + len(added) < MAX_SERVERS:
            known.add(server["url"])
            added.append(server)
    return [*kept, *added] if added else None


# -- the options page's requests (docs/protocol.md) -------------------------------------------------


def _listing(servers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"servers": [public(s) for s in servers]}


async def handle_list(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tools.list`."""
    return _listing(await read_servers(platform.local))


async def handle_add(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tools.add` {url, authorization?}: rule 2."""
    server, left = await add_server(platform, payload.get("url"), payload.get("authorization"))
    return {"added": public(server), "leftOut": left, **_listing(await read_servers(platform.local))}


async def handle_remove(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tools.remove` {id}."""
    return _listing(await change(platform, payload.get("id"), lambda s: None))


async def handle_set(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tools.set` {id, tool, enabled?, alwaysAllow?}: a tool offered or not, always allowed or not."""
    flags = {k: payload[k] for k in ("enabled", "alwaysAllow") if isinstance(payload.get(k), bool)}
    return _listing(await set_tool(platform, payload.get("id"), payload.get("tool"), flags))


async def handle_refresh(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tools.refresh` {id}: rule 3."""
    server_id = payload.get("id")
    servers, left = await relist(platform, server_id if isinstance(server_id, str) else "")
    return {"leftOut": left, **_listing(servers)}
