"""Captions in every shape Margin reads, and the transcript lines the "Seek to" capsules understand."""

import json

import pytest

from margin.base.errors import MarginError
from margin.page.transcripts import (
    MAX_CAPTION_CHARS,
    Cue,
    TranscriptError,
    clean_cues,
    cues_from_json,
    format_timestamp,
    format_transcript,
    parse_captions,
    parse_json3,
    parse_timedtext_xml,
    parse_webvtt,
    transcript_duration,
)


def texts(cues):
    return [c.text for c in cues]


def test_webvtt_blocks_ids_settings_and_line_endings():
    vtt = (
        "WEBVTT\rX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\r\r"
        "REGION\rid:fred width:40%\r\r"
        "STYLE\r::cue(b) { color: peachpuff; }\r\r"
        "NOTE\rThis is a comment --> with an arrow\r\r"
        "cue-1\r00:00:01.000 --> 00:00:02.000 line:0 position:20% size:60% align:start\rFirst line\rsecond line\r\r"
        "00:00:02.500 --> 00:00:03.000\nLF cue\n\n"
        "3\r\n00:03.000 --> 00:04.000\r\nCRLF cue\r\n"
    )
    cues = parse_webvtt(vtt)
    assert [(c.start, c.end, c.text) for c in cues] == [
        (1.0, 2.0, "First line second line"),
        (2.5, 3.0, "LF cue"),
        (3.0, 4.0, "CRLF cue"),
    ]


def test_webvtt_times_over_an_hour():
    vtt = "WEBVTT\n\n1:02:03.500 --> 1:02:04.000\nA\n\n101:00:00.000 --> 101:00:01.250\nB\n"
    assert [(c.start, c.end) for c in parse_webvtt(vtt)] == [(3723.5, 3724.0), (363600.0, 363601.25)]


def test_webvtt_markup_is_stripped_and_entities_decoded():
    vtt = (
        "WEBVTT\n\n00:01.000 --> 00:02.000\n"
        "<v.loud Esme Smith>Never drink</v> <c.yellow.bg_blue>liquid</c> <b>nitrogen</b><00:01.500> <i>ever</i>"
        " <u>again</u> <lang en-GB>mate</lang>\n\n"
        "00:02.000 --> 00:03.000\n<ruby>漢<rt>kan</rt>字<rt>ji</rt></ruby> &lt;tag&gt; &amp; &#233;t&#xE9; a&nbsp;b &lrm;x\n"
    )
    assert texts(parse_webvtt(vtt)) == [
        "Never drink liquid nitrogen ever again mate",
        "漢字 <tag> & été a b \u200ex",
    ]


def test_webvtt_malformed_blocks_are_skipped_and_order_is_by_start():
    vtt = (
        "WEBVTT\n\n00:00:09.000 --> 00:00:10.000\nlater\n\n"
        "00:00:xx.000 --> 00:00:05.000\nbad timing\n\n"
        "just text without timing\n\n"
        "00:00:01.000 --> 00:00:08.000\noverlapping, earlier\n\n"
        "00:00:02.000 --> 00:00:03.000\ninside the first\n\n"
        "00:00:04.000 --> 00:00:05.000\n\n"
    )
    cues = parse_webvtt(vtt)
    assert texts(cues) == ["overlapping, earlier", "inside the first", "", "later"]
    assert texts(clean_cues(cues)) == ["overlapping, earlier", "inside the first", "later"]


@pytest.mark.parametrize(
    "text", ["", "1\n00:00:01,000 --> 00:00:02,000\nSRT\n", "WEBVTTX\n", "<transcript/>"]
)
def test_webvtt_without_its_header_is_refused(text):
    with pytest.raises(TranscriptError) as info:
        parse_webvtt(text)
    assert info.value.code == "not_webvtt"
    assert isinstance(info.value, MarginError) and isinstance(info.value, ValueError)


def test_blocks_parted_by_a_line_of_spaces_still_part():
    vtt = "WEBVTT\n\n1\n00:01.000 --> 00:02.000\none\n  \n2\n00:02.000 --> 00:03.000\ntwo\n"
    assert texts(parse_webvtt(vtt)) == ["one", "two"]


def test_a_cue_right_under_the_header_is_read():
    assert texts(parse_webvtt("WEBVTT\n00:01.000 --> 00:02.000\nno blank line\n")) == ["no blank line"]


