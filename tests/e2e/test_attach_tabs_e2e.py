"""Attach tabs (issue 30), end to end: three web tabs open, two ticked in the dialog "Attach tabs",
two cards, and the model gets both pages and not the third; a tab that cannot be read is named in
the alert while the others attach; the dialog by keyboard alone (focus kept inside it, Escape
gives it back), and axe-core finds nothing in it, light and dark.

Witnesses: what the fake provider received, what chrome.storage holds, and what the user sees and
reaches, by the accessible names of docs/interface.md.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from a11y import violations
from fake_provider import FakeProvider
from harness import COLD_TIMEOUT_MS, Margin, poll
from web_pages import WebPages

ATTACH_TIMEOUT_MS = 45_000

FLATS = {
    "/flat-alpha.html": (
        "Flat Alpha, Old Town",
        "Flat Alpha has two rooms, a balcony and costs 900 euros a month.",
    ),
    "/flat-beta.html": (
        "Flat Beta, Riverside",
        "Flat Beta has three rooms by the river and costs 1,200 euros a month.",
    ),
    "/flat-gamma.html": (
        "Flat Gamma, Station",
        "Flat Gamma has one room above the station and costs 650 euros a month.",
    ),
}


def flat_html(title: str, text: str) -> bytes:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<main><article><h1>{title}</h1><p>{text}</p><p>Viewings on weekdays after six; ask the agent "
        f"for the floor plan and the energy certificate.</p></article></main></body></html>"
    ).encode()


@pytest.fixture
def web() -> Iterator[WebPages]:
    extra = {path: ("text/html; charset=utf-8", flat_html(*flat)) for path, flat in FLATS.items()}
    with WebPages(extra) as pages:
        yield pages


def open_tabs(margin: Margin, web: WebPages, *paths: str) -> list:
    tabs = []
    for path in paths:
        page = margin.context.new_page()
        page.goto(web.url(path))
        page.wait_for_load_state("load")
        tabs.append(page)
    # The last one in front, as the tab the user is looking at beside the panel.
    tabs[-1].bring_to_front()
    return tabs


def dialog_of(panel):
    return panel.get_by_role("dialog", name="Attach tabs")


def open_dialog(panel):
    panel.get_by_role("button", name="Attach tabs", exact=True).click()
    dialog = dialog_of(panel)
    dialog.wait_for(state="visible", timeout=COLD_TIMEOUT_MS)
    return dialog


def card(panel, title: str):
    return panel.get_by_role("group", name=f"Attached page: {title}")


def attached_titles(margin: Margin) -> list[str]:
    return [r["attachment"]["title"] for r in margin.history() if "attachment" in r]


def focused_name(panel) -> str:
    return panel.evaluate(
        """() => {
            const node = document.activeElement;
            if (!node) return '';
            if (node.labels && node.labels.length) return node.labels[0].textContent;
            return node.getAttribute('aria-label') || node.textContent.trim();
        }"""
    )


def test_two_ticked_tabs_of_three_become_two_cards_and_the_model_gets_both_and_not_the_third(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    open_tabs(margin, web, "/flat-alpha.html", "/flat-beta.html", "/flat-gamma.html")

    dialog = open_dialog(panel)
    boxes = dialog.get_by_role("checkbox")
    # The window's web tabs, the one in front first, none ticked; Margin's own pages are not listed.
    names = [boxes.nth(i).evaluate("(n) => n.labels[0].textContent") for i in range(boxes.count())]
    assert names == ["Flat Gamma, Station", "Flat Alpha, Old Town", "Flat Beta, Riverside"]
    assert [boxes.nth(i).is_checked() for i in range(3)] == [False, False, False]
    assert "127.0.0.1" in dialog.get_by_text("Current tab").first.inner_text()
    assert dialog.get_by_role("button", name="Attach", exact=True).is_disabled()

    dialog.get_by_role("checkbox", name="Flat Alpha, Old Town").check()
    dialog.get_by_role("checkbox", name="Flat Beta, Riverside").check()
    dialog.get_by_role("button", name="Attach", exact=True).click()
    dialog.wait_for(state="hidden")
    card(panel, "Flat Alpha, Old Town").wait_for(timeout=ATTACH_TIMEOUT_MS)
    card(panel, "Flat Beta, Riverside").wait_for(timeout=ATTACH_TIMEOUT_MS)
    assert panel.get_by_role("group", name="Attached page: Flat Gamma, Station").count() == 0
    assert attached_titles(margin) == ["Flat Alpha, Old Town", "Flat Beta, Riverside"]
    assert "2 attached pages" in margin.message_box(panel).get_attribute("placeholder")
    # Each tab has its own site cache entry.
    assert len(margin.send_message({"type": "sitecache.status", "payload": {}})["value"]["tabs"]) == 2

    fake_provider.script(reply="Flat Beta is bigger; Flat Alpha is cheaper.")
    margin.send(panel, "Which flat is better value?")
    margin.wait_answer(panel)
    (request,) = fake_provider.wait_for_chat_requests(1)
    sent = [m["content"] for m in request.body["messages"]]
    assert sent[0].startswith(
        "[Page context] Page: Flat Alpha, Old Town\nURL: " + web.url("/flat-alpha.html")
    )
    assert FLATS["/flat-alpha.html"][1] in sent[0]
    assert sent[1].startswith("[Page context] Page: Flat Beta, Riverside\nURL: " + web.url("/flat-beta.html"))
    assert FLATS["/flat-beta.html"][1] in sent[1]
    assert sent[2] == "Which flat is better value?"
    assert not any("Flat Gamma" in text for text in sent), "the unticked tab reached the model"


def test_a_tab_that_cannot_be_read_is_named_in_one_sentence_and_the_others_attach(
    configured_margin: Margin, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    margin.watch_alerts(panel)
    open_tabs(margin, web, "/flat-alpha.html", "/empty.html", "/flat-beta.html")
    dialog = open_dialog(panel)
    for name in ("Flat Alpha, Old Town", "Nothing here", "Flat Beta, Riverside"):
        dialog.get_by_role("checkbox", name=name).check()
    dialog.get_by_role("button", name="Attach", exact=True).click()
    alert = margin.wait_alert(panel, timeout_ms=ATTACH_TIMEOUT_MS)
    assert alert == "Margin could not read “Nothing here” (no text to read); the other tabs are attached."
    card(panel, "Flat Alpha, Old Town").wait_for(timeout=ATTACH_TIMEOUT_MS)
    card(panel, "Flat Beta, Riverside").wait_for(timeout=ATTACH_TIMEOUT_MS)
    # In the order the dialog lists them: the tab in front first.
    assert attached_titles(margin) == ["Flat Beta, Riverside", "Flat Alpha, Old Town"]
    assert margin.alerts(panel) == [alert]  # said once


def test_the_dialog_by_keyboard_alone_keeps_the_focus_inside_and_has_no_axe_finding(
    configured_margin: Margin, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    open_tabs(margin, web, "/flat-alpha.html", "/flat-beta.html", "/flat-gamma.html")
    margin.message_box(panel).focus()

    # From the message box: Tab to "Attach tabs", Enter opens the dialog on its first tab.
    for _ in range(8):
        panel.keyboard.press("Tab")
        if focused_name(panel) == "Attach tabs":
            break
    assert focused_name(panel) == "Attach tabs"
    panel.keyboard.press("Enter")
    dialog = dialog_of(panel)
    dialog.wait_for(state="visible", timeout=COLD_TIMEOUT_MS)
    assert focused_name(panel) == "Flat Gamma, Station"
    ring = panel.evaluate("() => getComputedStyle(document.activeElement).boxShadow")
    assert ring and ring != "none", "no visible focus ring on the focused tab"

    # axe-core finds nothing in the open dialog, light and dark.
    for scheme in ("light", "dark"):
        panel.emulate_media(color_scheme=scheme, reduced_motion="reduce")
        panel.wait_for_timeout(250)
        assert violations(panel) == [], scheme

    # Escape closes it and gives the focus back to "Attach tabs"; nothing is attached.
    panel.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert focused_name(panel) == "Attach tabs"
    panel.keyboard.press("Enter")
    dialog.wait_for(state="visible", timeout=COLD_TIMEOUT_MS)

    # Space ticks; Tab walks the tabs, "Cancel", "Attach", then wraps to the first tab, and
    # Shift+Tab wraps back: the focus never leaves the dialog.
    order = ["Flat Gamma, Station", "Flat Alpha, Old Town", "Flat Beta, Riverside"]
    assert focused_name(panel) == order[0]
    panel.keyboard.press("Tab")
    assert focused_name(panel) == order[1]
    panel.keyboard.press("Space")
    panel.keyboard.press("Tab")
    assert focused_name(panel) == order[2]
    panel.keyboard.press("Space")
    panel.keyboard.press("Tab")
    assert focused_name(panel) == "Cancel"
    panel.keyboard.press("Tab")
    assert focused_name(panel) == "Attach"
    panel.keyboard.press("Tab")
    assert focused_name(panel) == order[0]
    panel.keyboard.press("Shift+Tab")
    assert focused_name(panel) == "Attach"
    assert dialog.get_by_role("checkbox", name=order[1]).is_checked()
    assert not dialog.get_by_role("checkbox", name=order[0]).is_checked()

    panel.keyboard.press("Enter")
    dialog.wait_for(state="hidden")
    card(panel, "Flat Alpha, Old Town").wait_for(timeout=ATTACH_TIMEOUT_MS)
    card(panel, "Flat Beta, Riverside").wait_for(timeout=ATTACH_TIMEOUT_MS)
    poll(
        lambda: panel.evaluate("() => document.activeElement.id") == "message",
        timeout=10,
        message="the focus did not go to the message box",
    )
    assert attached_titles(margin) == ["Flat Alpha, Old Town", "Flat Beta, Riverside"]


def test_a_tab_chrome_discarded_is_listed_asleep_and_reloaded_to_be_read(
    configured_margin: Margin, web: WebPages
):
    margin = configured_margin
    panel = margin.open_panel()
    open_tabs(margin, web, "/flat-alpha.html", "/flat-beta.html")
    # Memory Saver's discard, as Chrome does it to a background tab.
    discarded = panel.evaluate(
        """async (url) => {
            const [tab] = await chrome.tabs.query({ url });
            const gone = await chrome.tabs.discard(tab.id);
            return (await chrome.tabs.get(gone.id)).discarded;
        }""",
        web.url("/flat-alpha.html"),
    )
    assert discarded is True
    dialog = open_dialog(panel)
    note = dialog.locator(".tab-row", has_text="Flat Alpha, Old Town").locator(".tab-note")
    assert "Asleep: Margin reloads it to read it" in note.inner_text()
    dialog.get_by_role("checkbox", name="Flat Alpha, Old Town").check()
    dialog.get_by_role("button", name="Attach", exact=True).click()
    card(panel, "Flat Alpha, Old Town").wait_for(timeout=ATTACH_TIMEOUT_MS)
    (record,) = margin.history()
    assert FLATS["/flat-alpha.html"][1] in record["content"]


def test_a_pdf_tab_ticked_with_a_page_attaches_as_a_pdf_card_and_a_locked_one_is_named(
    configured_margin: Margin, fake_provider: FakeProvider
):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
    import pdf_documents as docs

    english = docs.fixture("article_en")
    extra = {path: ("text/html; charset=utf-8", flat_html(*flat)) for path, flat in FLATS.items()}
    extra["/docs/rivers.pdf"] = ("application/pdf", english)
    extra["/docs/locked.pdf"] = ("application/pdf", docs.encrypted(english))
    margin = configured_margin
    panel = margin.open_panel()
    with WebPages(extra) as web:
        open_tabs(margin, web, "/docs/locked.pdf", "/flat-alpha.html", "/docs/rivers.pdf")
        dialog = open_dialog(panel)
        names = [n.inner_text() for n in dialog.locator(".tab-title").all()]
        # The PDF in front first, then the strip's order; a PDF tab is named by what Chrome shows:
        # its address until the viewer has read the document's own title (a locked one has none).
        assert names[0].endswith("/docs/rivers.pdf") or names[0] == "How rivers carve canyons", names
        assert names[1].endswith("/docs/locked.pdf"), names
        assert names[2] == "Flat Alpha, Old Town"
        for box in dialog.get_by_role("checkbox").all():
            box.check()
        dialog.get_by_role("button", name="Attach", exact=True).click()
        alert = margin.wait_alert(panel, timeout_ms=ATTACH_TIMEOUT_MS * 2)
        assert (
            alert
            == f"Margin could not read “{names[1]}” (the PDF needs a password); the other tabs are attached."
        )
        card(panel, "Flat Alpha, Old Town").wait_for(timeout=ATTACH_TIMEOUT_MS)
        panel.get_by_role("group", name="Attached PDF: How rivers carve canyons").wait_for(
            timeout=ATTACH_TIMEOUT_MS
        )
        kinds = [r["attachment"]["kind"] for r in margin.history() if "attachment" in r]
        assert kinds == ["pdf", "page"]

        fake_provider.script(reply="Rivers and a flat.")
        margin.send(panel, "What do these say?")
        margin.wait_answer(panel)
        (request,) = fake_provider.wait_for_chat_requests(1)
        sent = [m["content"] for m in request.body["messages"]]
        assert "How rivers carve canyons" in sent[0] and "— page 1 —" in sent[0]
        assert FLATS["/flat-alpha.html"][1] in sent[1]
        assert sent[2] == "What do these say?"
