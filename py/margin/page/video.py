"""Seek to a time: the capsules ("Seek to 12:34") of answers that follow a video record.

Rules:
1. A capsule names the video record it belongs to (its index in `history`) and a time; the
   record's `video` stamp (margin.page.context, rule 3) says which tab and which video.
2. If that tab is still open on the same page, the page script sets the video's `currentTime`
   (playback is not started) and the tab and its window come to the front.
3. Otherwise the page is reopened at that time where its address allows it: YouTube's `t=`, or
   a media fragment `#t=` on a video file's own URL. Where it does not, one sentence says why.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..base.errors import MarginError
from ..platform.ports import Platform, ScriptError
from ..storage.history import Record
from ..storage.keys import HISTORY
from .site_caches import same_page

MEDIA_EXTENSIONS = (
    ".mp4",
    ".m4v",
    ".webm",
    ".ogv",
    ".ogg",
    ".mov",
    ".mkv",
    ".mp3",
    ".m4a",
    ".wav",
    ".flac",
    ".opus",
)
YOUTUBE_HOSTS = ("youtube.com", "www.youtube.com", "m.youtube.com", "music.youtube.com")


def youtube_id(url: str) -> str | None:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "youtu.be":
        return parts.path.strip("/").split("/")[0] or None
    if host in YOUTUBE_HOSTS:
        if parts.path == "/watch":
            return dict(parse_qsl(parts.query)).get("v") or None
        for prefix in ("/embed/", "/shorts/", "/live/"):
            if parts.path.startswith(prefix):
                return parts.path[len(prefix) :].split("/")[0] or None
    return None


def same_video_page(current: str, recorded: str) -> bool:
    """The tab still shows the recorded page (a YouTube `t=` or a #fragment aside)."""
    video_id = youtube_id(recorded)
    if video_id is not None:
        return youtube_id(current) == video_id
    return same_page(current, recorded)


def reopen_url(video: dict[str, Any], seconds: float) -> str | None:
    """An address that opens the video at `seconds`, or None when there is none (rule 3)."""
    whole = max(0, int(seconds))
    page_url = str(video.get("pageUrl") or "")
    video_id = youtube_id(page_url)
    if video_id is not None:
        return "https://www.youtube.com/watch?" + urlencode({"v": video_id, "t": f"{whole}s"})
    src = str(video.get("src") or "")
    parts = urlsplit(src)
    if parts.scheme in ("http", "https", "file") and parts.path.lower().endswith(MEDIA_EXTENSIONS):
        return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, f"t={whole}"))
    return None


def _video_record(raw_history: Any, index: Any) -> Record:
    gone = MarginError.said("video_gone", "py_error_video_gone")
    if (
        not isinstance(raw_history, list)
        or not isinstance(index, int)
        or isinstance(index, bool)
        or not 0 <= index < len(raw_history)
    ):
        raise gone
    try:
        record = Record.from_json(raw_history[index])
    except ValueError:
        raise gone from None
    if not record.is_attachment or not isinstance(record.fields.get("video"), dict):
        raise gone
    return record


async def handle_seek(platform: Platform, payload: dict) -> dict[str, Any]:
    """`video.seek {index, seconds}`: rule 2, else rule 3."""
    seconds = payload.get("seconds")
    if (
        not isinstance(seconds, (int, float))
        or isinstance(seconds, bool)
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        raise MarginError.said("bad_payload", "py_error_which_time")
    stored = await platform.local.get([HISTORY])
    video = _video_record(stored.get(HISTORY), payload.get("index")).fields["video"]
    tab_id = video.get("tabId")
    tab = (
        await platform.tabs.get(tab_id) if isinstance(tab_id, int) and not isinstance(tab_id, bool) else None
    )
    if tab is not None and same_video_page(tab.url, str(video.get("pageUrl") or "")):
        try:
            result = await platform.tabs.run(
                tab.id, "__marginSeek", video.get("src"), video.get("index", 0), seconds
            )
        except ScriptError:
            result = None
        if isinstance(result, dict) and result.get("ok"):
            await platform.tabs.focus(tab)
            return {"how": "seeked", "tabId": tab.id, "currentTime": result.get("currentTime")}
    url = reopen_url(video, seconds)
    if url is None:
        raise MarginError.said("video_gone", "py_error_video_tab_gone")
    opened = await platform.tabs.open(url)
    return {"how": "reopened", "tabId": opened.id, "url": url}