def test_a_bom_and_a_header_title_are_fine():
    assert texts(parse_webvtt("\ufeffWEBVTT\tMy film\n\n00:01.000 --> 00:02.000\nhi\n")) == ["hi"]


LEGACY = (
    '<?xml version="1.0" encoding="utf-8" ?><transcript>'
    '<text start="0.5" dur="1.5">We&amp;#39;re &amp;quot;here&amp;quot;</text>'
    '<text start="2" dur="2">&amp;lt;font color=&amp;quot;#E5E5E5&amp;quot;&amp;gt;grey&amp;lt;/font&amp;gt; words</text>'
    '<text start="bad" dur="1">skipped</text><text start="5">no duration</text></transcript>'
)
SRV3 = (
    '<?xml version="1.0" encoding="utf-8" ?><timedtext format="3"><head><ws id="0"/></head><body>'
    '<p t="1200" d="3400" w="1"><s ac="0">the</s><s t="400" ac="0"> river</s></p>'
    '<p t="4600" d="10" w="1" a="1">\n</p><p t="5000" d="2000">it&amp;#39;s &amp;amp; deep</p></body></timedtext>'
)


def test_youtube_timedtext_xml():
    assert [(c.start, c.end, c.text) for c in parse_timedtext_xml(LEGACY)] == [
        (0.5, 2.0, 'We\'re "here"'),
        (2.0, 4.0, "grey words"),
        (5.0, 5.0, "no duration"),
    ]
    assert [(c.start, c.end, c.text) for c in parse_captions(SRV3)] == [
        (1.2, pytest.approx(4.6), "the river"),
        (5.0, 7.0, "it's & deep"),
    ]


@pytest.mark.parametrize(
    "text, code",
    [
        ("<transcript><text", "bad_xml"),
        ('<!DOCTYPE t [<!ENTITY a "aaaa">]><transcript><text start="0">&a;</text></transcript>', "bad_xml"),
        ("<" + "x" * (MAX_CAPTION_CHARS + 1), "too_large"),
    ],
)
def test_xml_that_is_broken_unsafe_or_huge_is_refused(text, code):
    with pytest.raises(TranscriptError) as info:
        parse_timedtext_xml(text)
    assert info.value.code == code


def test_youtube_json3():
    data = {
        "wireMagic": "pb3",
        "events": [
            {"tStartMs": 0, "dDurationMs": 5000, "id": 1, "wpWinPosId": 1},
            {
                "tStartMs": 160,
                "dDurationMs": 4000,
                "wWinId": 1,
                "segs": [{"utf8": "so"}, {"utf8": " the", "tOffsetMs": 240}],
            },
            {"tStartMs": 2000, "wWinId": 1, "aAppend": 1, "segs": [{"utf8": "\n"}]},
            {"tStartMs": "3000", "dDurationMs": "1000", "segs": [{"utf8": "river &amp; rock"}]},
            {"tStartMs": None, "segs": [{"utf8": "no start"}]},
            "garbage",
        ],
    }
    cues = parse_captions(json.dumps(data))
    assert [(c.start, c.end, c.text) for c in cues] == [
        (0.16, 4.16, "so the"),
        (3.0, 4.0, "river &amp; rock"),
    ]
    for bad in ("{not json", "[1, 2]", '{"events": 3}'):
        with pytest.raises(TranscriptError) as info:
            parse_json3(bad)
        assert info.value.code == "bad_json"


def test_parse_captions_sniffs_the_format():
    assert texts(parse_captions("  \n\ufeffWEBVTT\n\n00:01.000 --> 00:02.000\nvtt\n")) == ["vtt"]
    assert texts(parse_captions('{"events": [{"tStartMs": 0, "segs": [{"utf8": "json"}]}]}')) == ["json"]
    assert texts(parse_captions('<transcript><text start="0" dur="1">xml</text></transcript>')) == ["xml"]
    with pytest.raises(TranscriptError) as info:
        parse_captions("1\n00:00:01,000 --> 00:00:02,000\nSRT is not read\n")
    assert info.value.code == "unknown_format"


