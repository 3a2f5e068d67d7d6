"""Attach page as the user lives it, with the tab and the page script faked (attach_tabs.py; the
page script itself runs in Chromium in tests/e2e/test_page_context_e2e.py). Explain and Seek:
test_explain_and_seek.py."""

import json

import pytest
from attach_tabs import ARTICLE_URL, VTT, Page, attach_now, history, run, setup, turn, video_page
from chat_turns import SETTINGS, answer

from margin.base import clock
from margin.base.errors import MarginError
from margin.page import attach, site_caches
from margin.page import context as page_context
from margin.platform.ports import ScriptError
from margin.storage.history import Record


@pytest.fixture(autouse=True)
def fresh_worker():
    site_caches.forget_instance()
    yield
    site_caches.forget_instance()


def test_attach_page_stores_a_card_record_with_the_article_as_markdown():
    platform = setup()
    result = attach_now(platform)
    assert result["attachment"] == {
        "kind": "page",
        "title": "How rivers carve canyons",
        "url": ARTICLE_URL,
        "site": "news.example.com",
        "chars": result["attachment"]["chars"],
        "truncated": False,
        "capturedAt": history(platform)[0]["attachment"]["capturedAt"],
    }
    assert result["fromCache"] is False and result["duplicate"] is False
    assert result["summarize"] is False  # a short page
    [record] = history(platform)
    assert record["role"] == "user" and record["attachment"]["kind"] == "page"
    header, body = record["content"].split("\n\n", 1)
    assert header.splitlines()[:2] == ["[Page context] Page: How rivers carve canyons", f"URL: {ARTICLE_URL}"]
    assert header.splitlines()[2].startswith("Attached: ")
    assert "## Time" in body and "- Millions of years" in body
    # The title heading is not repeated under the header that names it.
    assert "# How rivers carve canyons" not in body


def test_the_next_question_answers_the_attached_page_and_the_page_goes_to_the_model_first():
    platform = setup(responses=[answer("Erosion.")])
    attach_now(platform)
    events = turn(platform, {"action": "send", "text": "Why do canyons form?", "images": []})
    assert [e["event"] for e in events][-1] == "done"
    messages = json.loads(platform.transport.requests[0].body)["messages"]
    assert [m["role"] for m in messages] == ["user", "user"]
    assert messages[0]["content"].startswith("[Page context] Page: How rivers carve canyons")
    assert messages[1]["content"] == "Why do canyons form?"
    assert [r["role"] for r in history(platform)] == ["user", "user", "assistant"]


def test_attaching_the_same_unchanged_page_again_reads_it_from_the_cache():
    page = Page()
    platform = setup(page, responses=[answer("ok")])
    attach_now(platform)
    again = attach_now(platform)
    # Still waiting for a question: not attached twice.
    assert again["duplicate"] is True and again["fromCache"] is True
    assert len(history(platform)) == 1
    turn(platform, {"action": "send", "text": "Summarize", "images": []})
    third = attach_now(platform)
    assert third["fromCache"] is True and third["duplicate"] is False
    assert len(history(platform)) == 4
    extracts = [fn for _, fn, _ in platform.tabs.runs if fn == "__marginExtract"]
    assert extracts == ["__marginExtract"]  # one extraction, three attaches


def test_a_page_that_changed_in_place_is_read_again():
    page = Page()
    platform = setup(page)
    attach_now(platform)
    page.html += "<p>Breaking: an update.</p>"
    result = attach_now(platform)
    assert result["fromCache"] is False and result["duplicate"] is False
    assert "Breaking: an update." in history(platform)[-1]["content"]


