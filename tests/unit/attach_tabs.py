"""A tab and its page script, faked for the attach, Explain and Seek tests: `Page` answers what the
page script would, `setup()` is a profile with a provider and that tab, `turn()` runs a chat
turn, `video_page()` is a page with one captioned video, whose caption file the page reads."""

import asyncio

from chat_turns import SETTINGS
from platform_memory import MemoryTabs, ScriptedTransport, memory_platform

from margin.page import attach
from margin.platform.ports import WebTab
from margin.turn import chat

ARTICLE_URL = "https://news.example.com/2026/rivers"
ARTICLE_HTML = (
    "<h1>How rivers carve canyons</h1><p>Water finds the weakest rock.</p>"
    "<h2>Time</h2><ul><li>Millions of years</li><li>Floods</li></ul>"
)
VTT = "WEBVTT\n\n00:00:01.000 --> 00:00:04.000\nWelcome to the canyon.\n\n01:02:03.000 --> 01:02:06.000\nThe end.\n"


class Page:
    """What the page script answers in one tab."""

    def __init__(
        self,
        url=ARTICLE_URL,
        title="How rivers carve canyons",
        html=ARTICLE_HTML,
        videos=(),
        youtube=None,
        content_type="text/html",
        method="readability",
        files=None,
    ):
        self.url, self.title, self.html = url, title, html
        self.videos, self.youtube, self.content_type, self.method = (
            list(videos),
            youtube,
            content_type,
            method,
        )
        self.seeks = []
        # What `__marginReadAsPage` finds: url -> text, or url -> the page script's refusal
        # ({ok: false, reason}); any other URL answers as a 404 would. `reads` records each call.
        self.files = dict(files or {})
        self.reads = []

    def __call__(self, tab, function, args):
        if function == "__marginProbe":
            return {
                "url": self.url,
                "title": self.title,
                "textLength": len(self.html),
                "videoCount": len(self.videos),
                "contentType": self.content_type,
            }
        if function == "__marginExtract":
            if not self.html and not self.videos:
                return {"ok": False, "reason": "no_text"}
            return {
                "ok": True,
                "url": self.url,
                "title": self.title,
                "lang": "en",
                "method": self.method,
                "html": self.html,
                "videos": self.videos,
                "youtube": self.youtube,
            }
        if function == "__marginReadAsPage":
            url = args[0]
            self.reads.append(url)
            found = self.files.get(url)
            if isinstance(found, str):
                return {"ok": True, "text": found}
            return found or {"ok": False, "reason": "status", "detail": "404"}
        if function == "__marginSeek":
            self.seeks.append(args)
            return {"ok": True, "currentTime": args[2]}
        raise AssertionError(function)


def setup(page=None, responses=(), url=ARTICLE_URL):
    tabs = MemoryTabs(WebTab(7, 3, url, "page"), script=page or Page(url=url))
    transport = ScriptedTransport(list(responses))
    platform = memory_platform(dict(SETTINGS), transport, tabs=tabs)
    return platform


def run(coro):
    return asyncio.run(coro)


def history(platform):
    return platform.local.snapshot().get("history", [])


def attach_now(platform):
    return run(attach.handle_attach(platform, {}))


def turn(platform, start):
    events = []
    run(asyncio.wait_for(chat.run_turn(platform, start, events.append, asyncio.Event()), 5))
    return events


VIDEO_VTT_URL = "https://videos.example.com/media/canyon.en.vtt"


def video_page():
    return Page(
        url="https://videos.example.com/watch/canyon",
        title="Canyon documentary",
        html="<p>A film about rivers.</p>",
        videos=[
            {
                "index": 0,
                "src": "https://videos.example.com/media/canyon.webm",
                "duration": 3730.0,
                "tracks": [
                    {
                        "kind": "captions",
                        "label": "English",
                        "srclang": "en",
                        "src": VIDEO_VTT_URL,
                        "isDefault": True,
                        "cues": None,
                    }
                ],
            }
        ],
        files={VIDEO_VTT_URL: VTT},
    )
