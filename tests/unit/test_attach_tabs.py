"""Attach tabs (issue 30): `tabs.list` names the window's web tabs, and `tab.attach {tabId}` reads
each ticked tab through the same code as Attach page, into its own record and its own site cache
entry (py/margin/page/tab_list.py, py/margin/page/attach.py rule 8). The dialog itself runs in
Chromium: tests/e2e/test_attach_tabs_e2e.py."""

import json

import pytest
from attach_tabs import Page, history, run, turn
from chat_turns import SETTINGS, answer
from platform_memory import MemoryTabs, ScriptedTransport, memory_platform

from margin.app import api
from margin.base.errors import MarginError
from margin.page import attach, site_caches
from margin.platform.ports import WebTab
from margin.storage.keys import site_cache_body_key

WINDOW = 3


@pytest.fixture(autouse=True)
def fresh_worker():
    site_caches.forget_instance()
    yield
    site_caches.forget_instance()


def flat(name: str, rooms: int) -> Page:
    return Page(
        url=f"https://{name.lower()}.example.com/flat",
        title=f"Flat {name}",
        html=f"<h1>Flat {name}</h1><p>Flat {name} has {rooms} rooms and a balcony over the river.</p>",
    )


class Window:
    """Three flats in tabs 5, 7 (in front) and 9 of one window, and a tab in another window."""

    def __init__(self, responses=()):
        self.pages = {5: flat("Alpha", 2), 7: flat("Beta", 3), 9: flat("Gamma", 4), 20: flat("Other", 1)}
        tabs = MemoryTabs(script=lambda tab, function, args: self.pages[tab.id](tab, function, args))
        for tab_id, page in self.pages.items():
            window = 4 if tab_id == 20 else WINDOW
            tabs.add(WebTab(tab_id, window, page.url, page.title), active=tab_id == 7)
        self.platform = memory_platform(dict(SETTINGS), ScriptedTransport(list(responses)), tabs=tabs)

    @property
    def tabs(self) -> MemoryTabs:
        return self.platform.tabs  # type: ignore[return-value]

    def add(self, tab: WebTab, page: Page | None = None) -> None:
        if page is not None:
            self.pages[tab.id] = page
        self.tabs.add(tab)

    def listed(self) -> list[dict]:
        reply = run(api.dispatch(self.platform, "tabs.list", {}))
        assert reply["ok"], reply
        return reply["value"]["tabs"]

    def attach(self, tab_id=None) -> dict:
        return run(attach.handle_attach(self.platform, {} if tab_id is None else {"tabId": tab_id}))

    def refused(self, payload) -> MarginError:
        with pytest.raises(MarginError) as info:
            run(attach.handle_attach(self.platform, payload))
        return info.value

    def read_tabs(self) -> list[int]:
        return [tab_id for tab_id, function, _ in self.tabs.runs if function == "__marginExtract"]


# -- tabs.list ----------------------------------------------------------------------------------


def test_the_list_is_the_window_s_web_tabs_with_the_active_one_first():
    window = Window()
    # A chrome:// tab: Chrome hides its URL from Margin (no "tabs" permission), so it is no web tab.
    window.add(WebTab(11, WINDOW, "", ""))
    window.add(WebTab(12, WINDOW, "file:///home/ada/notes.html", "notes.html"))
    listed = window.listed()
    assert [tab["id"] for tab in listed] == [7, 5, 9, 12]
    assert listed[0] == {
        "id": 7,
        "title": "Flat Beta",
        "url": "https://beta.example.com/flat",
        "site": "beta.example.com",
        "active": True,
        "asleep": False,
        "readable": True,
        "reason": None,
        "why": None,
    }
    assert [tab["active"] for tab in listed] == [True, False, False, False]
    assert listed[3]["site"] == "file"
    # Listing injects nothing and stores nothing.
    assert window.tabs.runs == [] and history(window.platform) == []


def test_a_tab_its_url_says_cannot_be_read_is_listed_with_why_in_the_user_s_language():
    window = Window()
    window.add(WebTab(13, WINDOW, "https://chromewebstore.google.com/detail/abc", "An extension"))
    run(window.platform.local.set({"uiLanguage": "es"}))
    store = next(tab for tab in window.listed() if tab["id"] == 13)
    assert store["readable"] is False and store["reason"] == "page_not_readable"
    assert "Chrome Web Store" in store["why"] and "Copia" in store["why"]


