"""Attach tabs: the web tabs of the user's window, listed for the panel's "Attach tabs" dialog
(`tabs.list`).

Rules:
1. The tabs are those of the window "Attach page" reads (the last focused normal window: the one
   the side panel sits in), web tabs only (http, https, file; `Tabs.window_web_tabs`), the active
   one first, then in the order of the tab strip. Chrome gives their URL and title without the
   "tabs" permission, because Margin has host access to web pages (<all_urls>); a chrome:// tab's
   URL stays hidden, so it is not a web tab and is not listed.
2. Each tab says whether it can be read before anything is injected: `readable: false` with
   `reason` (the refusal's code) and `why` (its sentence, in the user's language) when its URL
   alone says it cannot be (the Chrome Web Store). Whether a page has text is known only once it
   is read, so such a tab is listed as readable and refused when attached.
3. `asleep: true` marks a tab Chrome discarded to save memory (Memory Saver): it has no document
   until it is loaded again, so attaching it reloads it first, as opening it would
   (margin.page.attach, rule 8); the dialog says so before the user ticks it.
4. Each ticked tab is attached by its own `tab.attach {tabId}`: one record and one site cache
   entry per tab, the same card "Attach page" makes. Listing reads no storage and writes nothing.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform, WebTab
from ..settings.options import ensure_spoken
from .attach import refuse_by_url
from .text import site_of


def _why_not(tab: WebTab) -> MarginError | None:
    """Rule 2: the refusal a tab's URL alone gives, or None."""
    try:
        refuse_by_url(tab.url)
    except MarginError as error:
        return error
    return None


def listed(tab: WebTab) -> dict[str, Any]:
    refusal = _why_not(tab)
    return {
        "id": tab.id,
        "title": tab.title.strip(),
        "url": tab.url,
        "site": site_of(tab.url),
        "active": tab.active,
        "asleep": tab.discarded,
        "readable": refusal is None,
        "reason": refusal.code if refusal is not None else None,
        "why": refusal.in_language() if refusal is not None else None,
    }


async def handle_list(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tabs.list`: rule 1's tabs, each as `listed` says."""
    tabs = await platform.tabs.window_web_tabs()
    ordered = sorted(tabs, key=lambda tab: not tab.active)  # stable: the strip's order after
    if any(_why_not(tab) for tab in ordered):
        await ensure_spoken(platform)  # a `why` in the user's language
    return {"tabs": [listed(tab) for tab in ordered]}