@pytest.mark.parametrize(
    "url, error, code, words",
    [
        ("https://chromewebstore.google.com/detail/x", None, "page_not_readable", "Chrome Web Store"),
        (
            "file:///home/me/notes.html",
            'Cannot access contents of url "file:///home/me/notes.html".',
            "file_access_off",
            "Allow access to file URLs",
        ),
        ("https://example.com/x", "Frame with ID 0 is showing error page", "page_not_readable", "error page"),
        ("https://example.com/x", "No tab with id: 7.", "tab_gone", "closed"),
    ],
)
def test_pages_chrome_does_not_let_margin_read_get_a_sentence_and_store_nothing(url, error, code, words):
    def refuse(tab, function, args):
        raise ScriptError(error)

    platform = setup(url=url)
    platform.tabs.script = refuse
    with pytest.raises(MarginError) as info:
        attach_now(platform)
    assert info.value.code == code and words in info.value.message
    assert history(platform) == []


def test_a_pdf_viewer_tab_goes_to_the_panel_and_a_page_without_text_is_refused():
    # The panel reads a PDF (test_pdf_attach.py): the reply says so, and nothing is stored.
    platform = setup(Page(content_type="application/pdf"))
    assert attach_now(platform)["pdf"]["url"] == ARTICLE_URL
    assert history(platform) == []
    platform = setup(Page(html=""))
    with pytest.raises(MarginError) as info:
        attach_now(platform)
    assert info.value.code == "page_has_no_text" and "Screenshot" in info.value.message
    assert history(platform) == []


def test_no_web_tab_is_refused_with_what_to_do():
    platform = setup()
    platform.tabs.close(7)
    with pytest.raises(MarginError) as info:
        attach_now(platform)
    assert info.value.code == "no_web_tab" and "Attach page" in info.value.message


def test_a_runaway_page_is_cut_at_the_hard_cap_and_says_so(monkeypatch):
    from margin.page import text as page_text

    # The 2,000,000-character cap, scaled down so the test stays fast.
    monkeypatch.setattr(
        page_text.page_text, "__kwdefaults__", {**page_text.page_text.__kwdefaults__, "limit": 5000}
    )
    html = "".join(f"<p>Paragraph {i} " + "word " * 40 + "</p>" for i in range(200))
    platform = setup(Page(html=html))
    result = attach_now(platform)
    assert result["attachment"]["truncated"] is True
    record = history(platform)[0]
    assert "Note: this page is very long" in record["content"]
    assert record["attachment"]["originalChars"] > record["attachment"]["chars"]


def test_a_video_with_captions_attaches_its_transcript_and_is_stamped_for_seeking():
    page = video_page()
    platform = setup(page, url=page.url)
    result = attach_now(platform)
    assert result["attachment"]["kind"] == "video"
    # The caption file was read by the page, under its own rules; the worker fetched nothing.
    assert page.reads == ["https://videos.example.com/media/canyon.en.vtt"]
    assert platform.transport.requests == []
    [record] = history(platform)
    assert record["videoSrc"] == "https://videos.example.com/media/canyon.webm"
    assert record["video"]["tabId"] == 7 and record["video"]["pageUrl"] == page.url
    body = record["content"].split("\n\n", 1)[1]
    assert body.startswith("## Transcript (English, 1:02:10 long)")
    assert "[0:01] Welcome to the canyon." in body and "[1:02:03] The end." in body
    assert "## Page text" in body and "A film about rivers." in body


def test_a_transcript_s_headings_are_in_the_model_language():
    page = video_page()
    platform = setup(page, url=page.url)
    run(platform.local.set({"uiLanguage": "es"}))
    attach_now(platform)
    body = history(platform)[0]["content"].split("\n\n", 1)[1]
    assert body.startswith("## Transcripción (English, 1:02:10 de duración)")
    assert "## Texto de la página" in body


def test_cues_the_page_already_loaded_are_used_without_a_fetch():
    page = video_page()
    page.videos[0]["tracks"][0].update(
        src=None, cues=[{"start": 5, "end": 8, "text": "<v Guide>Look up.</v>"}]
    )
    platform = setup(page, url=page.url)
    attach_now(platform)
    assert page.reads == [] and platform.transport.requests == []
    assert "[0:05] Look up." in history(platform)[0]["content"]


