"""Sessions in the real extension: the legacy migration, new/open/update, search, rename, pin,
delete + undo, export, a damaged session, and a backup carried into a fresh browser profile.

Driven by the accessible names of docs/interface.md ("New session", "Sessions", "Search sessions",
one listitem per session with "Open", "Rename", "Pin"/"Unpin", "Delete", "Export"); checked
against what chrome.storage holds and what the downloaded files say.
"""

from __future__ import annotations

import base64
import io
import json
import re

import pytest
from harness import Margin, launch, poll
from stored_sessions import session_entries

COLD_S = 45


def png_data_url(seed: int = 7) -> str:
    """A small real PNG that does not compress to nothing."""
    import random

    from PIL import Image

    rng = random.Random(seed)
    image = Image.new("RGB", (48, 32))
    image.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(48 * 32)])
    out = io.BytesIO()
    image.save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")


IMAGE = png_data_url()


def user(text, image=None):
    if image:
        return {
            "role": "user",
            "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": image}}],
        }
    return {"role": "user", "content": text}


def answer(text):
    return {"role": "assistant", "content": text}


def legacy(sid, name, created, history, pinned=False):
    """The legacy format (docs/storage-model.md, "Saved sessions"): the whole snapshot inline, no textDigest, no body key."""
    return {"id": sid, "name": name, "createdAt": created, "pinned": pinned, "history": history}


LEGACY = [
    legacy(
        1700000000001,
        "Trip to Lyon",
        1700000000001,
        [user("Where should I eat in Lyon?"), answer("Try a bouchon near Saint-Jean.")],
        pinned=True,
    ),
    legacy(
        "s2",
        "A chart",
        1700000000002,
        [{**user("What does this chart show?", IMAGE), "imagesSeen": True}, answer("Sales by quarter.")],
    ),
    legacy(
        "s3",
        "Встреча",
        1700000000003,
        [user("Привет, как дела? Встреча в Москве завтра."), answer("Хорошо.")],
    ),
    legacy("s4", "Un café", 1700000000004, [user("Un café à Paris, s'il vous plaît"), answer("Voilà.")]),
    legacy("s5", "你好", 1700000000005, [user("你好世界，今天天气很好"), answer("是的。")]),
    legacy("s6", "Walk", 1700000000006, [user("Die Straße entlang bis zum Park"), answer("Gut.")]),
]


# --- helpers ------------------------------------------------------------------------------------


def sessions_region(page):
    return page.get_by_role("region", name="Sessions")


def open_sessions(page):
    page.get_by_role("button", name="Sessions", exact=True).click()
    page.get_by_role("searchbox", name="Search sessions").wait_for(state="visible", timeout=15_000)
    return sessions_region(page)


def items(page):
    return sessions_region(page).get_by_role("listitem")


def item(page, name):
    return items(page).filter(has=page.locator(".sp-name", has_text=name))


def item_names(page) -> list[str]:
    return items(page).locator(".sp-name").all_inner_texts()


def wait_names(page, expected, timeout=COLD_S):
    poll(
        lambda: item_names(page) == expected,
        timeout=timeout,
        message=lambda: f"sessions listed {item_names(page)}, expected {expected}",
    )


def index_of(margin: Margin) -> list[dict]:
    return session_entries(margin)


def body_of(margin: Margin, sid: str):
    key = f"session_{sid}"
    return margin.storage_get([key]).get(key)


def digest_of(margin: Margin, sid: str):
    """The session's search digest, kept apart from the index (docs/storage-model.md, "Saved sessions")."""
    key = f"sessionDigest_{sid}"
    return margin.storage_get([key]).get(key)


def seed_legacy(margin: Margin, entries=LEGACY) -> None:
    margin.storage_set({"savedSessions": entries})


def migrated_panel(margin: Margin, entries=LEGACY):
    """Legacy sessions seeded, the panel and its sessions panel open, the migration done."""
    seed_legacy(margin, entries)
    page = margin.open_panel()
    open_sessions(page)
    poll(
        lambda: items(page).count() == len(entries),
        timeout=COLD_S,
        message=lambda: f"listed {item_names(page)}",
    )
    return page


def download_text(page, click) -> tuple[str, str]:
    with page.expect_download(timeout=COLD_S * 1000) as info:
        click()
    download = info.value
    with open(download.path(), encoding="utf-8") as handle:
        return download.suggested_filename, handle.read()


