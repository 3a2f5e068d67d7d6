"""Legacy inline snapshots move to per-session bodies, crash-safely; bad indexes are repaired.
(The move of the list of entries to layout 2, one key per entry: test_sessions_layout.py.)"""

import asyncio
import contextlib
import json

from platform_memory import MemoryStorageArea, StoreCrashed

from margin.sessions import actions as sessions
from margin.sessions import index as session_index
from margin.sessions import migration as session_migration
from margin.sessions.index import stored_entries
from margin.storage.keys import (
    SAVED_SESSIONS,
    SAVED_SESSIONS_UNREADABLE_PREFIX,
    SESSION_DIGEST_PREFIX,
    SESSION_ENTRY_PREFIX,
    session_body_key,
    session_digest_key,
)

PIXELS = "data:image/png;base64," + "iVBORw0KGgo" * 3000


def legacy_store():
    """A realistic legacy store: several inline snapshots, images included, Date.now() ids."""
    return {
        SAVED_SESSIONS: [
            {
                "id": 1700000000001,
                "name": "Trip to Lyon",
                "createdAt": 1700000000001,
                "pinned": True,
                "history": [
                    {"role": "user", "content": "Where should I eat in Lyon?"},
                    {"role": "assistant", "content": "Try a bouchon."},
                ],
            },
            {
                "id": "s2",
                "name": "Screenshot",
                "createdAt": 1700000000002,
                "pinned": False,
                "history": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is this chart?"},
                            {"type": "image_url", "image_url": {"url": PIXELS}},
                        ],
                        "imagesSeen": True,
                    },
                    {"role": "assistant", "content": "Sales by quarter."},
                ],
            },
            {
                "id": "s3",
                "name": "Two images",
                "createdAt": 1700000000003,
                "pinned": False,
                "history": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": PIXELS + "A"}},
                            {"type": "image_url", "image_url": {"url": PIXELS + "B"}},
                        ],
                    }
                ],
            },
            {
                "id": "s4",
                "name": "Recipe",
                "createdAt": 1700000000004,
                "pinned": False,
                "history": [{"role": "user", "content": "Crème brûlée for four"}],
            },
        ]
    }


def run(coro):
    return asyncio.run(coro)


def migrate(area):
    """Every entry, after `read_session_index` migrated the store."""

    async def entries():
        return await (await session_index.read_session_index(area)).entries()

    return run(entries())


def test_legacy_bodies_move_out_of_the_index_verbatim():
    legacy = stored_entries(legacy_store())
    area = MemoryStorageArea(legacy_store())
    entries = migrate(area)
    data = area.snapshot()
    assert [e.id for e in entries] == ["1700000000001", "s2", "s3", "s4"]
    for old, entry in zip(legacy, entries, strict=True):
        assert data[session_body_key(entry.id)]["history"] == old["history"]  # pixels kept
        assert entry.name == old["name"] and entry.created_at == old["createdAt"]
        assert entry.pinned is old["pinned"]
    index = stored_entries(data)
    assert all("history" not in e for e in index)
    assert PIXELS not in json.dumps(index)  # the index is light
    assert data[session_digest_key("s2")] == "What is this chart?\nSales by quarter."
    assert entries[1].digest_head == "What is this chart?\nSales by quarter."
    # The index is rewritten last, after every body and every digest, then every entry.
    assert list(area.writes[-1]) == [SAVED_SESSIONS]
    kinds = [k.split("_")[0] for w in area.writes[:-1] for k in w]
    assert set(kinds) == {"session", "sessionDigest", "sessionEntry"}
    assert kinds.index("sessionEntry") > max(i for i, k in enumerate(kinds) if k != "sessionEntry")


def test_migration_is_idempotent_and_a_clean_index_is_not_rewritten():
    area = MemoryStorageArea(legacy_store())
    migrate(area)
    before = area.snapshot()
    writes = len(area.writes)
    migrate(area)
    assert area.snapshot() == before
    assert len(area.writes) == writes


def migrate_crashing_after(stored, k):
    """The migration on a store that dies after `k` writes; the store revived, and whether it died."""
    area = MemoryStorageArea(stored, fail_after_writes=k)
    try:
        migrate(area)
        crashed = False
    except StoreCrashed:
        crashed = True
    area.revive()
    return area, crashed


def count_writes_of_full_migration():
    area = MemoryStorageArea(legacy_store())
    migrate(area)
    return len(area.writes), area.snapshot()


