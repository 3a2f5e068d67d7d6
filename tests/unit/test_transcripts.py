"""Captions become a transcript the model reads and the user seeks in: WebVTT, YouTube's formats,
automatic-caption cleanup and the `[m:ss]` lines."""

import json

import pytest

from margin.transcripts import (Cue, TranscriptError, clean_cues, cues_from_json, format_timestamp, format_transcript,
                                parse_captions, parse_json3, parse_timedtext_xml, parse_webvtt)


def texts(cues):
    return [c.text for c in cues]


def test_webvtt_with_hours_settings_styling_voices_and_notes():
    vtt = ("\ufeffWEBVTT - a title\r\nKind: captions\r\n\r\nNOTE a comment\r\nspanning lines\r\n\r\n"
           "STYLE\r\n::cue { color: red }\r\n\r\n"
           "intro\r\n00:01.000 --> 00:04.500 align:start position:10%\r\n<v Ana>Hello <b>there</b></v>,\r\n<i>friend</i> &amp; co\r\n\r\n"
           "1:02:03.500 --> 1:02:05.000\r\n<c.yellow>Late</c> <00:01:02.900>words\r\n\r\n"
           "101:00:00.000 --> 101:00:01.000\r\nVery late\r\n")
    cues = parse_webvtt(vtt)
    assert texts(cues) == ["Hello there, friend & co", "Late words", "Very late"]
    assert cues[0].start == 1.0 and cues[0].end == 4.5
    assert cues[1].start == 3723.5
    assert cues[2].start == 101 * 3600


def test_webvtt_overlapping_empty_and_malformed_cues():
    vtt = ("WEBVTT\n\n00:00:05.000 --> 00:00:09.000\nsecond\n\n"
           "00:00:01.000 --> 00:00:08.000\nfirst, overlapping\n\n"
           "00:00:10.000 --> 00:00:11.000\n\n\n"
           "not a timing line\nat all\n\n"
           "00:00:12.000 --> 00:00:13.000\nlast\n")
    cues = parse_webvtt(vtt)
    assert texts(cues) == ["first, overlapping", "second", "", "last"]
    assert texts(clean_cues(cues)) == ["first, overlapping", "second", "last"]


def test_a_file_that_is_not_webvtt_is_refused_with_a_code():
    with pytest.raises(TranscriptError) as info:
        parse_webvtt("1\n00:00:01,000 --> 00:00:02,000\nSRT, not VTT\n")
    assert info.value.code == "not_webvtt"
    with pytest.raises(TranscriptError) as info:
        parse_captions("just some words")
    assert info.value.code == "unknown_format"


def test_youtube_timedtext_xml_both_shapes_with_double_escaped_entities():
    legacy = ('<?xml version="1.0" encoding="utf-8" ?><transcript>'
              '<text start="1.2" dur="2.3">it&amp;#39;s a canyon</text><text start="4" dur="1">&amp;amp; more</text></transcript>')
    assert [(c.start, c.text) for c in parse_timedtext_xml(legacy)] == [(1.2, "it's a canyon"), (4.0, "& more")]
    srv3 = '<timedtext format="3"><body><p t="1500" d="2000"><s>rock</s><s> layers</s></p><p t="4000" d="10">x</p></body></timedtext>'
    cues = parse_captions(srv3)
    assert [(c.start, c.end, c.text) for c in cues] == [(1.5, 3.5, "rock layers"), (4.0, 4.01, "x")]
    with pytest.raises(TranscriptError) as info:
        parse_timedtext_xml("<transcript><text")
    assert info.value.code == "bad_xml"


def test_youtube_json3_skips_events_without_words():
    data = {"events": [{"tStartMs": 0, "dDurationMs": 1000},
                       {"tStartMs": 1000, "dDurationMs": 2000, "segs": [{"utf8": "Hello"}, {"utf8": " world"}]},
                       {"tStartMs": 3000, "segs": [{"utf8": "\n"}]}]}
    assert [(c.start, c.text) for c in parse_json3(json.dumps(data))] == [(1.0, "Hello world")]


def test_rolling_automatic_captions_keep_only_the_new_words():
    rolling = [Cue(0, 2, "so the river"), Cue(2, 4, "so the river cuts down"), Cue(4, 6, "cuts down into the rock"),
               Cue(6, 7, "cuts down into the rock"), Cue(7, 9, "[Music]"), Cue(9, 11, "and the walls rise")]
    cleaned = clean_cues(rolling)
    assert texts(cleaned) == ["so the river", "cuts down", "into the rock", "[Music]", "and the walls rise"]
    assert cleaned[2].end == 7  # the exact repeat extended the cue instead of repeating it


def test_cues_the_page_loaded_are_read_leniently():
    cues = cues_from_json([{"start": "1.5", "end": 3, "text": "<v Guide>Look</v>"}, {"start": None, "text": "x"},
                           "garbage", {"start": 0, "text": "first"}])
    assert [(c.start, c.text) for c in cues] == [(0.0, "first"), (1.5, "Look")]


@pytest.mark.parametrize("seconds, expected", [
    (0, "0:00"), (-3, "0:00"), (5.9, "0:05"), (59.999, "0:59"), (60, "1:00"), (754, "12:34"),
    (3599.5, "59:59"), (3600, "1:00:00"), (3723, "1:02:03"), (36000, "10:00:00"),
])
def test_format_timestamp_floors_and_shows_hours_only_when_needed(seconds, expected):
    assert format_timestamp(seconds) == expected


def test_transcript_lines_start_with_the_time_of_their_first_cue():
    cues = [Cue(1, 3, "Welcome."), Cue(4, 8, "Here the trail starts"), Cue(9, 12, "and climbs."),
            Cue(13, 20, "Now look left"), Cue(21, 40, "at the red layer"), Cue(125, 129, "At two minutes, the turn.")]
    assert format_transcript(cues).split("\n") == [
        "[0:01] Welcome. Here the trail starts and climbs.",
        "[0:13] Now look left at the red layer",
        "[2:05] At two minutes, the turn.",
    ]
    assert format_transcript([]) == ""