# YouTube's automatic captions as `fmt=vtt` serves them: each cue shows the previous line again,
# then the new words with their timings; 10 ms cues in between hold the finished lines.
YOUTUBE_ASR = """WEBVTT
Kind: captions
Language: en

00:00:00.000 --> 00:00:02.350 align:start position:0%
 
hello<00:00:00.480><c> everyone</c><00:00:00.960><c> and</c><00:00:01.520><c> welcome</c>

00:00:02.350 --> 00:00:02.360 align:start position:0%
hello everyone and welcome
 

00:00:02.360 --> 00:00:05.270 align:start position:0%
hello everyone and welcome
to<00:00:02.960><c> the</c><00:00:03.200><c> grand</c><00:00:03.600><c> canyon</c>

00:00:05.270 --> 00:00:05.280 align:start position:0%
to the grand canyon
 

00:00:05.280 --> 00:00:08.110 align:start position:0%
to the grand canyon
[Music]

00:00:08.110 --> 00:00:08.120 align:start position:0%
[Music]
 

00:00:08.120 --> 00:00:11.000 align:start position:0%
[Music]
today<00:00:08.500><c> we</c><00:00:08.900><c> hike</c><00:00:09.300><c> down</c>
"""


def test_rolling_automatic_captions_become_each_word_once():
    cleaned = clean_cues(parse_captions(YOUTUBE_ASR))
    assert [(c.start, c.end, c.text) for c in cleaned] == [
        (0.0, 2.36, "hello everyone and welcome"),
        (2.36, 5.28, "to the grand canyon"),
        (5.28, 8.12, "[Music]"),
        (8.12, 11.0, "today we hike down"),
    ]
    assert (
        format_transcript(cleaned)
        == "[0:00] hello everyone and welcome to the grand canyon [Music] today we hike down"
    )


def test_captions_that_do_not_roll_keep_a_repeated_word():
    cues = [
        Cue(0, 2, "I said no"),
        Cue(2, 4, "no way, he said"),
        Cue(4, 6, "said it twice"),
        Cue(6, 8, "I know"),
    ]
    assert texts(clean_cues(cues)) == ["I said no", "no way, he said", "said it twice", "I know"]


def test_clean_cues_merges_exact_repeats_collapses_space_and_drops_empty_cues():
    cues = [
        Cue(3, 4, "later"),
        Cue(0, 1, "  a \n  b "),
        Cue(1, 2, "a b"),
        Cue(2, 2.5, "   "),
        Cue(2.5, 3, "[Applause]"),
    ]
    assert [(c.start, c.end, c.text) for c in clean_cues(cues)] == [
        (0, 2, "a b"),
        (2.5, 3, "[Applause]"),
        (3, 4, "later"),
    ]


def test_overlapping_cues_are_kept_in_start_order():
    cues = [Cue(5, 9, "B speaks"), Cue(4, 10, "A speaks")]
    assert texts(clean_cues(cues)) == ["A speaks", "B speaks"]


def test_cues_from_the_page_script():
    value = [
        {"start": 2, "end": "3.5", "text": "<c.red>two</c> &amp; more"},
        {"start": "x", "text": "bad start"},
        {"start": 1, "text": "no end"},
        {"start": 0, "end": 1},
        {"start": True, "text": "bool"},
        {"start": float("nan"), "text": "nan"},
        None,
        7,
    ]
    assert [(c.start, c.end, c.text) for c in cues_from_json(value)] == [
        (1.0, 1.0, "no end"),
        (2.0, 3.5, "two & more"),
    ]
    assert cues_from_json({"start": 1}) == [] and cues_from_json(None) == []


@pytest.mark.parametrize(
    "seconds, label",
    [
        (0, "0:00"),
        (0.999, "0:00"),
        (5, "0:05"),
        (59.999, "0:59"),
        (60, "1:00"),
        (754.9, "12:34"),
        (3599.999, "59:59"),
        (3600, "1:00:00"),
        (3723, "1:02:03"),
        (363600, "101:00:00"),
        (-1, "0:00"),
        (float("nan"), "0:00"),
        (float("inf"), "0:00"),
    ],
)
def test_format_timestamp(seconds, label):
    assert format_timestamp(seconds) == label


