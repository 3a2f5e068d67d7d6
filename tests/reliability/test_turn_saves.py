"""Attack surface: the final save of a turn's answer (py/margin/turn/chat.py rule 11, margin.turn.unsaved_answers).

Each case streams a whole answer over a conversation the user already has, makes the final write
go wrong (a full storage, a crash at the write, a provider's non-finite usage, a cost that
overflows, a NaN already in the store), and asserts: the specific code; the answer text in the
final event when it was not stored, or stored (finite) when it was; nothing stored before is lost
(`ledger.settle`), and the answer is kept somewhere (history or chrome.storage.session).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.base import wire
from margin.turn import chat, unsaved_answers

from .ledger import snapshot

CORPUS = json.loads(
    (Path(__file__).parent / "corpus" / "turn_saves" / "non_finite_usage.json").read_text("utf-8")
)

PROVIDERS = {
    "openai": {"type": "openai", "baseUrl": "http://localhost:11434/v1", "model": "llama3.2"},
    "anthropic": {"type": "anthropic", "baseUrl": "https://api.anthropic.com/v1", "model": "claude"},
    "gemini": {"type": "gemini", "baseUrl": "https://generativelanguage.googleapis.com/v1beta", "model": "g"},
    "openai-responses": {"type": "openai-responses", "baseUrl": "https://api.openai.com/v1", "model": "m"},
}
EARLIER = [
    {"role": "user", "content": "An earlier question", "createdAt": 1},
    {"role": "assistant", "content": "An earlier answer the user keeps", "createdAt": 2},
]
ANSWER = "A finished answer that must not vanish."


def openai_answer(text, usage=None):
    def data(value):
        return f"data: {json.dumps(value)}\n\n"

    chunks = [
        data({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}),
        data({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
    if usage is not None:
        chunks.append(data({"choices": [], "usage": usage}))
    return ScriptedResponse(chunks=[*chunks, "data: [DONE]\n\n"])


def platform_for(kind, response, *, prices=None, history=None, **storage):
    provider = {"id": "p", "name": "P", "apiKey": "k", **PROVIDERS[kind]}
    if prices:
        provider["prices"] = prices
    local = {"providers": [provider], "activeProviderId": "p", "history": history or EARLIER}
    return memory_platform(local, ScriptedTransport([response]), **storage)


def run_turn(platform, start=None):
    events = []
    start = start or {"action": "send", "text": "And now?", "images": []}
    asyncio.run(asyncio.wait_for(chat.run_turn(platform, start, events.append, asyncio.Event()), 5))
    return events


def settle_turn(ledger, before, platform, earlier=EARLIER):
    """The history is meant to change (the question is added): its earlier records must stay."""
    history = platform.local.snapshot()["history"]
    assert history[: len(earlier)] == earlier, "an earlier record was lost"
    ledger.settle(before, snapshot(platform), replaced=("local:history",))


def assert_kept_unsaved(events, platform, code, text):
    final = events[-1]
    assert final["event"] == "error" and final["error"]["code"] == code, final
    assert final["unsaved"]["answer"]["content"] == text
    assert [e["answer"]["content"] for e in platform.session.snapshot()["unsavedAnswers"]] == [text]
    assert all(r["role"] != "assistant" or r["content"] != text for r in platform.local.snapshot()["history"])


def test_a_full_storage_at_the_final_write(ledger):
    platform = platform_for("openai", openai_answer(ANSWER * 20), quota_bytes=1200)
    before = snapshot(platform)
    events = run_turn(platform)
    assert_kept_unsaved(events, platform, "storage_full", ANSWER * 20)
    settle_turn(ledger, before, platform)


def test_a_crash_at_the_final_write(ledger):
    platform = platform_for("openai", openai_answer(ANSWER), fail_after_writes=1)
    before = snapshot(platform)
    events = run_turn(platform)
    assert_kept_unsaved(events, platform, "storage_failed", ANSWER)
    platform.local.revive()
    settle_turn(ledger, before, platform)
    # The next process saves it on "Retry save", once.
    assert asyncio.run(unsaved_answers.save(platform, events[-1]["unsaved"]))["already"] is False
    assert platform.local.snapshot()["history"][-1]["content"] == ANSWER
    assert asyncio.run(unsaved_answers.save(platform, events[-1]["unsaved"]))["already"] is True


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_non_finite_usage_of_a_provider_is_dropped_and_the_answer_stored(ledger, case):
    spec = CORPUS[case]
    platform = platform_for(spec["provider"], ScriptedResponse(chunks=spec["body"]))
    before = snapshot(platform)
    events = run_turn(platform)
    assert events[-1] == {"event": "done"}, events[-1]
    stored = platform.local.snapshot()["history"][-1]
    assert stored["content"] == spec["answer"]
    wire.dumps(platform.local.snapshot())  # what JSON.parse can read back
    settle_turn(ledger, before, platform)


def test_a_cost_that_is_not_finite_is_dropped_and_the_answer_stored(ledger):
    usage = {"prompt_tokens": 9 * 10**15, "completion_tokens": 9 * 10**15}
    platform = platform_for("openai", openai_answer(ANSWER, usage), prices={"input": 1e308, "output": 1e308})
    before = snapshot(platform)
    events = run_turn(platform)
    assert events[-1] == {"event": "done"}
    stored = platform.local.snapshot()["history"][-1]
    assert stored["content"] == ANSWER and "cost" not in stored
    settle_turn(ledger, before, platform)


def test_a_nan_already_stored_is_not_finite_number_and_the_answer_comes_back(ledger):
    history = [*EARLIER, {"role": "user", "content": "Unanswered", "createdAt": 3, "weight": float("nan")}]
    platform = platform_for("openai", openai_answer(ANSWER), history=history)
    before = snapshot(platform)
    events = run_turn(platform, {"action": "regenerate"})
    assert_kept_unsaved(events, platform, "not_finite_number", ANSWER)
    assert "history[2].weight" in events[-1]["error"]["message"]
    settle_turn(ledger, before, platform)


def test_both_areas_refusing_still_hand_the_answer_back(ledger):
    platform = platform_for("openai", openai_answer(ANSWER), fail_after_writes=1)
    platform.session.fail_after_writes = 0
    before = snapshot(platform)
    events = run_turn(platform)
    final = events[-1]
    assert final["error"]["code"] == "storage_failed" and final["unsaved"]["answer"]["content"] == ANSWER
    platform.local.revive()
    platform.session.revive()
    settle_turn(ledger, before, platform)
