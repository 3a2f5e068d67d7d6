"""The MCP client as the options page uses it: adding a server (handshake, tools), what it sends
on the wire, the sentences for servers Margin cannot use, the stored servers and the names."""

import asyncio
import json

import pytest
from mcp_exchanges import SESSION, TOOLS, McpServer, initialize_result, rpc_result, sse_message, sse_response
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.base.errors import MarginError
from margin.platform.ports import TransportError
from margin.tools import mcp, names, servers
from margin.tools.mcp import McpProblem, ResponseReader


def platform_for(*handlers, local=None):
    return memory_platform(local or {}, ScriptedTransport(list(handlers)))


def add(platform, url="https://tools.example.com/mcp", authorization=""):
    return asyncio.run(servers.handle_add(platform, {"url": url, "authorization": authorization}))


def refused(platform, **kwargs):
    with pytest.raises(MarginError) as caught:
        add(platform, **kwargs)
    return caught.value


def test_adding_a_server_shakes_hands_lists_its_tools_and_stores_it():
    server = McpServer()
    platform = platform_for(*[server] * 6)
    shown = add(platform, authorization="Bearer s3cret")
    assert server.methods() == ["initialize", "notifications/initialized", "tools/list"]
    init = server.received[0]
    assert init["params"]["protocolVersion"] == mcp.PROTOCOL_VERSION
    assert init["params"]["clientInfo"]["name"] == "Margin"
    first, second, third = server.requests[:3]
    assert first.headers["Accept"] == "application/json, text/event-stream"
    assert first.headers["Authorization"] == "Bearer s3cret"
    assert "Mcp-Session-Id" not in first.headers
    assert second.headers["Mcp-Session-Id"] == SESSION and third.headers["Mcp-Session-Id"] == SESSION
    assert third.headers["MCP-Protocol-Version"] == "2025-11-25"
    assert server.deleted  # the session is ended
    (stored,) = platform.local.snapshot()["mcpServers"]
    assert stored["name"] == "notes-server" and stored["authorization"] == "Bearer s3cret"
    assert [(t["name"], t["enabled"], t["alwaysAllow"]) for t in stored["tools"]] == [
        ("echo", True, False),
        ("add", True, False),
    ]
    assert stored["tools"][1]["inputSchema"]["type"] == "object"  # added where the server left it out
    # The page never holds the header, only whether there is one.
    assert "authorization" not in shown["added"] and shown["added"]["hasAuthorization"] is True
    assert "Bearer" not in json.dumps(asyncio.run(servers.handle_list(platform, {})))


def test_an_older_protocol_version_the_server_answers_is_used_from_then_on():
    server = McpServer(version="2025-03-26")
    platform = platform_for(*[server] * 6)
    add(platform)
    assert server.requests[2].headers["MCP-Protocol-Version"] == "2025-03-26"
    assert platform.local.snapshot()["mcpServers"][0]["protocolVersion"] == "2025-03-26"


def test_tools_are_read_across_pages():
    tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(5)]
    server = McpServer(tools=tools, pages=3)
    platform = platform_for(*[server] * 8)
    add(platform)
    assert [
        m.get("params", {}).get("cursor") for m in server.received if m.get("method") == "tools/list"
    ] == [
        None,
        "1",
        "2",
    ]
    assert len(platform.local.snapshot()["mcpServers"][0]["tools"]) == 5


