"""extension/content/extract.js, the parts that need no DOM, run in a node `vm` context that has no
`document`, no `location`, no `Readability`: loading it (twice, as a second "Attach page" does) must
not touch the DOM, the JSON brace matcher and the YouTube caption-track reader are pure, and the
entry points answer {ok: false, ...} instead of throwing when the page is not there.

The DOM parts (Readability, videos, seeking) are tested end to end in Chromium.
node is part of the test environment: without it these tests fail, they do not skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTRACT = REPO / "extension" / "content" / "extract.js"

RUNNER = """
const fs = require('fs');
const vm = require('vm');
const code = fs.readFileSync(process.argv[2], 'utf8');
const input = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const context = vm.createContext({ URL, console });
vm.runInContext(code, context, { filename: 'extract.js' });
vm.runInContext(code, context, { filename: 'extract.js' });  // injected twice: harmless
const g = context;
(async () => {
%s
})().catch((error) => { console.error(error && error.stack || error); process.exit(1); });
"""


def run_extract_js(tmp_path: Path, script: str, data=None):
    node = shutil.which("node")
    assert node, "node is not installed: it is part of the test environment (apt-get install nodejs)"
    runner = tmp_path / "run.cjs"
    runner.write_text(RUNNER % script, encoding="utf-8")
    (tmp_path / "input.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [node, str(runner), str(EXTRACT), str(tmp_path / "input.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


JSON_AT = "console.log(JSON.stringify(input.map(([text, at]) => g.__marginJsonAt(text, at))));"


def test_loading_defines_the_globals_without_touching_the_dom(tmp_path):
    got = run_extract_js(
        tmp_path,
        """
console.log(JSON.stringify(['__marginExtract', '__marginProbe', '__marginSeek', '__marginJsonAt',
  '__marginYouTubeFromScripts'].map((name) => typeof g[name])));""",
    )
    assert got == ["function"] * 5


def test_json_at_matches_braces_and_respects_strings_and_escapes(tmp_path):
    nested = '{"a": {"b": [1, {"c": "}"}]}, "d": "{[("}'
    cases = [
        (nested + " trailing }", 0),
        ("x = " + nested + ";", 4),
        ("x =   \n\t" + nested, 3),  # whitespace is skipped
        ('{"q": "he said \\"}\\" and left", "n": 1} rest', 0),  # escaped quotes
        ('{"back": "C:\\\\", "next": "}"} more', 0),  # an escaped backslash ends
        ('{"u": "\\u007d \u00e9\u4e2d\U0001f600 }"}{"second": 1}', 0),  # unicode, \\u escapes
        ('[1, [2, [3]], {"k": "]"}] tail', 0),  # an array at the top
        ('{"a": [1, 2}', 0),  # mismatched: null
        ('{"open": "never closed', 0),  # unbalanced: null
        ('{"a": {"b": 1}', 0),  # unbalanced: null
        ("nothing here", 0),  # not at a brace: null
        ("", 0),
        ("{}", 0),
    ]
    got = run_extract_js(tmp_path, JSON_AT, cases)
    assert got[0] == nested and json.loads(got[0])["d"] == "{[("
    assert got[1] == nested and got[2] == nested
    assert json.loads(got[3]) == {"q": 'he said "}" and left', "n": 1}
    assert json.loads(got[4]) == {"back": "C:\\", "next": "}"}
    assert json.loads(got[5]) == {"u": "} \u00e9\u4e2d\U0001f600 }"}
    assert json.loads(got[6]) == [1, [2, [3]], {"k": "]"}]
    assert got[7:12] == [None] * 5
    assert got[12] == "{}"


def player_response(video_id: str, tracks: list[dict] | None) -> dict:
    response = {
        "responseContext": {
            "serviceTrackingParams": [
                {"service": "GFEEDBACK", "params": [{"key": "e", "value": "23804281,{not json}"}]}
            ]
        },
        "playabilityStatus": {"status": "OK", "miniplayer": {"text": 'a } and a { and "quotes"'}},
        "videoDetails": {
            "videoId": video_id,
            "title": "Talk: \u00abBraces {}\u00bb \u2014 \u4e2d\u6587",
            "lengthSeconds": "754",
            "shortDescription": "line 1\nline 2 }}}",
        },
    }
    if tracks is not None:
        response["captions"] = {
            "playerCaptionsTracklistRenderer": {"captionTracks": tracks, "audioTracks": [{}]}
        }
    return response


TRACKS = [
    {
        "baseUrl": "https://www.youtube.com/api/timedtext?v=dQw4w9WgXcQ&lang=en&fmt=srv3",
        "name": {"simpleText": "English"},
        "vssId": ".en",
        "languageCode": "en",
        "isTranslatable": True,
    },
    {
        "baseUrl": "https://www.youtube.com/api/timedtext?v=dQw4w9WgXcQ&kind=asr&lang=de",
        "name": {"runs": [{"text": "Deutsch "}, {"text": "(automatisch erzeugt)"}]},
        "vssId": "a.de",
        "languageCode": "de",
        "kind": "asr",
    },
    {
        "baseUrl": "/api/timedtext?v=dQw4w9WgXcQ&lang=ja",
        "name": {"simpleText": "\u65e5\u672c\u8a9e"},
        "languageCode": "ja",
    },
]


def page_scripts(response: dict) -> list[str]:
    body = json.dumps(response, ensure_ascii=False).replace("/", "\\/")  # as YouTube writes it
    return [
        'window.ytcfg = {"d": function(){ return {}; }}; if (window.ytInitialPlayerResponse == null) {}',
        "var ytInitialPlayerResponse = "
        + body
        + ";var meta = document.createElement('meta'); meta.name = \"referrer\"; "
        'var ytInitialData = {"contents": {"x": "}"}};',
    ]


def test_youtube_caption_tracks_come_from_the_inline_player_response(tmp_path):
    scripts = page_scripts(player_response("dQw4w9WgXcQ", TRACKS))
    urls = [
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
        "https://m.youtube.com/watch?v=dQw4w9WgXcQ",
        "https://www.youtube.com/watch?v=OTHERvideo1",  # in-app navigation: stale
        "https://www.youtube.com/feed/subscriptions",  # no video named at all
        "https://example.com/watch?v=dQw4w9WgXcQ",
    ]  # not YouTube
    got = run_extract_js(
        tmp_path,
        """
