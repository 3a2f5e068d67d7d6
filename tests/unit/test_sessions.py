"""Sessions as the user sees them: new, list, search, open, rename, pin, delete + undo, export."""

import asyncio
import json

import pytest
from platform_memory import StoreCrashed, memory_platform

from margin.base import clock
from margin.base.errors import MarginError
from margin.sessions import actions as sessions
from margin.sessions import index as session_index
from margin.sessions.index import stored_entries
from margin.storage import keys as storage
from margin.storage.history import Record
from margin.storage.keys import HISTORY, HISTORY_SESSION_ID, session_body_key, session_digest_key

PIXELS = "data:image/png;base64," + "iVBORw0KGgo" * 500


def run(coro):
    return asyncio.run(coro)


def user(text, image=None):
    if image:
        return {
            "role": "user",
            "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": image}}],
        }
    return {"role": "user", "content": text}


def answer(text):
    return {"role": "assistant", "content": text}


def chat(platform, *records):
    run(platform.local.set({HISTORY: list(records)}))


def new_session(platform):
    return run(sessions.handle_new(platform, {}))["savedId"]


def listed(platform, query=None):
    payload = {} if query is None else {"query": query}
    return run(sessions.handle_list(platform, payload))["sessions"]


@pytest.fixture
def platform():
    return memory_platform()


def test_new_session_saves_the_conversation_with_pixels_and_clears_it(platform):
    chat(platform, user("What is in this photo?", PIXELS), answer("A cat."))
    sid = new_session(platform)
    data = platform.local.snapshot()
    assert data[HISTORY] == [] and data[HISTORY_SESSION_ID] is None
    assert data[session_body_key(sid)]["history"][0]["content"][1]["image_url"]["url"] == PIXELS
    [entry] = stored_entries(data)
    assert entry["name"] == "What is in this photo?"
    # The digest (no image bytes) is stored apart from the index, which keeps its head for the list.
    assert data[session_digest_key(sid)] == "What is in this photo?\nA cat."
    assert entry["digestHead"] == "What is in this photo?\nA cat." and "textDigest" not in entry
    assert new_session(platform) is None  # nothing to save: nothing happens
    assert len(stored_entries(platform.local.snapshot())) == 1


def test_digest_is_capped():
    long_text = "word " * 30_000
    digest = session_index.text_digest([Record.from_json(user(long_text))])
    assert len(digest) == session_index.DIGEST_CAP == 100_000


def test_default_name_is_shortened_on_a_word_boundary():
    name = session_index.shorten(
        "Please summarise the following article about the history of the printing press in Europe"
    )
    assert name == "Please summarise the following article about the history…"
    assert len(name) <= 60


def test_reopened_session_is_updated_not_copied_and_other_bodies_untouched(platform):
    chat(platform, user("first topic"))
    first = new_session(platform)
    chat(platform, user("second topic"))
    second = new_session(platform)
    run(sessions.handle_rename(platform, {"id": first, "name": "My first"}))
    run(sessions.handle_open(platform, {"id": first}))
    assert platform.local.snapshot()[HISTORY_SESSION_ID] == first
    chat(platform, user("first topic"), answer("more on it"))
    platform.local.writes.clear()
    assert new_session(platform) == first
    written = {k for w in platform.local.writes if isinstance(w, dict) for k in w}
    assert session_body_key(second) not in written
    index = {e["id"]: e for e in stored_entries(platform.local.snapshot())}
    assert len(index) == 2
    assert index[first]["name"] == "My first"  # renamed: saving keeps the user's name
    assert "more on it" in platform.local.snapshot()[session_digest_key(first)]
    assert session_digest_key(second) not in written


def test_open_over_a_conversation_margin_cannot_read_keeps_it(platform):
    chat(platform, user("saved one"))
    sid = new_session(platform)
    unreadable = [{"role": "robot", "content": "from an old version"}]
    run(platform.local.set({HISTORY: unreadable}))
    run(sessions.handle_open(platform, {"id": sid}))
    stored = platform.local.snapshot()
    assert stored[HISTORY] == [user("saved one")] and stored[HISTORY_SESSION_ID] == sid
    assert stored["historyUnreadable"] == unreadable


