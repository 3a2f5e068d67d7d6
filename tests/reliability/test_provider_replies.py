"""Attack surface: what a provider sends back (issue 11, findings 7 and 8): malformed event
streams, error bodies and model lists, for each of the four wire protocols.

Each case is a file of corpus/provider_replies/<provider type>/: the reply (`status`, `headers`,
`body` chunks; `{"repeat": text, "times": n}` stands for a long run, sent in 64 KiB reads) and what
must come of it (`expect`). A turn case runs through the worker's real turn entry point
(`Worker.run_turn_json`) over platform_memory's ScriptedTransport and asserts:
1. the one terminal event is the specific error code (never "internal"), with its sentence;
2. text that had arrived is stored as the answer, marked incomplete (`partial`), and nothing of it
   is lost; with no text, no answer is stored;
3. the conversation stored before the turn is all still there (`ledger.settle`, per record).
A model-list case runs `provider.models` through the worker's dispatch and asserts the sentence.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.app.worker import Worker
from margin.storage.history import user_record

from .ledger import serialized, snapshot

CORPUS = Path(__file__).parent / "corpus" / "provider_replies"
CASES = sorted(CORPUS.glob("*/*.json"))
READ = 64 * 1024

PROVIDERS = {
    "openai": {"baseUrl": "http://localhost:11434/v1", "model": "llama3.2"},
    "anthropic": {"baseUrl": "https://api.anthropic.com/v1", "model": "claude-sonnet-4-5", "apiKey": "k"},
    "gemini": {"baseUrl": "https://generativelanguage.googleapis.com/v1beta", "model": "gemini-2.5-flash"},
    "openai-responses": {"baseUrl": "https://api.openai.com/v1", "model": "gpt-5", "apiKey": "k"},
}
OLD_CONVERSATION = [
    user_record("What is a river delta?", createdAt=1_767_225_600_000).to_json(),
    {"role": "assistant", "content": "A landform at a river's mouth.", "createdAt": 1_767_225_601_000},
]


def provider_of(kind: str) -> dict[str, Any]:
    return {"id": "p", "type": kind, "name": kind, "apiKey": "", **PROVIDERS[kind]}


def chunks_of(body: list[Any]) -> list[str]:
    out: list[str] = []
    for part in body:
        if isinstance(part, str):
            out.append(part)
            continue
        text = part["repeat"] * part["times"]
        out.extend(text[i : i + READ] for i in range(0, len(text), READ))
    return out


def response_of(case: dict[str, Any]) -> ScriptedResponse:
    headers = case.get("headers", {"content-type": "text/event-stream"})
    return ScriptedResponse(status=case.get("status", 200), chunks=chunks_of(case["body"]), headers=headers)


def records_snapshot(platform: Any) -> dict[str, str]:
    """`snapshot`, with the history split into its records: the turn is meant to append to it,
    so each old record must survive, not the list as it was."""
    out = snapshot(platform)
    history = json.loads(out.pop("local:history", "[]"))
    for index, record in enumerate(history):
        out[f"local:history[{index}]"] = serialized(record)
    return out


def run_turn(platform: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []

    def post(turn_id: str, event: dict[str, Any]) -> bool:
        events.append(event)
        return True

    start = json.dumps({"action": "send", "text": "Tell me more.", "images": []})
    asyncio.run(asyncio.wait_for(Worker(platform, post).run_turn_json("t1", start), 30))
    return events


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_a_malformed_reply_gets_its_own_error_and_loses_nothing(path: Path, ledger: Any) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    expect = case["expect"]
    provider = provider_of(path.parent.name)
    transport = ScriptedTransport([response_of(case)])
    platform = memory_platform(
        {"providers": [provider], "activeProviderId": "p", "history": OLD_CONVERSATION}, transport
    )
    before = records_snapshot(platform)

    if case["route"] == "models":
        worker = Worker(platform, lambda *_: True)
        reply = json.loads(
            asyncio.run(
                worker.dispatch_json("provider.models", json.dumps({"provider": provider}), "extension")
            )
        )
        assert reply["ok"], reply
        assert reply["value"]["models"] == []
        assert expect["says"] in reply["value"]["message"], reply["value"]["message"]
        ledger.settle(before, records_snapshot(platform))
        return

    events = run_turn(platform)
    history = platform.local.snapshot()["history"]
    assert history[: len(OLD_CONVERSATION)] == OLD_CONVERSATION
    assert history[len(OLD_CONVERSATION)]["content"] == "Tell me more."
    terminal = events[-1]
    if "event" in expect:  # a reply that is odd but whole: the answer is stored as it is
        assert terminal == {"event": expect["event"]}, terminal
        assert history[-1]["content"] == expect["answer"]
        assert "incomplete" not in history[-1]
    else:
        assert terminal["event"] == "error", events
        error = terminal["error"]
        assert error["code"] == expect["code"], error
        assert error["code"] != "internal"
        assert expect.get("says", "") in error["message"], error["message"]
        partial = expect.get("partial")
        if "partial_bytes" in expect:
            partial = "".join(e["text"] for e in events if e["event"] == "delta")
            assert len(partial.encode("utf-8")) == expect["partial_bytes"]
        streamed = "".join(e["text"] for e in events if e["event"] == "delta")
        if partial:
            answer = history[-1]
            assert answer["role"] == "assistant" and answer.get("incomplete") is True
            assert answer["content"] == partial == streamed
        else:
            assert history[-1]["role"] == "user", "no answer is stored when no text arrived"
            assert streamed == ""
    ledger.settle(before, records_snapshot(platform))
