"""Corrupt stored values: every key Margin reads, holding what Margin did not write.

Each case plants one corruption (corpus/stored_values/corruptions.json) under one key of a
profile that also holds the user's real data, then runs the everyday actions through the worker's
routes: list, open, rename and export a session, New session, the options, the panel's state. No
action may fail as "internal" (the value reaches no crash: margin.storage.stored_values parks what it
cannot read), and nothing stored is lost (parked values count as kept).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from platform_memory import memory_platform

from margin.app.worker import Worker

from .ledger import snapshot
from .profiles import CORPUS, PROVIDER, corrupted, save_as_s1

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


def users_profile():
    platform = memory_platform({"providers": [PROVIDER], "activeProviderId": "p1"})
    run = asyncio.run
    save_as_s1(
        platform, [{"role": "user", "content": "the saved chat"}, {"role": "assistant", "content": "kept"}]
    )
    run(platform.local.set({"history": [{"role": "user", "content": "the open chat"}]}))
    return platform


CASES = [(key, name) for key in CORPUS["keys"] for name in CORPUS["values"]]


@pytest.mark.parametrize(("key", "name"), CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_a_corrupt_value_reaches_no_crash_and_loses_nothing(key, name, ledger):
    platform = users_profile()
    asyncio.run(platform.local.set({key: corrupted(name)}))
    before = snapshot(platform)
    worker = Worker(platform, lambda *_: True)
    internal = []
    for action, payload in ACTIONS:
        reply = json.loads(asyncio.run(worker.dispatch_json(action, json.dumps(payload), "extension")))
        if not reply.get("ok") and reply["error"]["code"] == "internal":
            internal.append((action, reply["error"]["message"]))
    assert not internal, f"failed as internal: {internal}"
    # The rename is the user's own change of the index (its entry), and saving s1 again rewrites its digest (text
    # derived from its body, which is kept); everything else must still be stored.
    ledger.settle(
        before,
        snapshot(platform),
        replaced=[
            "local:savedSessions",
            "local:sessionEntry_s1",
            "local:historySessionId",
            "local:sessionDigest_s1",
        ],
    )


# -- the index's own keys: what the first listing cannot read is parked, not replaced ---------------

INDEX_CASES = [(key, name) for key in ("sessionEntry_s1", "savedSessions") for name in CORPUS["values"]]


@pytest.mark.parametrize(("key", "name"), INDEX_CASES, ids=[f"{k}-{n}" for k, n in INDEX_CASES])
def test_a_corrupt_index_value_is_parked_by_the_first_listing(key, name, ledger):
    """The user only looks at the list: no write of theirs may replace what is stored, so every
    value the listing could not read must still be stored, parked (margin.sessions.migration)."""
    platform = users_profile()
    asyncio.run(platform.local.set({key: corrupted(name)}))
    before = snapshot(platform)
    worker = Worker(platform, lambda *_: True)
    reply = json.loads(asyncio.run(worker.dispatch_json("session.list", "{}", "extension")))
    assert reply["ok"], reply
    if key == "sessionEntry_s1":  # the header still names s1: its entry is rebuilt from its body
        assert [row["id"] for row in reply["value"]["sessions"]] == ["s1"]
    ledger.settle(before, snapshot(platform))


# -- the rarer keys: each with the actions that read it -----------------------------------------

ORIGINAL_KEY = "imageOriginal_" + "a" * 32
THUMBNAIL_RECORD = {
    "role": "user",
    "content": [
        {"type": "text", "text": "this chart"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
            "meta": {"originalKey": ORIGINAL_KEY},
        },
    ],
}


async def _recover_staging(platform):
    from margin.backup.importer import recover
    from margin.storage.keys import lock_for

    async with lock_for(platform.local):
        await recover(platform.local)


async def _tab_closed(platform):
    from margin.page import site_caches

    await site_caches.restore(platform)
    await site_caches.on_tab_event(platform, "removed", 1)


async def _take_explain(platform):
    from margin.turn import explain

    await explain.take_request(platform, "r1")


async def _keep_unsaved(platform):
    from margin.turn import unsaved_answers

    await unsaved_answers.keep(platform, {"id": "u2", "answer": {"role": "assistant", "content": "kept"}})


RARE_KEYS = {
    ("local", ORIGINAL_KEY): [("images.original", {"key": ORIGINAL_KEY}), ("images.bound", {})],
    ("local", "backupImportStaging"): [_recover_staging, ("session.list", {})],
    ("session", "siteCacheIndex"): [("sitecache.status", {}), _tab_closed],
    ("session", "siteCache_1"): [("sitecache.status", {}), _tab_closed],
    ("session", "explainRequest"): [_take_explain],
    ("session", "unsavedAnswers"): [("history.save_answer", {"unsaved": {"id": "u1"}}), _keep_unsaved],
    ("session", "sessionUndo_t1"): [("session.undelete", {"undo": "t1"})],
}
RARE_CASES = [(area, key, name) for area, key in RARE_KEYS for name in CORPUS["values"]]


@pytest.mark.parametrize(("area", "key", "name"), RARE_CASES, ids=[f"{k}-{n}" for _, k, n in RARE_CASES])
def test_a_corrupt_value_under_a_rarer_key_reaches_no_crash_and_loses_nothing(area, key, name, ledger):
    from margin.base.errors import MarginError

    platform = users_profile()
    if key == ORIGINAL_KEY:  # a thumbnail in the conversation refers to it: it is the user's image
        asyncio.run(platform.local.set({"history": [THUMBNAIL_RECORD]}))
    asyncio.run(getattr(platform, area).set({key: corrupted(name)}))
    before = snapshot(platform)
    worker = Worker(platform, lambda *_: True)
    internal = []
    for action in RARE_KEYS[(area, key)]:
        if callable(action):
            try:
                asyncio.run(action(platform))
            except MarginError:
                pass  # a specific refusal ("too late to undo", "gone") is an answer
            except Exception as error:
                internal.append((action.__name__, repr(error)[:200]))
            continue
        route, payload = action
        reply = json.loads(asyncio.run(worker.dispatch_json(route, json.dumps(payload), "extension")))
        if not reply.get("ok") and reply["error"]["code"] == "internal":
            internal.append((route, reply["error"]["message"]))
    assert not internal, f"failed as internal: {internal}"
    ledger.settle(before, snapshot(platform), replaced=[f"{area}:{key}"] if key in TRANSIENT else [])


# Margin's own bookkeeping, not the user's data: a corrupt value there may be dropped.
TRANSIENT = {"backupImportStaging", "siteCacheIndex", "siteCache_1", "explainRequest", "sessionUndo_t1"}