def test_a_discarded_tab_is_listed_asleep_and_attaching_it_wakes_it_first():
    window = Window()
    window.add(
        WebTab(14, WINDOW, "https://delta.example.com/flat", "Flat Delta", discarded=True), flat("Delta", 5)
    )
    asleep = next(tab for tab in window.listed() if tab["id"] == 14)
    assert asleep["asleep"] is True and asleep["readable"] is True
    result = window.attach(14)
    assert window.tabs.woken == [14]
    assert result["attachment"]["title"] == "Flat Delta"
    assert "Flat Delta has 5 rooms" in history(window.platform)[0]["content"]


def test_a_loading_tab_is_waited_for_and_one_that_never_loads_is_refused_with_its_title():
    window = Window()
    window.add(WebTab(15, WINDOW, "https://slow.example.com/", "Slow flat", loading=True), flat("Slow", 1))
    window.tabs.stuck.add(15)
    error = window.refused({"tabId": 15})
    assert error.code == "tab_not_loaded"
    assert error.message.startswith("“Slow flat” did not finish loading within 20 seconds")
    assert window.tabs.woken == [15] and window.read_tabs() == [] and history(window.platform) == []
    window.tabs.stuck.clear()
    assert window.attach(15)["attachment"]["title"] == "Flat Slow"


# -- tab.attach {tabId} -------------------------------------------------------------------------


def test_each_ticked_tab_is_its_own_record_and_site_cache_entry_and_the_question_gets_both():
    window = Window(responses=[answer("Gamma is bigger.")])
    first, second = window.attach(5), window.attach(9)
    assert [first["attachment"]["title"], second["attachment"]["title"]] == ["Flat Alpha", "Flat Gamma"]
    assert first["duplicate"] is second["duplicate"] is False
    # Only the ticked tabs were read, not the active one.
    assert window.read_tabs() == [5, 9]
    records = history(window.platform)
    assert [r["attachment"]["url"] for r in records] == [window.pages[5].url, window.pages[9].url]
    session = window.platform.session.snapshot()
    assert site_cache_body_key(5) in session and site_cache_body_key(9) in session
    assert site_cache_body_key(7) not in session

    events = turn(window.platform, {"action": "send", "text": "Which flat is bigger?", "images": []})
    assert events[-1]["event"] == "done"
    messages = json.loads(window.platform.transport.requests[0].body)["messages"]
    sent = [m["content"] for m in messages]
    assert sent[0].startswith("[Page context] Page: Flat Alpha") and "Flat Alpha has 2 rooms" in sent[0]
    assert sent[1].startswith("[Page context] Page: Flat Gamma") and "Flat Gamma has 4 rooms" in sent[1]
    assert sent[2] == "Which flat is bigger?"
    assert not any("Flat Beta" in text for text in sent)


def test_a_ticked_tab_attached_again_comes_from_its_own_cache_and_is_not_added_twice():
    window = Window()
    window.attach(5)
    window.attach(9)
    again = window.attach(5)
    assert again["fromCache"] is True and again["duplicate"] is True
    assert window.read_tabs() == [5, 9]
    assert len(history(window.platform)) == 2


def test_without_a_tab_id_the_active_tab_is_read_as_before():
    window = Window()
    assert window.attach()["attachment"]["title"] == "Flat Beta"
    assert window.read_tabs() == [7]


def test_a_tab_in_another_window_can_still_be_named():
    window = Window()
    assert window.attach(20)["attachment"]["title"] == "Flat Other"


def test_a_tab_without_text_is_refused_and_the_others_still_attach():
    window = Window()
    window.add(WebTab(16, WINDOW, "https://empty.example.com/", "Nothing here"), Page(html=""))
    window.attach(5)
    error = window.refused({"tabId": 16})
    window.attach(9)
    assert error.code == "page_has_no_text"
    assert [r["attachment"]["title"] for r in history(window.platform)] == ["Flat Alpha", "Flat Gamma"]


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"tabId": "5"}, "bad_payload"),
        ({"tabId": True}, "bad_payload"),
        ({"tabId": -1}, "bad_payload"),
        ({"tabId": 5.5}, "bad_payload"),
        ({"tabId": 404}, "tab_gone"),
    ],
)
def test_a_tab_id_that_names_no_tab_is_refused_and_stores_nothing(payload, code):
    window = Window()
    error = window.refused(payload)
    assert error.code == code
    assert window.tabs.runs == [] and history(window.platform) == []


def test_a_tab_that_left_the_web_or_is_the_web_store_is_refused():
    window = Window()
    window.add(WebTab(17, WINDOW, "", ""))  # now chrome://settings: its URL is hidden
    window.add(WebTab(18, WINDOW, "https://chromewebstore.google.com/", "Web Store"))
    assert window.refused({"tabId": 17}).code == "no_web_tab"
    assert "no longer shows a web page" in window.refused({"tabId": 17}).message
    assert window.refused({"tabId": 18}).code == "page_not_readable"
    assert window.tabs.runs == []