def test_transcript_lines_merge_cues_by_time_and_sentence():
    cues = [
        Cue(5, 7, "The trail starts here."),  # a sentence, but only 2 s into the line: go on
        Cue(8, 16, "It climbs to the rim."),  # a sentence 11 s in: the line ends
        Cue(17, 30, "Then it"),
        Cue(31, 45, "keeps going"),
        Cue(47, 50, "for a while"),  # 30 s after 0:17: new line
        Cue(3725, 3727, "An hour later"),
    ]
    assert format_transcript(cues).split("\n") == [
        "[0:05] The trail starts here. It climbs to the rim.",
        "[0:17] Then it keeps going",
        "[0:47] for a while",
        "[1:02:05] An hour later",
    ]
    assert format_transcript(cues, paragraph_seconds=5).split("\n")[:3] == [
        "[0:05] The trail starts here. It climbs to the rim.",
        "[0:17] Then it",
        "[0:31] keeps going",
    ]


def test_transcript_max_chars_keeps_whole_lines():
    cues = [Cue(0, 1, "alpha beta"), Cue(40, 41, "gamma delta"), Cue(80, 81, "epsilon")]
    full = format_transcript(cues)
    assert full == "[0:00] alpha beta\n[0:40] gamma delta\n[1:20] epsilon"
    assert format_transcript(cues, max_chars=len(full)) == full
    assert format_transcript(cues, max_chars=len(full) - 1) == "[0:00] alpha beta\n[0:40] gamma delta"
    assert format_transcript(cues, max_chars=12) == "[0:00] alpha"
    assert format_transcript([]) == "" and format_transcript([Cue(0, 1, "  ")]) == ""


def test_transcript_duration_is_the_last_end():
    assert transcript_duration([Cue(0, 10, "a"), Cue(5, 7, "b")]) == 10
    assert transcript_duration([]) == 0.0


# -- the main paths, as a realistic page and YouTube give them ----------------------------------


def test_webvtt_with_hours_settings_styling_voices_and_notes():
    vtt = (
        "\ufeffWEBVTT - a title\r\nKind: captions\r\n\r\nNOTE a comment\r\nspanning lines\r\n\r\n"
        "STYLE\r\n::cue { color: red }\r\n\r\n"
        "intro\r\n00:01.000 --> 00:04.500 align:start position:10%\r\n<v Ana>Hello <b>there</b></v>,\r\n<i>friend</i> &amp; co\r\n\r\n"
        "1:02:03.500 --> 1:02:05.000\r\n<c.yellow>Late</c> <00:01:02.900>words\r\n\r\n"
        "101:00:00.000 --> 101:00:01.000\r\nVery late\r\n"
    )
    cues = parse_webvtt(vtt)
    assert texts(cues) == ["Hello there, friend & co", "Late words", "Very late"]
    assert cues[0].start == 1.0 and cues[0].end == 4.5
    assert cues[1].start == 3723.5
    assert cues[2].start == 101 * 3600


def test_webvtt_overlapping_empty_and_malformed_cues():
    vtt = (
        "WEBVTT\n\n00:00:05.000 --> 00:00:09.000\nsecond\n\n"
        "00:00:01.000 --> 00:00:08.000\nfirst, overlapping\n\n"
        "00:00:10.000 --> 00:00:11.000\n\n\n"
        "not a timing line\nat all\n\n"
        "00:00:12.000 --> 00:00:13.000\nlast\n"
    )
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
    legacy = (
        '<?xml version="1.0" encoding="utf-8" ?><transcript>'
        '<text start="1.2" dur="2.3">it&amp;#39;s a canyon</text><text start="4" dur="1">&amp;amp; more</text></transcript>'
    )
    assert [(c.start, c.text) for c in parse_timedtext_xml(legacy)] == [
        (1.2, "it's a canyon"),
        (4.0, "& more"),
    ]
    srv3 = '<timedtext format="3"><body><p t="1500" d="2000"><s>rock</s><s> layers</s></p><p t="4000" d="10">x</p></body></timedtext>'
    cues = parse_captions(srv3)
    assert [(c.start, c.end, c.text) for c in cues] == [(1.5, 3.5, "rock layers"), (4.0, 4.01, "x")]
    with pytest.raises(TranscriptError) as info:
        parse_timedtext_xml("<transcript><text")
    assert info.value.code == "bad_xml"


def test_youtube_json3_skips_events_without_words():
    data = {
        "events": [
            {"tStartMs": 0, "dDurationMs": 1000},
            {"tStartMs": 1000, "dDurationMs": 2000, "segs": [{"utf8": "Hello"}, {"utf8": " world"}]},
            {"tStartMs": 3000, "segs": [{"utf8": "\n"}]},
        ]
    }
    assert [(c.start, c.text) for c in parse_json3(json.dumps(data))] == [(1.0, "Hello world")]