@pytest.mark.parametrize(
    ("answer", "code", "says"),
    [
        (TransportError("connect", "Failed to fetch"), "mcp_unreachable", "could not reach"),
        (
            ScriptedResponse(
                status=401, chunks=[], headers={"www-authenticate": 'Bearer resource_metadata="x"'}
            ),
            "mcp_needs_oauth",
            "OAuth",
        ),
        (
            ScriptedResponse(status=404, chunks=["Not Found"], headers={"content-type": "text/html"}),
            "mcp_not_mcp",
            "HTTP 404",
        ),
        (
            ScriptedResponse(status=200, chunks=["<html>hi</html>"], headers={"content-type": "text/html"}),
            "mcp_not_mcp",
            "MCP server",
        ),
        (
            ScriptedResponse(status=200, chunks=["{not json"], headers={"content-type": "application/json"}),
            "mcp_not_mcp",
            "MCP server",
        ),
        (
            ScriptedResponse(
                status=200,
                chunks=['{"jsonrpc": "1.0", "id": 1}'],
                headers={"content-type": "application/json"},
            ),
            "mcp_not_mcp",
            "MCP",
        ),
        (sse_response(rpc_result(1, initialize_result(version="1999-01-01"))), "mcp_version", "1999-01-01"),
        (
            sse_response(
                {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "bad <b>init</b>"}}
            ),
            "mcp_rpc_error",
            "bad <b>init</b>",
        ),
        (
            ScriptedResponse(status=302, chunks=[], headers={"location": "https://evil.example/"}),
            "mcp_not_mcp",
            "MCP",
        ),
    ],
)
def test_a_server_margin_cannot_use_gets_one_sentence_and_nothing_is_stored(answer, code, says):
    platform = platform_for(answer)
    error = refused(platform)
    assert error.code == code and says in error.message and "tools.example.com" in error.message
    assert "mcpServers" not in platform.local.snapshot()


def test_a_header_the_server_refuses_is_said_as_such():
    platform = platform_for(ScriptedResponse(status=401, chunks=[], headers={}))
    assert refused(platform, authorization="Bearer wrong").code == "mcp_auth_refused"


def test_a_server_without_tools_is_not_added():
    server = McpServer(tools=[{"name": "x", "inputSchema": "not a schema"}])
    platform = platform_for(*[server] * 6)
    assert refused(platform).code == "mcp_no_tools"
    assert "mcpServers" not in platform.local.snapshot()


@pytest.mark.parametrize("url", ["", "ftp://x/mcp", "javascript:alert(1)", "tools.example.com/mcp"])
def test_an_address_that_is_not_http_is_refused_without_a_request(url):
    platform = platform_for()
    assert refused(platform, url=url).code == "mcp_bad_url"
    assert platform.transport.requests == []


def test_a_header_never_goes_over_plain_http_to_another_machine():
    platform = platform_for()
    error = refused(platform, url="http://tools.example.com/mcp", authorization="Bearer x")
    assert error.code == "mcp_header_over_http" and platform.transport.requests == []
    server = McpServer()
    local = platform_for(*[server] * 6)
    add(local, url="http://127.0.0.1:8000/mcp", authorization="Bearer x")  # this machine: fine
    assert server.methods()[0] == "initialize"


def test_the_same_server_is_not_added_twice():
    server = McpServer()
    platform = platform_for(*[server] * 12)
    add(platform)
    assert refused(platform).code == "mcp_already_added"


def test_ticking_removing_and_always_allowing_are_stored():
    server = McpServer()
    platform = platform_for(*[server] * 6)
    server_id = add(platform)["added"]["id"]
    asyncio.run(servers.handle_set(platform, {"id": server_id, "tool": "add", "enabled": False}))
    asyncio.run(servers.handle_set(platform, {"id": server_id, "tool": "echo", "alwaysAllow": True}))
    tools = platform.local.snapshot()["mcpServers"][0]["tools"]
    assert [(t["enabled"], t["alwaysAllow"]) for t in tools] == [(True, True), (False, False)]
    listed = asyncio.run(servers.handle_remove(platform, {"id": server_id}))
    assert listed == {"servers": []} and platform.local.snapshot()["mcpServers"] == []
    with pytest.raises(MarginError):
        asyncio.run(servers.handle_remove(platform, {"id": server_id}))


def test_listing_again_keeps_the_flags_and_leaves_new_tools_unticked():
    server = McpServer()
    platform = platform_for(*[server] * 12)
    server_id = add(platform)["added"]["id"]
    asyncio.run(servers.handle_set(platform, {"id": server_id, "tool": "echo", "alwaysAllow": True}))
    server.tools = [*TOOLS, {"name": "delete_everything", "inputSchema": {"type": "object"}}]
    listed = asyncio.run(servers.handle_refresh(platform, {"id": server_id}))
    tools = {t["name"]: (t["enabled"], t["alwaysAllow"]) for t in listed["servers"][0]["tools"]}
    assert tools == {"echo": (True, True), "add": (True, False), "delete_everything": (False, False)}