def test_a_crash_after_any_write_is_completed_by_the_next_run():
    total, expected = count_writes_of_full_migration()
    assert total >= 5
    for k in range(0, total + 1):
        area, crashed = migrate_crashing_after(legacy_store(), k)
        assert crashed == (k < total), k
        migrate(area)
        assert area.snapshot() == expected, f"crash after {k} writes"
        index = stored_entries(area.snapshot())
        assert len({e["id"] for e in index}) == len(index) == 4


def test_crash_safety_holds_for_repairs_too():
    raw = {
        SAVED_SESSIONS: [
            {"name": "no id", "history": [{"role": "user", "content": "alpha"}]},
            {"id": "dup", "name": "first", "createdAt": 5, "history": [{"role": "user", "content": "one"}]},
            {"id": "dup", "name": "second", "createdAt": 6, "history": [{"role": "user", "content": "two"}]},
            "garbage",
        ]
    }
    area = MemoryStorageArea(raw)
    migrate(area)
    total, expected = len(area.writes), area.snapshot()
    for k in range(total + 1):
        area = MemoryStorageArea(raw, fail_after_writes=k)
        with contextlib.suppress(StoreCrashed):
            migrate(area)
        area.revive()
        migrate(area)
        assert area.snapshot() == expected, k


def test_a_value_that_is_not_a_list_is_parked_and_salvaged():
    raw = {
        "a": {"id": "a", "name": "Kept", "createdAt": 1, "history": [{"role": "user", "content": "hi"}]},
        "junk": 42,
    }
    area = MemoryStorageArea({SAVED_SESSIONS: raw})
    entries = migrate(area)
    data = area.snapshot()
    parked = [k for k in data if k.startswith(SAVED_SESSIONS_UNREADABLE_PREFIX)]
    assert len(parked) == 1 and data[parked[0]] == raw  # the raw value is kept as it was
    assert [e.name for e in entries] == ["Kept"]
    area2 = MemoryStorageArea({SAVED_SESSIONS: "corrupt"})
    assert migrate(area2) == []
    assert "corrupt" in area2.snapshot().values()


def test_missing_fields_are_filled_and_duplicate_ids_both_kept():
    area = MemoryStorageArea(
        {
            SAVED_SESSIONS: [
                {
                    "history": [
                        {
                            "role": "user",
                            "content": "How do I   fold a fitted sheet without losing my mind entirely today?",
                        }
                    ]
                },
                {
                    "id": "x",
                    "name": "First",
                    "createdAt": 10,
                    "pinned": False,
                    "history": [{"role": "user", "content": "first body"}],
                },
                {
                    "id": "x",
                    "name": "Second",
                    "createdAt": 20,
                    "pinned": False,
                    "history": [{"role": "user", "content": "second body"}],
                },
                {"id": "n", "name": "New format", "createdAt": 30, "pinned": False, "textDigest": "kept"},
                {
                    "id": "n",
                    "name": "Copy of new format",
                    "createdAt": 31,
                    "pinned": False,
                    "textDigest": "kept",
                },
            ],
            session_body_key("n"): {"history": [{"role": "user", "content": "kept"}], "savedAt": 30},
        }
    )
    entries = migrate(area)
    data = area.snapshot()
    first = entries[0]
    assert first.id and first.created_at == 0 and first.pinned is False
    assert first.name.endswith("…") and len(first.name) <= 60
    assert first.name.startswith("How do I fold a fitted sheet")
    ids = [e.id for e in entries]
    assert len(set(ids)) == 5
    assert ids[1] == "x" and ids[2].startswith("x-")
    assert data[session_body_key(ids[1])]["history"][0]["content"] == "first body"
    assert data[session_body_key(ids[2])]["history"][0]["content"] == "second body"
    assert ids[4].startswith("n-")
    assert data[session_body_key(ids[4])] == data[session_body_key("n")]


def test_bad_bodies_show_as_damaged_without_loss():
    area = MemoryStorageArea(
        {
            SAVED_SESSIONS: [
                {"id": "bad", "name": "Bad", "createdAt": 1, "pinned": False, "history": "not a list"},
                {"id": "gone", "name": "Gone", "createdAt": 2, "pinned": False},  # no digest, no body
            ]
        }
    )
    entries = migrate(area)
    assert [(e.id, e.damaged) for e in entries] == [("bad", "unreadable"), ("gone", "missing")]
    assert area.snapshot()[session_body_key("bad")]["history"] == "not a list"
    listed = run(sessions.handle_list(_platform(area), {}))["sessions"]
    assert all(item["damaged"] for item in listed)


def _platform(area):
    from platform_memory import memory_platform

    platform = memory_platform()
    platform.local = area
    return platform


