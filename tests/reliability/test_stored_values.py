"""Corrupt stored values: every key Margin reads, holding what Margin did not write.

Each case plants one corruption (corpus/stored_values/corruptions.json) under one key of a
profile that also holds the user's real data, then runs the everyday actions through the worker's
routes: list, open, rename and export a session, New session, the options, the panel's state. No
action may fail as "internal" (the value reaches no crash: margin.stored_values parks what it
cannot read), and nothing stored is lost (parked values count as kept).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from margin import sessions
from margin.platform_memory import memory_platform
from margin.worker import Worker

from .ledger import snapshot

CORPUS = json.loads(
    (Path(__file__).parent / "corpus" / "stored_values" / "corruptions.json").read_text("utf-8")
)
PROVIDER = {
    "id": "p1",
    "type": "openai",
    "name": "Local",
    "baseUrl": "http://localhost:11434/v1",
    "apiKey": "",
    "model": "m",
}
ACTIONS = [
    ("app.state", {}),
    ("options.get", {}),
    ("session.list", {}),
    ("session.list", {"query": "saved chat"}),  # reads every digest by address
    ("session.open", {"id": "s1"}),
    ("session.rename", {"id": "s1", "name": "Renamed"}),
    ("session.export", {"id": "s1", "format": "markdown"}),
    ("session.export", {"id": "s1", "format": "json"}),
    ("session.new", {}),
    ("session.list", {}),
]


def corruption(name: str):
    value = CORPUS["values"][name]
    if value == "$deep":
        deep: list = []
        for _ in range(400):
            deep = [deep]
        return deep
    if value == "$huge":
        return "x" * 5_000_000
    return value


def users_profile():
    platform = memory_platform({"providers": [PROVIDER], "activeProviderId": "p1"})
    run = asyncio.run
    run(
        platform.local.set(
            {
                "history": [
                    {"role": "user", "content": "the saved chat"},
                    {"role": "assistant", "content": "kept"},
                ]
            }
        )
    )
    run(sessions.handle_new(platform, {}))
    entry = run(platform.local.get(["savedSessions"]))["savedSessions"][0]
    # Give the saved session the id the corpus names: entry, body and digest together.
    keys = [f"session_{entry['id']}", f"sessionDigest_{entry['id']}"]
    body, digest = (run(platform.local.get(keys))[k] for k in keys)
    run(platform.local.remove(keys))
    run(
        platform.local.set(
            {"savedSessions": [{**entry, "id": "s1"}], "session_s1": body, "sessionDigest_s1": digest}
        )
    )
    run(platform.local.set({"history": [{"role": "user", "content": "the open chat"}]}))
    return platform


CASES = [(key, name) for key in CORPUS["keys"] for name in CORPUS["values"]]


@pytest.mark.parametrize(("key", "name"), CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_a_corrupt_value_reaches_no_crash_and_loses_nothing(key, name, ledger):
    platform = users_profile()
    asyncio.run(platform.local.set({key: corruption(name)}))
    before = snapshot(platform)
    worker = Worker(platform, lambda *_: True)
    internal = []
    for action, payload in ACTIONS:
        reply = json.loads(asyncio.run(worker.dispatch_json(action, json.dumps(payload), "extension")))
        if not reply.get("ok") and reply["error"]["code"] == "internal":
            internal.append((action, reply["error"]["message"]))
    assert not internal, f"failed as internal: {internal}"
    # The rename is the user's own change of the index, and saving s1 again rewrites its digest (text
    # derived from its body, which is kept); everything else must still be stored.
    ledger.settle(
        before,
        snapshot(platform),
        replaced=["local:savedSessions", "local:historySessionId", "local:sessionDigest_s1"],
    )
