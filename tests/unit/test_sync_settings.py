"""Saved prompts and MCP servers through sync (margin.sync.settings rule 4): prompts merged by id
(one side's edit travels, both edited: the later edit, an edit beats a delete, built-ins' flags
follow the latest change), servers by address with their tools' flags and never their
Authorization header. Both machines sync (A, then B, then A): they must converge."""

from __future__ import annotations

import pytest
from fake_webdav import FakeDav
from sync_devices import device, quick_keys, run, sync, ticking_clock, two_devices

from margin.settings import prompts
from margin.storage.keys import MCP_SERVERS
from margin.tools import servers

SERVER = "https://tools.example.com/mcp"


@pytest.fixture(autouse=True)
def quick_keys_and_a_ticking_clock(monkeypatch):
    quick_keys(monkeypatch)
    ticking_clock(monkeypatch)


def listed(platform):
    return run(prompts.handle_list(platform, {}))["prompts"]


def own(platform):
    """The user's own prompts, name -> text, in the user's order."""
    return {p["name"]: p["text"] for p in listed(platform) if not p["builtin"]}


def save_prompts(platform, entries):
    run(prompts.handle_save(platform, {"prompts": entries}))


def edit(platform, name, text):
    save_prompts(platform, [{**p, "text": text} if p["name"] == name else p for p in listed(platform)])


def remove(platform, name):
    save_prompts(platform, [p for p in listed(platform) if p["name"] != name])


def two_devices_sharing(*names):
    _, a, b = two_devices(lambda a: save_prompts(a, [{"name": n, "text": f"{n} text"} for n in names]))
    return a, b


def converge(a, b):
    sync(a), sync(b), sync(a)


# -- prompts ---------------------------------------------------------------------------------------


def test_a_prompt_made_on_a_reaches_b_with_its_text_and_menu_place():
    dav = FakeDav()
    a, b = device(dav), device(dav)
    save_prompts(b, [{"name": "Made on B", "text": "kept"}])
    save_prompts(a, [{"name": "Spanish", "text": "Into Spanish: {{selection}}", "menu": True}])
    converge(a, b)
    assert own(a) == own(b) == {"Spanish": "Into Spanish: {{selection}}", "Made on B": "kept"}
    assert next(p for p in listed(b) if p["name"] == "Spanish")["menu"] is True
    assert listed(a) == listed(b)  # the same ids, the same order


@pytest.mark.parametrize(
    ("on_a", "on_b", "expected"),
    [
        ("edit", "none", "edited on A"),
        ("none", "edit", "edited on B"),
        ("edit", "edit", "edited on B"),  # both edited: B's is the later edit
        ("delete", "edit", "edited on B"),  # an edit beats a delete
        ("edit", "delete", "edited on A"),
        ("delete", "none", None),  # deleted on one side, unchanged on the other: gone
        ("none", "delete", None),
        ("delete", "delete", None),
    ],
)
def test_each_pair_of_prompt_changes_converges_as_the_merge_rules_say(on_a, on_b, expected):
    a, b = two_devices_sharing("Shared")
    for platform, operation, side in ((a, on_a, "A"), (b, on_b, "B")):
        if operation == "edit":
            edit(platform, "Shared", f"edited on {side}")
        elif operation == "delete":
            remove(platform, "Shared")
    converge(a, b)
    assert own(a) == own(b) == ({} if expected is None else {"Shared": expected})


def test_the_earlier_edit_loses_even_when_its_machine_syncs_last():
    a, b = two_devices_sharing("Shared")
    edit(a, "Shared", "first edit, on A")
    edit(b, "Shared", "later edit, on B")
    sync(b), sync(a), sync(b)
    assert own(a) == own(b) == {"Shared": "later edit, on B"}


def test_a_built_ins_hidden_and_menu_flags_follow_the_latest_change():
    a, b = two_devices_sharing()

    def flags(platform, prompt_id, **changes):
        save_prompts(platform, [{**p, **changes} if p["id"] == prompt_id else p for p in listed(platform)])

    flags(a, "tighten", hidden=True)
    flags(b, "summarize", menu=False)
    flags(a, "translate", menu=False)
    flags(b, "translate", menu=True, hidden=True)  # later than A's change of the same built-in
    converge(a, b)
    shown = {p["id"]: (p["hidden"], p["menu"]) for p in listed(a)}
    assert shown["tighten"] == (True, False) and shown["summarize"] == (False, False)
    assert shown["translate"] == (True, True)
    assert listed(a) == listed(b)


# -- MCP servers -----------------------------------------------------------------------------------


def tool(name, enabled=True, always=False):
    return {
        "name": name,
        "description": f"{name} things",
        "inputSchema": {"type": "object"},
        "enabled": enabled,
        "alwaysAllow": always,
    }