# --- the tests ----------------------------------------------------------------------------------


def test_legacy_sessions_are_migrated_to_bodies_and_all_listed(margin: Margin):
    page = migrated_panel(margin)
    assert sorted(item_names(page)) == sorted(e["name"] for e in LEGACY)
    assert item_names(page)[0] == "Trip to Lyon"  # pinned first

    index = index_of(margin)
    assert [e["id"] for e in index] == ["1700000000001", "s2", "s3", "s4", "s5", "s6"]
    for old, entry in zip(LEGACY, index, strict=True):
        assert "history" not in entry
        assert entry["name"] == old["name"] and entry["createdAt"] == old["createdAt"]
        assert entry["pinned"] is old["pinned"]
        body = body_of(margin, entry["id"])
        assert body is not None, f"no session_{entry['id']} body"
        assert body["history"] == old["history"]  # the exact records
        texts = [
            r["content"] if isinstance(r["content"], str) else r["content"][0]["text"] for r in old["history"]
        ]
        assert digest_of(margin, entry["id"]) == "\n".join(texts)
        assert "textDigest" not in entry and entry["digestHead"] == "\n".join(texts)[:140]
    chart = body_of(margin, "s2")["history"][0]["content"][1]["image_url"]["url"]
    assert chart == IMAGE  # byte-identical pixels
    assert IMAGE not in json.dumps(index)  # the index is light


def test_new_session_then_open_it_and_save_again_updates_it(configured_margin: Margin):
    margin = configured_margin
    page = margin.open_panel()
    margin.send(page, "Tell me about otters")
    margin.wait_answer(page)

    page.get_by_role("button", name="New session").click()
    poll(
        lambda: margin.bubbles(page).count() == 0 and margin.history() == [],
        timeout=COLD_S,
        message=lambda: f"the conversation did not clear: {margin.bubble_texts(page)}",
    )
    open_sessions(page)
    wait_names(page, ["Tell me about otters"])
    [first] = index_of(margin)

    item(page, "Tell me about otters").get_by_role("button", name="Open").click()
    poll(
        lambda: margin.bubble_texts(page, "user") == ["Tell me about otters"],
        timeout=COLD_S,
        message=lambda: f"the conversation did not come back: {margin.bubble_texts(page)}",
    )
    assert margin.bubbles(page, "assistant").count() == 1

    margin.send(page, "And beavers?")
    margin.wait_answer(page)
    page.get_by_role("button", name="New session").click()
    poll(lambda: margin.history() == [], timeout=COLD_S, message="the conversation did not clear")

    index = index_of(margin)
    assert [e["id"] for e in index] == [first["id"]], f"a copy was made: {index}"
    body = body_of(margin, first["id"])["history"]
    assert [r["role"] for r in body] == ["user", "assistant", "user", "assistant"]
    assert body[2]["content"] == "And beavers?"
    assert "And beavers?" in digest_of(margin, first["id"])
    open_sessions(page)
    wait_names(page, ["Tell me about otters"])


@pytest.mark.parametrize(
    "query, name, highlighted",
    [
        ("москве", "Встреча", "Москве"),
        ("CAFE", "Un café", "café"),
        ("世界", "你好", "世界"),
        ("strasse", "Walk", "Straße"),
    ],
)
def test_search_narrows_as_you_type_and_highlights(margin: Margin, query, name, highlighted):
    page = migrated_panel(margin)
    box = page.get_by_role("searchbox", name="Search sessions")
    box.press_sequentially(query, delay=30)
    wait_names(page, [name], timeout=10)
    # The list may already be narrowed by the first characters typed: wait for the last one.
    marks = item(page, name).locator("mark")
    poll(
        lambda: highlighted in marks.all_inner_texts(),
        timeout=10,
        message=lambda: f"{highlighted!r} not highlighted: {marks.all_inner_texts()}",
    )
    box.fill("")
    poll(
        lambda: items(page).count() == len(LEGACY),
        timeout=10,
        message="clearing the search did not restore the list",
    )


MANY = [
    legacy(
        f"m{i:02d}", f"Meeting {i:02d}", 1700000000100 + i, [user(f"Notes of meeting {i:02d}"), answer("ok")]
    )
    for i in range(25)
]


