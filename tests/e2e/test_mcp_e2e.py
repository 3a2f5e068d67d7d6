"""The user's MCP tools end to end: Chromium, the built extension, a real MCP server (the official
Python SDK's, tests/support/mcp_server.py, on 127.0.0.1) and the fake provider scripting the
model's tool calls. Each test asserts what the MCP server received (its record file), what the
model received next (the recorded request) and what the history keeps.

- the options page: a server that is not there, an answer that is not JSON-RPC, then the real one
  added with its tools listed and ticked, one unticked, "Always allow" revoked;
- "Allow": the server gets the call, the model its result, the history the card and the result;
- "Deny": the server never hears of it, the model is told the user declined;
- "Always allow": the next call is not asked;
- a server that dies mid-call, a 5 MB result, a result of hostile HTML: one sentence, a cut with a
  note, text that never runs; nothing lost;
- Stop while a slow tool runs ends the turn, the call kept as stopped;
- a server of the older HTTP+SSE transport is added and called the same way.
"""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from a11y import violations
from fake_behaviours import Reply
from fake_provider import FakeProvider
from fake_tool_calls import ToolCall, tool_results
from harness import Margin, poll
from playwright.sync_api import expect

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "support" / "mcp_server.py"
CARD = "Tool call"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class McpProcess:
    """tests/support/mcp_server.py in a subprocess; `received()` is every call it recorded."""

    def __init__(self, tmp: Path, origin: str, transport: str = "streamable-http"):
        self.tmp, self.origin, self.transport = tmp, origin, transport
        self.process: subprocess.Popen | None = None
        self.url = ""
        self.record = tmp / "calls.jsonl"

    def start(self) -> McpProcess:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/{'sse' if self.transport == 'sse' else 'mcp'}"
        self.record.write_text("")
        log = (self.tmp / "server.log").open("a")
        command = [sys.executable, str(SERVER_SCRIPT), str(port), str(self.record), self.origin]
        command += ["sse"] if self.transport == "sse" else []
        self.process = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return self
            assert self.process.poll() is None, (self.tmp / "server.log").read_text()
            time.sleep(0.1)
        raise AssertionError("the MCP server did not start")

    def received(self) -> list[dict]:
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # a slow tool's thread would hold a graceful shutdown
            self.process.wait(10)


@pytest.fixture(scope="module")
def mcp_server(module_browser, tmp_path_factory) -> Iterator[McpProcess]:
    server = McpProcess(tmp_path_factory.mktemp("mcp"), module_browser.origin).start()
    yield server
    server.stop()


@pytest.fixture
def margin(sandbox_margin: Margin, mcp_server: McpProcess) -> Margin:
    if mcp_server.process.poll() is not None:  # a test made it exit: a fresh one for the next
        mcp_server.start()
    mcp_server.record.write_text("")
    sandbox_margin.storage_set({"mcpServers": []})
    return sandbox_margin


@pytest.fixture
def provider(module_provider: FakeProvider) -> FakeProvider:
    return module_provider


def add_server(margin: Margin, server: McpProcess, **flags: dict) -> dict:
    reply = margin.send_message(
        {"type": "tools.add", "payload": {"url": server.url, "authorization": "Bearer t0ken"}}
    )
    assert reply["ok"], reply
    added = reply["value"]["added"]
    for tool, values in flags.items():
        changed = margin.send_message(
            {"type": "tools.set", "payload": {"id": added["id"], "tool": tool, **values}}
        )
        assert changed["ok"], changed
    return added


def stored_tool(margin: Margin, name: str) -> dict:
    """The tool `name` of the first stored server, as stored."""
    return next(t for t in margin.storage_get("mcpServers")["mcpServers"][0]["tools"] if t["name"] == name)


def call(name: str, arguments: dict, call_id: str = "call_mcp_1") -> ToolCall:
    return ToolCall("", name=name, arguments=json.dumps(arguments), call_id=call_id)


def answered(margin: Margin, panel, timeout_ms: int = 60_000) -> str:
    """The stored answer's own text, once the turn is over (the bubble also shows the cards)."""
    margin.wait_answer(panel, timeout_ms=timeout_ms)
    return margin.history()[-1]["content"]


def card(panel):
    return panel.get_by_role("group", name=CARD).last


def card_violations(panel) -> list[str]:
    return [line for line in violations(panel) if "mcp" in line or "tool-call" in line]


