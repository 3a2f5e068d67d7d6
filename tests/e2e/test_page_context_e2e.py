"""Ask about this page (issue 7), end to end: Attach page, video transcripts with "Seek to"
capsules, Explain from the context menu, refusals, and the wake rules of the site caches.

Witnesses: what the fake provider received, what chrome.storage holds, what the user sees (by the
accessible names of the product contract), and, for wake hygiene, the service-worker targets
Chrome creates, watched over CDP without attaching to the worker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_provider import FakeProvider
from harness import Margin, poll
from web_pages import ARTICLE_PARAGRAPHS, NAV_WORDS, WebPages

# A cold start, then Readability and a Pyodide html.parser pass: seconds on a loaded 2-core machine.
ATTACH_TIMEOUT_MS = 45_000


@pytest.fixture
def web() -> Iterator[WebPages]:
    with WebPages() as pages:
        yield pages


def open_web_page(margin: Margin, url: str, *, video: bool = False):
    page = margin.context.new_page()
    page.goto(url)
    page.wait_for_load_state("load")
    if video:
        page.wait_for_function("() => document.querySelector('video').readyState >= 1", timeout=20_000)
    # The panel is a tab of its own here: the web page must be the active tab of the last focused
    # window, as it is when the real side panel sits beside it.
    page.bring_to_front()
    return page


def attach(panel) -> None:
    panel.get_by_role("button", name="Attach page", exact=True).click()


def card(panel, name_start: str):
    return panel.get_by_role("group", name=name_start)


def wait_attached(margin: Margin, count: int = 1) -> list[dict]:
    return poll(
        lambda: (lambda h: h if sum("attachment" in r for r in h) >= count else None)(margin.history()),
        timeout=ATTACH_TIMEOUT_MS / 1000,
        message=lambda: f"no attachment stored: {margin.history()}",
    )


def status(margin: Margin) -> dict:
    reply = margin.send_message({"type": "sitecache.status", "payload": {}})
    assert reply["ok"], reply
    return reply["value"]


def test_attach_page_sends_the_article_and_not_its_menus_then_reattaches_from_the_cache(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    article = open_web_page(margin, web.url("/article.html"))
    attach(panel)
    card(panel, "Attached page: How rivers carve canyons").wait_for(timeout=ATTACH_TIMEOUT_MS)
    # A card, not a bubble: no user bubble yet, and the box asks about the page.
    assert margin.bubbles(panel, "user").count() == 0
    assert "attached page" in margin.message_box(panel).get_attribute("placeholder")
    (record,) = margin.history()
    assert record["attachment"]["kind"] == "page" and record["attachment"]["site"] == "127.0.0.1"

    fake_provider.script(reply="Mostly floods.")
    margin.send(panel, "Why do canyons form?")
    margin.wait_answer(panel)
    (request,) = fake_provider.wait_for_chat_requests(1)
    messages = request.body["messages"]
    assert [m["role"] for m in messages] == ["user", "user"]
    page_text = messages[0]["content"]
    assert page_text.startswith(
        "[Page context] Page: How rivers carve canyons\nURL: " + web.url("/article.html")
    )
    for paragraph in ARTICLE_PARAGRAPHS:
        assert paragraph in page_text
    assert "## What the layers tell" in page_text and "- Limestone from shallow seas" in page_text
    assert "| Layer | Age (million years) |" in page_text and "| Vishnu schist | 1,750 |" in page_text
    for noise in NAV_WORDS:
        assert noise not in page_text, f"boilerplate reached the model: {noise!r}"
    assert messages[1]["content"] == "Why do canyons form?"

    # "View text" shows exactly what the model got.
    card(panel, "Attached page: How rivers carve canyons").get_by_role("button", name="View text").click()
    viewer = panel.locator("#text-viewer")
    viewer.wait_for(state="visible")
    assert viewer.locator("pre").inner_text().strip() == page_text.strip()
    panel.keyboard.press("Escape")

    # The same unchanged page again: from the site cache, no second extraction.
    article.bring_to_front()
    reply = margin.send_message({"type": "tab.attach", "payload": {}})
    assert reply["ok"] and reply["value"]["fromCache"] is True, reply
    assert status(margin)["tabs"] and status(margin)["listening"] is True


def test_a_video_transcript_is_attached_and_a_capsule_seeks_the_video_in_its_tab(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    video_tab = open_web_page(margin, web.url("/video.html"), video=True)
    attach(panel)
    card(panel, "Attached video: Canyon walk (video)").wait_for(timeout=ATTACH_TIMEOUT_MS)
    (record,) = margin.history()
    assert record["videoSrc"] == web.url("/media/walk.wav")
    assert record["video"]["pageUrl"] == web.url("/video.html") and isinstance(record["video"]["tabId"], int)
    assert web.requests_for("/media/walk.en.vtt") >= 1
    assert "[0:01] Welcome to the canyon walk." in record["content"]
    assert "Look at the red layer on the left." in record["content"]
    assert "[2:05] Here the river turns east" in record["content"]

    fake_provider.script(
        reply="The guide points at the layer at [0:05], and the river turns at 2:05. "
        "In code it stays text: `3:00`."
    )
    margin.send(panel, "When does the river turn?")
    margin.wait_answer(panel)
    answer = margin.bubbles(panel, "assistant").last
    names = answer.get_by_role("button", name="Seek to").evaluate_all(
        "(nodes) => nodes.map((n) => n.getAttribute('aria-label'))"
    )
    assert names == ["Seek to 0:05", "Seek to 2:05"]
    assert answer.locator("code").text_content() == "3:00"

    answer.get_by_role("button", name="Seek to 2:05").click()
    poll(
        lambda: abs(video_tab.evaluate("() => document.querySelector('video').currentTime") - 125) < 0.5,
        timeout=15,
        message=lambda: (
            f"currentTime={video_tab.evaluate('() => document.querySelector(`video`).currentTime')}"
        ),
    )
    # The video's tab came to the front.
    poll(lambda: video_tab.evaluate("() => document.visibilityState") == "visible", timeout=10)

    # Tab gone: the capsule reopens the video file at that time (a media fragment).
    video_tab.close()
    reply = margin.send_message({"type": "video.seek", "payload": {"index": 0, "seconds": 5}})
    assert reply["ok"], reply
    assert reply["value"]["how"] == "reopened" and reply["value"]["url"] == web.url("/media/walk.wav#t=5")
    opened = poll(
        lambda: margin._extension_page().evaluate(
            "(id) => chrome.tabs.get(id).then((t) => t.pendingUrl || t.url, () => null)",
            reply["value"]["tabId"],
        ),
        timeout=15,
    )
    assert opened == web.url("/media/walk.wav#t=5")


def test_explain_from_the_context_menu_answers_the_selection_in_the_open_panel(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    open_web_page(margin, web.url("/article.html"))
    worker = margin.worker()
    # The menu item exists (created at install): updating it succeeds, creating it again does not.
    assert (
        worker.evaluate("""() => new Promise((resolve) => chrome.contextMenus.update('margin-explain', {},
        () => resolve(chrome.runtime.lastError ? chrome.runtime.lastError.message : 'ok')))""")
        == "ok"
    )
    fake_provider.script(reply="Grain by grain means slowly.")
    # Native menus cannot be clicked from a test: call the handler the listener calls.
    worker.evaluate(
        """async (url) => {
        const [tab] = await chrome.tabs.query({url});
        return globalThis.marginExplainClicked({menuItemId: 'margin-explain', selectionText: 'grain by grain', pageUrl: url}, tab);
    }""",
        web.url("/article.html"),
    )
    margin.wait_answer(panel, before=0)
    (request,) = fake_provider.wait_for_chat_requests(1)
    selection, question = request.body["messages"]
    assert selection["content"].startswith(
        "[Page context] Selection from: How rivers carve canyons\nURL: " + web.url("/article.html")
    )
    assert selection["content"].endswith("\n\ngrain by grain")
    assert question["content"] == "Explain this."
    card(panel, "Selected text: How rivers carve canyons").wait_for()
    assert margin.bubble_texts(panel, "user") == ["Explain this."]
    # The request was taken once: nothing is left to answer twice.
    assert margin.storage_get(["explainRequest"], area="session") == {}


def test_pages_margin_cannot_read_get_a_sentence_and_nothing_is_stored(
    configured_margin: Margin, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    settings = margin.context.new_page()
    settings.goto("chrome://version")
    settings.bring_to_front()
    attach(panel)
    assert "Margin can only read web pages" in margin.wait_alert(panel)

    open_web_page(margin, web.url("/empty.html"))
    attach(panel)
    poll(lambda: "no text Margin can read" in margin.wait_alert(panel), timeout=ATTACH_TIMEOUT_MS / 1000)
    assert margin.history() == []


def test_wake_hygiene_no_cache_no_wake_and_the_purge_listener_leaves_with_the_last_entry(
    configured_margin: Margin, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()

    def tab_events(starts, label: str) -> None:
        steps = [
            lambda: pages.append(margin.context.new_page()),  # opened
            lambda: pages[0].goto(web.url("/article.html")),
            lambda: pages[0].goto(web.url("/video.html")),  # navigated
            lambda: pages.append(margin.context.new_page()),
            lambda: pages[1].goto(web.url("/empty.html")),
            lambda: pages[0].bring_to_front(),  # switched
            lambda: pages[1].bring_to_front(),
            lambda: pages[0].close(),  # closed
            lambda: pages[1].close(),
        ]
        pages: list = []
        for step in steps:
            step()
            starts.sample()
        starts.watch_for(1.5)  # a start these caused would have come by now (and lives 30 s)
        assert starts.count == 0, f"{label}: tab events started the worker {starts.count} time(s)"

    # 1. Nothing cached: a stopped worker stays stopped through opens, navigations, switches, closes.
    margin.stop_service_worker()
    starts = margin.watch_worker_starts()
    tab_events(starts, "no cache")
    # The watch does see a start (the positive control): a message wakes the worker.
    assert status(margin) == {"tabs": [], "listening": False}
    poll(lambda: starts.count == 1, timeout=10, message="the watcher saw no start")
    starts.close()

    # 2. A cached tab: closing it purges its entry and removes the listener ...
    article = open_web_page(margin, web.url("/article.html"))
    attach(panel)
    card(panel, "Attached page: How rivers carve canyons").wait_for(timeout=ATTACH_TIMEOUT_MS)
    assert status(margin)["listening"] is True
    article.close()
    poll(
        lambda: status(margin) == {"tabs": [], "listening": False},
        timeout=15,
        message=lambda: f"not purged: {status(margin)}",
    )
    assert [k for k in margin.storage_get(None, area="session") if k.startswith("siteCache_")] == []
    # ... after which the stopped worker again stays stopped.
    margin.stop_service_worker()
    starts = margin.watch_worker_starts()
    tab_events(starts, "after the purge")
    starts.close()


def test_a_cached_tab_closed_while_the_worker_slept_is_dropped_by_the_next_restore(
    configured_margin: Margin, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    article = open_web_page(margin, web.url("/article.html"))
    attach(panel)
    card(panel, "Attached page: How rivers carve canyons").wait_for(timeout=ATTACH_TIMEOUT_MS)
    (cached,) = status(margin)["tabs"]
    margin.stop_service_worker()
    article.close()  # no listener of the stopped worker sees this
    assert status(margin) == {"tabs": [], "listening": False}
    assert f"siteCache_{cached}" not in margin.storage_get(None, area="session")
    # The card is still in the conversation: the cache is only a shortcut.
    assert len(margin.history()) == 1


def test_waiting_cards_can_be_removed_in_any_order(configured_margin: Margin, web: WebPages):
    margin = configured_margin
    panel = margin.open_panel()
    open_web_page(margin, web.url("/article.html"))
    attach(panel)
    card(panel, "Attached page: How rivers carve canyons").wait_for(timeout=ATTACH_TIMEOUT_MS)
    open_web_page(margin, web.url("/video.html"), video=True)
    attach(panel)
    card(panel, "Attached video: Canyon walk (video)").wait_for(timeout=ATTACH_TIMEOUT_MS)
    assert len(margin.history()) == 2
    card(panel, "Attached page: How rivers carve canyons").get_by_role(
        "button", name="Remove attachment"
    ).click()
    poll(
        lambda: [r["attachment"]["kind"] for r in margin.history()] == ["video"],
        timeout=15,
        message=lambda: f"history: {[r.get('attachment') for r in margin.history()]}",
    )
    # The video's card is now first: its Remove must name its new place.
    card(panel, "Attached video: Canyon walk (video)").get_by_role("button", name="Remove attachment").click()
    poll(
        lambda: margin.history() == [],
        timeout=15,
        message=lambda: panel.locator("#alert-text").text_content(),
    )
    card(panel, "Attached video: Canyon walk (video)").wait_for(state="detached")