def test_open_saves_the_open_conversation_first(platform):
    chat(platform, user("saved one"))
    saved = new_session(platform)
    chat(platform, user("unsaved work"))
    run(sessions.handle_open(platform, {"id": saved}))
    data = platform.local.snapshot()
    assert data[HISTORY] == [user("saved one")]
    names = [e["name"] for e in stored_entries(data)]
    assert "unsaved work" in names


def test_saving_an_unchanged_conversation_writes_nothing(platform):
    chat(platform, user("same"))
    sid = new_session(platform)
    run(sessions.handle_open(platform, {"id": sid}))
    platform.local.writes.clear()
    other = run(sessions.handle_open(platform, {"id": sid}))
    assert other == {} and platform.local.writes == []


def test_list_is_pinned_first_then_newest_and_never_reads_bodies(platform, monkeypatch):
    ticks = iter(range(1000, 100000, 1000))
    monkeypatch.setattr(clock, "now_ms", lambda: next(ticks))
    ids = []
    for text in ("oldest", "middle", "newest"):
        chat(platform, user(text))
        ids.append(new_session(platform))
    run(sessions.handle_pin(platform, {"id": ids[0], "pinned": True}))
    platform.local.reads.clear()
    names = [s["name"] for s in listed(platform)]
    assert names == ["oldest", "newest", "middle"]
    assert listed(platform, "midd")[0]["name"] == "middle"
    assert not any(k.startswith("session_") for k in platform.local.reads)


def seed(platform, *texts):
    for text in texts:
        chat(platform, user(text))
        new_session(platform)


def test_delete_then_undo_even_after_a_worker_restart(platform, monkeypatch):
    chat(platform, user("keep me", PIXELS))
    sid = new_session(platform)
    body = platform.local.snapshot()[session_body_key(sid)]
    token = run(sessions.handle_delete(platform, {"id": sid}))["undo"]
    assert listed(platform) == []
    # A new worker: no Python state survives, chrome.storage.session does.
    storage._locks.clear()
    run(sessions.handle_undelete(platform, {"undo": token}))
    assert [s["id"] for s in listed(platform)] == [sid]
    assert platform.local.snapshot()[session_body_key(sid)] == body


def test_delete_removes_the_body_after_the_undo_window(platform, monkeypatch):
    chat(platform, user("bye"))
    sid = new_session(platform)
    token = run(sessions.handle_delete(platform, {"id": sid}))["undo"]
    later = clock.now_ms() + sessions.UNDO_MS + 1
    monkeypatch.setattr(clock, "now_ms", lambda: later)
    listed(platform)
    assert session_body_key(sid) not in platform.local.snapshot()
    with pytest.raises(MarginError) as err:
        run(sessions.handle_undelete(platform, {"undo": token}))
    assert err.value.code == "undo_expired"


def test_missing_body_shows_damaged_in_the_list_without_reading_any_body(platform):
    seed(platform, "fragile", "sturdy")
    by_name = {s["name"]: s["id"] for s in listed(platform)}
    run(platform.local.remove([session_body_key(by_name["fragile"])]))  # Chrome lost the key
    platform.local.reads.clear()
    rows = {s["name"]: s for s in listed(platform)}
    assert not any(k.startswith("session_") for k in platform.local.reads)
    assert platform.local.key_listings > 0
    assert rows["fragile"]["damaged"] is True and rows["fragile"]["damagedReason"] == "missing"
    assert rows["sturdy"]["damaged"] is False
    # The mark is in the stored index, where the panel reads it.
    index = {e["id"]: e for e in stored_entries(platform.local.snapshot())}
    assert index[by_name["fragile"]]["damaged"] == "missing"
    assert "damaged" not in index[by_name["sturdy"]]
    # The rest of the list still works: search, open another session.
    assert [s["name"] for s in listed(platform, "sturdy")] == ["sturdy"]
    run(sessions.handle_open(platform, {"id": by_name["sturdy"]}))
    with pytest.raises(MarginError) as err:
        run(sessions.handle_open(platform, {"id": by_name["fragile"]}))
    assert err.value.code == "session_damaged" and "missing" in err.value.message


