"""Server-Sent Events decoding: any chunking gives the same events, every line ending, comments."""

import pytest

from margin.base.sse import LineTooLong, SSEDecoder, SSEEvent

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


# -- rule 7: linear in what is fed; rule 8: bounded --------------------------------------------


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_a_line_without_a_break_is_searched_once_however_it_is_chunked(size):
    """`scanned` counts the characters searched for line ends: rescanning the carried line at
    every chunk (the old quadratic decoder) would count about total² / (2 × size)."""
    body = "data: " + "x" * 20_000 + "\n\n"
    decoder = SSEDecoder()
    events = []
    for i in range(0, len(body), size):
        events.extend(decoder.feed(body[i : i + size]))
    assert events == [SSEEvent("message", "x" * 20_000)]
    assert decoder.scanned == len(body)


def test_many_events_cost_what_was_fed():
    body = REALISTIC * 50
    decoder = SSEDecoder()
    for i in range(0, len(body), 3):
        decoder.feed(body[i : i + 3])
    assert decoder.scanned <= len(body)


def test_a_line_longer_than_the_limit_raises_with_the_events_before_it():
    decoder = SSEDecoder(line_limit=100)
    with pytest.raises(LineTooLong) as caught:
        decoder.feed("data: one\n\ndata: " + "y" * 200)
    assert caught.value.events == [SSEEvent("message", "one")]
    assert caught.value.limit == 100


def test_an_endless_line_is_refused_as_soon_as_the_carried_part_passes_the_limit():
    decoder = SSEDecoder(line_limit=100)
    for _ in range(9):
        decoder.feed("x" * 10)
    with pytest.raises(LineTooLong):
        decoder.feed("x" * 11)


def test_a_terminated_line_over_the_limit_is_refused_too():
    decoder = SSEDecoder(line_limit=100)
    decoder.feed("data: " + "z" * 60)
    with pytest.raises(LineTooLong):
        decoder.feed("z" * 60 + "\n")


def test_an_event_made_of_many_short_data_lines_is_bounded_like_a_line():
    decoder = SSEDecoder(line_limit=100)
    with pytest.raises(LineTooLong):
        decoder.feed("data: 0123456789\n" * 20)


def test_lines_at_the_limit_are_fine():
    decoder = SSEDecoder(line_limit=100)
    line = "data: " + "a" * 94
    assert decoder.feed(line + "\n\n") == [SSEEvent("message", "a" * 94)]
