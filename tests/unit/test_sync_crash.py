"""Sync interrupted at every write (margin.sync.engine's docstring): the server dies before its k-th
write, or this browser's storage does before its k-th; after each, both sides are readable (the
manifest opens and names only files that exist; every listed session opens), and the next sync
completes the run: both machines end as a sync with no crash leaves them."""

from __future__ import annotations

import json

import pytest
from fake_webdav import FakeDav
from platform_memory import StoreCrashed
from sync_devices import (
    PASSPHRASE,
    add_question,
    credentials,
    device,
    device_with_sessions,
    quick_keys,
    rename,
    run,
    save,
    sessions,
    sync,
    ticking_clock,
)

from margin.base.errors import MarginError
from margin.sessions import actions
from margin.sync import crypto, engine
from margin.sync.manifest import MANIFEST_NAME, read_manifest


@pytest.fixture(autouse=True)
def quick_derivation(monkeypatch):
    quick_keys(monkeypatch)
    monkeypatch.setattr(engine, "PIECE_CHARS", 700)  # several pieces per object: a cut between them too


@pytest.fixture(autouse=True, params=["B saved last", "A saved last"])
def later(request, monkeypatch):
    """Which machine's edit of the shared session is the later one: the conflict's two ways
    (margin.sync.merge rule 2). The clock ticks at every call, so no two saves are at once."""
    ticking_clock(monkeypatch)
    return request.param


SCENARIO = {"later": "B saved last"}


def scenario():
    """A and B synced on two sessions; then apart: A edits one, renames the other, makes a third;
    B edits the first too (a conflict) and makes a fourth. Returns (dav, a, b) before A syncs."""
    dav = FakeDav()
    a = device(dav)
    first = save(a, "first " + "x" * 800)
    second = save(a, "second")
    sync(a)
    b = device(dav)
    sync(b)
    edits = [(a, "from A"), (b, "from B")]
    for machine, text in edits if SCENARIO["later"] == "B saved last" else reversed(edits):
        add_question(machine, first, text)
    rename(a, second, "Renamed on A")
    save(a, "third on A")
    save(b, "fourth on B")
    sync(b)
    return dav, a, b


def converged(a, b):
    sync(a), sync(b), sync(a)
    shown_a = sorted(map(json.dumps, sessions(a).values()))
    assert shown_a == sorted(map(json.dumps, sessions(b).values()))
    return shown_a


def remote_readable(dav: FakeDav, platform) -> None:
    files = dav.object_files()
    check = crypto.read_key_check(files[crypto.KEY_CHECK_NAME])
    key = run(crypto.derive(platform, PASSPHRASE, check))
    if MANIFEST_NAME not in files:
        return
    manifest = read_manifest(run(crypto.unseal(platform, key, MANIFEST_NAME, files[MANIFEST_NAME])))
    assert manifest.files() <= set(files)


def local_readable(platform) -> None:
    for sid in sessions(platform):
        run(actions.handle_open(platform, {"id": sid}))


def expected_outcome():
    _, a, b = scenario()
    return converged(a, b)


@pytest.fixture(params=[200, 1], ids=["one commit", "a commit per session"])
def batch(request, monkeypatch):
    """The run commits once at its end, or after every session it moves (margin.sync.engine step 6)."""
    monkeypatch.setattr(engine, "BATCH_ITEMS", request.param)
    return request.param


@pytest.fixture(autouse=True)
def which_later(later, monkeypatch):
    monkeypatch.setitem(SCENARIO, "later", later)


def test_a_sync_that_dies_at_any_server_write_is_completed_by_the_next(batch):
    want = expected_outcome()
    dav, a, b = scenario()
    start = dav.writes
    sync(a)
    writes = dav.writes - start
    assert writes >= 5  # pieces, the manifest, the garbage: every kind of write is tried below
    for k in range(writes):
        dav, a, b = scenario()
        dav.fail_after_writes = dav.writes + k
        with pytest.raises(MarginError):
            sync(a)
        dav.revive()
        remote_readable(dav, a)
        local_readable(a)
        assert converged(a, b) == want, k


def test_a_sync_that_dies_at_any_local_write_is_completed_by_the_next(batch):
    want = expected_outcome()
    dav, a, b = scenario()
    start = len(a.local.writes)
    sync(a)
    writes = len(a.local.writes) - start
    assert writes >= 4
    for k in range(writes):
        dav, a, b = scenario()
        a.local.fail_after_writes = len(a.local.writes) + k
        with pytest.raises(StoreCrashed):
            sync(a)
        a.local.revive()
        remote_readable(dav, a)
        local_readable(a)
        assert converged(a, b) == want, k


def test_turning_on_with_a_wrong_passphrase_writes_nothing_on_either_side():
    dav, _, _ = scenario()
    before = dict(dav.files)
    c = device(dav, on=False)
    try:
        run(
            __import__("margin.sync.setup", fromlist=["x"]).handle_enable(
                c, credentials(passphrase="not the one")
            )
        )
    except MarginError as error:
        assert error.code == "sync_wrong_passphrase"
    else:
        raise AssertionError("a wrong passphrase was taken")
    assert dav.files == before
    assert c.local.writes == []


def test_a_long_first_sync_stopped_half_way_is_continued_not_begun_again(monkeypatch):
    monkeypatch.setattr(engine, "BATCH_ITEMS", 2)
    dav, a = device_with_sessions(8)
    dav.fail_after_writes = dav.writes + 6  # two batches of two sessions committed, then the worker is gone
    with pytest.raises(MarginError):
        sync(a)
    dav.revive()
    second = run(engine.run(a))
    assert second.uploaded == 4  # the four not committed yet, not all eight
    b = device(dav)
    sync(b)
    assert len(sessions(b)) == 8