@pytest.mark.parametrize(
    "answer_of_the_page",
    [
        {"ok": False, "reason": "status", "detail": "404"},
        {"ok": False, "reason": "refused", "detail": "TypeError: Failed to fetch"},  # CORS, private network
        {"ok": False, "reason": "too_large", "detail": "20971520"},
        {"ok": False, "reason": "timeout", "detail": "AbortError"},
        "WEBVTT\n\n",  # a placeholder real sites serve
        "<!doctype html><title>Sign in</title><form>log in</form>",
        "<transcript></transcript>",
        '{"events": [{"tStartMs": "x", "segs": 5}]}',
        {"ok": True, "text": None},
        ["not", "a", "dict"],
    ],
)
def test_a_video_whose_captions_are_empty_or_unreadable_attaches_the_page_and_says_so(answer_of_the_page):
    page = video_page()
    page.files = {page.videos[0]["tracks"][0]["src"]: answer_of_the_page}
    platform = setup(page, url=page.url)
    result = attach_now(platform)
    assert result["attachment"]["kind"] == "page"
    record = history(platform)[0]
    assert "videoSrc" not in record
    assert "captions of the video on this page were empty or could not be read" in record["content"]
    assert "A film about rivers." in record["content"]


def test_a_video_with_no_caption_track_says_it_has_none():
    page = video_page()
    page.videos[0]["tracks"] = []
    platform = setup(page, url=page.url)
    attach_now(platform)
    assert page.reads == []
    assert "no captions Margin can read" in history(platform)[0]["content"]


def test_youtube_caption_tracks_are_fetched_as_webvtt_preferring_captions_people_wrote():
    url = "https://www.youtube.com/watch?v=abc123XYZ"
    page = Page(
        url=url,
        title="Rivers - YouTube",
        html="<p>Description</p>",
        videos=[{"index": 0, "src": "blob:https://www.youtube.com/1234", "duration": 600.0, "tracks": []}],
        youtube={
            "videoId": "abc123XYZ",
            "captionTracks": [
                {
                    "baseUrl": "https://www.youtube.com/api/timedtext?v=abc123XYZ&lang=en&kind=asr",
                    "languageCode": "en",
                    "name": "English (auto-generated)",
                    "kind": "asr",
                },
                {
                    "baseUrl": "https://www.youtube.com/api/timedtext?v=abc123XYZ&lang=en",
                    "languageCode": "en",
                    "name": "English",
                    "kind": "",
                },
            ],
        },
    )
    page.files = {"https://www.youtube.com/api/timedtext?v=abc123XYZ&lang=en&fmt=vtt": VTT}
    platform = setup(page, url=url)
    attach_now(platform)
    # Read by youtube.com's own page, as its player reads it; the worker fetched nothing.
    assert page.reads == ["https://www.youtube.com/api/timedtext?v=abc123XYZ&lang=en&fmt=vtt"]
    assert platform.transport.requests == []
    record = history(platform)[0]
    # A MediaSource blob: URL means nothing later: the page's URL is what finds the video again.
    assert record["videoSrc"] == url


@pytest.mark.parametrize(
    ("language", "heading"), [("en", "## Transcript (en (automatic)"), ("ja", "## 文字起こし")]
)
def test_youtube_s_automatic_captions_are_named_so_in_the_model_language(language, heading):
    url = "https://www.youtube.com/watch?v=abc123XYZ"
    asr = {"baseUrl": "https://www.youtube.com/api/timedtext?v=abc123XYZ&kind=asr", "languageCode": "en"}
    page = Page(
        url=url,
        title="Rivers",
        html="<p>D</p>",
        youtube={"videoId": "abc123XYZ", "captionTracks": [{**asr, "kind": "asr"}]},
        files={asr["baseUrl"] + "&fmt=vtt": VTT},
    )
    platform = setup(page, url=url)
    run(platform.local.set({"uiLanguage": language}))
    attach_now(platform)
    body = history(platform)[0]["content"].split("\n\n", 1)[1]
    assert body.startswith(heading)
    assert ("en（自動生成）" in body) == (language == "ja")


