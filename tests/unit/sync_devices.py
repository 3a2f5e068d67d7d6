"""Devices that sync through one in-memory WebDAV server (tests/support/fake_webdav.py), for sync's
unit tests and bench: each a memory platform with its saved sessions and the actions a user takes."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from fake_webdav import FakeDav
from platform_memory import memory_platform

from margin.base.errors import MarginError
from margin.platform.ports import Platform
from margin.sessions import actions
from margin.storage.keys import HISTORY, SYNC_BASE, session_body_key
from margin.sync import engine, setup

URL = "https://dav.example/dav/"
PASSPHRASE = "correct horse battery"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def quick_keys(monkeypatch: Any) -> None:
    """Key derivation in 1,000 rounds, not 600,000: a test's devices turn sync on in milliseconds."""
    from margin.sync import crypto

    monkeypatch.setattr(crypto, "ITERATIONS", 1000)
    monkeypatch.setattr(crypto, "MIN_ITERATIONS", 1000)


def ticking_clock(monkeypatch: Any) -> None:
    """A clock that ticks at every call, so that every save or edit is later than the one before."""
    from margin.base import clock

    ticks = itertools.count(clock.now_ms())
    monkeypatch.setattr(clock, "now_ms", lambda: next(ticks))


def credentials(**changes: str) -> dict[str, str]:
    return {"url": URL, "user": "me", "password": "secret", "passphrase": PASSPHRASE, **changes}


def device(dav: FakeDav, *, on: bool = True) -> Platform:
    platform = memory_platform(transport=dav)
    if on:
        run(setup.handle_enable(platform, credentials()))
    return platform


def sync(platform: Platform) -> dict[str, Any]:
    return run(engine.handle_now(platform, {}))


def device_with_sessions(count: int) -> tuple[FakeDav, Platform]:
    """A server and one device on it with `count` saved sessions ("question 0", ...), not synced yet."""
    dav = FakeDav()
    a = device(dav)
    for i in range(count):
        save(a, f"question {i}")
    return dav, a


def two_devices(prepare_a: Callable[[Platform], Any] | None = None) -> tuple[FakeDav, Platform, Platform]:
    """A and B syncing through one server: A prepared (`prepare_a(a)`) and synced, then B synced."""
    dav = FakeDav()
    a = device(dav)
    if prepare_a is not None:
        prepare_a(a)
    sync(a)
    b = device(dav)
    sync(b)
    return dav, a, b


def shared_session(question: str) -> tuple[FakeDav, Platform, Platform, str]:
    """`two_devices` that both hold one session of `question` (its id last)."""
    made: list[str] = []
    dav, a, b = two_devices(lambda a: made.append(save(a, question)))
    return dav, a, b, made[0]


def save(platform: Platform, *texts: str) -> str:
    """A conversation of these questions (each with an answer), saved as a new session."""
    records = [
        r
        for t in texts
        for r in ({"role": "user", "content": t}, {"role": "assistant", "content": "ok " + t})
    ]
    run(platform.local.set({HISTORY: records}))
    return run(actions.handle_new(platform, {}))["savedId"]


def add_question(platform: Platform, sid: str, text: str) -> None:
    """Open the session, ask one more question, put it away (it is saved again)."""
    run(actions.handle_open(platform, {"id": sid}))
    history = run(platform.local.get([HISTORY]))[HISTORY]
    run(platform.local.set({HISTORY: [*history, {"role": "user", "content": text}]}))
    run(actions.handle_new(platform, {}))


def sessions(platform: Platform) -> dict[str, dict[str, Any]]:
    """id -> {name, pinned, questions} as the Sessions list and the bodies say."""
    listed = run(actions.handle_list(platform, {}))["sessions"]
    data = platform.local.snapshot()  # type: ignore[attr-defined]
    out = {}
    for s in listed:
        body = data[session_body_key(s["id"])]["history"]
        questions = [r["content"] for r in body if r["role"] == "user"]
        out[s["id"]] = {"name": s["name"], "pinned": s["pinned"], "questions": questions}
    return out


def rename(platform: Platform, sid: str, name: str) -> None:
    run(actions.handle_rename(platform, {"id": sid, "name": name}))


def pin(platform: Platform, sid: str) -> None:
    run(actions.handle_pin(platform, {"id": sid, "pinned": True}))


def delete_for_good(platform: Platform, sid: str, monkeypatch: Any) -> None:
    """Delete, and let the undo window pass."""
    from margin.base import clock

    run(actions.handle_delete(platform, {"id": sid}))
    later = clock.now_ms() + actions.UNDO_MS + 1
    real = clock.now_ms
    monkeypatch.setattr(clock, "now_ms", lambda: max(real(), later))


def failure(coro: Any) -> MarginError:
    try:
        run(coro)
    except MarginError as error:
        return error
    raise AssertionError("no MarginError")


def base_of(platform: Platform) -> Any:
    return platform.local.snapshot().get(SYNC_BASE)  # type: ignore[attr-defined]
