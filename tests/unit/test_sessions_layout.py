"""Layout 2 of the session index: a header of ids in `savedSessions`, one `sessionEntry_<id>` per
session. The move from the list of entries (crash-safe at every write), actions that touch only
their own session's keys, and bad headers or entries repaired without loss; the panel's reader
(extension/panel/sessions/index_read.js) over both layouts and storage.onChanged."""

import asyncio
import contextlib
from pathlib import Path

from helpers import run_js_module
from platform_memory import MemoryStorageArea, StoreCrashed, memory_platform

from margin.sessions import actions as sessions
from margin.sessions import index as session_index
from margin.sessions.index import stored_entries
from margin.storage.keys import (
    SAVED_SESSIONS,
    SAVED_SESSIONS_UNREADABLE_PREFIX,
    session_body_key,
    session_digest_key,
    session_entry_key,
)


def run(coro):
    return asyncio.run(coro)


def entry_of(i, **fields):
    return {
        "id": f"s{i}",
        "name": f"Talk {i}",
        "createdAt": 100 + i,
        "pinned": False,
        "digestHead": f"talk {i}",
        "savedAt": 200 + i,
        "bodyHash": "",
        **fields,
    }


def list_store(n=5):
    """The layout before this one: every entry inside `savedSessions`, digests and bodies apart."""
    items = {
        SAVED_SESSIONS: [entry_of(i, keptField={"i": i}) for i in range(n)],
    }
    for i in range(n):
        items[session_body_key(f"s{i}")] = {"history": [{"role": "user", "content": f"talk {i}"}]}
        items[session_digest_key(f"s{i}")] = f"talk {i}"
    return items


def layout2_store(n):
    items = {SAVED_SESSIONS: {"layout": 2, "ids": [f"s{i}" for i in range(n)]}}
    for i in range(n):
        items[session_entry_key(f"s{i}")] = entry_of(i)
        items[session_body_key(f"s{i}")] = {"history": [{"role": "user", "content": f"talk {i}"}]}
        items[session_digest_key(f"s{i}")] = f"talk {i} " + "word " * 200
    return items


def all_entries(area):
    async def go():
        return await (await session_index.read_session_index(area)).entries()

    return run(go())


def platform_over(area):
    platform = memory_platform()
    platform.local = area
    return platform


# -- the move from the list of entries -----------------------------------------------------------


def test_the_list_moves_to_one_key_per_entry_and_the_header_is_written_last(monkeypatch):
    from margin.sessions import migration as session_migration

    monkeypatch.setattr(session_migration, "_ENTRY_BATCH", 2)  # several entry writes
    old = list_store()
    area = MemoryStorageArea(list_store())
    entries = all_entries(area)
    data = area.snapshot()
    assert data[SAVED_SESSIONS] == {"layout": 2, "ids": ["s0", "s1", "s2", "s3", "s4"]}
    assert stored_entries(data) == old[SAVED_SESSIONS]  # every entry verbatim, unknown fields too
    assert [e.name for e in entries] == [f"Talk {i}" for i in range(5)]
    assert list(area.writes[-1]) == [SAVED_SESSIONS]
    assert len(area.writes) == 4 and all(k.startswith("sessionEntry_") for w in area.writes[:-1] for k in w)
    assert not [k for k in data if SAVED_SESSIONS_UNREADABLE_PREFIX in k]  # nothing parked: nothing lost
    before = len(area.writes)
    all_entries(area)
    assert len(area.writes) == before  # idempotent: layout 2 is read as it is


def test_a_fault_at_every_write_of_the_move_leaves_the_old_index_then_the_same_result(monkeypatch):
    from margin.sessions import migration as session_migration

    monkeypatch.setattr(session_migration, "_ENTRY_BATCH", 2)
    area = MemoryStorageArea(list_store())
    all_entries(area)
    total, expected = len(area.writes), area.snapshot()
    assert total == 4
    for k in range(total + 1):
        area = MemoryStorageArea(list_store(), fail_after_writes=k)
        with contextlib.suppress(StoreCrashed):
            all_entries(area)
        area.revive()
        # At the fault the old list is still the index (or, after the last write, the new one):
        # the user sees every session either way.
        assert [e["name"] for e in stored_entries(area.snapshot())] == [f"Talk {i}" for i in range(5)], k
        all_entries(area)
        assert area.snapshot() == expected, f"fault after {k} writes"


def test_legacy_whole_sessions_reach_layout_2_in_one_pass():
    legacy = [
        {
            "id": 17,
            "name": "Old",
            "createdAt": 1,
            "pinned": True,
            "history": [{"role": "user", "content": "hi"}],
        }
    ]
    area = MemoryStorageArea({SAVED_SESSIONS: legacy})
    [entry] = all_entries(area)
    data = area.snapshot()
    assert data[SAVED_SESSIONS] == {"layout": 2, "ids": ["17"]}
    assert data[session_body_key("17")]["history"] == legacy[0]["history"]
    assert data[session_entry_key("17")]["pinned"] is True and entry.digest_head == "hi"