# -- attachments in a turn ---------------------------------------------------------------------


def test_a_page_attached_while_the_answer_streams_waits_after_the_answer():
    platform = setup()
    platform.local = type(platform.local)(
        {**SETTINGS, "history": [{"role": "user", "content": "Hello", "createdAt": 1}]}
    )

    def answer_after_an_attach(request):
        async def respond():
            await attach.handle_attach(platform, {})  # the user pressed Attach page meanwhile
            return answer("Hi!")

        return respond()

    platform.transport.queue = [answer_after_an_attach]
    events = turn(platform, {"action": "regenerate"})
    assert events[-1]["event"] == "done"
    roles = [(r["role"], "attachment" in r) for r in history(platform)]
    assert roles == [("user", False), ("assistant", False), ("user", True)]


def test_regenerate_keeps_the_attachment_waiting_after_the_new_answer():
    platform = setup(responses=[answer("first"), answer("second")])
    turn(platform, {"action": "send", "text": "q", "images": []})
    attach_now(platform)
    turn(platform, {"action": "regenerate"})
    stored = history(platform)
    assert [r["role"] for r in stored] == ["user", "assistant", "user"]
    assert stored[1]["content"] == "second" and "attachment" in stored[2]
    # The regenerated answer answered the question alone: the page was not sent.
    messages = json.loads(platform.transport.requests[1].body)["messages"]
    assert [m["content"] for m in messages] == ["q"]


def test_remove_takes_back_a_waiting_attachment_only():
    platform = setup(responses=[answer("ok")])
    attach_now(platform)
    run(attach.handle_remove(platform, {"index": 0, "url": ARTICLE_URL}))
    assert history(platform) == []
    attach_now(platform)
    turn(platform, {"action": "send", "text": "q", "images": []})
    with pytest.raises(MarginError) as info:
        run(attach.handle_remove(platform, {"index": 0, "url": ARTICLE_URL}))
    assert info.value.code == "attachment_answered"
    assert len(history(platform)) == 3


# -- Attach again -----------------------------------------------------------------------------


def _ident(record):
    return {"capturedAt": record["attachment"]["capturedAt"], "url": record["attachment"]["url"]}


def test_attach_again_appends_a_fresh_copy_without_what_slimming_added(monkeypatch):
    platform = setup(responses=[answer("ok")])
    attach_now(platform)
    turn(platform, {"action": "send", "text": "q", "images": []})
    stored = history(platform)
    old = stored[0]
    old["attachment"]["summary"] = {"text": "Short.", "model": "m", "chars": 6, "createdAt": 5}
    old["attachment"]["trimmedFrom"] = 90_000
    old["imagesSeen"] = True
    platform.local._data["history"] = json.dumps(stored)
    later = old["attachment"]["capturedAt"] + 3_600_000
    monkeypatch.setattr(clock, "now_ms", lambda: later)

    result = run(attach.handle_reattach(platform, _ident(old)))

    records = history(platform)
    assert records[:3] == stored  # nothing before it changed
    copy = records[3]
    assert result == {
        "attachment": page_context.card(Record.from_json(copy)),
        "duplicate": False,
        "summarize": False,
    }
    assert result["attachment"]["capturedAt"] == later
    expected_meta = {k: v for k, v in old["attachment"].items() if k not in ("summary", "trimmedFrom")}
    assert copy["attachment"] == {**expected_meta, "capturedAt": later}
    assert copy["createdAt"] == later and "imagesSeen" not in copy
    old_head, old_body = old["content"].split("\n\n", 1)
    head, body = copy["content"].split("\n\n", 1)
    assert body == old_body
    assert head.splitlines()[2] == f"Attached: {page_context.attached_at(later)}" != old_head.splitlines()[2]
    assert head.splitlines()[:2] == old_head.splitlines()[:2]