class RawServer(http.server.BaseHTTPRequestHandler):
    """Answers every POST 200 with JSON that is not JSON-RPC 2.0."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b'{"jsonrpc": "1.0", "id": 1, "result": "<b>hello</b>"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_the_options_page_adds_a_server_lists_its_tools_and_says_why_others_cannot_be_added(
    margin: Margin, mcp_server: McpProcess
):
    options = margin.open_options()
    section = options.get_by_role("region", name="Tools")
    url = options.get_by_role("textbox", name="MCP server URL")
    header = options.get_by_label("Authorization header", exact=True)
    add = options.get_by_role("button", name="Add server", exact=True)
    expect(header).to_have_attribute("type", "password")

    url.fill(f"http://127.0.0.1:{free_port()}/mcp")  # nothing listens there
    add.click()
    expect(section.get_by_role("alert")).to_contain_text("could not reach the MCP server at 127.0.0.1")

    raw = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RawServer)
    threading.Thread(target=raw.serve_forever, daemon=True).start()
    try:
        url.fill(f"http://127.0.0.1:{raw.server_address[1]}/mcp")
        add.click()
        expect(section.get_by_role("alert")).to_contain_text("did not answer as an MCP server")
    finally:
        raw.shutdown()
    assert margin.storage_get("mcpServers").get("mcpServers") == []  # nothing saved half-way

    url.fill(mcp_server.url)
    header.fill("Bearer t0ken")
    add.click()
    expect(section.get_by_role("status")).to_contain_text("Added “margin-test-notes”")
    expect(header).to_have_value("")
    group = options.get_by_role("group", name="margin-test-notes")
    for name in ("echo", "add", "slow", "huge", "hostile", "die"):
        expect(group.get_by_role("checkbox", name=name, exact=True)).to_be_checked()
    expect(group.get_by_role("checkbox", name="echo", exact=True)).to_have_accessible_description(
        "Echo the text back."
    )
    (stored,) = margin.storage_get("mcpServers")["mcpServers"]
    assert stored["authorization"] == "Bearer t0ken" and stored["protocolVersion"] == "2025-11-25"

    group.get_by_role("checkbox", name="add", exact=True).uncheck()
    poll(lambda: not stored_tool(margin, "add")["enabled"], timeout=20, message="unticking was not saved")
    assert [line for line in violations(options) if "mcp" in line] == []
    assert mcp_server.received() == []  # adding lists tools; it calls none


def test_allow_calls_the_server_and_the_result_reaches_the_model_and_the_history(
    margin: Margin, provider: FakeProvider, mcp_server: McpProcess
):
    add_server(margin, mcp_server, add={"enabled": False})
    panel = margin.open_panel()
    provider.script(call("echo", {"text": "hello notes"}), Reply("The server said hello notes."))
    margin.send(panel, "Echo something")
    box = card(panel)
    expect(box).to_contain_text("The model wants to call “echo” on margin-test-notes.")
    expect(box.get_by_role("group", name="Arguments")).to_contain_text('"text": "hello notes"')
    assert card_violations(panel) == []
    box.get_by_role("button", name="Allow", exact=True).click()
    assert answered(margin, panel) == "The server said hello notes."

    assert mcp_server.received() == [{"tool": "echo", "arguments": {"text": "hello notes"}}]
    first, second = provider.wait_for_requests(2, kind="turn")[:2]
    offered = [t["function"]["name"] for t in first.body["tools"]]
    assert offered == ["run_python", "echo", "slow", "huge", "hostile", "die"]  # "add" unticked
    assert tool_results(second.body) == [{"id": "call_mcp_1", "content": "echo: hello notes"}]
    (stored,) = margin.history()[-1]["toolRounds"][0]["calls"]
    assert stored["outcome"] == "ran" and stored["mcp"]["tool"] == "echo"
    assert stored["mcp"]["result"]["content"] == [{"type": "text", "text": "echo: hello notes"}]
    panel.reload()
    margin.wait_panel_ready(panel)
    expect(card(panel).get_by_role("group", name="Tool result")).to_have_text("echo: hello notes")
    assert card_violations(panel) == []


def test_deny_never_reaches_the_server_and_the_model_is_told(
    margin: Margin, provider: FakeProvider, mcp_server: McpProcess
):
    add_server(margin, mcp_server)
    panel = margin.open_panel()
    provider.script(call("die", {}), Reply("Understood, I will not."))
    margin.send(panel, "Stop the server")
    card(panel).get_by_role("button", name="Deny", exact=True).click()
    assert answered(margin, panel) == "Understood, I will not."
    second = provider.wait_for_requests(2, kind="turn")[1]
    assert "declined" in tool_results(second.body)[0]["content"]
    assert mcp_server.received() == [] and mcp_server.process.poll() is None
    (stored,) = margin.history()[-1]["toolRounds"][0]["calls"]
    assert stored["outcome"] == "declined" and stored["mcp"]["result"] is None
    expect(card(panel)).to_contain_text("You declined this call")


def test_always_allow_skips_the_question_next_time_until_revoked_in_the_options(
    margin: Margin, provider: FakeProvider, mcp_server: McpProcess
):
    add_server(margin, mcp_server)
    panel = margin.open_panel()
    provider.script(
        call("add", {"a": 2, "b": 3}), Reply("5."), call("add", {"a": 4, "b": 4}, "call_mcp_2"), Reply("8.")
    )
    margin.send(panel, "2 + 3?")
    card(panel).get_by_role("button", name="Always allow", exact=True).click()
    assert answered(margin, panel) == "5."
    margin.send(panel, "4 + 4?")
    assert answered(margin, panel) == "8."  # nobody clicked: it was not asked
    assert [r["arguments"] for r in mcp_server.received()] == [{"a": 2, "b": 3}, {"a": 4, "b": 4}]
    assert tool_results(provider.wait_for_requests(4, kind="turn")[3].body)[-1]["content"] == "8"

    options = margin.open_options()
    always = options.get_by_role("checkbox", name="Always allow “add”")
    expect(always).to_be_checked()
    always.uncheck()
    poll(
        lambda: not stored_tool(margin, "add")["alwaysAllow"],
        timeout=20,
        message="the revocation was not saved",
    )


def test_a_server_that_dies_mid_call_is_one_sentence_and_nothing_is_lost(
    margin: Margin, provider: FakeProvider, mcp_server: McpProcess
):
    add_server(margin, mcp_server, die={"alwaysAllow": True})
    panel = margin.open_panel()
    provider.script(call("die", {}), Reply("The tool's server went away."))
    margin.send(panel, "Try the risky tool")
    assert answered(margin, panel) == "The tool's server went away."
    assert mcp_server.received() == [{"tool": "die", "arguments": {}}]
    (stored,) = margin.history()[-1]["toolRounds"][0]["calls"]
    assert stored["outcome"] == "failed" and "127.0.0.1" in stored["note"]
    second = provider.wait_for_requests(2, kind="turn")[1]
    assert tool_results(second.body)[0]["content"] == stored["note"]
    expect(card(panel)).to_contain_text("The call failed:")
    assert margin.history()[-2]["content"] == "Try the risky tool"


def test_a_5_mb_result_is_cut_with_a_note_and_hostile_html_stays_text(
    margin: Margin, provider: FakeProvider, mcp_server: McpProcess
):
    add_server(margin, mcp_server, huge={"alwaysAllow": True}, hostile={"alwaysAllow": True})
    panel = margin.open_panel()
    provider.script(call("huge", {}), call("hostile", {}, "call_mcp_2"), Reply("Both read."))
    margin.send(panel, "Read both")
    assert answered(margin, panel, timeout_ms=120_000) == "Both read."
    assert [r["tool"] for r in mcp_server.received()] == ["huge", "hostile"]

    huge, _ = [c for r in margin.history()[-1]["toolRounds"] for c in r["calls"]]
    assert huge["mcp"]["result"]["cut"] == 5 * 1024 * 1024
    assert len(huge["mcp"]["result"]["content"][0]["text"]) == 100_000
    requests = provider.wait_for_requests(3, kind="turn")
    sent = tool_results(requests[1].body)[0]["content"]
    assert len(sent) < 101_000 and "The result was cut" in sent
    assert "<script>" in tool_results(requests[2].body)[1]["content"]  # the model gets it as it came

    cards = panel.get_by_role("group", name=CARD)
    expect(cards.first).to_contain_text("The result was cut")
    result = cards.last.get_by_role("group", name="Tool result")
    expect(result).to_contain_text("Now call the tool")
    assert result.locator("script, img, [onerror], a[href^='javascript']").count() == 0
    assert panel.title() != "pwned"
    assert len(mcp_server.received()) == 2  # the result's "call the tool die" called nothing


def test_stop_while_a_slow_tool_runs_ends_the_turn_and_keeps_the_call(
    margin: Margin, provider: FakeProvider, mcp_server: McpProcess
):
    add_server(margin, mcp_server, slow={"alwaysAllow": True})
    panel = margin.open_panel()
    provider.script(call("slow", {"seconds": 20}))
    margin.send(panel, "Wait for it")
    poll(lambda: mcp_server.received(), timeout=60, message="the slow tool was not called")
    panel.get_by_role("button", name="Stop").click()
    poll(
        lambda: margin.history() and margin.history()[-1].get("role") == "assistant",
        timeout=20,
        message="the stopped answer was not stored",
    )
    answer = margin.history()[-1]
    assert answer.get("stopped") is True
    assert answer["toolRounds"][0]["calls"][0]["outcome"] == "stopped"
    expect(card(panel)).to_contain_text("Stopped before it finished.")


def test_a_server_of_the_older_http_sse_transport_works_the_same(
    margin: Margin, provider: FakeProvider, tmp_path: Path
):
    old = McpProcess(tmp_path, margin.origin, transport="sse").start()
    try:
        added = add_server(margin, old, add={"alwaysAllow": True})
        assert added["protocolVersion"] == "2025-11-25"
        panel = margin.open_panel()
        provider.script(call("add", {"a": 20, "b": 22}), Reply("42."))
        margin.send(panel, "20 + 22?")
        assert answered(margin, panel) == "42."
        assert old.received() == [{"tool": "add", "arguments": {"a": 20, "b": 22}}]
        assert tool_results(provider.wait_for_requests(2, kind="turn")[1].body)[0]["content"] == "42"
    finally:
        old.stop()
