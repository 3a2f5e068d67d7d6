"""Sync's merge rules (margin.sync.merge), every pair of changes made on two machines apart:
create, edit, rename, pin, delete on one side against each on the other. Both machines sync (A,
then B, then A): they must converge, and nothing either made may be lost."""

from __future__ import annotations

import itertools

import pytest
from fake_webdav import FakeDav
from sync_devices import (
    add_question,
    delete_for_good,
    device,
    pin,
    quick_keys,
    rename,
    save,
    sessions,
    shared_session,
    sync,
    ticking_clock,
)

OPERATIONS = ("none", "edit", "rename", "pin", "delete")


@pytest.fixture(autouse=True)
def quick_keys_and_a_ticking_clock(monkeypatch):
    quick_keys(monkeypatch)
    ticking_clock(monkeypatch)


def apply(platform, sid, operation, side, monkeypatch):
    if operation == "edit":
        add_question(platform, sid, f"more from {side}")
    elif operation == "rename":
        rename(platform, sid, f"Named on {side}")
    elif operation == "pin":
        pin(platform, sid)
    elif operation == "delete":
        delete_for_good(platform, sid, monkeypatch)


def expected(a: str, b: str) -> list[dict]:
    """What both machines hold after A syncs, then B, then A (docs/storage-model.md, "Sync")."""
    name, pinned, questions = "first question", False, ["first question"]
    ops = {a, b}
    if a == b == "delete" or (ops <= {"delete", "none"} and "delete" in ops):
        return []
    if "rename" in ops:
        name = "Named on B" if b == "rename" else "Named on A"
    if "pin" in ops:
        pinned = True
    if a == b == "edit":
        # Both edited: B's is the later save, so it stays the session; A's is the conflict copy.
        return [
            {"name": name, "pinned": pinned, "questions": [*questions, "more from B"]},
            {
                "name": "first question (conflict copy)",
                "pinned": False,
                "questions": [*questions, "more from A"],
            },
        ]
    if "edit" in ops:
        questions = [*questions, "more from " + ("A" if a == "edit" else "B")]
    return [{"name": name, "pinned": pinned, "questions": questions}]


def shown(platform):
    return sorted(sessions(platform).values(), key=lambda s: s["name"])


@pytest.mark.parametrize(("on_a", "on_b"), list(itertools.product(OPERATIONS, OPERATIONS)))
def test_every_pair_of_changes_converges_and_loses_nothing(on_a, on_b, monkeypatch):
    _, a, b, sid = shared_session("first question")
    apply(a, sid, on_a, "A", monkeypatch)
    apply(b, sid, on_b, "B", monkeypatch)
    sync(a)
    sync(b)
    sync(a)
    want = sorted(expected(on_a, on_b), key=lambda s: s["name"])
    assert shown(a) == want
    assert shown(b) == want
    assert set(sessions(a)) == set(sessions(b))  # the same ids: a conflict copy is made once


def test_sessions_created_on_both_sides_apart_both_arrive_on_both():
    dav = FakeDav()
    a, b = device(dav), device(dav)
    save(a, "made on A")
    save(b, "made on B")
    sync(a), sync(b), sync(a)
    names = ["made on A", "made on B"]
    assert sorted(s["name"] for s in sessions(a).values()) == names
    assert sorted(s["name"] for s in sessions(b).values()) == names


def test_a_delete_still_in_its_undo_window_is_not_synced_and_undo_keeps_the_session():
    from sync_devices import run

    from margin.sessions import actions

    _, a, b, sid = shared_session("keep me")
    token = run(actions.handle_delete(a, {"id": sid}))["undo"]
    sync(a)
    sync(b)
    assert sid in sessions(b)  # not deleted there while A may still undo
    run(actions.handle_undelete(a, {"undo": token}))
    sync(a)
    assert sid in sessions(a) and sid in sessions(b)


def test_a_conflict_copy_is_made_once_even_when_the_run_is_repeated_from_the_start():
    _, a, b, sid = shared_session("q")
    add_question(a, sid, "from A")
    add_question(b, sid, "from B")
    sync(a)
    sync(b)
    sync(b)
    sync(a)
    sync(b)
    assert len(sessions(a)) == len(sessions(b)) == 2
