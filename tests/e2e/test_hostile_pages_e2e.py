"""Pages are hostile input (docs/security.md): Margin never reads, through a page, what that page
could not read itself, and an empty caption file is a normal outcome.

Two servers on this machine stand for two sites: the page's (127.0.0.1) and another one
(`localhost`, another port: a different origin) that holds a file the page names but may not read.
Witnesses: what the model received (the fake provider records every request), what the record
keeps, and the card's note; the CSP listener of every test (harness rule 5) is proven able to fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_log import CSP_REPORT_PREFIX
from fake_provider import FakeProvider
from harness import Margin, launch, poll
from test_page_context_e2e import ATTACH_TIMEOUT_MS, attach, card, open_web_page, wait_attached
from web_pages import CAPTIONS_VTT, WebPages, silent_wav

SECRET = "Quarterly salaries of the intranet team"
SECRET_VTT = f"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n{SECRET}.\n"
ARTICLE = "The walk follows the canyon rim for three kilometres before it turns north."
UNREADABLE_NOTE = "captions of the video on this page were empty or could not be read"


def video_page(track_src: str) -> bytes:
    # No `default` on the track: the page never loads it itself, so Margin must read the file.
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Rim walk</title></head>
<body><h1>Rim walk</h1><p>{ARTICLE}</p><p>Bring water; there is no shade on the way.</p>
<video controls preload="auto" src="/media/walk.wav">
  <track kind="captions" srclang="en" label="English" src="{track_src}">
</video></body></html>""".encode()


@pytest.fixture
def other_site() -> Iterator[WebPages]:
    files = {
        "/secret.vtt": ("text/vtt; charset=utf-8", SECRET_VTT.encode()),
        "/shared.vtt": ("text/vtt; charset=utf-8", CAPTIONS_VTT.encode()),
    }
    with WebPages(files, cors={"/shared.vtt"}) as site:
        yield site


@pytest.fixture
def site(other_site: WebPages) -> Iterator[WebPages]:
    other = other_site.url("/").replace("127.0.0.1", "localhost").rstrip("/")
    pages = {
        "/cross.html": ("text/html; charset=utf-8", video_page(f"{other}/secret.vtt")),
        "/redirected.html": ("text/html; charset=utf-8", video_page("/go/secret.vtt")),
        "/shared.html": ("text/html; charset=utf-8", video_page(f"{other}/shared.vtt")),
        "/same.html": ("text/html; charset=utf-8", video_page("/media/own.vtt")),
        "/empty.html": ("text/html; charset=utf-8", video_page("/media/empty.vtt")),
        "/media/walk.wav": ("audio/wav", silent_wav(20)),
        "/media/own.vtt": ("text/vtt; charset=utf-8", CAPTIONS_VTT.encode()),
        "/media/empty.vtt": ("text/vtt; charset=utf-8", b"WEBVTT\n\n"),
    }
    with WebPages(pages, redirects={"/go/secret.vtt": f"{other}/secret.vtt"}) as server:
        yield server


def attach_and_ask(margin: Margin, provider: FakeProvider, url: str, card_name: str) -> tuple[dict, str]:
    panel = margin.open_panel()
    open_web_page(margin, url, video=True)
    attach(panel)
    card(panel, card_name).wait_for(timeout=ATTACH_TIMEOUT_MS)
    (record,) = wait_attached(margin)
    provider.script(reply="Noted.")
    margin.send(panel, "What does the page say?")
    margin.wait_answer(panel)
    return record, provider.turn_requests[-1].raw_body.decode()


@pytest.mark.parametrize("path", ["/cross.html", "/redirected.html"], ids=["directly", "through-a-redirect"])
def test_a_cross_origin_track_without_cors_never_reaches_the_model_while_the_article_does(
    configured_margin: Margin, fake_provider: FakeProvider, site: WebPages, path: str
):
    record, sent = attach_and_ask(configured_margin, fake_provider, site.url(path), "Attached page: Rim walk")
    assert ARTICLE in record["content"] and ARTICLE in sent
    assert SECRET not in record["content"] and SECRET not in sent
    assert UNREADABLE_NOTE in record["content"]
    assert "videoSrc" not in record


def test_a_cross_origin_track_the_other_site_shares_with_cors_is_read(
    configured_margin: Margin, fake_provider: FakeProvider, site: WebPages
):
    _, sent = attach_and_ask(
        configured_margin, fake_provider, site.url("/shared.html"), "Attached video: Rim walk"
    )
    assert "[0:01] Welcome to the canyon walk." in sent and ARTICLE in sent


def test_a_same_origin_track_the_page_did_not_load_still_gives_its_transcript(
    configured_margin: Margin, fake_provider: FakeProvider, site: WebPages
):
    record, sent = attach_and_ask(
        configured_margin, fake_provider, site.url("/same.html"), "Attached video: Rim walk"
    )
    assert site.requests_for("/media/own.vtt") >= 1
    assert "[2:05] Here the river turns east" in record["content"] and "Here the river turns east" in sent
    assert record["videoSrc"] == site.url("/media/walk.wav")


def test_an_empty_caption_file_attaches_the_article_and_the_card_says_so(
    configured_margin: Margin, fake_provider: FakeProvider, site: WebPages
):
    record, sent = attach_and_ask(
        configured_margin, fake_provider, site.url("/empty.html"), "Attached page: Rim walk"
    )
    assert ARTICLE in sent
    assert UNREADABLE_NOTE in record["content"] and UNREADABLE_NOTE in sent


def test_the_csp_listener_reports_a_violation_in_an_extension_page(playwright_instance, dist_dir):
    # The zero-violation check every test ends with can fail: an inline handler parsed in a page
    # of Margin's is reported (this is what DOMPurify's parse of `onerror=` used to do). A browser
    # of its own: the conftest's check of the shared fixture must not see this expected report.
    launched = launch(playwright_instance, dist_dir)
    try:
        page = Margin(launched).open_panel()
        page.evaluate("() => new DOMParser().parseFromString('<img src=x onerror=\"1\">', 'text/html')")
        # The report reaches the test as a console event, which Playwright's sync API delivers only
        # while it is called: each try waits in the page (a bare sleep never saw it arrive).
        poll(
            lambda: page.wait_for_timeout(200) or launched.csp_violations or None,
            timeout=60,
            message="no violation was reported",
        )
        assert CSP_REPORT_PREFIX in launched.csp_violations[0]
        assert "script-src-attr" in launched.csp_violations[0]
    finally:
        launched.close()
