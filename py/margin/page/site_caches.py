"""Site caches: what was read from a tab (its text, its transcript), kept per tab in
`chrome.storage.session`, so attaching the same unchanged page again costs no extraction.

The concept (docs/storage-model.md, "Site caches and wake hygiene"): every use goes through
`site_cache_ctx(platform)`; the purge listeners that keep the cache honest exist only while
the cache holds something.

Rules:
1. Layout: `siteCacheIndex` = `{"<tabId>": {url, fingerprint, size, at}}` (light) and one body
   per tab, `siteCache_<tabId>` = `{url, fingerprint, payload}`, read by address only.
   `chrome.storage.session` is cleared when the browser or the extension restarts, which is
   what a per-tab cache wants (tab ids are not reused within a browser session).
2. Restoring is lazy: the first `site_cache_ctx()` of a worker instance reads the index and asks
   Chrome whether each cached tab is still open on the cached URL; dead or navigated tabs are
   dropped (this also settles a restore racing a tab close). Later calls in the same instance
   use what the restore found; this worker is the only writer of these keys.
3. Wake hygiene: the purge listeners (a cached tab closed, or navigated away from its URL) are
   added when the first entry appears and REMOVED when the last one goes (`Tabs.watch`). A
   restore that finds nothing adds and removes them once, to clear a wake-up registration a
   dead worker instance left behind. Nothing else here listens to tab events.
4. Bounded: the bodies together stay under `CACHE_BUDGET_BYTES` (session storage holds 10 MB
   in all): the oldest entries are evicted first; a payload larger than the budget is not cached
   (attaching it again reads the page again). A failed cache write loses nothing: the cache is
   only ever a shortcut.
5. A hit needs the same URL and the same fingerprint (title, text length, video count: the page
   script's cheap probe; and the model language, margin.page.attach rule 3), so a page that changed in
   place is read again.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from ..base import clock
from ..base.errors import StorageError
from ..platform.ports import Platform, StorageArea
from ..storage.keys import SITE_CACHE_INDEX, site_cache_body_key

CACHE_BUDGET_BYTES = 6 * 1024 * 1024


def same_page(a: str, b: str) -> bool:
    """Two URLs of the same document: the fragment (#...) does not count."""
    return a.split("#", 1)[0] == b.split("#", 1)[0]


@dataclass
class _Instance:
    """What this worker instance knows of the cache; rebuilt from storage after every start."""

    restored: bool = False
    index: dict[int, dict[str, Any]] = field(default_factory=dict)
    watching: dict[int, str] | None = None  # what the listeners watch now; None: not set yet
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


# Per storage area, per event loop (its lock belongs to one loop). Weak keys, not id()s: a new
# area or loop must never inherit a dead one's memory because it got the same address.
_instances: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Any, _Instance]] = (
    weakref.WeakKeyDictionary()
)


def _instance_for(platform: Platform) -> _Instance:
    per_loop = _instances.setdefault(platform.session, weakref.WeakKeyDictionary())
    loop = asyncio.get_running_loop()
    instance = per_loop.get(loop)
    if instance is None:
        instance = per_loop[loop] = _Instance()
    return instance


def forget_instance() -> None:
    """As if the worker had been stopped (tests): memory is gone, storage.session stays."""
    _instances.clear()


def _parse_index(raw: Any) -> dict[int, dict[str, Any]]:
    index: dict[int, dict[str, Any]] = {}
    if not isinstance(raw, dict):
        return index
    for key, entry in raw.items():
        try:
            tab_id = int(key)
        except (TypeError, ValueError):
            continue
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            index[tab_id] = entry
    return index