def test_a_long_list_and_its_matches_are_all_reached_by_scrolling(margin: Margin):
    """Each keystroke builds only the rows a panel shows; the rest come as the list scrolls."""
    seed_legacy(margin, MANY)
    page = margin.open_panel()
    open_sessions(page)

    def scrolled_rows():
        # Read and scrolled in one turn of the page: a re-render (a keystroke, the search copy's
        # digests arriving) replaces the rows, so rows read by one Playwright call can be gone by
        # the next (CI saw a row detached, and 25 names then 10 marked rows).
        return sessions_region(page).evaluate(
            """region => {
                const rows = [...region.querySelectorAll('[role=listitem]')];
                // The list's end, past the last row: where a reader's scroll brings the next page.
                rows.at(-1)?.parentElement.lastElementChild.scrollIntoView({block: 'end'});
                return rows.map((row) => ({name: row.querySelector('.sp-name')?.textContent,
                                           marked: !!row.querySelector('.sp-preview mark')}));
            }"""
        )

    newest_first = [f"Meeting {i:02d}" for i in reversed(range(25))]
    seen: list = []

    def reached(marked):
        seen[:] = scrolled_rows()
        return [r["name"] for r in seen] == newest_first and all(r["marked"] == marked for r in seen)

    poll(lambda: reached(False), timeout=COLD_S, message=lambda: f"listed {seen}")
    page.get_by_role("searchbox", name="Search sessions").fill("notes meeting")
    # The unsearched list has the same rows: the search's own are known by their marks, every one
    # of them, the rows built as the list scrolls too.
    poll(lambda: reached(True), timeout=COLD_S, message=lambda: f"matches listed {seen}")


THREE = [
    legacy("a", "Alpha", 1700000000001, [user("alpha text"), answer("first answer")]),
    legacy("b", "Beta", 1700000000002, [user("beta text"), answer("second answer")]),
    legacy(
        "g",
        "Gamma",
        1700000000003,
        [user("Gamma: describe this picture", IMAGE), answer("A **noisy** picture.")],
    ),
]


def test_rename_pin_delete_undo_and_export(margin: Margin):
    page = migrated_panel(margin, THREE)
    wait_names(page, ["Gamma", "Beta", "Alpha"])  # newest first

    item(page, "Alpha").get_by_role("button", name="Pin", exact=True).click()
    wait_names(page, ["Alpha", "Gamma", "Beta"])
    assert item(page, "Alpha").get_by_role("button", name="Unpin").is_visible()
    item(page, "Alpha").get_by_role("button", name="Unpin").click()
    wait_names(page, ["Gamma", "Beta", "Alpha"])

    item(page, "Beta").get_by_role("button", name="Rename").click()
    field = sessions_region(page).get_by_role("textbox", name="Session name")
    field.fill("Beta, renamed")
    field.press("Enter")
    wait_names(page, ["Gamma", "Beta, renamed", "Alpha"])
    renamed = next(e for e in index_of(margin) if e["id"] == "b")
    assert renamed["name"] == "Beta, renamed" and renamed.get("named") is True

    # Export before deleting: Markdown and JSON, with the conversation in them.
    gamma = item(page, "Gamma")
    gamma.get_by_role("button", name="Export").click()
    name, text = download_text(page, lambda: gamma.get_by_role("menuitem", name="Markdown").click())
    assert name.endswith(".md")
    assert "Gamma: describe this picture" in text and "A **noisy** picture." in text and IMAGE in text
    gamma.get_by_role("button", name="Export").click()
    name, text = download_text(page, lambda: gamma.get_by_role("menuitem", name="JSON").click())
    assert name.endswith(".json")
    exported = json.loads(text)
    assert exported["history"] == THREE[2]["history"]

    item(page, "Gamma").get_by_role("button", name="Delete").click()
    wait_names(page, ["Beta, renamed", "Alpha"], timeout=10)
    page.get_by_role("button", name="Undo").click()
    wait_names(page, ["Gamma", "Beta, renamed", "Alpha"])
    assert body_of(margin, "g")["history"] == THREE[2]["history"]

    item(page, "Gamma").get_by_role("button", name="Delete").click()
    wait_names(page, ["Beta, renamed", "Alpha"], timeout=10)
    assert body_of(margin, "g") is not None  # kept for the undo window
    poll(
        lambda: body_of(margin, "g") is None,
        timeout=25,
        message="the body was not removed after the undo window",
    )
    assert "g" not in [e["id"] for e in index_of(margin)]
    assert body_of(margin, "a") is not None and body_of(margin, "b") is not None


