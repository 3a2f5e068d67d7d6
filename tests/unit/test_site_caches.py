"""Site caches: per-tab payloads in chrome.storage.session, a lazy restore that drops dead tabs,
and purge listeners that exist only while something is cached (wake hygiene)."""

import asyncio

import pytest
from platform_memory import MemoryTabs, memory_platform

from margin.base import clock
from margin.page import site_caches
from margin.page.site_caches import on_tab_event, restore, site_cache_ctx
from margin.platform.ports import WebTab
from margin.storage.keys import SITE_CACHE_INDEX, site_cache_body_key


@pytest.fixture(autouse=True)
def fresh_worker():
    site_caches.forget_instance()
    yield
    site_caches.forget_instance()


def tab(tab_id, url="https://example.com/a"):
    return WebTab(tab_id, 1, url, f"Tab {tab_id}")


def platform_with(*tabs):
    memory_tabs = MemoryTabs()
    for t in tabs:
        memory_tabs.add(t)
    return memory_platform(tabs=memory_tabs)


def run(coro):
    return asyncio.run(coro)


async def put(platform, tab_id, url, payload, fingerprint=("f",)):
    async with site_cache_ctx(platform) as cache:
        return await cache.put(tab_id, url, list(fingerprint), payload)


async def get(platform, tab_id, url, fingerprint=("f",)):
    async with site_cache_ctx(platform) as cache:
        return await cache.get(tab_id, url, list(fingerprint))


def test_a_cached_page_is_found_again_only_for_the_same_url_and_fingerprint():
    platform = platform_with(tab(5))

    async def scenario():
        assert await put(platform, 5, "https://example.com/a", {"body": "text"})
        same = await get(platform, 5, "https://example.com/a#section-2")
        changed = await get(platform, 5, "https://example.com/a", fingerprint=("other",))
        elsewhere = await get(platform, 5, "https://example.com/b")
        return same, changed, elsewhere

    same, changed, elsewhere = run(scenario())
    assert same == {"body": "text"}  # a #fragment is the same document
    assert changed is None and elsewhere is None


def test_listeners_are_added_with_the_first_entry_and_removed_with_the_last():
    platform = platform_with(tab(5), tab(6, "https://example.com/b"))
    tabs = platform.tabs

    async def scenario():
        # A fresh worker with nothing cached clears a stale registration once (add + remove).
        async with site_cache_ctx(platform):
            pass
        assert tabs.watches == [({}, True)]
        await put(platform, 5, "https://example.com/a", {"body": "a"})
        assert tabs.watched == {5: "https://example.com/a"}
        await put(platform, 6, "https://example.com/b", {"body": "b"})
        assert tabs.watched == {5: "https://example.com/a", 6: "https://example.com/b"}
        await on_tab_event(platform, "removed", 5)
        assert tabs.watched == {6: "https://example.com/b"}
        # A navigation inside the same page (#hash) keeps the entry; another URL purges it.
        await on_tab_event(platform, "updated", 6, "https://example.com/b#comments")
        assert tabs.watched == {6: "https://example.com/b"}
        await on_tab_event(platform, "updated", 6, "https://example.com/elsewhere")
        assert tabs.watched == {}

    run(scenario())
    assert platform.session.snapshot() == {SITE_CACHE_INDEX: {}}
    # The last watch call removed the listeners, without another stale-clearing round.
    assert tabs.watches[-1] == ({}, False)


def test_the_restore_after_a_worker_start_drops_tabs_closed_or_navigated_meanwhile():
    platform = platform_with(tab(5), tab(6, "https://example.com/b"), tab(7, "https://example.com/c"))
    run(put(platform, 5, "https://example.com/a", {"body": "a"}))
    run(put(platform, 6, "https://example.com/b", {"body": "b"}))
    run(put(platform, 7, "https://example.com/c", {"body": "c"}))
    # The worker stops; tab 5 closes and tab 6 navigates while it sleeps (no listener ran).
    site_caches.forget_instance()
    platform.tabs.close(5)
    platform.tabs.tabs[6] = tab(6, "https://example.com/other")
    platform.tabs.watches.clear()

    assert run(restore(platform)) == {"tabs": [7]}
    stored = platform.session.snapshot()
    assert set(stored) == {SITE_CACHE_INDEX, site_cache_body_key(7)}
    assert platform.tabs.watches == [({7: "https://example.com/c"}, False)]


def test_a_restore_that_finds_only_dead_tabs_removes_the_listeners():
    platform = platform_with(tab(5))
    run(put(platform, 5, "https://example.com/a", {"body": "a"}))
    site_caches.forget_instance()
    platform.tabs.close(5)
    platform.tabs.watches.clear()
    assert run(restore(platform)) == {"tabs": []}
    assert platform.tabs.watches == [({}, True)]


def test_the_cache_stays_within_its_budget_by_evicting_the_oldest(monkeypatch):
    monkeypatch.setattr(site_caches, "CACHE_BUDGET_BYTES", 3000)
    platform = platform_with(*(tab(i, f"https://example.com/{i}") for i in range(1, 5)))
    ticks = iter(range(1000, 2000))
    monkeypatch.setattr(clock, "now_ms", lambda: next(ticks))
    for i in range(1, 5):
        assert run(put(platform, i, f"https://example.com/{i}", {"body": "x" * 1000}))
    stored = platform.session.snapshot()
    assert sorted(stored[SITE_CACHE_INDEX]) == ["3", "4"]
    assert site_cache_body_key(1) not in stored and site_cache_body_key(2) not in stored
    # Too big for the whole budget: not cached, and nothing else is pushed out for it.
    assert not run(put(platform, 1, "https://example.com/1", {"body": "y" * 5000}))
    assert sorted(platform.session.snapshot()[SITE_CACHE_INDEX]) == ["3", "4"]


def test_a_damaged_index_or_body_is_a_miss_not_a_failure():
    platform = platform_with(tab(5))
    platform.session = type(platform.session)({SITE_CACHE_INDEX: "garbage", site_cache_body_key(9): {"x": 1}})
    assert run(get(platform, 5, "https://example.com/a")) is None
    site_caches.forget_instance()
    platform.session = type(platform.session)(
        {
            SITE_CACHE_INDEX: {"5": {"url": "https://example.com/a", "fingerprint": ["f"]}},
            site_cache_body_key(5): "not a body",
        }
    )
    assert run(get(platform, 5, "https://example.com/a")) is None
    assert platform.session.snapshot()[SITE_CACHE_INDEX] == {}


def test_status_reports_the_cached_tabs_and_the_listeners():
    platform = platform_with(tab(5))
    run(put(platform, 5, "https://example.com/a", {"body": "a"}))
    assert run(site_caches.handle_status(platform, {})) == {"tabs": [5], "listening": True}