def test_a_listing_that_finds_nothing_wrong_writes_nothing(platform):
    seed(platform, "one", "two")
    platform.local.writes.clear()
    listed(platform)
    assert platform.local.writes == []


def test_a_body_that_comes_back_is_no_longer_damaged(platform):
    seed(platform, "lost and found")
    sid = listed(platform)[0]["id"]
    body = platform.local.snapshot()[session_body_key(sid)]
    run(platform.local.remove([session_body_key(sid)]))
    assert listed(platform)[0]["damaged"] is True
    run(platform.local.set({session_body_key(sid): body}))
    assert listed(platform)[0]["damaged"] is False


def test_check_does_the_housekeeping_of_a_listing_without_building_the_list(platform, monkeypatch):
    seed(platform, "fragile", "deleted")
    by_name = {s["name"]: s["id"] for s in listed(platform)}
    run(sessions.handle_delete(platform, {"id": by_name["deleted"]}))
    run(platform.local.remove([session_body_key(by_name["fragile"])]))
    later = clock.now_ms() + sessions.UNDO_MS + 1
    monkeypatch.setattr(clock, "now_ms", lambda: later)
    platform.local.reads.clear()
    assert run(sessions.handle_check(platform, {})) == {}
    assert not any(k.startswith("session_") for k in platform.local.reads)
    data = platform.local.snapshot()
    assert session_body_key(by_name["deleted"]) not in data  # the undo window has passed
    [entry] = stored_entries(data)
    assert entry["id"] == by_name["fragile"] and entry["damaged"] == "missing"


def _stored_entry(platform, sid):
    return next(e for e in stored_entries(platform.local.snapshot()) if e["id"] == sid)


def _browser_restarts(platform):
    """chrome.storage.session is cleared when the browser or the extension starts again."""
    run(platform.session.remove(platform.session.stored_keys()))


def test_check_looks_for_lost_bodies_once_per_browser_run(platform):
    seed(platform, "kept", "lost later")
    sid = {s["name"]: s["id"] for s in listed(platform)}["lost later"]
    run(sessions.handle_check(platform, {}))
    run(platform.local.remove([session_body_key(sid)]))  # as Chrome's repair of its database would
    run(sessions.handle_check(platform, {}))
    assert "damaged" not in _stored_entry(platform, sid)  # this run was looked at already
    _browser_restarts(platform)
    run(sessions.handle_check(platform, {}))
    assert _stored_entry(platform, sid)["damaged"] == "missing"


def test_a_check_stopped_before_its_marks_looks_again_next_time(platform):
    seed(platform, "lost")
    sid = listed(platform)[0]["id"]
    run(platform.local.remove([session_body_key(sid)]))
    _browser_restarts(platform)
    platform.local.fail_after_writes = len(platform.local.writes)  # the worker stops at the marks
    with pytest.raises(StoreCrashed):
        run(sessions.handle_check(platform, {}))
    platform.local.revive()
    run(sessions.handle_check(platform, {}))
    assert _stored_entry(platform, sid)["damaged"] == "missing"


def _paused_after_the_look_reads_the_entries(platform, monkeypatch):
    """The check's look paused once it has read every entry: (reading, resume) events."""
    reading, resume = asyncio.Event(), asyncio.Event()
    real_get = platform.local.get

    async def get(keys):
        got = await real_get(keys)
        if len(keys) > 1 and all(k.startswith("sessionEntry_") for k in keys):
            reading.set()
            await resume.wait()
        return got

    monkeypatch.setattr(platform.local, "get", get)
    return reading, resume


