"""The message API: routes resolve, one envelope, trust tiers."""

import json

import pytest
from helpers import run
from platform_memory import memory_platform

from margin.app import api
from margin.app.worker import Worker

SETTINGS = {
    "providers": [
        {
            "id": "p",
            "type": "openai",
            "name": "Local",
            "baseUrl": "http://localhost:11434/v1",
            "apiKey": "",
            "model": "llama3.2",
        }
    ],
    "activeProviderId": "p",
}


@pytest.mark.parametrize("name", sorted(api.ROUTES))
def test_every_route_resolves_to_an_async_handler(name):
    import inspect

    handler = api.resolve(name)
    assert inspect.iscoroutinefunction(handler), name


def test_unknown_request_gets_a_clear_error_envelope():
    reply = run(api.dispatch(memory_platform(), "nope.nothing", {}))
    assert reply == {
        "ok": False,
        "error": {"code": "unknown_message", "message": "Margin does not know the request 'nope.nothing'."},
    }


def test_content_scripts_may_not_call_privileged_requests():
    reply = run(api.dispatch(memory_platform(), "options.get", {}, tier="content"))
    assert reply["ok"] is False and reply["error"]["code"] == "forbidden"


def test_payload_must_be_an_object():
    reply = run(api.dispatch(memory_platform(), "app.ping", ["x"]))
    assert reply["error"]["code"] == "bad_payload"


class Sink:
    """The bridge's post_turn_event, in memory: records (turn id, event); `open` says the port is."""

    def __init__(self):
        self.events = []
        self.open = True

    def __call__(self, turn_id, event):
        self.events.append((turn_id, event))
        return self.open


def test_ping_reports_the_boot_and_state_masks_keys():
    platform = memory_platform({"providers": [{"id": "p", "apiKey": "sk-secret-123456", "model": "m"}]})
    worker = Worker(platform, Sink())
    worker.record_boot(321, "snapshot")
    ping = json.loads(run(worker.dispatch_json("app.ping", "{}", "extension")))["value"]
    assert ping["python"].startswith("3.") and ping["bootMs"] == 321 and ping["bootedFrom"] == "snapshot"
    state = json.loads(run(worker.dispatch_json("app.state", "{}", "extension")))["value"]
    assert "sk-secret-123456" not in str(state)
    assert "history" not in state


def test_a_request_that_is_not_json_is_bad_payload():
    reply = json.loads(
        run(Worker(memory_platform(), Sink()).dispatch_json("app.state", "{nope", "extension"))
    )
    assert reply["ok"] is False and reply["error"]["code"] == "bad_payload"


def test_a_bug_in_a_handler_becomes_an_internal_error_not_a_crash():
    async def broken(platform, payload):
        raise ZeroDivisionError("boom")

    reply = run(api.dispatch(memory_platform(), "app.state", {}, handler=broken))
    assert reply["error"]["code"] == "internal"
    assert "conversation is saved" in reply["error"]["message"]


def test_a_stop_that_arrives_before_the_turn_runs_still_stops_it():
    # The worker may deliver "stop" before the turn's task has started (Python still booting):
    # the turn then stops before anything is stored or sent.
    platform = memory_platform(SETTINGS)
    sink = Sink()
    worker = Worker(platform, sink)
    worker.stop_turn("early")
    run(worker.run_turn_json("early", '{"action": "send", "text": "hi"}'))
    events = [event["event"] for turn_id, event in sink.events if turn_id == "early"]
    assert events == ["started", "stopped"]
    assert platform.transport.requests == []
    assert worker._early_stops == set() and worker._turn_stops == {}


def test_a_turn_whose_panel_is_gone_stops():
    platform = memory_platform(SETTINGS)
    sink = Sink()
    sink.open = False
    run(Worker(platform, sink).run_turn_json("t", '{"action": "send", "text": "hi"}'))
    assert [event["event"] for _, event in sink.events] == ["started", "stopped"]
    assert platform.transport.requests == []


def test_a_turn_start_that_is_not_json_ends_in_one_error_event():
    sink = Sink()
    run(Worker(memory_platform(SETTINGS), sink).run_turn_json("t", "{nope"))
    assert [event["event"] for _, event in sink.events] == ["error"]
    assert sink.events[0][1]["error"]["code"] == "bad_payload"


def test_every_worker_method_the_service_worker_calls_exists():
    import re
    from pathlib import Path

    extension = Path(__file__).parents[2] / "extension"
    # background.js is the entry; the handlers that call the worker live in extension/worker/.
    source = "".join(
        p.read_text() for p in [extension / "background.js", *sorted((extension / "worker").glob("*.js"))]
    )
    called = set(re.findall(r"\bworker\.(\w+)\(", source))
    assert called >= {"dispatch_json", "run_turn_json", "stop_turn", "record_boot"}
    assert all(callable(getattr(Worker, name, None)) for name in called), called
    assert "browser_worker()" in source
