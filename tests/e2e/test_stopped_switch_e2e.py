"""A session switch cut by a stopped service worker (issue 11's reliability suite).

Open a session, and stop the worker at a random moment while it switches: whatever moment it is,
after the panel comes back every session's records are what they were, the open conversation is
one whole session (never a mix of two, never half-written), and no body is left that no index
entry or trash entry names. Seeded, so a failure can be replayed.
"""

from __future__ import annotations

import random

from harness import Margin, poll
from stored_sessions import session_entries
from test_sessions_e2e import COLD_S, LEGACY, item, item_names, migrated_panel, open_sessions

NAMES = [entry["name"] for entry in LEGACY]


def bodies(margin: Margin) -> dict[str, list]:
    everything = margin.storage_get(None)
    return {
        k: v["history"] for k, v in everything.items() if k.startswith("session_") and isinstance(v, dict)
    }


def check_whole(margin: Margin, before: dict[str, list]) -> None:
    stored = margin.storage_get(None)
    index = session_entries(margin)
    named = {f"session_{e['id']}" for e in index} | {
        f"session_{t['id']}" for t in stored.get("sessionTrash", [])
    }
    now = bodies(margin)
    assert set(now) <= named, f"bodies no entry names: {set(now) - named}"
    assert now == before, "a session's records changed"
    history = stored.get("history", [])
    assert history == [] or history in before.values(), f"the open conversation is not one session: {history}"
    assert sorted(e["name"] for e in index) == sorted(NAMES)


def test_a_worker_stopped_at_any_moment_of_a_switch_leaves_every_session_whole(margin: Margin):
    rng = random.Random(11)
    page = migrated_panel(margin)
    before = bodies(margin)
    assert len(before) == len(LEGACY)
    for name in rng.sample(NAMES, 4):
        delay_ms = rng.randrange(0, 600)
        item(page, name).get_by_role("button", name="Open").click()
        page.wait_for_timeout(delay_ms)
        margin.stop_service_worker()
        check_whole(margin, before)
        page.reload()
        open_sessions(page)
        poll(
            lambda: sorted(item_names(page)) == sorted(NAMES),
            timeout=COLD_S,
            message=lambda: item_names(page),
        )
        check_whole(margin, before)
    # And the switch still works after all that.
    last = NAMES[0]
    item(page, last).get_by_role("button", name="Open").click()
    wanted = next(e["history"] for e in LEGACY if e["name"] == last)
    poll(lambda: margin.history() == wanted, timeout=COLD_S, message=lambda: f"history {margin.history()}")
    check_whole(margin, before)