def test_the_first_check_of_a_run_looks_without_holding_the_lock(platform, monkeypatch):
    seed(platform, "kept", "lost")
    ids = {s["name"]: s["id"] for s in listed(platform)}
    run(platform.local.remove([session_body_key(ids["lost"])]))
    _browser_restarts(platform)
    reading, resume = _paused_after_the_look_reads_the_entries(platform, monkeypatch)

    async def rename_while_the_check_looks():
        check = asyncio.create_task(sessions.handle_check(platform, {}))
        await reading.wait()
        # Both renames finish while the look is still going: it does not hold the lock.
        for sid, name in ((ids["kept"], "Renamed while it looked"), (ids["lost"], "Lost, renamed")):
            await asyncio.wait_for(sessions.handle_rename(platform, {"id": sid, "name": name}), 1)
        resume.set()
        await check

    run(rename_while_the_check_looks())
    lost = _stored_entry(platform, ids["lost"])
    # Marked from the entry read again under the lock: the rename made meanwhile is kept.
    assert lost["damaged"] == "missing" and lost["name"] == "Lost, renamed"
    assert _stored_entry(platform, ids["kept"])["name"] == "Renamed while it looked"
    assert "damaged" not in _stored_entry(platform, ids["kept"])


def test_a_session_deleted_while_the_check_looks_is_not_marked(platform, monkeypatch):
    seed(platform, "lost, then deleted")
    sid = listed(platform)[0]["id"]
    run(platform.local.remove([session_body_key(sid)]))
    _browser_restarts(platform)
    reading, resume = _paused_after_the_look_reads_the_entries(platform, monkeypatch)
    seed(platform, "another")  # two entries, so the look reads them in one call

    async def delete_while_the_check_looks():
        check = asyncio.create_task(sessions.handle_check(platform, {}))
        await reading.wait()
        await asyncio.wait_for(sessions.handle_delete(platform, {"id": sid}), 1)
        resume.set()
        await check

    run(delete_while_the_check_looks())
    assert "damaged" not in platform.local.snapshot()[storage.session_entry_key(sid)]
    assert sid not in [s["id"] for s in listed(platform)]


def test_a_first_check_that_finds_nothing_wrong_writes_nothing_to_local(platform):
    seed(platform, "one", "two")
    _browser_restarts(platform)
    writes = len(platform.local.writes)
    run(sessions.handle_check(platform, {}))
    assert len(platform.local.writes) == writes
    assert platform.local.key_listings and run(platform.session.get([storage.SESSION_BODIES_CHECKED]))


def test_a_check_asked_to_repair_rebuilds_a_lost_entry_whenever_asked(platform):
    seed(platform, "first", "second")
    sid = listed(platform)[0]["id"]
    run(sessions.handle_check(platform, {}))
    run(platform.local.remove([storage.session_entry_key(sid)]))  # the panel cannot read the index
    run(sessions.handle_check(platform, {"repair": True}))
    assert _stored_entry(platform, sid)["id"] == sid  # rebuilt from its body


def test_undo_after_deleting_the_open_session_links_the_conversation_again(platform):
    chat(platform, user("draft"), answer("ok"))
    sid = new_session(platform)
    run(sessions.handle_open(platform, {"id": sid}))
    token = run(sessions.handle_delete(platform, {"id": sid}))["undo"]
    assert platform.local.snapshot()[HISTORY_SESSION_ID] is None
    run(sessions.handle_undelete(platform, {"undo": token}))
    assert platform.local.snapshot()[HISTORY_SESSION_ID] == sid
    # Saving again updates that session: still one session, its body has the new turn.
    chat(platform, user("draft"), answer("ok"), user("one more"))
    assert new_session(platform) == sid
    index = stored_entries(platform.local.snapshot())
    assert [e["id"] for e in index] == [sid]
    assert platform.local.snapshot()[session_body_key(sid)]["history"][-1] == user("one more")


def test_undo_links_again_even_after_another_turn_in_the_undo_window(platform):
    chat(platform, user("draft"))
    sid = new_session(platform)
    run(sessions.handle_open(platform, {"id": sid}))
    token = run(sessions.handle_delete(platform, {"id": sid}))["undo"]
    history = platform.local.snapshot()[HISTORY]
    run(platform.local.set({HISTORY: [*history, answer("a reply that arrived meanwhile")]}))
    run(sessions.handle_undelete(platform, {"undo": token}))
    assert platform.local.snapshot()[HISTORY_SESSION_ID] == sid