def test_a_missing_body_shows_as_damaged_and_the_list_still_works(margin: Margin):
    migrated_panel(margin, THREE).close()
    # Chrome lost it as it repaired its database at a browser start, which clears the session area.
    margin._extension_page().evaluate(
        "() => Promise.all([chrome.storage.local.remove('session_b'), chrome.storage.session.clear()])"
    )

    page = margin.open_panel()
    open_sessions(page)
    beta = item(page, "Beta")
    beta.locator(".sp-badge-damaged").wait_for(state="visible", timeout=COLD_S * 1000)
    assert "damaged" in beta.inner_text()
    assert next(e for e in index_of(margin) if e["id"] == "b")["damaged"] == "missing"
    wait_names(page, ["Gamma", "Beta", "Alpha"])

    box = page.get_by_role("searchbox", name="Search sessions")
    box.fill("alpha")
    wait_names(page, ["Alpha"], timeout=10)
    box.fill("")
    item(page, "Beta").get_by_role("button", name="Open").click()
    assert "missing" in margin.wait_alert(page)
    item(page, "Alpha").get_by_role("button", name="Open").click()
    poll(
        lambda: margin.bubble_texts(page, "user") == ["alpha text"],
        timeout=COLD_S,
        message=lambda: f"Alpha did not open: {margin.bubble_texts(page)}",
    )


def test_backup_export_then_import_into_a_fresh_profile(
    configured_margin: Margin, playwright_instance, dist_dir, tmp_path, provider_config
):
    margin = configured_margin
    page = migrated_panel(margin, THREE)
    region = sessions_region(page)

    _, without_keys = download_text(page, lambda: region.get_by_role("button", name="Export backup").click())
    backup = json.loads(without_keys)
    assert backup["format"] == "margin-backup"
    assert [p["apiKey"] for p in backup["settings"]["providers"]] == [""]
    assert provider_config["apiKey"] not in without_keys
    region.get_by_role("checkbox", name="Include API keys").check()
    _, with_keys = download_text(page, lambda: region.get_by_role("button", name="Export backup").click())
    assert [p["apiKey"] for p in json.loads(with_keys)["settings"]["providers"]] == [
        provider_config["apiKey"]
    ]

    good = tmp_path / "margin-backup.json"
    good.write_text(with_keys, encoding="utf-8")
    truncated = tmp_path / "truncated.json"
    truncated.write_text(with_keys[: len(with_keys) // 2], encoding="utf-8")
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"hello": "world"}), encoding="utf-8")

    fresh = launch(playwright_instance, dist_dir)
    try:
        other = Margin(fresh)
        page2 = other.open_panel()
        region2 = open_sessions(page2)
        empty = region2.get_by_text("No saved sessions yet")
        empty.wait_for(state="visible", timeout=COLD_S * 1000)

        def import_file(path):
            with page2.expect_file_chooser() as chooser:
                region2.get_by_role("button", name="Import backup").click()
            chooser.value.set_files(str(path))

        import_file(good)
        status = region2.get_by_role("status").filter(has_text=re.compile("Added"))
        status.wait_for(state="visible", timeout=COLD_S * 1000)
        assert "Added 3 sessions" in status.inner_text()
        wait_names(page2, ["Gamma", "Beta", "Alpha"])
        assert body_of(other, "g")["history"] == THREE[2]["history"]  # pixels included
        assert [p["apiKey"] for p in other.storage_get(["providers"])["providers"]] == [
            provider_config["apiKey"]
        ]

        import_file(truncated)
        sentence = other.wait_alert(page2)
        assert "incomplete" in sentence and "Export the backup again" in sentence
        import_file(foreign)
        poll(
            lambda: "not a Margin backup" in other.wait_alert(page2),
            timeout=10,
            message="no alert for a foreign file",
        )
        wait_names(page2, ["Gamma", "Beta", "Alpha"])  # nothing lost or added
        assert len(session_entries(other)) == 3
        assert fresh.page_errors == []
        assert fresh.csp_violations == []
    finally:
        fresh.close()
