"""Long pages stay cheap and never break a turn (issue 9), end to end: aging, overflow rescue,
one-pass summaries, against the fake provider's context window and its summarization queue.

Witnesses: what the fake provider received (turns and summarization requests told apart, see
fake_provider.py rules 6 and 7), what chrome.storage holds, and what the user sees: the cards'
`data-slimming` ("aged" | "summarizing" | "summarized" | ""), their sentences and buttons, and
the alert line. The expected request text of a stored record is computed with the Python core's
own `margin.turn.slimming` (its rules are unit-tested; here the question is whether the extension
applies them), and the exact wire bytes are checked for the prefix property.

Pages are long generated articles with distinct titles, served on 127.0.0.1. Their words, the
questions and the scripted answers never contain the verb the fake provider recognises a
summarization request by. Summaries are off (`summarizeAboveChars: 0`) except where a test is
about them.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_behaviours import slow_summary
from fake_provider import FakeProvider
from fake_requests import RecordedRequest
from harness import Margin, poll
from web_pages import WebPages

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "py"))

from margin.storage.history import Record
from margin.turn import slimming

# A cold start, then Readability and a Pyodide html.parser pass: seconds on a loaded 2-core machine.
ATTACH_TIMEOUT_MS = 45_000
SUMMARY_TIMEOUT = 60.0

DUNES = "How wind builds dunes"
GLACIERS = "How glaciers move"
DELTAS = "How rivers build deltas"

COLD_SENTENCE = "The model now gets a short note instead of this page."
SUMMARIZED_SENTENCE = "The model gets a summary of this page."
TOO_LONG_SENTENCE = (
    "This conversation is too long for fake-model even with the attached pages shortened. "
    "Start a new session, or choose a model with a larger context."
)
PROGRESS = re.compile(r"Summarizing(?:…|\.\.\.)\s*([\d,.\s\u202f]+?)\s*characters")
TRIM_NOTE = re.compile(
    r"\nNote: shortened to fit the model's context: the first ([\d,]+) of ([\d,]+) characters\."
)


def long_article_html(title: str, subject: str, paragraphs: int) -> str:
    """An article of `paragraphs` numbered paragraphs (~175 characters each) about `subject`."""
    body = "".join(
        f"<p>Paragraph {i} on {subject}: field measurements, old maps and photographs taken years "
        f"apart show the same slow change, and each season adds a little more evidence to the record.</p>"
        for i in range(1, paragraphs + 1)
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
        f"<body><main><article><h1>{title}</h1><p class='byline'>By the field team</p>{body}"
        "</article></main></body></html>"
    )


PAGES = {
    # ~12,000 characters each: above the aging threshold, far below any summary threshold.
    "/dunes.html": long_article_html(DUNES, "dunes", 70),
    "/glaciers.html": long_article_html(GLACIERS, "glaciers", 70),
    # ~40,000 characters: twice the context window the overflow tests give the model.
    "/deltas.html": long_article_html(DELTAS, "deltas", 230),
}
CONTEXT_WINDOW_BYTES = 20_000


@pytest.fixture
def web() -> Iterator[WebPages]:
    extra = {path: ("text/html; charset=utf-8", html.encode()) for path, html in PAGES.items()}
    with WebPages(extra) as pages:
        yield pages


# --- helpers ------------------------------------------------------------------------------


def summaries_above(margin: Margin, chars: int) -> None:
    """The "Summarize long pages" setting (0 = off), stored before the panel opens."""
    margin.storage_set({"summarizeAboveChars": chars})


def open_web_page(margin: Margin, url: str):
    page = margin.context.new_page()
    page.goto(url)
    page.wait_for_load_state("load")
    # The panel is a tab of its own here: the web page must be the active tab, as it is when the
    # real side panel sits beside it.
    page.bring_to_front()
    return page


def attachments(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in history if "attachment" in r]


def attach(margin: Margin, panel, web: WebPages, path: str, title: str) -> dict[str, Any]:
    """Attach page on `path` (the active tab), and return its stored record."""
    before = len(attachments(margin.history()))
    open_web_page(margin, web.url(path))
    panel.get_by_role("button", name="Attach page", exact=True).click()
    stored = poll(
        lambda: (lambda found: found if len(found) > before else None)(attachments(margin.history())),
        timeout=ATTACH_TIMEOUT_MS / 1000,
        message=lambda: f"no attachment stored for {path}: {margin.history()}",
    )
    card(panel, title).last.wait_for(timeout=ATTACH_TIMEOUT_MS)
    record = stored[-1]
    assert record["attachment"]["title"] == title
    return record


CARD_NAME = re.compile(r"^(Attached page|Attached video|Selected text): ")


def card(panel, title: str):
    return panel.get_by_role("group", name=f"Attached page: {title}")


def slimming_state(locator) -> str:
    return locator.get_attribute("data-slimming") or ""


def ask(margin: Margin, panel, fake: FakeProvider, text: str, answer: str) -> RecordedRequest:
    """One turn: the question, its scripted answer shown and stored; returns its request."""
    count = len(fake.turn_requests)
    fake.script(reply=answer)
    margin.send(panel, text)
    assert margin.wait_answer(panel) == answer
    return fake.wait_for_requests(count + 1, kind="turn")[count]


def sent_texts(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.body["messages"]]


def wire_messages(request: RecordedRequest) -> bytes:
    """The request's messages as they were on the wire: Margin's JSON is compact and
    deterministic, so re-encoding the parsed body gives back the bytes it sent."""
    encode = lambda value: json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()  # noqa: E731
    assert encode(request.body) == request.raw_body, "the body is not Margin's compact JSON"
    return encode(request.body["messages"])


def extends(before: RecordedRequest, after: RecordedRequest) -> bool:
    """`before`'s messages are a byte-identical prefix of `after`'s (the list's `]` aside)."""
    return wire_messages(after).startswith(wire_messages(before)[:-1])


def as_sent(history: list[dict[str, Any]]) -> list[str]:
    """What the model gets for the stored conversation `history` (ending with a question)."""
    return [r.text for r in slimming.age_stale_attachments([Record.from_json(r) for r in history])]


def page_body(record: dict[str, Any]) -> str:
    return record["content"].split("\n\n", 1)[1]


def cards_match_aging(panel, history: list[dict[str, Any]]) -> bool:
    """Every card is "aged" exactly when its record is cold by the aging rule."""
    records = [Record.from_json(r) for r in history]
    cold = set(slimming.aged_indices(records))
    expected = ["aged" if i in cold else "" for i, r in enumerate(records) if r.is_attachment]
    shown = panel.get_by_role("group", name=CARD_NAME).evaluate_all(
        "(nodes) => nodes.map((n) => n.dataset.slimming || '')"
    )
    return shown == expected


# --- aging ----------------------------------------------------------------------------------


def test_aging_over_six_turns_the_cold_page_goes_as_its_stub_and_requests_extend_after_the_break(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    summaries_above(margin, 0)
    panel = margin.open_panel()
    dunes = attach(margin, panel, web, "/dunes.html", DUNES)
    assert len(page_body(dunes)) >= slimming.AGING_MIN_CHARS
    requests = [ask(margin, panel, fake_provider, "Question 1: what shapes a dune?", "Answer 1.")]
    glaciers = attach(margin, panel, web, "/glaciers.html", GLACIERS)
    for turn in range(2, 7):
        requests.append(ask(margin, panel, fake_provider, f"Question {turn}: and then?", f"Answer {turn}."))
    fake_provider.expect_no_more_requests(6, kind="turn")
    assert fake_provider.summary_requests == []

    history = margin.history()
    # Storage is never touched: both pages are stored whole.
    assert history[0] == dunes and history[3] == glaciers
    stub = slimming.stub_text(Record.from_json(dunes))
    assert stub.startswith("[Page context] Shortened: “How wind builds dunes” (" + web.url("/dunes.html"))
    for turn, request in enumerate(requests, start=1):
        texts = sent_texts(request)
        # The dunes page is whole while fewer than three questions followed it, then a stub.
        assert texts[0] == (dunes["content"] if turn < 3 else stub), f"turn {turn}"
        if turn >= 2:
            assert texts[3] == glaciers["content"], f"turn {turn}: the newest page is never aged"
        assert texts[-1] == f"Question {turn}: " + ("what shapes a dune?" if turn == 1 else "and then?")
        # The request is what the aging rule gives for what was stored at the time.
        assert texts == as_sent(history[: len(texts)]), f"turn {turn}"
    # After the one-time break (turn 3, when the dunes page turned cold), each request's messages
    # extend the previous request's byte for byte.
    assert [extends(a, b) for a, b in itertools.pairwise(requests)] == [
        True,
        False,
        True,
        True,
        True,
    ]
    assert len(requests[2].raw_body) < len(requests[1].raw_body)


def test_a_cold_card_says_so_and_attach_again_sends_the_page_whole_again(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    summaries_above(margin, 0)
    panel = margin.open_panel()
    dunes = attach(margin, panel, web, "/dunes.html", DUNES)
    ask(margin, panel, fake_provider, "Question 1: what shapes a dune?", "Answer 1.")
    attach(margin, panel, web, "/glaciers.html", GLACIERS)
    ask(margin, panel, fake_provider, "Question 2: and then?", "Answer 2.")
    # Two questions after it: not cold yet.
    assert slimming_state(card(panel, DUNES)) == ""
    assert card(panel, DUNES).get_by_text(COLD_SENTENCE).count() == 0
    ask(margin, panel, fake_provider, "Question 3: and then?", "Answer 3.")

    cold = card(panel, DUNES)
    poll(lambda: slimming_state(cold) == "aged", timeout=10, message=lambda: slimming_state(cold))
    cold.get_by_text(COLD_SENTENCE).wait_for()
    assert slimming_state(card(panel, GLACIERS)) == ""
    assert card(panel, GLACIERS).get_by_role("button", name="Attach again").count() == 0
    assert cards_match_aging(panel, margin.history())

    # "Attach again": a fresh copy of the stored page at the end of the conversation.
    cold.get_by_role("button", name="Attach again").click()
    history = poll(
        lambda: (lambda h: h if len(attachments(h)) == 3 else None)(margin.history()),
        timeout=20,
        message=lambda: f"no copy appended: {margin.history()}",
    )
    copy = history[-1]
    assert copy["attachment"]["url"] == dunes["attachment"]["url"]
    assert copy["attachment"]["title"] == DUNES
    assert copy["attachment"]["capturedAt"] > dunes["attachment"]["capturedAt"]
    assert copy["createdAt"] > dunes["createdAt"]
    assert "summary" not in copy["attachment"] and "trimmedFrom" not in copy["attachment"]
    assert page_body(copy) == page_body(dunes)
    assert history[0] == dunes, "the old record is left as it was"
    poll(lambda: card(panel, DUNES).count() == 2, timeout=10)
    assert slimming_state(card(panel, DUNES).last) == ""

    request = ask(margin, panel, fake_provider, "Question 4: look at the dunes page again", "Answer 4.")
    texts = sent_texts(request)
    history = margin.history()
    assert texts[-2:] == [copy["content"], "Question 4: look at the dunes page again"]
    assert texts[0] == slimming.stub_text(Record.from_json(dunes))
    assert texts == as_sent(history[: len(texts)])
    poll(lambda: cards_match_aging(panel, margin.history()), timeout=10)
    # The glaciers page is no longer the newest one, and three questions followed it.
    assert slimming_state(card(panel, GLACIERS)) == "aged"


# --- overflow rescue --------------------------------------------------------------------------


def test_an_overflowing_turn_is_retried_once_with_the_page_shortened_then_storage_holds_it(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    summaries_above(margin, 0)
    panel = margin.open_panel()
    deltas = attach(margin, panel, web, "/deltas.html", DELTAS)
    original_chars = deltas["attachment"]["chars"]
    assert len(deltas["content"].encode()) > CONTEXT_WINDOW_BYTES
    fake_provider.limit_context(CONTEXT_WINDOW_BYTES)
    margin.watch_alerts(panel)

    request = ask(margin, panel, fake_provider, "What builds a delta?", "Sediment, mostly.")
    first, retry = fake_provider.wait_for_requests(2, kind="turn")
    fake_provider.expect_no_more_requests(2, kind="turn")
    assert request is first
    assert (first.overflowed, retry.overflowed) == (True, False)
    assert len(retry.raw_body) <= CONTEXT_WINDOW_BYTES < len(first.raw_body)
    assert sent_texts(first) == [deltas["content"], "What builds a delta?"]

    # Only now, after the retry's answer: the trimmed page is what storage holds.
    history = margin.history()
    assert [r["role"] for r in history] == ["user", "user", "assistant"]
    assert history[1]["content"] == "What builds a delta?" and history[2]["content"] == "Sediment, mostly."
    trimmed = history[0]
    meta = trimmed["attachment"]
    assert meta["trimmedFrom"] == original_chars
    assert meta["chars"] == len(page_body(trimmed)) < original_chars
    note = TRIM_NOTE.search(trimmed["content"].split("\n\n", 1)[0])
    assert note, trimmed["content"][:400]
    assert [int(n.replace(",", "")) for n in note.groups()] == [meta["chars"], original_chars]
    assert page_body(deltas).startswith(page_body(trimmed).rstrip("…").rstrip())
    # The model got exactly what is stored now.
    assert sent_texts(retry) == [trimmed["content"], "What builds a delta?"]
    assert margin.alerts(panel) == []


def test_when_the_retry_overflows_too_the_page_and_the_question_stay_and_one_sentence_says_what_to_do(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    summaries_above(margin, 0)
    panel = margin.open_panel()
    deltas = attach(margin, panel, web, "/deltas.html", DELTAS)
    fake_provider.limit_context(CONTEXT_WINDOW_BYTES, always=True)
    margin.watch_alerts(panel)

    margin.send(panel, "What builds a delta?")
    assert margin.wait_alert(panel) == TOO_LONG_SENTENCE
    first, retry = fake_provider.wait_for_requests(2, kind="turn")
    fake_provider.expect_no_more_requests(2, kind="turn")
    assert first.overflowed and retry.overflowed
    assert len(retry.raw_body) < len(first.raw_body), "the retry was not shortened"
    margin.wait_idle(panel)

    history = margin.history()
    assert history[0] == deltas, "the raw page must stay in storage"
    assert [r["role"] for r in history] == ["user", "user"]
    assert history[1]["content"] == "What builds a delta?"
    assert margin.bubble_texts(panel, "user") == ["What builds a delta?"]
    assert margin.alerts(panel) == [TOO_LONG_SENTENCE]


# --- summaries ------------------------------------------------------------------------------

WATCH_PROGRESS_JS = """(pattern) => {
    const progress = new RegExp(pattern);
    window.__marginProgress = [];
    new MutationObserver(() => {
        for (const node of document.querySelectorAll('[data-slimming="summarizing"]')) {
            const match = node.textContent.match(progress);
            const chars = match ? Number(match[1].replace(/\\D/g, '')) : null;
            if (chars !== null && window.__marginProgress.at(-1) !== chars) window.__marginProgress.push(chars);
        }
    }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
}"""


def watch_progress(panel) -> None:
    panel.evaluate(WATCH_PROGRESS_JS, PROGRESS.pattern)


def progress(panel) -> list[int]:
    return panel.evaluate("() => window.__marginProgress.slice()")


def test_a_long_page_is_summarized_once_with_progress_and_the_next_turn_sends_the_summary(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    summaries_above(margin, 20_000)
    # ~1,300 characters in 60 pieces over 6 s: the worker reports progress every 250 characters.
    summary = slow_summary(chunks=60, delay=0.1)
    fake_provider.script_summary(summary)
    panel = margin.open_panel()
    watch_progress(panel)
    deltas = attach(margin, panel, web, "/deltas.html", DELTAS)
    assert deltas["attachment"]["chars"] > 20_000

    page_card = card(panel, DELTAS)
    poll(lambda: slimming_state(page_card) == "summarizing", timeout=SUMMARY_TIMEOUT)
    page_card.get_by_role("button", name="Cancel summary").wait_for()
    (request,) = fake_provider.wait_for_requests(1, kind="summary", timeout=SUMMARY_TIMEOUT)
    assert "Paragraph 200 on deltas" in "\n".join(sent_texts(request))
    poll(
        lambda: slimming_state(page_card) == "summarized",
        timeout=SUMMARY_TIMEOUT,
        message=lambda: f"{slimming_state(page_card)!r}, progress {progress(panel)}",
    )
    # The status line counted the summary's characters as they arrived.
    shown = progress(panel)
    assert len(shown) >= 3 and shown == sorted(shown) and shown[0] < shown[-1] <= len(summary.text)
    page_card.get_by_text(SUMMARIZED_SENTENCE).wait_for()
    assert page_card.get_by_role("button", name="Cancel summary").count() == 0

    (stored,) = margin.history()
    saved = stored["attachment"]["summary"]
    assert saved["text"].strip() == summary.text
    assert saved["chars"] == len(saved["text"]) and saved["model"] == "fake-model"
    assert isinstance(saved["createdAt"], int)
    assert stored["content"] == deltas["content"], "the raw text stays in storage"

    viewer = panel.locator("#text-viewer")
    page_card.get_by_role("button", name="View summary").click()
    viewer.wait_for(state="visible")
    assert viewer.locator("pre").inner_text().strip() == summary.text
    panel.keyboard.press("Escape")
    viewer.wait_for(state="hidden")
    page_card.get_by_role("button", name="View text").click()
    viewer.wait_for(state="visible")
    assert viewer.locator("pre").inner_text().strip() == deltas["content"].strip()
    panel.keyboard.press("Escape")

    # The next turn sends the summary instead of the page, and nothing is summarized twice.
    turn = ask(margin, panel, fake_provider, "What builds a delta?", "Sediment, mostly.")
    page_text = sent_texts(turn)[0]
    assert page_text == slimming.sent_text(Record.from_json(stored))
    assert page_text.startswith(deltas["content"].split("\n\n", 1)[0] + "\nNote: this is a summary")
    assert page_text.endswith(summary.text) and "Paragraph 200 on deltas" not in page_text
    fake_provider.expect_no_more_requests(1, kind="summary")


def test_a_cancelled_summary_leaves_the_page_as_it_was_and_says_so_once(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    summaries_above(margin, 20_000)
    fake_provider.script_summary(slow_summary(chunks=300, delay=0.2))
    panel = margin.open_panel()
    watch_progress(panel)
    margin.watch_alerts(panel)
    deltas = attach(margin, panel, web, "/deltas.html", DELTAS)
    page_card = card(panel, DELTAS)
    poll(lambda: slimming_state(page_card) == "summarizing", timeout=SUMMARY_TIMEOUT)
    (request,) = fake_provider.wait_for_requests(1, kind="summary", timeout=SUMMARY_TIMEOUT)
    poll(lambda: progress(panel), timeout=SUMMARY_TIMEOUT, message="no progress was shown")
    before = margin.history()
    assert before == [deltas]

    page_card.get_by_role("button", name="Cancel summary").click()
    cancelled = f"Summary cancelled: “{DELTAS}” is attached whole."
    assert margin.wait_alert(panel) == cancelled
    poll(lambda: slimming_state(page_card) == "", timeout=10, message=lambda: slimming_state(page_card))
    assert page_card.get_by_role("button", name="Cancel summary").count() == 0
    assert page_card.get_by_text(SUMMARIZED_SENTENCE).count() == 0
    # The provider's stream was closed, not left running.
    assert request.finished.wait(10) and request.client_gone.is_set()
    assert margin.history() == before, "a cancelled pass leaves the attachment exactly as it was"

    # The next turn sends the page whole; the pass is not started again, nor the sentence repeated.
    turn = ask(margin, panel, fake_provider, "What builds a delta?", "Sediment, mostly.")
    assert sent_texts(turn) == [deltas["content"], "What builds a delta?"]
    fake_provider.expect_no_more_requests(1, kind="summary")
    assert margin.alerts(panel).count(cancelled) == 1
    assert "summary" not in margin.history()[0]["attachment"]