class SiteCache:
    """The cache as one `site_cache_ctx()` sees it."""

    def __init__(self, platform: Platform, instance: _Instance):
        self._area: StorageArea = platform.session
        self._instance = instance

    @property
    def tabs(self) -> dict[int, str]:
        return {tab_id: entry["url"] for tab_id, entry in self._instance.index.items()}

    async def get(self, tab_id: int, url: str, fingerprint: Any) -> dict[str, Any] | None:
        """The cached payload for this tab, if it was read from this very page (rule 5)."""
        entry = self._instance.index.get(tab_id)
        if entry is None or not same_page(entry["url"], url) or entry.get("fingerprint") != fingerprint:
            return None
        try:
            stored = await self._area.get([site_cache_body_key(tab_id)])
        except StorageError:
            return None
        body = stored.get(site_cache_body_key(tab_id))
        if not isinstance(body, dict) or not isinstance(body.get("payload"), dict):
            await self.drop(tab_id)
            return None
        return body["payload"]

    async def put(self, tab_id: int, url: str, fingerprint: Any, payload: dict[str, Any]) -> bool:
        """Cache `payload` for the tab (rule 4); False when it was not cached."""
        body = {"url": url, "fingerprint": fingerprint, "payload": payload}
        size = len(json.dumps(body, ensure_ascii=False).encode("utf-8"))
        if size > CACHE_BUDGET_BYTES:
            await self.drop(tab_id)
            return False
        index = dict(self._instance.index)
        index.pop(tab_id, None)
        evicted: list[int] = []
        while index and sum(e.get("size", 0) for e in index.values()) + size > CACHE_BUDGET_BYTES:
            oldest = min(index, key=lambda t: index[t].get("at", 0))
            evicted.append(oldest)
            del index[oldest]
        index[tab_id] = {"url": url, "fingerprint": fingerprint, "size": size, "at": clock.now_ms()}
        try:
            if evicted:
                await self._area.remove([site_cache_body_key(t) for t in evicted])
            # Body and index in one write: all or nothing.
            await self._area.set({site_cache_body_key(tab_id): body, SITE_CACHE_INDEX: _index_json(index)})
        except StorageError:
            return False
        finally:
            # What was evicted is gone either way; the index in memory follows what was written.
            for t in evicted:
                self._instance.index.pop(t, None)
        self._instance.index = index
        return True

    async def drop(self, tab_id: int) -> None:
        await self.drop_many([tab_id])

    async def drop_many(self, tab_ids: list[int]) -> None:
        gone = [t for t in tab_ids if t in self._instance.index]
        if not gone:
            return
        index = {t: e for t, e in self._instance.index.items() if t not in gone}
        self._instance.index = index
        try:
            await self._area.remove([site_cache_body_key(t) for t in gone])
            await self._area.set({SITE_CACHE_INDEX: _index_json(index)})
        except StorageError:
            pass  # an entry that stays behind is dropped by the next restore's liveness check


def _index_json(index: dict[int, dict[str, Any]]) -> dict[str, Any]:
    return {str(tab_id): entry for tab_id, entry in index.items()}


async def _restore(platform: Platform, instance: _Instance, cache: SiteCache) -> None:
    """Rule 2: read the index, keep only tabs still open on the cached page."""
    try:
        stored = await platform.session.get([SITE_CACHE_INDEX])
    except StorageError:
        stored = {}
    instance.index = _parse_index(stored.get(SITE_CACHE_INDEX))
    dead: list[int] = []
    for tab_id, entry in list(instance.index.items()):
        try:
            tab = await platform.tabs.get(tab_id)
        except Exception:
            tab = None
        if tab is None or not same_page(tab.url, entry["url"]):
            dead.append(tab_id)
    await cache.drop_many(dead)
    if not isinstance(stored.get(SITE_CACHE_INDEX), dict) and SITE_CACHE_INDEX in stored:
        await platform.session.remove([SITE_CACHE_INDEX])  # unreadable: the bodies it named are unknown
    instance.restored = True


async def _sync_listeners(platform: Platform, instance: _Instance, *, after_restore: bool) -> None:
    """Rule 3: listeners exist exactly while there are entries."""
    wanted = {tab_id: entry["url"] for tab_id, entry in instance.index.items()}
    if wanted == instance.watching and not after_restore:
        return
    await platform.tabs.watch(wanted, clear_stale=after_restore and not wanted)
    instance.watching = wanted


@asynccontextmanager
async def site_cache_ctx(platform: Platform) -> AsyncIterator[SiteCache]:
    """The one way into the site caches: restores lazily, serializes users, keeps the listeners
    in step with what is cached when the block ends."""
    instance = _instance_for(platform)
    async with instance.lock:
        cache = SiteCache(platform, instance)
        restoring = not instance.restored
        if restoring:
            await _restore(platform, instance, cache)
        try:
            yield cache
        finally:
            await _sync_listeners(platform, instance, after_restore=restoring)


async def restore(platform: Platform) -> dict[str, Any]:
    """A worker start that found entries in the index (extension/background.js) calls this, so the
    dead tabs are dropped and the listeners follow what is left (rule 3)."""
    async with site_cache_ctx(platform) as cache:
        return {"tabs": sorted(cache.tabs)}


async def on_tab_event(platform: Platform, kind: str, tab_id: int, url: str | None = None) -> None:
    """A purge listener fired: the tab closed ("removed") or loaded another URL ("updated")."""
    async with site_cache_ctx(platform) as cache:
        cached = cache.tabs.get(tab_id)
        if cached is None:
            return
        if kind == "removed" or (kind == "updated" and url is not None and not same_page(url, cached)):
            await cache.drop(tab_id)


async def handle_status(platform: Platform, payload: dict) -> dict[str, Any]:
    """`sitecache.status`: which tabs are cached and whether the purge listeners are on (for
    DevTools and the tests: the cache is invisible otherwise)."""
    instance = _instance_for(platform)
    async with site_cache_ctx(platform) as cache:
        tabs = cache.tabs
    return {"tabs": sorted(tabs), "listening": bool(instance.watching)}