def test_undo_does_not_link_a_different_conversation(platform):
    chat(platform, user("old topic"))
    sid = new_session(platform)
    run(sessions.handle_open(platform, {"id": sid}))
    token = run(sessions.handle_delete(platform, {"id": sid}))["undo"]
    new_session(platform)  # saves the open conversation as a new session and clears it
    chat(platform, user("a new topic"))
    run(sessions.handle_undelete(platform, {"undo": token}))
    data = platform.local.snapshot()
    assert data[HISTORY_SESSION_ID] is None  # saving "a new topic" must not overwrite the old session
    assert sid in {e["id"] for e in stored_entries(data)}


def test_export_markdown_and_json(platform):
    chat(platform, user("Describe this", PIXELS), answer("A **bold** answer."))
    sid = new_session(platform)
    md = run(sessions.handle_export(platform, {"id": sid, "format": "markdown"}))
    assert md["filename"] == "Describe-this.md" and md["mimeType"] == "text/markdown"
    assert md["text"].startswith("# Describe this\n")
    assert "**You:**" in md["text"] and "**Assistant:**" in md["text"]
    assert f"![image]({PIXELS})" in md["text"]
    js = run(sessions.handle_export(platform, {"id": sid, "format": "json"}))
    assert json.loads(js["text"])["history"][0]["content"][1]["image_url"]["url"] == PIXELS


def test_rename_rejects_an_empty_name(platform):
    seed(platform, "x")
    sid = listed(platform)[0]["id"]
    with pytest.raises(MarginError) as err:
        run(sessions.handle_rename(platform, {"id": sid, "name": "   "}))
    assert err.value.code == "bad_name"


def test_unknown_session_says_so(platform):
    with pytest.raises(MarginError) as err:
        run(sessions.handle_open(platform, {"id": "nope"}))
    assert err.value.code == "session_not_found"


# -- rule 4: an action on one session touches the index and that session's keys only ---------------


def test_an_action_on_one_session_reads_and_writes_no_other_sessions_digest_or_body(platform):
    seed(platform, "alpha talk", "beta talk", "gamma talk")
    rows = listed(platform)
    # By name: the seeded sessions may share a savedAt, so their listed order is not fixed.
    target = next(row["id"] for row in rows if row["name"] == "alpha talk")
    others = [row["id"] for row in rows if row["id"] != target]
    chat(platform, user("the open one"))
    foreign = {k for sid in others for k in (session_body_key(sid), session_digest_key(sid))}
    actions = [
        ("rename", lambda: sessions.handle_rename(platform, {"id": target, "name": "Renamed"})),
        ("pin", lambda: sessions.handle_pin(platform, {"id": target, "pinned": True})),
        ("open", lambda: sessions.handle_open(platform, {"id": target})),
        ("export", lambda: sessions.handle_export(platform, {"id": target, "format": "json"})),
        ("delete", lambda: sessions.handle_delete(platform, {"id": target})),
        ("list", lambda: sessions.handle_list(platform, {})),
    ]
    for name, action in actions:
        platform.local.reads.clear()
        platform.local.writes.clear()
        run(action())
        written = {k for w in platform.local.writes if isinstance(w, dict) for k in w}
        assert not foreign & set(platform.local.reads), name
        assert not foreign & written, name
        assert not [k for k in platform.local.reads if k.startswith("sessionDigest_")], name
    # Only a search reads digests, by address.
    platform.local.reads.clear()
    assert [r["name"] for r in listed(platform, "beta")] == ["beta talk"]
    assert {k for k in platform.local.reads if k.startswith("sessionDigest_")} == {
        session_digest_key(e["id"]) for e in stored_entries(platform.local.snapshot())
    }


def test_a_deleted_sessions_digest_goes_with_its_body_after_the_undo_window(platform, monkeypatch):
    seed(platform, "to delete")
    [sid] = [row["id"] for row in listed(platform)]
    run(sessions.handle_delete(platform, {"id": sid}))
    assert session_digest_key(sid) in platform.local.snapshot()  # undo still possible
    now = clock.now_ms()
    monkeypatch.setattr(clock, "now_ms", lambda: now + sessions.UNDO_MS + 1)
    listed(platform)
    stored = platform.local.snapshot()
    assert session_body_key(sid) not in stored and session_digest_key(sid) not in stored