console.log(JSON.stringify(input.urls.map((url) => g.__marginYouTubeFromScripts(input.scripts, url))));""",
        {"scripts": scripts, "urls": urls},
    )
    expected_tracks = [
        {"baseUrl": TRACKS[0]["baseUrl"], "languageCode": "en", "name": "English", "kind": ""},
        {
            "baseUrl": TRACKS[1]["baseUrl"],
            "languageCode": "de",
            "name": "Deutsch (automatisch erzeugt)",
            "kind": "asr",
        },
        {
            "baseUrl": "https://www.youtube.com/api/timedtext?v=dQw4w9WgXcQ&lang=ja",
            "languageCode": "ja",
            "name": "\u65e5\u672c\u8a9e",
            "kind": "",
        },
    ]
    assert got[0] == {
        "videoId": "dQw4w9WgXcQ",
        "captionTracks": expected_tracks,
        "title": "Talk: \u00abBraces {}\u00bb \u2014 \u4e2d\u6587",
        "lengthSeconds": 754,
        "stale": False,
    }
    assert got[1]["videoId"] == "dQw4w9WgXcQ"
    assert got[1]["captionTracks"][2]["baseUrl"].startswith("https://m.youtube.com/api/timedtext")
    assert got[2] == {
        "videoId": "OTHERvideo1",
        "captionTracks": [],
        "title": None,
        "lengthSeconds": None,
        "stale": True,
    }
    assert got[3] is None
    assert got[4] is None


def test_youtube_without_captions_or_player_response(tmp_path):
    cases = [
        (page_scripts(player_response("abcdefghijk", None)), "https://www.youtube.com/watch?v=abcdefghijk"),
        (["var ytInitialPlayerResponse = null;"], "https://www.youtube.com/watch?v=abcdefghijk"),
        (
            [
                'window["ytInitialPlayerResponse"] = '
                + json.dumps(player_response("abcdefghijk", TRACKS[:1]))
                + ";"
            ],
            "https://www.youtube.com/watch?v=abcdefghijk",
        ),
        ([], "https://www.youtube-nocookie.com/embed/abcdefghijk?start=5"),
        (
            page_scripts(player_response("shortsvideo", TRACKS[:1])),
            "https://www.youtube.com/shorts/shortsvideo",
        ),
    ]
    got = run_extract_js(
        tmp_path,
        """
console.log(JSON.stringify(input.map(([scripts, url]) => g.__marginYouTubeFromScripts(scripts, url))));""",
        cases,
    )
    assert got[0]["videoId"] == "abcdefghijk" and got[0]["captionTracks"] == []
    assert got[0]["stale"] is False
    assert got[1] == {
        "videoId": "abcdefghijk",
        "captionTracks": [],
        "title": None,
        "lengthSeconds": None,
        "stale": True,
    }
    assert [t["languageCode"] for t in got[2]["captionTracks"]] == ["en"]
    assert got[3]["videoId"] == "abcdefghijk" and got[3]["stale"] is True
    assert got[4]["videoId"] == "shortsvideo" and len(got[4]["captionTracks"]) == 1


def test_a_megabyte_player_response_with_braces_in_its_strings_is_read_whole(tmp_path):
    big = player_response("dQw4w9WgXcQ", TRACKS)
    big["storyboards"] = {"spec": "x" * 200_000, "items": [{"k": i, "t": '}{"' * 3} for i in range(20_000)]}
    got = run_extract_js(
        tmp_path,
        """
const t0 = performance.now();
const yt = g.__marginYouTubeFromScripts(input, 'https://www.youtube.com/watch?v=dQw4w9WgXcQ');
console.log(JSON.stringify({ms: performance.now() - t0, tracks: yt.captionTracks.length}));""",
        page_scripts(big),
    )
    assert got["tracks"] == 3


def test_entry_points_never_throw_without_a_page(tmp_path):
    got = run_extract_js(
        tmp_path,
        """
const extract = await g.__marginExtract();
const probe = g.__marginProbe();
const seek = g.__marginSeek('blob:x', 0, 12);
const badSeek = g.__marginSeek(null, 0, 'soon');
console.log(JSON.stringify({extract, probe, seek, badSeek}));""",
    )
    assert got["extract"]["ok"] is False and got["extract"]["reason"] == "error"
    assert "document" in got["extract"]["detail"]
    assert set(got["probe"]) >= {"url", "title", "textLength", "videoCount", "contentType"}
    assert got["seek"]["ok"] is False and got["badSeek"] == {
        "ok": False,
        "reason": "bad_time",
        "detail": "soon",
    }