def add_server(platform, authorization, url=SERVER):
    """A server as "Add server" stores it (its handshake is tests/unit/test_mcp_client.py's)."""
    stored = run(servers.read_servers(platform.local))
    server = {
        "id": "mcp-" + str(len(stored)) + authorization[-3:],
        "url": url,
        "authorization": authorization,
        "name": "Tools",
        "protocolVersion": "2025-06-18",
        "tools": [tool("search"), tool("fetch")],
    }
    run(platform.local.set({MCP_SERVERS: [*stored, server]}))


def server_on(platform, url=SERVER):
    return next((s for s in run(servers.read_servers(platform.local)) if s["url"] == url), None)


def flags_of(server):
    return {t["name"]: (t["enabled"], t["alwaysAllow"]) for t in server["tools"]}


def test_a_server_and_its_tool_choices_reach_b_without_a_header_and_b_keeps_its_own():
    dav = FakeDav()
    a, b = device(dav), device(dav)
    add_server(a, "Bearer tok-from-a")
    other = "https://other.example.com/mcp"
    add_server(b, "Bearer tok-from-b", url=other)
    add_server(b, "Bearer tok-b-for-same", url=SERVER)
    converge(a, b)  # the same address on both: one server, each machine with its own header
    run(servers.handle_set(a, {"id": server_on(a)["id"], "tool": "fetch", "alwaysAllow": True}))
    run(servers.handle_set(a, {"id": server_on(a)["id"], "tool": "search", "enabled": False}))
    converge(a, b)
    for platform in (a, b):
        assert flags_of(server_on(platform)) == {"search": (False, False), "fetch": (True, True)}
    assert server_on(a)["authorization"] == "Bearer tok-from-a"
    assert server_on(b)["authorization"] == "Bearer tok-b-for-same"
    assert server_on(a, other)["authorization"] == ""  # arrived without B's header: typed on each machine
    assert server_on(b, other)["authorization"] == "Bearer tok-from-b"
    for text in dav.files.values():
        assert "tok-" not in text


@pytest.mark.parametrize(
    ("on_a", "on_b", "expected"),
    [
        ("remove", "none", None),
        ("remove", "tick", {"search": (True, False), "fetch": (True, True)}),  # a change beats a removal
        ("tick", "remove", {"search": (True, False), "fetch": (True, True)}),
        ("tick", "untick", {"search": (False, False), "fetch": (True, False)}),  # both: the last to sync
    ],
)
def test_each_pair_of_server_changes_converges(on_a, on_b, expected):
    _, a, b = two_devices(lambda a: add_server(a, "Bearer tok-a"))
    for platform, operation in ((a, on_a), (b, on_b)):
        sid = server_on(platform)["id"]
        if operation == "remove":
            run(servers.handle_remove(platform, {"id": sid}))
        elif operation == "tick":
            run(servers.handle_set(platform, {"id": sid, "tool": "fetch", "alwaysAllow": True}))
        elif operation == "untick":
            run(servers.handle_set(platform, {"id": sid, "tool": "search", "enabled": False}))
    converge(a, b)
    for platform in (a, b):
        server = server_on(platform)
        assert (server and flags_of(server)) == expected if expected else server is None
    if expected is not None:
        # B got it without A's header; A keeps its own, unless it removed the server meanwhile.
        assert server_on(a)["authorization"] == ("" if on_a == "remove" else "Bearer tok-a")
        assert server_on(b)["authorization"] == ""


def test_prompts_or_servers_this_machine_cannot_read_change_nothing_here():
    from margin.sync import settings as sync_settings

    a = device(FakeDav())
    save_prompts(a, [{"name": "Mine", "text": "kept"}])
    add_server(a, "Bearer tok-a")
    before = a.local.snapshot()
    here = run(sync_settings.read_synced(a))
    seen = sync_settings.digest(here)
    too_long = {"id": "p_x", "name": "Long", "text": "x" * (prompts.TEXT_MAX_CHARS + 1), "editedAt": 1}
    assert not run(sync_settings.apply(a, {**here, "prompts": [too_long]}, seen))
    assert not run(sync_settings.apply(a, {**here, "prompts": [], "activeProviderId": 7}, seen))
    assert sync_settings.merge({}, here, {"prompts": "not a list"}, "pull") is None
    assert a.local.snapshot() == before
    # A server list that is not one reads as none arriving: this machine's servers stay.
    merged = sync_settings.merge({}, here, {**here, "mcpServers": [3, {"url": 5}]}, "pull")
    assert merged is not None and merged["mcpServers"] == here["mcpServers"]