# -- actions touch their own keys -----------------------------------------------------------------


def test_rename_and_pin_at_1000_sessions_read_and_write_only_their_own_entry():
    area = MemoryStorageArea(layout2_store(1000))
    platform = platform_over(area)
    area.reads.clear()
    area.writes.clear()
    run(sessions.handle_rename(platform, {"id": "s500", "name": "Renamed"}))
    run(sessions.handle_pin(platform, {"id": "s500", "pinned": True}))
    assert set(area.reads) == {SAVED_SESSIONS, session_entry_key("s500")}
    assert [list(w) for w in area.writes] == [[session_entry_key("s500")]] * 2
    entry = area.snapshot()[session_entry_key("s500")]
    assert (entry["name"], entry["named"], entry["pinned"]) == ("Renamed", True, True)


def test_new_and_open_at_1000_sessions_touch_no_other_session():
    area = MemoryStorageArea(layout2_store(1000))
    platform = platform_over(area)
    run(area.set({"history": [{"role": "user", "content": "a new talk"}], "historySessionId": None}))
    area.reads.clear()
    area.writes.clear()
    sid = run(sessions.handle_new(platform, {}))["savedId"]
    run(area.set({"history": [{"role": "user", "content": "another"}], "historySessionId": None}))
    run(sessions.handle_open(platform, {"id": "s7"}))
    written = [k for w in area.writes if isinstance(w, dict) for k in w]
    prefixes = ("session_", "sessionDigest_", "sessionEntry_")
    touched = {k.split("_", 1)[1] for k in [*area.reads, *written] if k.startswith(prefixes)}
    ids = area.snapshot()[SAVED_SESSIONS]["ids"]
    # s7, the new session, and the conversation the open saved first: no other session's key.
    assert touched == {"s7", sid, ids[0]} and ids[1] == sid and len(ids) == 1002
    assert area.snapshot()["history"] == [{"role": "user", "content": "talk 7"}]


def test_delete_then_undo_puts_the_same_entry_back_and_the_purge_removes_its_keys():
    area = MemoryStorageArea(layout2_store(3))
    platform = platform_over(area)
    entry = area.snapshot()[session_entry_key("s1")]
    token = run(sessions.handle_delete(platform, {"id": "s1"}))["undo"]
    assert area.snapshot()[SAVED_SESSIONS]["ids"] == ["s0", "s2"]
    run(sessions.handle_undelete(platform, {"undo": token}))
    data = area.snapshot()
    assert data[SAVED_SESSIONS]["ids"] == ["s0", "s2", "s1"] and data[session_entry_key("s1")] == entry
    run(sessions.handle_delete(platform, {"id": "s1"}))
    run(area.set({"sessionTrash": [{"id": "s1", "expiresAt": 0}]}))  # the undo window has passed
    run(sessions.handle_check(platform, {}))
    data = area.snapshot()
    assert not [k for k in data if k.endswith("_s1")]  # body, digest and entry gone together


# -- bad headers and entries: repaired, parked, never a crash ----------------------------------------


def test_a_header_with_bad_ids_keeps_the_readable_ones_and_parks_the_raw_value():
    items = layout2_store(2)
    raw = {"layout": 2, "ids": ["s0", 42, "s0", "", "s1", None]}
    area = MemoryStorageArea({**items, SAVED_SESSIONS: raw})
    assert [e.id for e in all_entries(area)] == ["s0", "s1"]
    data = area.snapshot()
    parked = [k for k in data if k.startswith(SAVED_SESSIONS_UNREADABLE_PREFIX)]
    assert [data[k] for k in parked] == [raw]


def test_a_corrupt_entry_is_rebuilt_from_its_body_and_the_raw_value_parked():
    items = layout2_store(2)
    items[session_entry_key("s1")] = {"id": "s1", "name": 7, "pinned": "yes"}
    area = MemoryStorageArea(items)
    entries = all_entries(area)
    assert [e.name for e in entries] == ["Talk 0", "talk 1"]  # named from its body
    data = area.snapshot()
    parked = [k for k in data if k.startswith(session_entry_key("s1") + "Unreadable_")]
    assert [data[k] for k in parked] == [{"id": "s1", "name": 7, "pinned": "yes"}]
    assert session_index.is_clean_entry(data[session_entry_key("s1")])


def test_an_entry_naming_another_id_or_gone_is_repaired_under_its_own_key():
    items = layout2_store(3)
    items[session_entry_key("s1")] = entry_of(9)  # says it is s9
    del items[session_entry_key("s2")]  # a key Chrome lost
    area = MemoryStorageArea(items)
    entries = all_entries(area)
    assert [e.id for e in entries] == ["s0", "s1", "s2"]
    assert entries[1].name == "Talk 9" and entries[2].name == "talk 2" and not entries[2].damaged
    data = area.snapshot()
    assert [data[k] for k in data if k.startswith(session_entry_key("s1") + "Unreadable_")] == [entry_of(9)]
    assert not [k for k in data if k.startswith(session_entry_key("s2") + "Unreadable_")]  # nothing to keep


