"""`tab.screenshot`: the visible part of the active web tab, as an image attachment.

Rule 1: the reply is an `Attachment` (docs/protocol.md) with `source: "screenshot"` and, as its
  name, the tab's title (its URL when it has none): the source already says it is a screenshot, so
  no word of any language is stored; `margin.images.figures` makes the name the figure's title and the
  panel shows it as "Screenshot of <title>" in the user's language. Plus the tab's title and URL.
  It is checked like any attachment when the user sends it.
"""

from __future__ import annotations

from typing import Any

from ..base import clock
from ..base.errors import MarginError, screenshot_refused
from ..platform.ports import Platform


async def handle_screenshot(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tab.screenshot`: the visible part of the active web tab, as an Attachment plus title/url."""
    tab = await platform.tabs.active_web_tab()
    if tab is None:
        raise MarginError.said("no_web_tab", "py_error_screenshot_no_web_tab")
    try:
        data_url = await platform.tabs.capture_visible(tab.window_id)
    except Exception as error:
        raise screenshot_refused() from error
    if not isinstance(data_url, str) or not data_url.startswith("data:image/"):
        raise screenshot_refused()
    title = " ".join((tab.title or "").split()) or tab.url
    return {
        "dataUrl": data_url,
        "name": title,
        "source": "screenshot",
        "title": tab.title,
        "url": tab.url,
        "capturedAt": clock.now_ms(),
    }
