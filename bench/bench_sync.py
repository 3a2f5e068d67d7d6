"""Sync (issue 32): the first sync of 1,000 sessions x 100K digests (time, bytes sent), the same
sessions arriving on a second machine, and a sync with nothing to do (requests made, time).

Concept: measurement functions in the style of `bench/run.py` that need no browser (listed in
`BROWSERLESS_METRICS`): the Python core of margin.sync under CPython, with the in-memory platform
(tests/support/platform_memory.py: chrome.storage's semantics, AES-GCM and PBKDF2 from the
`cryptography` package and hashlib) and an in-memory WebDAV server (tests/support/fake_webdav.py).
So the figures are the core's own work and its requests; in the worker, WebCrypto, the bridge's
copies and the network add to the times, not to the requests or bytes. Run alone:
`python3 bench/run.py --only sync_first_and_unchanged` (or `python3 bench/bench_sync.py`).

1. Machine A holds SESSIONS saved sessions, each a conversation of ~DIGEST_CHARS characters of
   text (so its digest is full), saved as "New session" saves them (untimed).
2. A turns sync on and syncs: the time and the bytes sent (request bodies) are the first sync's.
3. Machine B turns sync on and syncs: every session is downloaded and saved.
4. A syncs again with nothing changed: the requests it makes (a handful, not one per session).
Rules: every figure is checked (B holds SESSIONS sessions; the no-change sync uploaded nothing),
so a broken product gives an error, not a figure.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "py"))
sys.path.insert(0, str(REPO / "tests" / "support"))

from bench_result import result
from fake_webdav import FakeDav
from platform_memory import memory_platform

from margin.sessions import actions
from margin.sessions.entries import DIGEST_CAP
from margin.storage.keys import HISTORY
from margin.sync import engine, setup

SESSIONS = 1000
DIGEST_CHARS = DIGEST_CAP
WORDS = "margin sync keeps every saved session on every machine of the user encrypted".split()
CREDENTIALS = {
    "url": "https://dav.example/dav/",
    "user": "me",
    "password": "secret",
    "passphrase": "bench passphrase",
}


def _conversation(i: int) -> list[dict[str, Any]]:
    text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(DIGEST_CHARS // 6))
    half = len(text) // 2
    return [
        {"role": "user", "content": f"Question {i}: {text[:half]}", "createdAt": 1_700_000_000_000 + i},
        {"role": "assistant", "content": text[half:], "createdAt": 1_700_000_000_001 + i},
    ]


async def _measure() -> dict[str, Any]:
    dav = FakeDav()
    a = memory_platform(transport=dav)
    for i in range(SESSIONS):
        await a.local.set({HISTORY: _conversation(i)})
        await actions.save_current(a.local, clear=True)
    await setup.handle_enable(a, CREDENTIALS)
    started = time.perf_counter()
    first = await engine.run(a)
    first_s = time.perf_counter() - started

    b = memory_platform(transport=dav)
    await setup.handle_enable(b, CREDENTIALS)
    started = time.perf_counter()
    arrived = await engine.run(b)
    second_s = time.perf_counter() - started
    listed = (await actions.handle_list(b, {}))["sessions"]
    if len(listed) != SESSIONS or arrived.downloaded != SESSIONS:
        raise RuntimeError(f"the second machine got {len(listed)} sessions, not {SESSIONS}")

    started = time.perf_counter()
    unchanged = await engine.run(a)
    unchanged_ms = (time.perf_counter() - started) * 1000
    if unchanged.uploaded or unchanged.downloaded:
        raise RuntimeError("a sync with nothing changed moved sessions")
    return {
        "first_s": first_s,
        "first": first,
        "second_s": second_s,
        "unchanged": unchanged,
        "unchanged_ms": unchanged_ms,
    }


def sync_first_and_unchanged(bench: Any = None) -> list[dict[str, Any]]:
    m = asyncio.run(_measure())
    first, unchanged = m["first"], m["unchanged"]
    where = "CPython, in-memory platform and WebDAV (docstring)"
    return [
        result(
            f"sync: first sync of {SESSIONS:,} sessions x 100K digests",
            round(m["first_s"], 2),
            "s",
            note=f"{first.requests:,} requests; {where}",
        ),
        result(
            "sync: bytes sent by that first sync",
            round(first.bytes_sent / 1e6, 1),
            "MB",
            note="encrypted objects (base64) and the manifest; the digests are made again on arrival",
        ),
        result(
            f"sync: the {SESSIONS:,} sessions arriving on a second machine",
            round(m["second_s"], 2),
            "s",
            note=where,
        ),
        result(
            "sync: requests of a sync with nothing to do",
            unchanged.requests,
            "requests",
            target=3,
            compare="at_most",
            note=f"{m['unchanged_ms']:.0f} ms at {SESSIONS:,} sessions (the manifest read, entries compared)",
        ),
    ]


METRICS = [sync_first_and_unchanged]
# Measured in CPython alone: run.py launches no browser for these.
BROWSERLESS_METRICS = [sync_first_and_unchanged]


if __name__ == "__main__":
    from run import Result, table

    print(table([Result(**row) for row in sync_first_and_unchanged()]))
