"""Attach page on a PDF tab, Python's half (margin.page.pdf, margin.page.attach rule 9): the phases
of `tab.attach`, the record and what the model reads, the site cache, every refusal, and Explain
on a selection in Chrome's PDF viewer. The panel's half runs in Chromium (tests/e2e/test_pdf_e2e.py);
the text pass on real documents in test_pdf_text.py."""

import json

import pytest
from attach_tabs import ARTICLE_URL, Page, history, run, setup, turn
from chat_turns import answer

from margin.base.errors import MarginError
from margin.page import attach, pdf, site_caches
from margin.platform.ports import ScriptError
from margin.turn import explain

PDF_URL = "https://papers.example.org/2026/canyons.pdf"
DIGEST = "ab" * 32
PAGES = ["# Canyons\n\nRivers carve canyons.", "", "Floods do the work: 峡\u2f95 ⼀ \uf9b4."]


@pytest.fixture(autouse=True)
def fresh_worker():
    site_caches.forget_instance()
    yield
    site_caches.forget_instance()


def pdf_tab(**page):
    return setup(Page(url=PDF_URL, title="Canyons", content_type="application/pdf", **page), url=PDF_URL)


def ask(platform, pdf_request=None):
    payload = {} if pdf_request is None else {"tabId": 7, "pdf": {"url": PDF_URL, **pdf_request}}
    return run(attach.handle_attach(platform, payload))


def read_whole(platform, **more):
    return ask(
        platform,
        {"digest": DIGEST, "bytes": 20_480, "title": "Canyons", "pages": PAGES, "pageCount": 3, **more},
    )


def test_a_pdf_tab_is_handed_to_the_panel_then_its_text_becomes_a_pdf_record():
    platform = pdf_tab()
    reply = ask(platform)
    assert reply == {
        "pdf": {
            "tabId": 7,
            "url": PDF_URL,
            "title": "Canyons",
            "maxBytes": pdf.MAX_PDF_BYTES,
            "maxChars": 2_000_000,
            "extract": False,
        }
    }
    # The bytes' digest, not cached yet: read the text.
    assert ask(platform, {"digest": DIGEST, "bytes": 20_480})["pdf"]["extract"] is True
    assert history(platform) == []

    result = read_whole(platform)
    assert result["attachment"]["kind"] == "pdf" and result["attachment"]["pages"] == 3
    assert result["attachment"]["bytes"] == 20_480 and result["fromCache"] is False
    (record,) = history(platform)
    header, body = record["content"].split("\n\n", 1)
    assert header.splitlines()[0] == "[Page context] PDF document: Canyons"
    assert header.splitlines()[1] == f"URL: {PDF_URL}"
    assert (
        header.splitlines()[3]
        == "Note: pages in this PDF: 3; a line like “— page 1 —” marks where each page begins."
    )
    # Page 2 has no text: no marker; the CJK compatibility forms are folded (⾕ → 谷, ⼀ → 一, 領 → 領).
    assert (
        body
        == "— page 1 —\n\n# Canyons\n\nRivers carve canyons.\n\n— page 3 —\n\nFloods do the work: 峡谷 一 領."
    )


def test_the_same_bytes_again_come_from_the_site_cache_and_a_question_answers_them():
    platform = setup(
        Page(url=PDF_URL, title="Canyons", content_type="application/pdf"), [answer("Floods.")], PDF_URL
    )
    read_whole(platform)
    again = ask(platform, {"digest": DIGEST, "bytes": 20_480})
    assert again["fromCache"] is True and again["duplicate"] is True
    events = turn(platform, {"action": "send", "text": "Who does the work?", "images": []})
    assert events[-1]["event"] == "done"
    messages = json.loads(platform.transport.requests[0].body)["messages"]
    assert messages[0]["content"].startswith("[Page context] PDF document: Canyons")
    assert "— page 3 —" in messages[0]["content"]
    # Other bytes at the same address (the file changed): read again.
    assert ask(platform, {"digest": "cd" * 32, "bytes": 20_480})["pdf"]["extract"] is True


def test_a_long_pdf_read_in_part_says_how_many_pages_the_model_gets():
    platform = pdf_tab()
    read_whole(platform, pageCount=900, pagesRead=3)
    (record,) = history(platform)
    assert "Note: only its first 3 of 900 pages are attached (Margin's limit on text)." in record["content"]
    assert record["attachment"]["truncated"] is True and record["attachment"]["pages"] == 900


def test_the_page_markers_and_notes_are_in_the_model_language():
    payload = pdf.pdf_payload(PDF_URL, "Каньоны", {"pages": ["Текст."], "pageCount": 1}, language="ru")
    assert payload["body"] == "— стр. 1 —\n\nТекст."
    assert payload["notes"] == [
        "страниц в этом PDF: 1; строка вида «— стр. 1 —» отмечает начало каждой страницы."
    ]


@pytest.mark.parametrize(
    "problem, code, words",
    [
        ({"problem": "encrypted"}, "pdf_encrypted", "locked with a password"),
        ({"problem": "no_text"}, "pdf_no_text", "Use Screenshot"),
        ({"problem": "damaged"}, "pdf_damaged", "damaged or incomplete"),
        ({"problem": "not_pdf"}, "pdf_not_pdf", "did not give Margin a PDF"),
        (
            {"problem": "too_big", "bytes": 80 * 1024 * 1024},
            "pdf_too_big",
            "This PDF is 80 MB, more than the 50 MB",
        ),
        ({"problem": "too_big"}, "pdf_too_big", "larger than the 50 MB Margin reads"),
        ({"problem": "unreachable", "status": 403}, "pdf_unreachable", "HTTP status 403"),
        ({"problem": "unreachable"}, "pdf_unreachable", "Check the connection"),
        ({"problem": "something new", "detail": "TypeError: x is undefined"}, "pdf_damaged", "damaged"),
    ],
)
def test_a_pdf_that_cannot_be_read_gets_one_sentence_and_nothing_is_stored(problem, code, words):
    platform = pdf_tab()
    with pytest.raises(MarginError) as info:
        ask(platform, problem)
    assert info.value.code == code and words in info.value.message
    assert "TypeError" not in info.value.message and "Error" not in info.value.message
    assert history(platform) == []