def test_attach_again_of_a_page_that_already_waits_adds_nothing():
    platform = setup()
    attach_now(platform)
    [waiting] = history(platform)
    result = run(attach.handle_reattach(platform, _ident(waiting)))
    assert result["duplicate"] is True and result["summarize"] is False
    assert result["attachment"] == page_context.card(Record.from_json(waiting))
    assert history(platform) == [waiting] and platform.local.writes[-1]["history"] == [waiting]


def test_attach_again_of_a_record_that_is_gone_or_unnamed_is_refused():
    platform = setup()
    attach_now(platform)
    [record] = history(platform)
    writes = len(platform.local.writes)
    with pytest.raises(MarginError) as gone:
        run(attach.handle_reattach(platform, {**_ident(record), "url": "https://elsewhere.example/"}))
    assert gone.value.code == "attachment_gone"
    with pytest.raises(MarginError) as unnamed:
        run(attach.handle_reattach(platform, {"url": ARTICLE_URL}))
    assert unnamed.value.code == "bad_payload"
    assert len(platform.local.writes) == writes


def test_a_stored_page_over_the_setting_is_to_be_summarized():
    long_html = "<h1>Long</h1>" + "<p>Words that go on and on about rivers.</p>" * 800

    def long_page(threshold=None, **local):
        platform = setup(Page(html=long_html), responses=[answer("ok")])
        for key, value in {"summarizeAboveChars": threshold, **local}.items():
            if value is not None:
                platform.local._data[key] = json.dumps(value)
        return platform

    platform = long_page(20_000)
    first = attach_now(platform)
    assert 20_000 < first["attachment"]["chars"] < 50_000 and first["summarize"] is True
    assert attach_now(platform)["summarize"] is False  # a duplicate stores nothing
    turn(platform, {"action": "send", "text": "q", "images": []})
    again = run(attach.handle_reattach(platform, first["attachment"]))
    assert again["duplicate"] is False and again["summarize"] is True

    assert attach_now(long_page())["summarize"] is False  # the default is 50,000
    assert attach_now(long_page(0))["summarize"] is False  # off
    assert attach_now(long_page(20_000, providers=[]))["summarize"] is False  # no model to ask


def test_sessions_name_and_search_a_conversation_by_its_question_not_the_page_text():
    from margin.sessions import actions as sessions
    from margin.storage.history import parse_history

    platform = setup(responses=[answer("ok")])
    attach_now(platform)
    turn(platform, {"action": "send", "text": "Why canyons?", "images": []})
    records = parse_history(history(platform)).records
    assert sessions.default_name(records) == "Why canyons?"
    digest = sessions.text_digest(records)
    assert "How rivers carve canyons" in digest and "Water finds the weakest rock" not in digest


@pytest.mark.parametrize("reported", [float("inf"), float("nan"), -1, 0, True, "90"])
def test_a_video_duration_that_is_not_a_finite_length_falls_back_to_the_transcript(reported):
    # A live stream's <video>.duration is Infinity; stored, it would make the record unwritable.
    from margin.page.transcripts import Cue

    cues = [Cue(start=0.0, end=42.0, text="hello")]
    assert attach._duration({"duration": reported}, cues) == 42.0
    assert attach._duration({"duration": reported}, []) is None
    assert attach._duration({"duration": 90.5}, cues) == 90.5


def test_a_cached_page_attached_again_after_a_language_change_has_the_new_language_s_headings():
    page = video_page()
    platform = setup(page, responses=[answer("ok")], url=page.url)
    attach_now(platform)
    turn(platform, {"action": "send", "text": "?", "images": []})
    run(platform.local.set({"uiLanguage": "ru"}))
    again = attach_now(platform)
    assert again["fromCache"] is False and again["duplicate"] is False
    body = history(platform)[-1]["content"].split("\n\n", 1)[1]
    assert body.startswith("## Расшифровка (English,")
    assert "## Текст страницы" in body and "## Page text" not in body
