"""The user's stored data the reliability cases start from, built through the real code paths,
and the corrupt values they plant: the stored-values corpus (`CORPUS`, decoded by `corrupted`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from margin.app.worker import Worker
from margin.sessions import actions as sessions
from margin.sessions.index import stored_entries

CORPUS = json.loads(
    (Path(__file__).parent / "corpus" / "stored_values" / "corruptions.json").read_text("utf-8")
)
# The provider every profile is set up with (nothing answers it but a scripted transport).
PROVIDER = {
    "id": "p1",
    "type": "openai",
    "name": "Local",
    "baseUrl": "http://localhost:11434/v1",
    "apiKey": "",
    "model": "m",
}


def corrupted(name: str) -> Any:
    """The corpus value `name`, with its two markers made real: "$deep" (a list nested 10,000
    deep) and "$huge" (5 MB of text)."""
    value = CORPUS["values"][name]
    if value == "$deep":
        deep: list = []
        for _ in range(10_000):
            deep = [deep]
        return deep
    if value == "$huge":
        return "x" * 5_000_000
    return value


def save_as_s1(platform: Any, saved: list[dict[str, Any]]) -> None:
    """Saves the conversation `saved` as a session (New session, as the user does), then gives it
    the id the corpus names, "s1": its entry, body and digest together."""
    run = asyncio.run
    run(platform.local.set({"history": saved}))
    run(sessions.handle_new(platform, {}))
    [entry] = stored_entries(platform.local.snapshot())
    keys = [f"session_{entry['id']}", f"sessionDigest_{entry['id']}"]
    body, digest = (run(platform.local.get(keys))[k] for k in keys)
    run(platform.local.remove([*keys, f"sessionEntry_{entry['id']}"]))
    run(
        platform.local.set(
            {
                "savedSessions": {"layout": 2, "ids": ["s1"]},
                "sessionEntry_s1": {**entry, "id": "s1"},
                "session_s1": body,
                "sessionDigest_s1": digest,
            }
        )
    )


# What a turn then New session rewrites of the saved session "s1": the index (header and entry),
# the open conversation's session id and the digest; every case passes them to the ledger.
SAVE_REWRITES = [
    "local:savedSessions",
    "local:sessionEntry_s1",
    "local:historySessionId",
    "local:sessionDigest_s1",
]


def internal_failures(platform: Any, text: str, actions: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Sends `text` as a turn through the worker, then each of `actions` as the panel sends them;
    returns what failed as "internal" (the turn's error events, the actions' (name, message))."""
    events: list[dict[str, Any]] = []
    worker = Worker(platform, lambda _id, event: events.append(event) or True)
    start = json.dumps({"action": "send", "text": text, "images": []})
    asyncio.run(worker.run_turn_json("t1", start))
    internal: list[Any] = [e for e in events if e.get("event") == "error"]
    for action, payload in actions:
        got = json.loads(asyncio.run(worker.dispatch_json(action, json.dumps(payload), "extension")))
        if not got.get("ok") and got["error"]["code"] == "internal":
            internal.append((action, got["error"]["message"]))
    return internal
