"""Hostile pages through Attach page (margin.page.attach via the worker's `tab.attach`): caption
files a page names (empty, HTML, truncated, enormous, XML with entity expansion or 10,000-deep
nesting, json3 with wrong types) and pages built to hurt (100,000 links, tables nested deep, a
title of 1 MB, zero-width and bidi control characters).

Each case: the page's article attaches, or a sentence says why (a specific code, never
"internal"); nothing raises to the user; the conversation already stored loses 0 bytes. Caption
files come through the page (the page script's `__marginReadAsPage`, margin.page.captions rule 2),
so this fake page answers them; the worker's own transport is never asked (it fails the case).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from platform_memory import MemoryTabs, ScriptedTransport, memory_platform

from margin.app.worker import Worker
from margin.platform.ports import WebTab

from .ledger import snapshot
from .profiles import PROVIDER

URL = "https://pages.example.com/walk"
TRACK = "https://pages.example.com/walk.en.vtt"
ARTICLE = "The rim trail follows the canyon for three kilometres before it turns north."
EARLIER = [
    {"role": "user", "content": "an earlier question", "createdAt": 1},
    {"role": "assistant", "content": "an earlier answer", "createdAt": 2},
]


def deep_xml(depth: int) -> str:
    return "<transcript>" + "<text start='1' dur='2'>" * depth + "x" + "</text>" * depth + "</transcript>"


BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)
    )
    + "]><transcript><text start='1' dur='1'>&lol9;</text></transcript>"
)
MANY_CUES = "WEBVTT\n\n" + "".join(
    f"{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000 --> {i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.900\n"
    f"cue number {i}\n\n"
    for i in range(100_000)
)

# name -> what the page's read of the caption file answers (text, or the page script's refusal)
CAPTION_FILES = {
    "empty_webvtt": "WEBVTT\n\n",
    "empty_body": "",
    "only_a_note": "WEBVTT\n\nNOTE nothing here yet\n",
    "html_login_page": "<!doctype html><html><title>Sign in</title><form><input name=user></form></html>",
    "truncated_webvtt": "WEBVTT\n\n00:00:01.000 --> 00:0",
    "truncated_cue_text": "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<v Guide><b>half",
    "enormous_100k_cues": MANY_CUES,
    "over_the_cap": {"ok": False, "reason": "too_large", "detail": "20971520"},
    "refused_cross_origin": {"ok": False, "reason": "refused", "detail": "TypeError: Failed to fetch"},
    "timed_out": {"ok": False, "reason": "timeout", "detail": "AbortError"},
    "xml_billion_laughs": BILLION_LAUGHS,
    "xml_external_entity": '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><transcript><text start="1">&x;</text></transcript>',
    "xml_10000_deep": deep_xml(10_000),
    "empty_transcript_xml": "<transcript></transcript>",
    "json3_events_not_a_list": '{"events": {"tStartMs": 1}}',
    "json3_wrong_types": '{"events": [{"tStartMs": "soon", "dDurationMs": [], "segs": "text"}, 5, null]}',
    "json3_segs_of_numbers": '{"events": [{"tStartMs": 1000, "dDurationMs": 500, "segs": [{"utf8": 7}, 8]}]}',
    "json3_10000_deep": '{"events": ' + "[" * 10_000 + "]" * 10_000 + "}",
    "nul_and_binary": "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n\x00\x01\ufffe\udc00 junk",
    "answer_not_an_object": ["ok", "text"],
    "answer_text_not_text": {"ok": True, "text": {"cues": []}},
}

# Files that still hold a readable cue, and the text of it the transcript shows.
READABLE = {
    "xml_10000_deep": "[0:01] x",
    "enormous_100k_cues": "[0:00] cue number 0",
    "truncated_cue_text": "[0:01] half",
    "nul_and_binary": "junk",
}

ZERO_WIDTH_BIDI = "\u200b\u200c\u200d\u2060\ufeff\u202e\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u061c"
# name -> (title, the page's HTML)
PAGES = {
    "links_100k": (
        "Links",
        f"<p>{ARTICLE}</p>" + "".join(f'<a href="/p{i}">link {i}</a> ' for i in range(100_000)),
    ),
    "tables_nested_2000_deep": (
        "Tables",
        f"<p>{ARTICLE}</p>" + "<table><tr><td>" * 2_000 + "cell" + "</td></tr></table>" * 2_000,
    ),
    "divs_nested_10000_deep": ("Divs", "<div>" * 10_000 + f"<p>{ARTICLE}</p>" + "</div>" * 10_000),
    "title_of_1_mb": ("T" * 1_000_000, f"<p>{ARTICLE}</p>"),
    "zero_width_and_bidi": (
        f"Walk{ZERO_WIDTH_BIDI}",
        f"<p>{ZERO_WIDTH_BIDI.join(ARTICLE.split(' '))}</p><p>{ARTICLE}</p>",
    ),
    "unclosed_everything": ("Unclosed", f"<p>{ARTICLE}" + "<div><span><b><i><table><tr><td>" * 3_000),
    "no_text_at_all": ("Empty", "<div></div>" * 1_000),
}


class HostilePage:
    """What the page script answers: the page's extraction, and the caption file it reads."""

    def __init__(self, title: str, html: str, caption: object = None):
        self.title, self.html, self.caption = title, html, caption

    def __call__(self, tab: WebTab, function: str, args: tuple) -> object:
        if function == "__marginProbe":
            return {
                "url": URL,
                "title": self.title[:100],
                "textLength": len(self.html),
                "videoCount": 1,
                "contentType": "text/html",
            }
        if function == "__marginExtract":
            track = {
                "kind": "captions",
                "label": "English",
                "srclang": "en",
                "src": TRACK,
                "isDefault": False,
                "cues": None,
            }
            videos = [
                {
                    "index": 0,
                    "src": "https://pages.example.com/walk.webm",
                    "duration": 60.0,
                    "tracks": [track],
                }
            ]
            return {
                "ok": True,
                "url": URL,
                "title": self.title,
                "lang": "en",
                "method": "readability",
                "html": self.html,
                "videos": videos if self.caption is not None else [],
            }
        if function == "__marginReadAsPage":
            if isinstance(self.caption, str):
                return {"ok": True, "text": self.caption}
            return self.caption
        raise AssertionError(function)