def test_rolling_automatic_captions_keep_only_the_new_words():
    rolling = [
        Cue(0, 2, "so the river"),
        Cue(2, 4, "so the river cuts down"),
        Cue(4, 6, "cuts down into the rock"),
        Cue(6, 7, "cuts down into the rock"),
        Cue(7, 9, "[Music]"),
        Cue(9, 11, "and the walls rise"),
    ]
    cleaned = clean_cues(rolling)
    assert texts(cleaned) == ["so the river", "cuts down", "into the rock", "[Music]", "and the walls rise"]
    assert cleaned[2].end == 7  # the exact repeat extended the cue instead of repeating it


def test_cues_the_page_loaded_are_read_leniently():
    cues = cues_from_json(
        [
            {"start": "1.5", "end": 3, "text": "<v Guide>Look</v>"},
            {"start": None, "text": "x"},
            "garbage",
            {"start": 0, "text": "first"},
        ]
    )
    assert [(c.start, c.text) for c in cues] == [(0.0, "first"), (1.5, "Look")]


@pytest.mark.parametrize(
    "seconds, expected",
    [
        (0, "0:00"),
        (-3, "0:00"),
        (5.9, "0:05"),
        (59.999, "0:59"),
        (60, "1:00"),
        (754, "12:34"),
        (3599.5, "59:59"),
        (3600, "1:00:00"),
        (3723, "1:02:03"),
        (36000, "10:00:00"),
    ],
)
def test_format_timestamp_floors_and_shows_hours_only_when_needed(seconds, expected):
    assert format_timestamp(seconds) == expected


def test_transcript_lines_start_with_the_time_of_their_first_cue():
    cues = [
        Cue(1, 3, "Welcome."),
        Cue(4, 8, "Here the trail starts"),
        Cue(9, 12, "and climbs."),
        Cue(13, 20, "Now look left"),
        Cue(21, 40, "at the red layer"),
        Cue(125, 129, "At two minutes, the turn."),
    ]
    assert format_transcript(cues).split("\n") == [
        "[0:01] Welcome. Here the trail starts and climbs.",
        "[0:13] Now look left at the red layer",
        "[2:05] At two minutes, the turn.",
    ]
    assert format_transcript([]) == ""


@pytest.mark.parametrize(
    "text", ["WEBVTT\n\n", "WEBVTT\n\nNOTE nothing yet\n", "<transcript></transcript>", '{"events": []}']
)
def test_captions_with_no_cue_clean_to_none(text):
    # A placeholder real sites serve: zero cues is a normal outcome, never an error.
    assert clean_cues(parse_captions(text)) == []
    assert clean_cues([]) == []


def test_webvtt_settings_right_after_the_end_time_keep_the_cue():
    # Valid per the WebVTT parser (the timestamp is collected, the rest are settings), and shown
    # by browsers: the cue must not vanish from the transcript.
    vtt = (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.000align:end\nkept\n\n"
        "00:00:01.000 --> 00:00:02.500line:0 position:20%\nalso kept\n\n"
        "00:00:03.000 --> 00:00:04.000\tsize:50%\ntab parted\n"
    )
    cues = parse_webvtt(vtt)
    assert [(c.start, c.end, c.text) for c in cues] == [
        (0.0, 1.0, "kept"),
        (1.0, 2.5, "also kept"),
        (3.0, 4.0, "tab parted"),
    ]


@pytest.mark.parametrize(
    "timing",
    [
        "00:00:00.000 --> 00:00:01.0005",  # a fourth digit is not settings
        "00:00:00.000 --> 00:00:01.000.5",
        "00:00:00.000 --> 00:00:011",
        "00:00:00.000 --> 00:00:01:05",
    ],
)
def test_an_end_time_cut_short_is_still_not_a_timing_line(timing):
    cues = parse_webvtt(f"WEBVTT\n\n{timing}\nbad\n\n00:00:05.000 --> 00:00:06.000\ngood\n")
    assert texts(cues) == ["good"]


def test_webvtt_nul_characters_become_replacement_characters():
    vtt = "WEBVTT\n\nid\x00\n00:00:00.000 --> 00:00:01.000\nA\x00B <b>\x00</b>\n"
    (cue,) = parse_webvtt(vtt)
    assert cue.text == "A\ufffdB \ufffd"
    assert "\x00" not in format_transcript([cue])