def test_unreadable_stored_servers_read_as_none():
    platform = memory_platform({"mcpServers": {"not": "a list"}})
    assert asyncio.run(servers.read_servers(platform.local)) == []
    platform = memory_platform(
        {"mcpServers": [3, {"id": "a"}, {"id": "b", "url": "u", "name": "n", "tools": [7]}]}
    )
    (server,) = asyncio.run(servers.read_servers(platform.local))
    assert server["id"] == "b" and server["tools"] == []


# -- reading responses ----------------------------------------------------------------------------


def test_an_event_stream_is_read_in_any_chunking_and_notifications_are_seen():
    text = sse_message({"jsonrpc": "2.0", "method": mcp.LIST_CHANGED}) + sse_message(rpc_result(7, {"ok": 1}))
    for size in (1, 3, 17, len(text)):
        reader = ResponseReader(7, "text/event-stream; charset=utf-8")
        for start in range(0, len(text), size):
            reader.feed(text[start : start + size])
        assert reader.finish() == {"ok": 1} and reader.notifications == [mcp.LIST_CHANGED]


def test_a_response_for_another_id_is_not_taken_for_ours():
    reader = ResponseReader(2, "application/json")
    reader.feed(json.dumps([rpc_result(1, "theirs"), rpc_result(2, "ours")]))
    assert reader.finish() == "ours"
    other = ResponseReader(2, "application/json")
    other.feed(json.dumps(rpc_result(1, "theirs")))
    with pytest.raises(McpProblem):
        other.finish()


def test_a_response_past_the_bound_is_refused_before_it_is_parsed(monkeypatch):
    monkeypatch.setattr(mcp, "RESPONSE_CHARS", 1000)
    reader = ResponseReader(1, "application/json")
    with pytest.raises(McpProblem) as caught:
        reader.feed("x" * 1001)
    assert caught.value.kind == "too_large"


# -- names ------------------------------------------------------------------------------------------


def test_names_are_valid_for_every_provider_and_unique():
    given = names.unique_names(
        [
            ("notes", "search"),
            ("mail", "search"),
            ("mail", "search"),
            ("x", "run_python"),
            ("x", "get weather/today"),
            ("x", "1st"),
            ("x", "日本語"),
            ("very long server name indeed", "a" * 100),
            ("very long server name indeed", "a" * 100),
        ]
    )
    assert given[:3] == ["search", "mail_search", "mail_search_2"]
    assert given[3] == "x_run_python" and given[4] == "get_weather_today" and given[5] == "t_1st"
    assert all(names.NAME_PATTERN.match(n) for n in given), given
    assert len(set(given)) == len(given)
    assert names.unique_names([("notes", "search")]) == ["search"]  # the same tools: the same names


# -- backups --------------------------------------------------------------------------------------


def test_a_backup_keeps_the_servers_and_their_headers_only_with_the_api_keys():
    from margin.backup import stream as backup

    server = McpServer()
    platform = platform_for(*[server] * 6)
    add(platform, authorization="Bearer s3cret")
    asyncio.run(servers.handle_set(platform, {"id": servers_id(platform), "tool": "add", "enabled": False}))
    plain, _ = asyncio.run(backup.export_text(platform, False, 1 << 20))
    (exported,) = json.loads(plain)["settings"]["mcpServers"]
    assert exported["authorization"] == "" and exported["url"] == "https://tools.example.com/mcp"
    with_keys, _ = asyncio.run(backup.export_text(platform, True, 1 << 20))
    assert json.loads(with_keys)["settings"]["mcpServers"][0]["authorization"] == "Bearer s3cret"

    fresh = memory_platform(
        {"mcpServers": [{**exported, "id": "mine", "name": "mine", "url": "https://other.example/mcp"}]}
    )
    asyncio.run(backup.import_text(fresh, with_keys, 1 << 20))
    mine, restored = fresh.local.snapshot()["mcpServers"]
    assert mine["id"] == "mine" and restored["authorization"] == "Bearer s3cret"
    assert [(t["name"], t["enabled"]) for t in restored["tools"]] == [("echo", True), ("add", False)]
    asyncio.run(backup.import_text(fresh, plain, 1 << 20))  # the same server again: not added twice
    assert len(fresh.local.snapshot()["mcpServers"]) == 2