# -- digests inline in the index (the layout before `sessionDigest_<id>`) move to their own keys ------


def inline_digest_store(n=6):
    """The previous layout: every entry carries its whole `textDigest`; bodies by address."""
    items = {}
    index = []
    for i in range(n):
        sid = f"d{i}"
        text = f"Session {i} about café naïve Привет 你好 " + "word " * (i * 40)
        index.append(
            {
                "id": sid,
                "name": f"Talk {i}",
                "createdAt": 100 + i,
                "pinned": i == 2,
                "textDigest": text,
                "savedAt": 200 + i,
                "bodyHash": "h" * 64,
                "keptField": {"i": i},  # unknown fields are kept verbatim
            }
        )
        items[session_body_key(sid)] = {"history": [{"role": "user", "content": text}], "savedAt": 200 + i}
    return {SAVED_SESSIONS: index, **items}


def test_inline_digests_move_to_their_own_keys_before_the_index_forgets_them(monkeypatch):
    monkeypatch.setattr(session_migration, "_DIGEST_BATCH", 300)  # several digest writes, not one
    old = inline_digest_store()
    area = MemoryStorageArea(inline_digest_store())
    entries = migrate(area)
    data = area.snapshot()
    for before, entry in zip(stored_entries(old), entries, strict=True):
        assert data[session_digest_key(entry.id)] == before["textDigest"]
        assert entry.digest_head == before["textDigest"][: session_index.DIGEST_HEAD]
        assert (entry.name, entry.pinned, entry.created_at, entry.saved_at) == (
            before["name"],
            before["pinned"],
            before["createdAt"],
            before["savedAt"],
        )
        assert entry.extra == {"keptField": before["keptField"]}
    assert all("textDigest" not in e for e in stored_entries(data))
    assert not [k for k in data if k.startswith(SAVED_SESSIONS_UNREADABLE_PREFIX)]  # nothing was lost
    digest_writes = [w for w in area.writes if any(k.startswith(SESSION_DIGEST_PREFIX) for k in w)]
    assert len(digest_writes) >= 3
    assert list(area.writes[-1]) == [SAVED_SESSIONS] and len(area.writes) == len(digest_writes) + 2
    assert all(k.startswith(SESSION_ENTRY_PREFIX) for k in area.writes[-2])  # the entries, then the header
    assert not [k for k in area.reads if k.startswith("session_")]  # no body needed to move them


def test_a_crash_at_any_write_of_the_digest_move_loses_nothing(monkeypatch):
    monkeypatch.setattr(session_migration, "_DIGEST_BATCH", 300)
    area = MemoryStorageArea(inline_digest_store())
    migrate(area)
    total, expected = len(area.writes), area.snapshot()
    originals = {e["id"]: e["textDigest"] for e in stored_entries(inline_digest_store())}
    assert total >= 4
    for k in range(total + 1):
        area, crashed = migrate_crashing_after(inline_digest_store(), k)
        assert crashed == (k < total), k
        # At the crash: every digest is still inline in the index, or already in its key.
        data = area.snapshot()
        inline = {e["id"]: e.get("textDigest") for e in stored_entries(data)}
        for sid, text in originals.items():
            assert text in (inline.get(sid), data.get(session_digest_key(sid))), (k, sid)
        migrate(area)
        assert area.snapshot() == expected, f"crash after {k} writes"
        migrate(area)  # idempotent: a clean index is read as it is
        assert area.snapshot() == expected


def test_an_unreadable_digest_reads_as_none_and_is_never_rewritten():
    area = MemoryStorageArea(inline_digest_store(3))
    migrate(area)
    corrupt = {session_digest_key("d0"): 42, session_digest_key("d1"): {"text": "café"}}
    run(area.set(corrupt))
    run(area.remove([session_digest_key("d2")]))  # a key Chrome lost
    platform = _platform(area)
    found = run(sessions.handle_list(platform, {"query": "talk"}))["sessions"]
    assert sorted(r["id"] for r in found) == ["d0", "d1", "d2"]  # still found by name
    assert run(sessions.handle_list(platform, {"query": "café"}))["sessions"] == []
    data = area.snapshot()
    assert data[session_digest_key("d0")] == 42 and data[session_digest_key("d1")] == {"text": "café"}
    # The next save of that session stores its digest again.
    run(area.set({"history": [{"role": "user", "content": "café again"}], "historySessionId": "d0"}))
    run(sessions.handle_new(platform, {}))
    assert area.snapshot()[session_digest_key("d0")] == "café again"
