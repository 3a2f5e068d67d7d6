"""The message API: routes resolve, one envelope, trust tiers."""

import pytest

from margin import api
from margin.platform_memory import memory_platform

from helpers import run


@pytest.mark.parametrize("name", sorted(api.ROUTES))
def test_every_route_resolves_to_an_async_handler(name):
    import inspect

    handler = api.resolve(name)
    assert inspect.iscoroutinefunction(handler), name


def test_unknown_request_gets_a_clear_error_envelope():
    reply = run(api.dispatch(memory_platform(), "nope.nothing", {}))
    assert reply == {"ok": False, "error": {"code": "unknown_message",
                                            "message": "Margin does not know the request 'nope.nothing'."}}


def test_content_scripts_may_not_call_privileged_requests():
    reply = run(api.dispatch(memory_platform(), "options.get", {}, tier="content"))
    assert reply["ok"] is False and reply["error"]["code"] == "forbidden"


def test_payload_must_be_an_object():
    reply = run(api.dispatch(memory_platform(), "app.ping", ["x"]))
    assert reply["error"]["code"] == "bad_payload"


def test_ping_and_state():
    platform = memory_platform({"providers": [{"id": "p", "apiKey": "sk-secret-123456", "model": "m"}]})
    assert run(api.dispatch(platform, "app.ping", {}))["value"]["python"].startswith("3.")
    state = run(api.dispatch(platform, "app.state", {}))["value"]
    assert "sk-secret-123456" not in str(state)
    assert "history" not in state


def test_a_bug_in_a_handler_becomes_an_internal_error_not_a_crash(monkeypatch):
    async def broken(platform, payload):
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(api.ROUTES, "app.ping", "tests_broken:handler")
    import sys
    import types

    module = types.ModuleType("tests_broken")
    module.handler = broken
    monkeypatch.setitem(sys.modules, "tests_broken", module)
    reply = run(api.dispatch(memory_platform(), "app.ping", {}))
    assert reply["error"]["code"] == "internal"
    assert "conversation is saved" in reply["error"]["message"]


def test_a_stop_that_arrives_before_the_turn_runs_still_stops_it(monkeypatch):
    # The worker may deliver "stop" before the turn's task has started (Python still booting).
    from margin import chat

    seen = {}

    async def fake_turn(platform, start, emit, stop):
        seen["stopped_at_start"] = stop.is_set()

    monkeypatch.setattr(chat, "run_turn", fake_turn)
    monkeypatch.setattr(api, "_browser", lambda: memory_platform())
    import sys
    import types

    monkeypatch.setitem(sys.modules, "margin.platform", types.SimpleNamespace(post_turn_event=lambda *a: True))
    api.stop_turn("early")
    run(api.run_turn_json("early", '{"action": "send", "text": "hi"}'))
    assert seen == {"stopped_at_start": True}
    assert "early" not in api._early_stops and "early" not in api._turn_stops