def attach(page: HostilePage) -> tuple[dict, dict, dict, ScriptedTransport]:
    transport = ScriptedTransport([])
    tabs = MemoryTabs(WebTab(7, 3, URL, page.title[:100]), script=page)
    platform = memory_platform(
        {"providers": [PROVIDER], "activeProviderId": "p1", "history": EARLIER}, transport, tabs=tabs
    )
    before = snapshot(platform)
    worker = Worker(platform, lambda _id, _event: True)
    reply = json.loads(asyncio.run(worker.dispatch_json("tab.attach", "{}", "extension")))
    return reply, before, snapshot(platform), transport


def check(reply: dict, before: dict, after: dict, transport: ScriptedTransport, ledger) -> dict | None:
    assert transport.requests == [], "the worker fetched a URL the page named"
    if not reply["ok"]:
        error = reply["error"]
        assert error["code"] != "internal", error
        assert error["message"].strip().endswith((".", "。")) and "Traceback" not in error["message"], error
        ledger.settle(before, after)
        return None
    ledger.settle(before, after, replaced=["local:history"])
    history = json.loads(after["local:history"])
    assert history[: len(EARLIER)] == EARLIER
    return history[-1]


@pytest.mark.parametrize("name", CAPTION_FILES)
def test_a_hostile_caption_file_leaves_the_article_attached(name, ledger):
    reply, before, after, transport = attach(
        HostilePage("Rim walk", f"<p>{ARTICLE}</p>", CAPTION_FILES[name])
    )
    record = check(reply, before, after, transport, ledger)
    assert record is not None, reply
    assert ARTICLE in record["content"]
    if name in READABLE:
        # A readable cue inside a hostile file is a transcript all the same.
        assert READABLE[name] in record["content"] and record["attachment"]["kind"] == "video"
    else:
        assert "captions of the video on this page were empty or could not be read" in record["content"]
        assert "lol" * 100 not in record["content"] and "root:" not in record["content"]


@pytest.mark.parametrize("name", PAGES)
def test_a_hostile_page_attaches_or_says_why(name, ledger):
    title, html = PAGES[name]
    reply, before, after, transport = attach(HostilePage(title, html))
    record = check(reply, before, after, transport, ledger)
    if name == "no_text_at_all":
        assert record is None and reply["error"]["code"] == "page_has_no_text", reply
        return
    assert record is not None, reply
    assert (
        ARTICLE in record["content"].replace(ZERO_WIDTH_BIDI, " ")
        or ARTICLE.split(" ")[1] in record["content"]
    )