def test_an_entry_claiming_an_inline_history_never_overwrites_the_body():
    items = layout2_store(1)
    body = items[session_body_key("s0")]
    claim = entry_of(0, history=[{"role": "user", "content": "not the body"}])
    area = MemoryStorageArea({**items, session_entry_key("s0"): claim})
    all_entries(area)
    data = area.snapshot()
    assert data[session_body_key("s0")] == body
    assert [data[k] for k in data if k.startswith(session_entry_key("s0") + "Unreadable_")] == [claim]


# -- the panel's reader ------------------------------------------------------------------------------

INDEX_READ = Path(__file__).resolve().parents[2] / "extension" / "panel" / "sessions" / "index_read.js"

PANEL_SCRIPT = """
const store = new Map(Object.entries(input.store));
const reads = [];
const get = async (keys) => { reads.push(...keys);
  return Object.fromEntries(keys.filter((k) => store.has(k)).map((k) => [k, store.get(k)])); };
const names = (list) => Array.isArray(list) ? list.map((e) => e && e.name) : list;
const source = index_read.indexSource(get);
const out = {first: names(await source.read())};
// A rename: only the entry's key changes.
out.ignored = source.follow({history: {newValue: []}});
out.renamed = names(await source.follow({sessionEntry_s1: {newValue: {...store.get('sessionEntry_s1'), name: 'R'}}}));
// A new session: its entry arrives in one event, the header in the next.
reads.length = 0;
out.added = names(await source.follow({savedSessions: {newValue: {layout: 2, ids: ['n', 's0', 's1']}}}));
out.addedReads = [...reads];
store.set('sessionEntry_late', {...store.get('sessionEntry_s0'), id: 'late', name: 'Late'});
reads.length = 0;
out.late = names(await source.follow({savedSessions: {newValue: {layout: 2, ids: ['late', 's0']}}}));
out.lateReads = [...reads];
store.delete('sessionEntry_s0');
out.gone = names(await source.follow({sessionEntry_s0: {oldValue: {}}}));
out.legacy = names(await index_read.indexSource(async () => ({savedSessions: [{name: 'old list'}]})).read());
console.log(JSON.stringify(out));
"""


def test_the_panel_reads_and_follows_layout_2_by_address(tmp_path):
    from margin.app.contract import render_js

    folder = tmp_path / "panel" / "sessions"
    folder.mkdir(parents=True)
    store = {k: v for k, v in layout2_store(2).items() if not k.startswith("session_")}
    store["sessionEntry_n"] = entry_of(5, id="n", name="New")
    got = run_js_module(
        folder,
        INDEX_READ,
        "index_read",
        PANEL_SCRIPT,
        {"store": store},
        extra_files={"../../generated/contract.js": render_js("margin-test.whl")},
    )
    assert got["first"] == ["Talk 0", "Talk 1"]
    assert got["ignored"] is None
    assert got["renamed"] == ["Talk 0", "R"]
    assert got["added"] == ["New", "Talk 0", "R"] and got["addedReads"] == ["sessionEntry_n"]
    assert got["late"] == ["Late", "Talk 0"] and got["lateReads"] == ["sessionEntry_late"]
    assert got["gone"] == ["Late", None]  # an entry that is gone: the panel asks Python to repair
    assert got["legacy"] == ["old list"]


# -- backups: a file exported before layout 2 imports into it ----------------------------------------

OLD_BACKUP = Path(__file__).with_name("backup_before_layout2.json")  # exported by the build before


def test_a_backup_exported_before_layout_2_imports_whole_into_it():
    import json

    from margin.backup import stream as backup

    text = OLD_BACKUP.read_text(encoding="utf-8")
    file_sessions = json.loads(text)["sessions"]
    # A profile still holding the list of entries (not migrated yet): the import migrates it first.
    area = MemoryStorageArea(list_store(2))
    platform = platform_over(area)
    done = run(backup.import_text(platform, text, 500))
    assert done["added"] == 2
    data = area.snapshot()
    ids = data[SAVED_SESSIONS]["ids"]
    assert ids == ["s0", "s1", *(s["id"] for s in file_sessions)]
    by_id = {e["id"]: e for e in stored_entries(data)}
    for item in file_sessions:
        entry = by_id[item["id"]]
        assert (entry["name"], entry["pinned"], entry.get("named", False)) == (
            item["name"],
            item["pinned"],
            item.get("named", False),
        )
        assert data[session_body_key(item["id"])]["history"] == item["history"]  # pixels kept
        assert data[session_digest_key(item["id"])].startswith(item["digestHead"])
    assert data["history"] == [{"role": "user", "content": "the open conversation"}]
    assert "backupImportStaging" not in data
    # And the profile exports it again, in the same format.
    again = json.loads(run(backup.export_text(platform, False))[0])
    assert sorted(s["id"] for s in again["sessions"]) == sorted(
        ["s0", "s1", *(s["id"] for s in file_sessions)]
    )
