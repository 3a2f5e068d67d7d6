"""Attack surface: where a key and a conversation may go, and in which order requests land.

- An API key for a plain-http Base URL is refused for every host form that is not this machine
  (corpus/policy/key_hosts.json), both when saved and when a request would leave (a provider
  stored earlier or restored from a backup); confirmed, or keyless, it goes.
- A redirect is never followed: the target is never requested, the error names it.
- Options saves, activations, what a turn learns and a turn's read of the options run in the
  order they arrived, on a store whose every call yields (as chrome.storage's do).
Each case asserts the specific outcome and settles the ledger (no stored byte lost).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from platform_memory import MemoryStorageArea, MemoryTabs, ScriptedResponse, ScriptedTransport

from margin.app.worker import Worker
from margin.platform.ports import Platform
from margin.settings import options

from .ledger import snapshot

CORPUS = json.loads((Path(__file__).parent / "corpus" / "policy" / "key_hosts.json").read_text())["cases"]
KEY = "sk-secret-0123456789"
STORED_HISTORY = [
    {"role": "user", "content": "An old question"},
    {"role": "assistant", "content": "An old answer"},
]
CHECKBOX = "“Send the API key over plain HTTP”"


class YieldingArea(MemoryStorageArea):
    """chrome.storage is asynchronous: every call lets other tasks run before it acts."""

    async def get(self, keys: list[str]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return await super().get(keys)

    async def set(self, items: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        await super().set(items)

    async def remove(self, keys: list[str]) -> None:
        await asyncio.sleep(0)
        await super().remove(keys)


def provider(url: str, *, key: str = KEY, pid: str = "p", model: str = "m", **extra: Any) -> dict[str, Any]:
    return {
        "id": pid,
        "type": "openai",
        "name": "Box",
        "baseUrl": url,
        "apiKey": key,
        "model": model,
        **extra,
    }


def answer(text: str = "Hello") -> ScriptedResponse:
    events = [
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return ScriptedResponse(chunks=[f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"])


def platform_with(local: dict[str, Any], responses: list[Any] = ()) -> Platform:  # type: ignore[assignment]
    return Platform(
        local=YieldingArea({"history": STORED_HISTORY, **local}),
        session=YieldingArea(),
        transport=ScriptedTransport(list(responses)),
        tabs=MemoryTabs(),
    )


class Events:
    def __init__(self) -> None:
        self.by_port: dict[str, list[dict[str, Any]]] = {}

    def post(self, port: str, event: dict[str, Any]) -> bool:
        self.by_port.setdefault(port, []).append(event)
        return True

    def error(self, port: str) -> dict[str, Any]:
        (failed,) = [e for e in self.by_port[port] if e["event"] == "error"]
        return failed["error"]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 10))


async def dispatch(worker: Worker, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    return json.loads(await worker.dispatch_json(name, json.dumps(payload), "extension"))


def send_turn(worker: Worker, port: str, text: str) -> Any:
    return worker.run_turn_json(port, json.dumps({"action": "send", "text": text, "images": []}))


# -- keys over plain http -------------------------------------------------------------------------


@pytest.mark.parametrize("case", CORPUS, ids=[c["url"] for c in CORPUS])
def test_a_key_is_saved_for_a_host_only_when_it_is_safe(case, ledger):
    platform = platform_with({})
    worker = Worker(platform, Events().post)
    before = snapshot(platform)
    reply = run(dispatch(worker, "options.save", {"providers": [provider(case["url"])]}))
    if case["outcome"] == "refused":
        assert reply["error"]["code"] == "key_over_http"
        assert reply["error"]["message"] == (
            f"Provider 1 (“Box”): the API key would be sent over plain http:// to {case['host']}, where "
            f"anyone on the network in between can read it. Use https://, or tick {CHECKBOX} if you "
            "trust that network."
        )
        assert snapshot(platform) == before
    else:
        assert reply["ok"], reply
        assert platform.local.snapshot()["providers"][0]["apiKey"] == KEY
    ledger.settle(before, snapshot(platform))


@pytest.mark.parametrize("case", [c for c in CORPUS if c["outcome"] == "refused"], ids=lambda c: c["url"])
def test_a_stored_provider_with_an_exposed_key_sends_nothing(case, ledger):
    # As stored before this rule, or restored from a backup: the request is refused before it leaves.
    platform = platform_with({"providers": [provider(case["url"])], "activeProviderId": "p"}, [answer()])
    events = Events()
    worker = Worker(platform, events.post)
    before = snapshot(platform)
    run(send_turn(worker, "t", "Is my key safe?"))
    assert events.error("t") == {
        "code": "key_over_http",
        "message": f"Margin did not send your API key to {case['host']}: the Base URL is plain http://, "
        "where anyone on the network in between can read it. Use https:// in Margin's options, or "
        f"tick {CHECKBOX} for this provider.",
    }
    assert platform.transport.requests == []  # type: ignore[attr-defined]
    history = platform.local.snapshot()["history"]
    assert history[:2] == STORED_HISTORY and history[2]["content"] == "Is my key safe?"
    ledger.settle(before, snapshot(platform), replaced=["local:history"])


@pytest.mark.parametrize("name", ["provider.test", "provider.models"])
def test_the_options_form_tests_and_lists_without_sending_an_exposed_key(name, ledger):
    platform = platform_with({}, [answer()])
    worker = Worker(platform, Events().post)
    before = snapshot(platform)
    reply = run(dispatch(worker, name, {"provider": provider("http://10.0.0.5/v1")}))
    assert reply["ok"]
    said = reply["value"]["message"]
    assert said.startswith("Margin did not send your API key to 10.0.0.5: the Base URL is plain http://")
    assert platform.transport.requests == []  # type: ignore[attr-defined]
    ledger.settle(before, snapshot(platform))


@pytest.mark.parametrize(
    "stored",
    [
        provider("http://10.0.0.5:8080/v1", allowPlainHttpKey=True),  # the user ticked the box
        provider("http://192.168.1.20:11434/v1", key=""),  # Ollama on the LAN: no key to expose
        provider("http://192.168.1.20:11434/v1", key="   "),
    ],
    ids=["confirmed", "keyless", "blank-key"],
)
def test_a_confirmed_or_keyless_http_provider_is_saved_and_answered(stored, ledger):
    platform = platform_with({}, [answer("Fine")])
    events = Events()
    worker = Worker(platform, events.post)
    reply = run(dispatch(worker, "options.save", {"providers": [stored], "activeProviderId": "p"}))
    assert reply["ok"], reply
    assert reply["value"]["providers"][0].get("allowPlainHttpKey") is stored.get("allowPlainHttpKey")
    before = snapshot(platform)
    run(send_turn(worker, "t", "Hi"))
    assert [e["event"] for e in events.by_port["t"]] == ["started", "delta", "done"]
    (sent,) = platform.transport.requests  # type: ignore[attr-defined]
    assert sent.url == stored["baseUrl"] + "/chat/completions"
    ledger.settle(before, snapshot(platform), replaced=["local:history"])


def test_a_tick_that_is_not_exactly_true_confirms_nothing(ledger):
    platform = platform_with({})
    worker = Worker(platform, Events().post)
    before = snapshot(platform)
    for value in ("true", 1, "yes", [True], {"ok": True}):
        stored = provider("http://10.0.0.5/v1", allowPlainHttpKey=value)
        reply = run(dispatch(worker, "options.save", {"providers": [stored]}))
        assert reply["error"]["code"] == "key_over_http", value
    assert snapshot(platform) == before
    ledger.settle(before, snapshot(platform))


def test_a_base_url_with_a_broken_ipv6_address_is_a_sentence_not_a_crash(ledger):
    platform = platform_with({})
    worker = Worker(platform, Events().post)
    before = snapshot(platform)
    reply = run(dispatch(worker, "options.save", {"providers": [provider("http://[::1/v1")]}))
    assert reply["error"] == {
        "code": "invalid_options",
        "message": "Provider 1 (“Box”): the Base URL is not a web address (an IPv6 address goes in "
        "brackets: http://[::1]:8080/v1).",
    }
    ledger.settle(before, snapshot(platform))


# -- redirects --------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_its_target_never_requested(status, ledger):
    target = "https://collector.example.net/steal"
    redirect = ScriptedResponse(status=status, chunks=[], headers={"Location": target})
    platform = platform_with({"providers": [provider("https://api.example.com/v1")], "activeProviderId": "p"})
    platform.transport.queue = [redirect, answer("should never be asked for")]  # type: ignore[attr-defined]
    events = Events()
    worker = Worker(platform, events.post)
    before = snapshot(platform)
    run(send_turn(worker, "t", "Private question"))
    assert events.error("t") == {
        "code": "redirect_refused",
        "message": f"api.example.com answered with a redirect to {target}; Margin does not follow "
        "redirects with your conversation. Put the address it should reach in the Base URL (often "
        "https:// instead of http://, or a missing /v1).",
    }
    transport = platform.transport
    assert [r.url for r in transport.requests] == ["https://api.example.com/v1/chat/completions"]  # type: ignore[attr-defined]
    assert transport.redirects_refused == [target]  # type: ignore[attr-defined]
    assert platform.local.snapshot()["history"][-1]["content"] == "Private question"
    ledger.settle(before, snapshot(platform), replaced=["local:history"])


def test_a_redirect_whose_target_the_browser_hides_is_refused_in_the_same_words(ledger):
    # The browser's fetch (redirect: "manual") sees an opaque redirect: no Location to name.
    from margin.platform.ports import TransportError

    platform = platform_with(
        {"providers": [provider("https://api.example.com/v1")], "activeProviderId": "p"},
        [TransportError("redirect", "")],
    )
    worker = Worker(platform, Events().post)
    before = snapshot(platform)
    reply = run(dispatch(worker, "provider.test", {"provider": provider("https://api.example.com/v1")}))
    assert reply["value"] == {
        "ok": False,
        "message": "api.example.com answered with a redirect; Margin does not follow redirects with "
        "your conversation. Put the address it should reach in the Base URL (often https:// instead "
        "of http://, or a missing /v1).",
    }
    ledger.settle(before, snapshot(platform))


@pytest.mark.parametrize("status", [300, 304])
def test_a_3xx_without_a_location_is_not_taken_for_a_redirect(status, ledger):
    response = ScriptedResponse(status=status, chunks=[], headers={})
    platform = platform_with(
        {"providers": [provider("https://api.example.com/v1")], "activeProviderId": "p"}, [response]
    )
    events = Events()
    worker = Worker(platform, events.post)
    before = snapshot(platform)
    run(send_turn(worker, "t", "Hi"))
    assert events.error("t")["code"] != "redirect_refused"
    assert platform.transport.redirects_refused == []  # type: ignore[attr-defined]
    ledger.settle(before, snapshot(platform), replaced=["local:history"])


# -- arrival order ---------------------------------------------------------------------------------


async def in_arrival_order(*starts: Any) -> list[Any]:
    """Start each request's task in the order given (as background.js's inArrivalOrder does)."""
    tasks = [asyncio.ensure_future(start) for start in starts]
    return await asyncio.gather(*tasks)


def test_a_save_then_a_send_on_a_new_profile_answers_with_the_saved_provider(ledger):
    platform = platform_with({}, [answer("Saved provider here")])
    events = Events()
    worker = Worker(platform, events.post)
    before = snapshot(platform)
    saved = provider("https://api.example.com/v1", model="new-model")
    save_reply, _ = run(
        in_arrival_order(
            dispatch(worker, "options.save", {"providers": [saved], "activeProviderId": "p"}),
            send_turn(worker, "t", "First question"),
        )
    )
    assert save_reply["ok"]
    assert [e["event"] for e in events.by_port["t"]] == ["started", "delta", "done"]
    (sent,) = platform.transport.requests  # type: ignore[attr-defined]
    assert json.loads(sent.body)["model"] == "new-model"
    assert platform.local.snapshot()["history"][:2] == STORED_HISTORY  # the answer was appended
    ledger.settle(before, snapshot(platform), replaced=["local:history"])


def test_a_send_then_a_save_answers_with_the_provider_it_arrived_under(ledger):
    old = provider("https://api.example.com/v1", model="old-model")
    platform = platform_with({"providers": [old], "activeProviderId": "p"}, [answer()])
    events = Events()
    worker = Worker(platform, events.post)
    before = snapshot(platform)
    new = {**old, "model": "new-model"}
    run(
        in_arrival_order(
            send_turn(worker, "t", "Question"),
            dispatch(worker, "options.save", {"providers": [new], "activeProviderId": "p"}),
        )
    )
    (sent,) = platform.transport.requests  # type: ignore[attr-defined]
    assert json.loads(sent.body)["model"] == "old-model"
    assert platform.local.snapshot()["providers"][0]["model"] == "new-model"
    ledger.settle(before, snapshot(platform), replaced=["local:history", "local:providers"])


def test_concurrent_saves_and_activations_land_in_arrival_order(ledger):
    a, b = provider("https://a.example/v1", pid="a"), provider("https://b.example/v1", pid="b")
    platform = platform_with({"providers": [a], "activeProviderId": "a"})
    worker = Worker(platform, Events().post)
    before = snapshot(platform)
    replies = run(
        in_arrival_order(
            dispatch(worker, "options.save", {"providers": [a, b], "activeProviderId": "a"}),
            dispatch(worker, "options.activate", {"id": "b"}),
            dispatch(
                worker, "options.save", {"providers": [a, b], "activeProviderId": "b", "uiLanguage": "zh"}
            ),
            dispatch(worker, "options.activate", {"id": "a"}),
        )
    )
    assert [r["ok"] for r in replies] == [True, True, True, True], replies
    stored = platform.local.snapshot()
    assert stored["activeProviderId"] == "a" and stored["uiLanguage"] == "zh"
    assert [p["id"] for p in stored["providers"]] == ["a", "b"]
    ledger.settle(before, snapshot(platform), replaced=["local:providers", "local:activeProviderId"])


def test_what_a_turn_learns_does_not_undo_a_save_that_came_in_between(ledger):
    # supportsUsage: false is learned after the answer; a save meanwhile must survive it, and the
    # learned flag must survive the save (both are read-modify-writes of `providers`).
    p = provider("https://api.example.com/v1", model="m1")
    platform = platform_with({"providers": [p], "activeProviderId": "p"})
    worker = Worker(platform, Events().post)
    before = snapshot(platform)

    async def both() -> None:
        await in_arrival_order(
            options.mark_usage_unsupported(platform, "p"),
            dispatch(worker, "options.save", {"providers": [{**p, "model": "m2"}], "activeProviderId": "p"}),
        )

    run(both())
    (stored,) = platform.local.snapshot()["providers"]
    assert stored["model"] == "m2" and stored["supportsUsage"] is False
    ledger.settle(before, snapshot(platform), replaced=["local:providers"])


def test_a_refused_save_among_concurrent_requests_changes_nothing(ledger):
    p = provider("https://api.example.com/v1")
    platform = platform_with({"providers": [p], "activeProviderId": "p"}, [answer()])
    events = Events()
    worker = Worker(platform, events.post)
    before = snapshot(platform)
    refused, _ = run(
        in_arrival_order(
            dispatch(worker, "options.save", {"providers": [provider("http://10.0.0.5/v1")]}),
            send_turn(worker, "t", "Still works?"),
        )
    )
    assert refused["error"]["code"] == "key_over_http"
    assert [e["event"] for e in events.by_port["t"]] == ["started", "delta", "done"]
    assert platform.local.snapshot()["providers"] == [options.normalize_provider(p)]
    ledger.settle(before, snapshot(platform), replaced=["local:history"])


def test_no_provider_is_said_only_when_none_was_saved_before_the_send(ledger):
    platform = platform_with({}, [answer()])
    events = Events()
    worker = Worker(platform, events.post)
    before = snapshot(platform)
    run(
        in_arrival_order(
            send_turn(worker, "t", "Too early"),
            dispatch(worker, "options.save", {"providers": [provider("https://api.example.com/v1")]}),
        )
    )
    error = events.error("t")
    assert error["code"] == "no_provider" and error["message"] == options.NO_PROVIDER
    assert platform.transport.requests == []  # type: ignore[attr-defined]
    assert platform.local.snapshot()["history"] == STORED_HISTORY  # nothing new stored: the draft stays
    ledger.settle(before, snapshot(platform), replaced=["local:providers"])


def test_no_request_of_the_worker_follows_a_redirect_or_reads_what_a_page_names():
    # Everything that goes to a provider (the conversation, the key) refuses redirects: the seam
    # has no way to ask for one to be followed. And no module that reads a page opens the worker's
    # transport (which `<all_urls>` frees from CORS): a file a page names is read by the page
    # itself (docs/security.md).
    from margin.platform.ports import HttpRequest

    assert not any("redirect" in name for name in HttpRequest.__dataclass_fields__)
    package = Path(__file__).resolve().parents[2] / "py" / "margin"
    page_fetches = sorted(
        str(p.relative_to(package / "page"))
        for p in (package / "page").rglob("*.py")
        if "transport" in p.read_text()
    )
    # The one exception goes to the user's own provider, never to an address a page wrote.
    assert page_fetches == ["summaries.py"]
