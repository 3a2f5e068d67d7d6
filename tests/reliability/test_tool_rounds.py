"""Corrupt `toolRounds` (the model's code runs stored with an answer, py/margin/sandbox/tool_loop.py):
an answer in the open conversation and in a saved session holding what no turn wrote.

Each case plants one corruption (the stored-values corpus, plus rounds that are almost right:
a grown call, an unknown outcome, a run of another shape, too many rounds) as the `toolRounds`
of an answer, then runs the everyday actions and a turn with the tool offered, whose request
replays the history. No action may fail as "internal", the request must go out, and nothing
stored is lost (a field the reader drops is parked with the raw history before the next write).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.sandbox import tool_loop

from .ledger import serialized, snapshot
from .profiles import CORPUS, PROVIDER, SAVE_REWRITES, corrupted, internal_failures, save_as_s1

GOOD_CALL = {
    "id": "c1",
    "name": "run_python",
    "arguments": '{"code": "print(1)"}',
    "code": "print(1)",
    "outcome": "declined",
    "run": None,
    "note": "",
}
ALMOST = {
    "grown_call": [{"text": "", "calls": [{**GOOD_CALL, "secret": "x"}]}],
    "unknown_outcome": [{"text": "", "calls": [{**GOOD_CALL, "outcome": "maybe"}]}],
    "run_of_another_shape": [
        {"text": "", "calls": [{**GOOD_CALL, "outcome": "ran", "run": {"status": "ok"}}]}
    ],
    "no_calls": [{"text": "hi", "calls": []}],
    "too_many_rounds": [{"text": "", "calls": [GOOD_CALL]}] * (tool_loop.MAX_CALLS + 2),
    "text_not_text": [{"text": 5, "calls": [GOOD_CALL]}],
}
ACTIONS = [
    ("app.state", {}),
    ("session.open", {"id": "s1"}),
    ("session.export", {"id": "s1", "format": "markdown"}),
    ("session.export", {"id": "s1", "format": "json"}),
    ("session.new", {}),
    ("session.list", {}),
]


def corruption(name: str):
    return ALMOST[name] if name in ALMOST else corrupted(name)


def answer(rounds):
    return {"role": "assistant", "content": "kept", "createdAt": 2, "toolRounds": rounds}


def sse(item):
    return f"data: {json.dumps(item)}\n\n"


def reply():
    pieces = [{"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}]
    return ScriptedResponse(chunks=[sse(p) for p in pieces] + ["data: [DONE]\n\n"])


def users_profile(rounds):
    transport = ScriptedTransport([reply()])
    platform = memory_platform(
        {"providers": [PROVIDER], "activeProviderId": "p1", "runPython": "auto"}, transport
    )
    run = asyncio.run
    saved = [{"role": "user", "content": "the saved chat", "createdAt": 1}, answer(rounds)]
    save_as_s1(platform, saved)
    run(
        platform.local.set(
            {"history": [{"role": "user", "content": "the open chat", "createdAt": 3}, answer(rounds)]}
        )
    )
    return platform, transport


NAMES = [*CORPUS["values"], *ALMOST]


def stored(platform) -> dict[str, str]:
    """The ledger's snapshot, a saved session's body by its records: saving it again (New session
    saves the open one back) changes only its `savedAt`, the time of the user's own save."""
    values = snapshot(platform)
    for key, body in platform.local.snapshot().items():
        if key.startswith("session_") and isinstance(body, dict):
            values[f"local:{key}"] = serialized(body.get("history"))
    return values


@pytest.mark.parametrize("name", NAMES)
def test_corrupt_tool_rounds_reach_no_crash_and_lose_nothing(name, ledger):
    platform, transport = users_profile(corruption(name))
    before = stored(platform)
    internal = internal_failures(platform, "and now?", ACTIONS)
    assert not internal, f"failed as internal: {internal}"
    assert transport.requests, "the turn sent no request"
    ledger.settle(before, stored(platform), replaced=SAVE_REWRITES)
