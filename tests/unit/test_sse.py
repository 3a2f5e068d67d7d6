"""Server-Sent Events decoding: any chunking gives the same events, every line ending, comments."""

import pytest

from margin.sse import SSEDecoder, SSEEvent

REALISTIC = (
    "\ufeff: OPENROUTER PROCESSING\r\n\r\n"
    'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\r\n\r\n'
    'data: {"choices":[{"index":0,"delta":{"content":"lo, ünï ✓"}}]}\n\n'
    "event: ping\r"
    "id: 7\r"
    "data: line one\r"
    "data:line two\r\r"
    ": keep-alive\n\n"
    'data: {"choices":[],"usage":{"prompt_tokens":3}}\r\n\r\n'
    "data: [DONE]\n\n"
)

EXPECTED = [
    SSEEvent("message", '{"choices":[{"index":0,"delta":{"content":"Hel"}}]}', None),
    SSEEvent("message", '{"choices":[{"index":0,"delta":{"content":"lo, ünï ✓"}}]}', None),
    SSEEvent("ping", "line one\nline two", "7"),
    SSEEvent("message", '{"choices":[],"usage":{"prompt_tokens":3}}', "7"),
    SSEEvent("message", "[DONE]", "7"),
]


def decode(chunks):
    decoder = SSEDecoder()
    events = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


def test_whole_stream_decodes_to_the_expected_events():
    assert decode([REALISTIC]) == EXPECTED


@pytest.mark.parametrize("cut", range(len(REALISTIC) + 1))
def test_split_at_every_index_gives_identical_events(cut):
    assert decode([REALISTIC[:cut], REALISTIC[cut:]]) == EXPECTED


def test_one_character_at_a_time_gives_identical_events():
    assert decode(list(REALISTIC)) == EXPECTED


def test_split_between_cr_and_lf_does_not_make_an_extra_blank_line():
    # "data: a\r" | "\ndata: b\n\n" must be ONE event with two data lines, not two events.
    assert decode(["data: a\r", "\ndata: b\n\n"]) == [SSEEvent("message", "a\nb")]
    assert decode(["data: a\r", "", "\ndata: b\n\n"]) == [SSEEvent("message", "a\nb")]


def test_only_one_space_after_the_colon_is_dropped_and_a_bare_field_is_empty():
    assert decode(["data:  two spaces\n\n"]) == [SSEEvent("message", " two spaces")]
    assert decode(["data\ndata\n\n"]) == [SSEEvent("message", "\n")]


def test_comments_and_events_without_data_are_not_dispatched():
    assert decode([": hello\n\nevent: x\n\nid: 1\n\n"]) == []


def test_id_persists_and_event_type_resets():
    events = decode(["id: a\nevent: e\ndata: 1\n\ndata: 2\n\nid\ndata: 3\n\n"])
    assert events == [SSEEvent("e", "1", "a"), SSEEvent("message", "2", "a"), SSEEvent("message", "3", "")]


def test_a_bom_is_skipped_only_at_the_very_start():
    assert decode(["", "\ufeffdata: x\n\n"]) == [SSEEvent("message", "x")]
    assert decode(["data: \ufeffx\n\n"]) == [SSEEvent("message", "\ufeffx")]


def test_close_flushes_an_event_that_had_no_final_blank_line():
    assert decode(["data: [DONE]"]) == [SSEEvent("message", "[DONE]")]
    assert decode(["data: [DONE]\n"]) == [SSEEvent("message", "[DONE]")]


def test_garbage_is_passed_through_as_data_for_the_parser_to_judge():
    assert decode(["<html>oops</html>\n\ndata: not json\n\n"]) == [SSEEvent("message", "not json")]
