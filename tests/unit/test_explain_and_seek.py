"""Explain (the selection and its page, sent once) and Seek (the video moved, or reopened at that
time), as the user lives them, with the tab and the page script faked (attach_tabs.py)."""

import pytest
from attach_tabs import ARTICLE_URL, attach_now, history, run, setup, turn, video_page
from chat_turns import answer

from margin.base.errors import MarginError
from margin.page import site_caches, video
from margin.platform.ports import WebTab
from margin.turn import explain


@pytest.fixture(autouse=True)
def fresh_worker():
    site_caches.forget_instance()
    yield
    site_caches.forget_instance()


# -- Explain -----------------------------------------------------------------------------------


def test_explain_sends_the_selection_and_its_page_once():
    platform = setup(responses=[answer("It means ...")])
    request = run(
        explain.queue(
            platform,
            {
                "selectionText": "  isostatic   rebound ",
                "pageUrl": ARTICLE_URL,
                "title": "How rivers carve canyons",
            },
        )
    )
    events = turn(platform, {"action": "explain", "requestId": request["id"]})
    assert events[-1]["event"] == "done"
    stored = history(platform)
    assert [r["role"] for r in stored] == ["user", "user", "assistant"]
    assert stored[0]["attachment"]["kind"] == "selection"
    assert stored[0]["content"].startswith(
        "[Page context] Selection from: How rivers carve canyons\nURL: " + ARTICLE_URL
    )
    assert stored[0]["content"].endswith("\n\nisostatic rebound")
    assert stored[1]["content"] == "Explain this."
    # The click is answered once: a second panel asking for it gets a quiet "gone".
    again = turn(platform, {"action": "explain", "requestId": request["id"]})
    assert again[-1]["event"] == "error" and again[-1]["error"]["code"] == "explain_gone"
    assert len(history(platform)) == 3


def test_explain_without_a_selection_is_refused():
    with pytest.raises(MarginError) as info:
        run(explain.queue(setup(), {"selectionText": "   "}))
    assert info.value.code == "nothing_selected"


# -- Seek to -----------------------------------------------------------------------------------


def attached_video(platform):
    page = platform.tabs.script
    attach_now(platform)
    return page


def test_seek_moves_the_video_in_its_tab_and_brings_the_tab_forward():
    page = video_page()
    platform = setup(page, url=page.url)
    attached_video(platform)
    platform.tabs.add(WebTab(9, 3, "https://elsewhere.example/", "other"), active=True)
    result = run(video.handle_seek(platform, {"index": 0, "seconds": 754}))
    assert result["how"] == "seeked"
    assert page.seeks == [("https://videos.example.com/media/canyon.webm", 0, 754)]
    assert platform.tabs.focused == [7]


def test_seek_with_the_tab_gone_reopens_a_video_file_at_that_time():
    page = video_page()
    platform = setup(page, url=page.url)
    attached_video(platform)
    platform.tabs.close(7)
    result = run(video.handle_seek(platform, {"index": 0, "seconds": 754.6}))
    assert result == {
        "how": "reopened",
        "tabId": result["tabId"],
        "url": "https://videos.example.com/media/canyon.webm#t=754",
    }


def test_seek_reopens_youtube_with_t_and_refuses_a_page_without_a_time_address():
    assert (
        video.reopen_url({"pageUrl": "https://www.youtube.com/watch?v=abc&list=x", "src": "blob:x"}, 65)
        == "https://www.youtube.com/watch?v=abc&t=65s"
    )
    assert (
        video.reopen_url({"pageUrl": "https://youtu.be/abc", "src": ""}, 3)
        == "https://www.youtube.com/watch?v=abc&t=3s"
    )
    assert (
        video.reopen_url(
            {"pageUrl": "https://example.com/lesson", "src": "https://cdn.example.com/stream"}, 3
        )
        is None
    )
    assert video.same_video_page(
        "https://www.youtube.com/watch?v=abc&t=30s", "https://www.youtube.com/watch?v=abc"
    )
    assert not video.same_video_page(
        "https://www.youtube.com/watch?v=def", "https://www.youtube.com/watch?v=abc"
    )

    page = video_page()
    page.videos[0]["src"] = "https://cdn.example.com/stream"
    platform = setup(page, url=page.url)
    attached_video(platform)
    platform.tabs.close(7)
    with pytest.raises(MarginError) as info:
        run(video.handle_seek(platform, {"index": 0, "seconds": 10}))
    assert info.value.code == "video_gone" and "Attach page" in info.value.message


def test_seek_refuses_a_record_that_is_not_a_video_and_a_bad_time():
    platform = setup()
    attach_now(platform)
    for payload in ({"index": 0, "seconds": 5}, {"index": 4, "seconds": 5}, {"index": "0", "seconds": 5}):
        with pytest.raises(MarginError) as info:
            run(video.handle_seek(platform, payload))
        assert info.value.code == "video_gone"
    with pytest.raises(MarginError) as info:
        run(video.handle_seek(platform, {"index": 0, "seconds": float("nan")}))
    assert info.value.code == "bad_payload"
