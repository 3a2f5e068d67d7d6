"""History survives a stopped service worker, the panel paints it, and the next send boots Python cold."""

from __future__ import annotations

from fake_provider import FakeProvider
from harness import Margin, poll


def test_history_survives_a_stopped_worker_and_the_next_send_works(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    page = margin.open_panel()
    fake_provider.script(reply="I will **remember** that.")
    margin.send(page, "Remember the number 42")
    margin.wait_answer(page)
    page.close()

    margin.stop_service_worker()
    assert not margin.worker_running()

    page = margin.open_panel()
    assert margin.bubble_texts(page) == ["Remember the number 42", "I will remember that."]
    assert margin.bubbles(page, "assistant").locator("strong").inner_text() == "remember"

    margin.send(page, "What number?")
    answer = margin.wait_answer(page)
    assert answer.strip() == "You said: What number?"
    assert margin.worker_running()

    last = fake_provider.wait_for_chat_requests(2)[-1]
    sent = [(m["role"], m["content"]) for m in last.body["messages"] if m["role"] != "system"]
    assert sent == [
        ("user", "Remember the number 42"),
        ("assistant", "I will **remember** that."),
        ("user", "What number?"),
    ]
    assert [r["role"] for r in margin.history()] == ["user", "assistant", "user", "assistant"]


def test_the_panel_paints_history_while_the_worker_is_stopped(margin: Margin):
    seeded = [
        {"role": "user", "content": "Seeded question"},
        {"role": "assistant", "content": "Seeded *answer* with `code`."},
    ]
    margin.storage_set({"history": seeded})
    margin.stop_service_worker()
    page = margin.open_panel()
    assert margin.bubble_texts(page) == ["Seeded question", "Seeded answer with code."]
    assert margin.bubbles(page, "assistant").locator("em").inner_text() == "answer"


def test_a_cold_start_shows_starting_python_then_clears_it(margin: Margin):
    # Without its memory snapshot (a new version before its first boot), Python takes seconds.
    margin.stop_service_worker()
    margin.delete_snapshots()
    page = margin.open_panel()
    status = page.get_by_role("status").filter(has_text="Starting Python")
    status.wait_for(state="visible", timeout=5_000)
    status.wait_for(state="hidden", timeout=60_000)
    assert margin.bubbles(page).count() == 0
    # The panel is usable afterwards: the message box takes text.
    margin.message_box(page).fill("hello")


def test_starting_python_comes_and_goes_over_the_conversation_without_moving_a_bubble(margin: Margin):
    margin.storage_set(
        {
            "history": [
                {"role": r, "content": f"{r.title()} message {i}"}
                for i in range(12)
                for r in ("user", "assistant")
            ]
        }
    )
    margin.stop_service_worker()
    margin.delete_snapshots()  # a first boot: seconds of "Starting Python…"
    page = margin.open_panel()
    newest = margin.bubbles(page).last
    status = page.get_by_role("status").filter(has_text="Starting Python")
    status.wait_for(state="visible", timeout=5_000)
    page.wait_for_timeout(100)  # a frame with the bar drawn
    while_starting = newest.bounding_box()
    bar = page.locator("#python-status").bounding_box()
    status.wait_for(state="hidden", timeout=60_000)
    page.wait_for_timeout(100)
    assert newest.bounding_box() == while_starting
    assert bar["y"] + bar["height"] <= while_starting["y"], "the bar covers the newest message"


def test_python_boots_at_install_and_the_next_cold_start_restores_its_memory_snapshot(margin: Margin):
    # The install event starts Python and stores its snapshot before any page asked for anything.
    poll(
        lambda: margin.snapshot_count() == 1,
        timeout=60,
        message="no memory snapshot was stored after install",
    )
    first = margin.send_message({"type": "app.ping", "payload": {}})
    assert first["ok"] and first["value"]["bootedFrom"] == "fresh"

    margin.stop_service_worker()
    again = margin.send_message({"type": "app.ping", "payload": {}})
    assert again["ok"] and again["value"]["bootedFrom"] == "snapshot", again
    assert again["value"]["bootMs"] < first["value"]["bootMs"]

    # A request that needs the rest of the backend works after a restore too.
    state = margin.send_message({"type": "app.state", "payload": {}})
    assert state["ok"] and state["value"]["savedSessions"] == []
