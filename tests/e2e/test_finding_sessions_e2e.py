"""Finding an old conversation, as a user searches for it (issue 35, item 3): a query matches where
words start ("PARIS" does not find "comparison", "rray" not "array") and is highlighted there;
CJK, written without spaces, still matches inside a run; previews are plain text, not Markdown;
each row says when the conversation was last used, not when it was put away; and the open
conversation is the list's first row, "Current conversation".

Driven by the accessible names of docs/interface.md; the sessions are seeded in an older layout
(inline histories), which the first listing migrates, as a profile from an older Margin would be.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from harness import Margin, poll

COLD_S = 45
DAY_MS = 86_400_000


def legacy(sid, name, created, history):
    return {"id": sid, "name": name, "createdAt": created, "pinned": False, "history": history}


def user(text, at=None):
    return {"role": "user", "content": text, **({"createdAt": at} if at else {})}


def answer(text, at=None):
    return {"role": "assistant", "content": text, **({"createdAt": at} if at else {})}


NOW_MS = int(time.time() * 1000)
THREE_DAYS_AGO = NOW_MS - 3 * DAY_MS - 60_000

SESSIONS = [
    legacy("paris", "Weekend plans", NOW_MS - 5000, [user("A weekend in PARIS?"), answer("Yes, in spring.")]),
    legacy(
        "arrays",
        "Sorting",
        NOW_MS - 4000,
        [
            user("Give me a comparison of sorted arrays"),
            answer("Here are **three** ways:\n\n| Way | Cost |\n|---|---|\n| merge | n log n |"),
        ],
    ),
    legacy(
        "tokyo", "夜景", NOW_MS - 3000, [user("東京タワーの夜景はきれいですか"), answer("はい、とても。")]
    ),
    # Put away just now, last used three days ago.
    legacy(
        "old",
        "Garden",
        NOW_MS - 1000,
        [user("When do I plant tulips?", THREE_DAYS_AGO - 1000), answer("In autumn.", THREE_DAYS_AGO)],
    ),
]


def region(page):
    return page.get_by_role("region", name="Sessions")


def items(page):
    return region(page).get_by_role("listitem")


def names(page) -> list[str]:
    return items(page).locator(".sp-name").all_inner_texts()


def open_sessions(page):
    page.get_by_role("button", name="Sessions", exact=True).click()
    box = page.get_by_role("searchbox", name="Search sessions")
    box.wait_for(state="visible", timeout=15_000)
    return box


def seeded_panel(margin: Margin):
    margin.storage_set({"savedSessions": SESSIONS})
    page = margin.open_panel()
    box = open_sessions(page)
    poll(
        lambda: items(page).count() == len(SESSIONS), timeout=COLD_S, message=lambda: f"listed {names(page)}"
    )
    return page, box


def search(page, box, query, expected):
    box.fill(query)
    poll(
        lambda: names(page) == expected,
        timeout=10,
        message=lambda: f"{query!r} listed {names(page)}, not {expected}",
    )


def marks(page) -> list[str]:
    return region(page).locator("mark").all_inner_texts()


def test_a_query_matches_where_words_start_and_is_highlighted_there(margin: Margin):
    page, box = seeded_panel(margin)
    search(page, box, "PARIS", ["Weekend plans"])  # not "Sorting", whose "comparison" holds "paris"
    poll(lambda: marks(page) == ["PARIS"], timeout=10, message=lambda: f"highlighted {marks(page)}")
    search(page, box, "rray", [])
    assert region(page).locator(".sp-empty").inner_text() == "No session matches \u201crray\u201d."
    search(page, box, "arr", ["Sorting"])
    poll(lambda: marks(page) == ["arr"], timeout=10, message=lambda: f"highlighted {marks(page)}")
    # CJK has no spaces: a run inside a sentence still matches, and is highlighted.
    search(page, box, "タワー", ["夜景"])
    poll(lambda: marks(page) == ["タワー"], timeout=10, message=lambda: f"highlighted {marks(page)}")
    box.fill("")  # cleared: every session again
    poll(
        lambda: items(page).count() == len(SESSIONS), timeout=10, message="clearing did not restore the list"
    )


def test_previews_are_plain_text_and_dates_say_when_it_was_last_used(margin: Margin):
    page, box = seeded_panel(margin)
    sorting = items(page).filter(has=page.locator(".sp-name", has_text="Sorting"))
    preview = sorting.locator(".sp-preview").inner_text()
    assert preview.startswith("Give me a comparison of sorted arrays Here are three ways")
    assert "**" not in preview and "|" not in preview and "---" not in preview
    search(page, box, "merge", ["Sorting"])
    preview = sorting.locator(".sp-preview").inner_text()
    assert "merge n log n" in preview and "|" not in preview, preview
    assert marks(page) == ["merge"]

    # Put away seconds ago, last used three days ago: the row says three days, and sorts by it.
    box.fill("")
    poll(lambda: items(page).count() == len(SESSIONS), timeout=10, message="the list did not come back")
    assert names(page)[-1] == "Garden"
    garden = items(page).filter(has=page.locator(".sp-name", has_text="Garden")).locator("time")
    assert garden.inner_text() == "3 days ago"
    shown = datetime.fromisoformat(garden.get_attribute("datetime").replace("Z", "+00:00"))
    assert abs(shown.timestamp() * 1000 - THREE_DAYS_AGO) < 1000
    assert datetime.fromtimestamp(THREE_DAYS_AGO / 1000, UTC).year == shown.year
    entry = margin.storage_get(["sessionEntry_old"])["sessionEntry_old"]
    assert entry["activeAt"] == THREE_DAYS_AGO  # written by the migration, read from the records


def test_the_open_conversation_is_the_first_row(configured_margin: Margin):
    margin = configured_margin
    margin.storage_set({"savedSessions": SESSIONS[:1]})
    page = margin.open_panel()
    margin.send(page, "Which otters live in rivers?")
    margin.wait_answer(page)
    box = open_sessions(page)
    poll(
        lambda: names(page) == ["Which otters live in rivers?", "Weekend plans"],
        timeout=COLD_S,
        message=lambda: f"listed {names(page)}",
    )
    current = items(page).first
    assert current.get_by_text("Current conversation", exact=True).count() == 1
    # Not saved yet: nothing to open, rename, pin, delete or export.
    assert current.get_by_role("button").count() == 0
    assert items(page).nth(1).get_by_role("button", name="Open").count() == 1
    # It is searched like the others.
    search(page, box, "otters", ["Which otters live in rivers?"])
    search(page, box, "weekend", ["Weekend plans"])

    # Put away: it is a saved session now, with "Open"; nothing is current.
    region(page).get_by_role("button", name="Close").click()
    page.get_by_role("button", name="New session").click()
    poll(lambda: margin.history() == [], timeout=COLD_S, message="the conversation did not clear")
    box = open_sessions(page)
    box.fill("")
    poll(
        lambda: (
            names(page) == ["Which otters live in rivers?", "Weekend plans"]
            and region(page).get_by_text("Current conversation", exact=True).count() == 0
        ),
        timeout=COLD_S,
        message=lambda: f"listed {names(page)}",
    )
    otters = items(page).first
    otters.get_by_role("button", name="Open").click()
    poll(
        lambda: margin.bubble_texts(page, "user") == ["Which otters live in rivers?"],
        timeout=COLD_S,
        message="the session did not open",
    )

    # Opened again: its own row is the current one (one row, not two), and keeps its tools.
    open_sessions(page)
    poll(
        lambda: (
            names(page) == ["Which otters live in rivers?", "Weekend plans"]
            and items(page).first.get_by_text("Current conversation", exact=True).count() == 1
        ),
        timeout=COLD_S,
        message=lambda: f"listed {names(page)}",
    )
    first = items(page).first
    assert first.get_by_role("button", name="Open").count() == 0
    assert first.get_by_role("button", name="Rename").count() == 1
    assert margin.launched.page_errors == []