def servers_id(platform):
    return platform.local.snapshot()["mcpServers"][0]["id"]


def test_an_origin_the_server_refuses_is_said_with_the_servers_reason():
    refusal = ScriptedResponse(status=403, chunks=["Invalid Origin header"], headers={})
    error = refused(platform_for(refusal))
    assert error.code == "mcp_not_mcp" and "HTTP 403: Invalid Origin header" in error.message


# -- what a result keeps ----------------------------------------------------------------------------


def test_a_result_keeps_text_json_and_pictures_and_names_what_it_does_not_show():
    from margin.sandbox import mcp_results

    kept = mcp_results.from_server(
        {
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
                {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},
                {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
                {"type": "resource_link", "uri": "file:///notes/today.md", "name": "today"},
            ],
            "isError": False,
        }
    )
    assert kept["content"] == [
        {"type": "text", "text": "hello"},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "text", "text": "[image]"},
        {"type": "text", "text": "[audio]"},
        {"type": "text", "text": "[resource_link: file:///notes/today.md]"},
    ]
    assert mcp_results.clean_result(kept) == kept and kept["cut"] == 0
    structured = mcp_results.from_server({"structuredContent": {"sum": 5}})
    assert structured["content"] == [{"type": "json", "text": '{\n  "sum": 5\n}'}]
    assert "[image: image/png]" in mcp_results.result_text(kept)
    many = mcp_results.from_server({"content": [{"type": "text", "text": "a"}] * 80})
    assert len(many["content"]) == mcp_results.MAX_PARTS and many["cut"] == 80


# -- the older HTTP+SSE transport ---------------------------------------------------------------------


def legacy_stream(*events):
    return ScriptedResponse(chunks=list(events), headers={"content-type": "text/event-stream"})


def test_a_server_of_the_older_http_sse_transport_is_added_through_its_endpoint():
    old_stream = legacy_stream(
        "event: endpoint\ndata: /messages/?session_id=abc\n\n",
        sse_message(rpc_result(1, initialize_result(version="2024-11-05", name="old-server"))),
        sse_message(rpc_result(2, {"tools": TOOLS})),
    )
    accepted = ScriptedResponse(status=202, chunks=[], headers={})
    refused_post = ScriptedResponse(
        status=405, chunks=["Method Not Allowed"], headers={"content-type": "text/plain"}
    )
    platform = platform_for(refused_post, old_stream, accepted, accepted, accepted)
    shown = add(platform)
    assert shown["added"]["name"] == "old-server" and shown["added"]["protocolVersion"] == "2024-11-05"
    get, *posts = platform.transport.requests[1:]
    assert get.method == "GET" and get.headers["Accept"] == "text/event-stream"
    assert [p.url for p in posts] == ["https://tools.example.com/messages/?session_id=abc"] * 3
    assert [json.loads(p.body)["method"] for p in posts] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    assert old_stream.closed


def test_an_endpoint_on_another_host_is_refused_and_the_first_refusal_is_said():
    stream = legacy_stream("event: endpoint\ndata: https://evil.example/steal\n\n")
    refused_post = ScriptedResponse(status=404, chunks=[], headers={})
    platform = platform_for(refused_post, stream)
    error = refused(platform, authorization="Bearer s3cret")
    assert error.code == "mcp_not_mcp" and "HTTP 404" in error.message
    assert all("evil.example" not in r.url for r in platform.transport.requests)


def test_a_backup_cannot_bring_a_header_to_plain_http_on_another_machine():
    incoming = [
        {
            "id": "a",
            "url": "http://tools.example.com/mcp",
            "authorization": "Bearer x",
            "name": "a",
            "tools": [],
        },
        {"id": "b", "url": "javascript:alert(1)", "authorization": "", "name": "b", "tools": []},
        {"id": "c", "url": "http://127.0.0.1:9/mcp", "authorization": "Bearer x", "name": "c", "tools": []},
    ]
    assert [s["id"] for s in servers.servers_from_backup(incoming)] == ["c"]


# -- tools a server lists that Margin must read carefully ---------------------------------------------