def test_a_pdf_whose_pages_all_came_back_empty_is_a_scan():
    platform = pdf_tab()
    with pytest.raises(MarginError) as info:
        read_whole(platform, pages=["", "  "], pageCount=2)
    assert info.value.code == "pdf_no_text" and "Screenshot" in info.value.message
    assert history(platform) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"digest": "not a digest", "pages": ["x"]},
        {"digest": DIGEST, "pages": "not a list"},
        {"digest": DIGEST, "pages": [1, 2]},
    ],
)
def test_a_malformed_text_request_is_refused_and_stores_nothing(bad):
    platform = pdf_tab()
    with pytest.raises(MarginError):
        ask(platform, bad)
    assert history(platform) == []


class TextPdf(Page):
    """A PDF served as text/plain: the tab shows its raw bytes."""

    def __call__(self, tab, function, args):
        answer = super().__call__(tab, function, args)
        if function == "__marginProbe":
            return {**answer, "contentType": "text/plain", "pdfText": True}
        return answer


def test_what_shows_a_pdf_and_what_does_not():
    # Chrome refused the page script on a .pdf address: the panel reads it from its address.
    def refuse(tab, function, args):
        raise ScriptError("Cannot access contents of the page.")

    platform = setup(url=PDF_URL)
    platform.tabs.script = refuse
    assert ask(platform)["pdf"] == {**ask(platform)["pdf"], "url": PDF_URL, "title": "page"}
    # A PDF served as text shows its bytes: the page script's probe says so. Titled by its
    # address (as Chrome titles a tab before it knows better), it is named by its file.
    platform = setup(TextPdf(url=PDF_URL, title="papers.example.org/2026/canyons.pdf"), url=PDF_URL)
    assert ask(platform)["pdf"]["title"] == "canyons.pdf"
    # An HTML page at an address ending in .pdf is a page.
    platform = setup(Page(url=PDF_URL, title="Not a PDF"), url=PDF_URL)
    assert ask(platform)["attachment"]["kind"] == "page"
    assert not pdf.is_pdf_address("file:///home/me/a.pdf") and pdf.is_pdf_address("https://x.org/A.PDF")
    assert pdf.shows_pdf({"contentType": "application/x-pdf"}) and not pdf.shows_pdf(
        {"contentType": "text/html"}
    )


def test_a_file_pdf_without_file_access_says_how_to_allow_it():
    def refuse(tab, function, args):
        raise ScriptError('Cannot access contents of url "file:///home/me/a.pdf".')

    platform = setup(url="file:///home/me/a.pdf")
    platform.tabs.script = refuse
    with pytest.raises(MarginError) as info:
        ask(platform)
    assert info.value.code == "file_access_off"


def test_fold_compatibility_folds_only_cjk_compatibility_forms():
    assert pdf.fold_compatibility("⾕⼀\uf9b4\u2e9f") == "谷一領母"
    kept = "ﬁ ① ² Ｆｕｌｌ ｶﾅ ㎏ café"
    assert pdf.fold_compatibility(kept) == kept


# -- Explain in Chrome's PDF viewer (margin.turn.explain rule 4) ---------------------------------

# What Chromium 156 passes for a selection in its PDF viewer: the viewer's stream as `srcUrl`.
VIEWER = "chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/bcef0bd9-1c8f-4031-a08d-43eea7391b99"


def test_a_selection_in_the_pdf_viewer_is_folded_before_it_is_queued():
    platform = setup()
    request = run(
        explain.queue(
            platform,
            {
                "selectionText": "峡\u2f95",
                "pageUrl": "https://x.org/p",
                "frameUrl": "https://x.org/p",
                "srcUrl": VIEWER,
            },
        )
    )
    assert request["selection"] == "峡谷"
    # A web page's selection is the page's own text: left as it is.
    request = run(explain.queue(platform, {"selectionText": "峡\u2f95", "pageUrl": ARTICLE_URL}))
    assert request["selection"] == "峡\u2f95"


def test_a_click_in_the_pdf_viewer_without_text_says_to_attach_the_whole_pdf():
    platform = setup()
    with pytest.raises(MarginError) as info:
        run(explain.queue(platform, {"pageUrl": ARTICLE_URL}))
    assert info.value.code == "nothing_selected"
    request = run(explain.queue(platform, {"pageUrl": PDF_URL, "frameUrl": PDF_URL, "srcUrl": VIEWER}))
    with pytest.raises(MarginError) as info:
        run(explain.take_request(platform, request["id"]))
    assert "Press Attach page to attach the whole PDF" in info.value.message
    assert history(platform) == []


def test_a_long_pdf_goes_through_the_summary_rule_like_a_long_page():
    platform = pdf_tab()
    long_page = "The river keeps cutting while the plateau rises. " * 1_200  # ~60,000 characters
    result = read_whole(platform, pages=[long_page], pageCount=1)
    assert result["attachment"]["chars"] > 50_000 and result["summarize"] is True
