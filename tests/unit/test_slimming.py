"""What an attachment costs each request: cold pages become one stable line, and an overflowing
request's large pages are cut to fit, from the numbers the provider gave."""

import asyncio
import json

from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.page.context import attachment_record
from margin.providers.overflow import Overflow
from margin.storage.history import PAGE_CONTEXT_PREFIX, Record, user_record
from margin.turn import chat, slimming

PROVIDER = {
    "id": "p",
    "type": "openai",
    "name": "Local",
    "baseUrl": "http://localhost:11434/v1",
    "apiKey": "",
    "model": "llama3.2",
}
PNG = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def page(body, *, title="A page", url="https://example.com/a", captured_at=1764547200000):
    payload = {"kind": "page", "title": title, "url": url, "body": body, "method": "readability"}
    return attachment_record(payload, captured_at=captured_at)


def page_of_length(total, **kwargs):
    """An attachment whose whole text (header and body) is exactly `total` characters."""
    header_length = len(page("", **kwargs).text)
    return page("x" * (total - header_length), **kwargs)


def paragraphs(chars, *, paragraph=500):
    """A body of about `chars` characters in paragraphs of `paragraph` characters."""
    line = ("word " * (paragraph // 5)).strip()
    return "\n\n".join([line] * (chars // (len(line) + 2) + 1))[:chars]


def question(text):
    return user_record(text, createdAt=1)


def answer(text):
    return Record("assistant", text, {"createdAt": 2})


def after(record, questions):
    """`record`, then `questions` question/answer pairs."""
    records = [record]
    for i in range(questions):
        records += [question(f"q{i}"), answer(f"a{i}")]
    return records


def newer_attachment():
    return page("short", url="https://example.com/newest", captured_at=1764547300000)


def body_of(record):
    return record.text.split("\n\n", 1)[1]


# -- aging ------------------------------------------------------------------------------------------


def test_an_attachment_turns_cold_after_three_questions_not_two():
    big = page("y" * 20_000)
    two = [*after(big, 2), newer_attachment()]
    three = [*after(big, 3), newer_attachment()]
    assert slimming.aged_indices(two) == []
    assert slimming.aged_indices(three) == [0]


def test_an_attachment_turns_cold_from_8000_characters_not_7999():
    assert len(page_of_length(8_000).text) == 8_000
    small = [*after(page_of_length(7_999), 5), newer_attachment()]
    large = [*after(page_of_length(8_000), 5), newer_attachment()]
    assert slimming.aged_indices(small) == []
    assert slimming.aged_indices(large) == [0]


def test_the_newest_attachment_is_never_cold():
    records = after(page("y" * 50_000), 10)
    assert slimming.aged_indices(records) == []
    assert slimming.age_stale_attachments(records) == records


def test_a_cold_attachment_is_one_line_naming_it_and_the_rest_is_untouched():
    records = [*after(page("y" * 20_000, title="Long   read"), 3), newer_attachment(), question("and?")]
    sent = slimming.age_stale_attachments(records)
    stub = sent[0].text
    assert "\n" not in stub and stub.startswith(PAGE_CONTEXT_PREFIX)
    assert "“Long read”" in stub and "https://example.com/a" in stub and "20,000 characters" in stub
    assert sent[1:] == records[1:]
    assert records[0].text.endswith("y" * 100)  # the stored record is not changed


def test_images_are_never_aged():
    with_image = user_record("look", [{"type": "image_url", "image_url": {"url": PNG}}], createdAt=1)
    records = [with_image, *after(page("y" * 20_000), 3), newer_attachment()]
    sent = slimming.age_stale_attachments(records)
    assert sent[0] == with_image
    # An attachment's own image parts survive its stub, in order.
    picture = {"type": "image_url", "image_url": {"url": PNG}}
    illustrated = Record(
        "user", [{"type": "text", "text": page("y" * 20_000).text}, picture], page("").fields
    )
    cold = slimming.age_stale_attachments([*after(illustrated, 3), newer_attachment()])[0]
    assert cold.content[1] == picture and cold.content[0]["text"].startswith(PAGE_CONTEXT_PREFIX)


def test_a_summarized_attachment_is_measured_by_its_summary():
    raw = page("y" * 30_000)
    short = raw.with_fields(
        attachment={**raw.fields["attachment"], "summary": {"text": "The gist.", "model": "m", "chars": 9}}
    )
    long = raw.with_fields(
        attachment={
            **raw.fields["attachment"],
            "summary": {"text": "z" * 9_000, "model": "m", "chars": 9_000},
        }
    )
    assert slimming.aged_indices([*after(short, 3), newer_attachment()]) == []
    assert slimming.aged_indices([*after(long, 3), newer_attachment()]) == [0]
    sent = slimming.age_stale_attachments([*after(short, 1), newer_attachment()])[0].text
    assert sent.endswith("The gist.") and "summary of its 30,000 characters" in sent


def test_the_stub_is_the_same_bytes_every_time_and_depends_only_on_the_attachment():
    record = page("y" * 20_000)
    records = [*after(record, 3), newer_attachment()]
    first = slimming.age_stale_attachments(records)
    assert slimming.age_stale_attachments(records) == first
    assert slimming.stub_text(record) == slimming.stub_text(
        Record.from_json(json.loads(json.dumps(record.to_json())))
    )
    other_text = Record("user", record.text + " more", {**record.fields, "createdAt": 99})
    assert slimming.stub_text(other_text) == slimming.stub_text(record)


# -- the prefix property, over a long conversation through the real turn -------------------------


def _answer(text):
    items = [
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}]},
    ]
    return ScriptedResponse(chunks=[f"data: {json.dumps(i)}\n\n" for i in items] + ["data: [DONE]\n\n"])


def test_after_each_one_time_break_every_request_extends_the_previous_one_byte_for_byte():
    turns = 30
    attached_at = {0: "a", 1: "b", 15: "c"}  # a turns cold by questions (turn 2), b by a newer page (15)
    transport = ScriptedTransport([_answer(f"answer {n}") for n in range(turns)])
    platform = memory_platform({"providers": [PROVIDER], "activeProviderId": "p"}, transport)

    async def conversation():
        for n in range(turns):
            if n in attached_at:
                name = attached_at[n]
                record = page(
                    paragraphs(20_000), title=name, url=f"https://example.com/{name}", captured_at=n
                )
                stored = (await platform.local.get(["history"])).get("history", [])
                await platform.local.set({"history": [*stored, record.to_json()]})
            events = []
            await chat.run_turn(
                platform, {"action": "send", "text": f"question {n}"}, events.append, asyncio.Event()
            )
            assert events[-1] == {"event": "done"}

    asyncio.run(conversation())
    bodies = [request.body for request in transport.requests]
    assert len(bodies) == turns
    breaks = []
    for n in range(1, turns):
        before, now = json.loads(bodies[n - 1])["messages"], json.loads(bodies[n])["messages"]
        # The model and the messages of request n-1, as bytes: everything before `],"stream":`.
        head = bodies[n - 1][: bodies[n - 1].rindex('],"stream":')]
        if now[: len(before)] == before:
            assert bodies[n].startswith(head), (
                f"request {n} repeats request {n - 1}'s messages, not its bytes"
            )
        else:
            breaks.append(n)
    assert breaks == [2, 15]
    # The cold pages cost one line each: the last request carries only c whole.
    last = bodies[-1]
    assert last.count("word word") < 20_000 // 4 and "“a”" in last and "“b”" in last
    assert len(last) < 2 * 20_000


# -- trimming for an overflow -------------------------------------------------------------------------


def test_trimming_cuts_what_the_numbers_say_with_headroom():
    record = page(paragraphs(20_000))
    records = [record, question("sum it up")]
    overflow = Overflow(limit_tokens=8192, requested_tokens=9123)
    trimmed, indices = slimming.trim_for_overflow(records, overflow)
    assert indices == [0] and trimmed[1] == records[1]
    cut_needed = (9123 - 8192 * (1 - slimming.TRIM_HEADROOM)) * slimming.CHARS_PER_TOKEN
    body = body_of(trimmed[0])
    assert len(body) <= 20_000 - cut_needed
    assert len(body) >= (20_000 - cut_needed) * 0.8  # cut at a paragraph end, not much below
    assert body_of(record).startswith(body) and body.endswith("word") and not body.endswith(" ")
    meta = trimmed[0].fields["attachment"]
    assert meta["chars"] == len(body) and meta["trimmedFrom"] == 20_000
    header = trimmed[0].text.split("\n\n", 1)[0]
    assert header.splitlines()[-1] == (
        f"Note: shortened to fit the model's context: the first {len(body):,} of 20,000 characters."
    )
    assert header.startswith(record.text.split("\n\n", 1)[0])  # the header is kept, a line added
    assert record.fields["attachment"]["chars"] == 20_000  # the input is not mutated


def test_the_trimmed_request_fits_under_the_limit_with_room_to_spare():
    records = [
        page(paragraphs(60_000)),
        question("q"),
        answer("a"),
        page(paragraphs(30_000), url="u2"),
        question("?"),
    ]
    sent = sum(len(r.text) for r in slimming.age_stale_attachments(records))
    requested = sent // slimming.CHARS_PER_TOKEN
    limit = requested // 2
    trimmed, _ = slimming.trim_for_overflow(records, Overflow(limit_tokens=limit, requested_tokens=requested))
    after_trim = sum(len(r.text) for r in slimming.age_stale_attachments(trimmed)) // slimming.CHARS_PER_TOKEN
    assert after_trim <= limit * (1 - slimming.TRIM_HEADROOM)


def test_the_largest_page_gives_first():
    large, small = page(paragraphs(30_000), url="l"), page(paragraphs(5_000), url="s")
    records = [large, small, question("q")]
    mild = Overflow(limit_tokens=100_000, requested_tokens=100_000 - 15_000 + 2_500)  # cut 10,000 chars
    trimmed, indices = slimming.trim_for_overflow(records, mild)
    assert indices == [0] and trimmed[1] == small
    assert len(body_of(trimmed[0])) <= 20_000
    hard = Overflow(limit_tokens=100_000, requested_tokens=100_000 - 15_000 + 7_000)  # cut 28,000 chars
    trimmed, indices = slimming.trim_for_overflow(records, hard)
    assert indices == [0, 1]
    assert all(len(body_of(trimmed[i])) <= 3_500 for i in indices)


def test_without_numbers_each_large_page_is_halved_and_small_ones_stay():
    large, small = page(paragraphs(30_000), url="l"), page(paragraphs(1_500), url="s")
    trimmed, indices = slimming.trim_for_overflow([large, small, question("q")], Overflow())
    assert indices == [0] and trimmed[1] == small
    assert 30_000 * 0.4 <= len(body_of(trimmed[0])) <= 15_000


def test_only_the_excess_ollama_names_is_enough():
    records = [page(paragraphs(40_000)), question("q")]
    trimmed, indices = slimming.trim_for_overflow(records, Overflow(stated_excess_tokens=2_000))
    assert indices == [0]
    kept = len(body_of(trimmed[0]))
    assert kept <= 40_000 - 2_000 * slimming.CHARS_PER_TOKEN and kept > 20_000


def test_a_page_is_never_cut_below_its_minimum_and_a_second_cut_keeps_the_original_size():
    records = [page(paragraphs(20_000)), question("q")]
    trimmed, _ = slimming.trim_for_overflow(records, Overflow(limit_tokens=10, requested_tokens=1_000_000))
    assert slimming.TRIM_KEEP_MIN_CHARS * 0.8 <= len(body_of(trimmed[0])) <= slimming.TRIM_KEEP_MIN_CHARS
    again, _ = slimming.trim_for_overflow([page(paragraphs(20_000)), question("q")], Overflow())
    twice, _ = slimming.trim_for_overflow(again, Overflow())
    header = twice[0].text.split("\n\n", 1)[0]
    assert header.count("Note: shortened") == 1 and header.endswith(" of 20,000 characters.")
    assert twice[0].fields["attachment"]["trimmedFrom"] == 20_000


def test_questions_answers_cold_and_summarized_pages_are_never_trimmed():
    long_question = question("q" * 50_000)
    cold = page(paragraphs(20_000), url="cold")
    summarized = page(paragraphs(20_000), url="sum")
    summarized = summarized.with_fields(
        attachment={**summarized.fields["attachment"], "summary": {"text": "gist", "model": "m", "chars": 4}}
    )
    records = [long_question, answer("a" * 50_000), *after(cold, 3), summarized, question("?")]
    trimmed, indices = slimming.trim_for_overflow(
        records, Overflow(limit_tokens=1_000, requested_tokens=50_000)
    )
    assert indices == [] and trimmed == records