def test_a_tool_without_a_schema_takes_no_arguments_and_one_margin_cannot_offer_is_named_as_left_out():
    listed = [
        {"name": "ping", "description": "No arguments at all."},
        {"name": "scalar", "inputSchema": {"type": "string"}},
        {"name": "listy", "inputSchema": ["not", "an", "object"]},
        {"name": "nothing", "inputSchema": None},
        {"name": "n" * 129, "inputSchema": {"type": "object"}},
        TOOLS[0],
    ]
    left = ["scalar", "listy", "nothing", "n" * 128]
    server = McpServer(tools=listed)
    platform = platform_for(*[server] * 12)
    shown = add(platform)
    assert [t["name"] for t in shown["added"]["tools"]] == ["ping", "echo"]
    assert shown["leftOut"] == left
    stored = platform.local.snapshot()["mcpServers"][0]["tools"]
    assert stored[0]["inputSchema"] == {"type": "object", "properties": {}}
    refreshed = asyncio.run(servers.handle_refresh(platform, {"id": shown["added"]["id"]}))
    assert refreshed["leftOut"] == left
    assert [t["name"] for t in refreshed["servers"][0]["tools"]] == ["ping", "echo"]


def test_a_tools_title_is_kept_for_the_options_page_from_the_tool_or_its_annotations():
    listed = [
        {**TOOLS[0], "title": "  Echo back  "},
        {**TOOLS[1], "annotations": {"title": "Add numbers", "readOnlyHint": True}},
        {"name": "plain", "inputSchema": {"type": "object"}, "annotations": "not an object"},
    ]
    server = McpServer(tools=listed)
    platform = platform_for(*[server] * 6)
    shown = add(platform)
    assert [(t["name"], t["title"]) for t in shown["added"]["tools"]] == [
        ("echo", "Echo back"),
        ("add", "Add numbers"),
        ("plain", ""),
    ]
    # A server stored before titles were kept reads with none.
    old = {**platform.local.snapshot()["mcpServers"][0]}
    old["tools"] = [{k: v for k, v in t.items() if k != "title"} for t in old["tools"]]
    (read,) = asyncio.run(servers.read_servers(memory_platform({"mcpServers": [old]}).local))
    assert [t["title"] for t in read["tools"]] == ["", "", ""]


def test_tool_names_that_collide_once_made_valid_each_reach_their_own_tool():
    from margin.tools.turn_tools import TurnTools

    tools = [
        {"name": n, "title": "", "description": "", "inputSchema": {"type": "object"}, "enabled": True}
        for n in ("get.weather", "get_weather", "get weather")
    ]
    stored = {"id": "mcp-1", "url": "https://x.example/mcp", "name": "wx", "tools": tools}
    turn = TurnTools(memory_platform(), [stored], 30.0)
    routed = {name: entry.tool["name"] for name, entry in turn.entries.items()}
    assert routed == {
        "get_weather": "get.weather",
        "wx_get_weather": "get_weather",
        "wx_get_weather_2": "get weather",
    }
    assert [t.name for t in turn.offered()] == list(routed)


def test_an_error_result_is_marked_for_the_model_and_structured_content_is_never_lost():
    from margin.sandbox import mcp_results

    failed = mcp_results.from_server({"content": [{"type": "text", "text": "no such city"}], "isError": True})
    assert failed["isError"] is True
    assert mcp_results.result_text(failed) == "[The tool reported an error]\nno such city"
    empty_error = mcp_results.from_server({"isError": True})
    assert (
        mcp_results.result_text(empty_error) == "[The tool reported an error]\n(The tool returned nothing.)"
    )
    assert mcp_results.from_server({"content": [], "isError": "yes"})["isError"] is False
    # Structured content said as text too (as the spec asks) is not said twice...
    both = mcp_results.from_server(
        {"content": [{"type": "text", "text": '{"sum": 5}'}], "structuredContent": {"sum": 5}}
    )
    assert both["content"] == [{"type": "text", "text": '{"sum": 5}'}]
    # ...and kept when only a picture carries the result.
    chart = mcp_results.from_server(
        {
            "content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}],
            "structuredContent": {"points": [1, 2]},
        }
    )
    assert [p["type"] for p in chart["content"]] == ["image", "json"]
    assert mcp_results.clean_result(chart) == chart
