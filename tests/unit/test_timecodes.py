"""extension/panel/timecodes.js, the recognizer behind the "Seek to 12:34" capsules, run in node
against the corpus tests/unit/timecode_cases.json ({"text", "expect": [[label, seconds], ...],
optional "capsules": the exact text each capsule covers, brackets included}).

node is part of the test environment: without it these tests fail, they do not skip.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_js_module

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "extension" / "panel" / "timecodes.js"
CASES = Path(__file__).resolve().parent / "timecode_cases.json"


def run_timecodes_js(tmp_path: Path, script: str, data) -> object:
    return run_js_module(tmp_path, MODULE, "tc", script, data)


def load_cases() -> list[dict]:
    return json.loads(CASES.read_text(encoding="utf-8"))


def test_the_corpus_is_big_enough_and_well_formed():
    cases = load_cases()
    assert len(cases) >= 40
    for case in cases:
        assert isinstance(case["text"], str)
        assert all(isinstance(label, str) and isinstance(sec, int) for label, sec in case["expect"])
        if "capsules" in case:
            assert len(case["capsules"]) == len(case["expect"]), case["text"]


def test_find_timecodes_matches_the_corpus(tmp_path):
    cases = load_cases()
    got = run_timecodes_js(
        tmp_path,
        """
const out = input.map((text) => tc.findTimecodes(text).map((t) => ({
  label: t.label, seconds: t.seconds, covered: text.slice(t.start, t.end), start: t.start, end: t.end })));
console.log(JSON.stringify(out));""",
        [c["text"] for c in cases],
    )
    wrong = []
    for case, found in zip(cases, got, strict=True):
        labels = [[t["label"], t["seconds"]] for t in found]
        if labels != case["expect"]:
            wrong.append((case["text"], case["expect"], labels))
            continue
        covered = [t["covered"] for t in found]
        if "capsules" in case and covered != case["capsules"]:
            wrong.append((case["text"], case["capsules"], covered))
        for t in found:  # the capsule is the label, or the label in its brackets
            assert t["covered"] in (t["label"], f"[{t['label']}]", f"({t['label']})"), t
        starts = [t["start"] for t in found]
        assert starts == sorted(starts)
    assert wrong == []


def test_parse_timecode_inverts_the_labels_and_refuses_the_rest(tmp_path):
    labels = [
        "0:05",
        "12:34",
        "01:05",
        "1:02:03",
        "99:59:59",
        " [4:05] ",
        "(1:00)",
        "1:5",
        "12:60",
        "16:9",
        "100:00",
        "1:02:3",
        "12:34.5",
        "",
        "abc",
        "12:34:56:78",
    ]
    got = run_timecodes_js(tmp_path, "console.log(JSON.stringify(input.map(tc.parseTimecode)));", labels)
    assert got == [5, 754, 65, 3723, 359999, 245, 60, None, None, None, None, None, None, None, None, None]


def test_format_timecode_writes_what_python_writes_for_transcripts(tmp_path):
    seconds = [0, 5, 5.99, 59, 60, 61, 599, 754, 3599, 3599.9, 3600, 3723, 36000, 359999, -3, None]
    expected = [
        "0:00",
        "0:05",
        "0:05",
        "0:59",
        "1:00",
        "1:01",
        "9:59",
        "12:34",
        "59:59",
        "59:59",
        "1:00:00",
        "1:02:03",
        "10:00:00",
        "99:59:59",
        "0:00",
        "0:00",
    ]
    got = run_timecodes_js(tmp_path, "console.log(JSON.stringify(input.map(tc.formatTimecode)));", seconds)
    assert got == expected


def test_formatted_timecodes_are_found_again(tmp_path):
    seconds = [*list(range(0, 4000, 7)), 35999, 36000, 359999]
    got = run_timecodes_js(
        tmp_path,
        """
console.log(JSON.stringify(input.map((s) => {
  const label = tc.formatTimecode(s);
  const found = tc.findTimecodes(`Seek to ${label}.`);
  return [label, tc.parseTimecode(label), found.length === 1 ? found[0].seconds : null];
})));""",
        seconds,
    )
    assert [(p, f) for _, p, f in got] == [(s, s) for s in seconds]


def test_a_long_answer_is_scanned_whole(tmp_path):
    got = run_timecodes_js(
        tmp_path,
        """
const text = Array.from({length: 2000}, (_, i) => `At ${tc.formatTimecode(i * 13)} the speaker, at 10:30 am, said 16:9 (see 2024-01-01T10:30:00).`).join("\\n");
const t0 = performance.now();
const found = tc.findTimecodes(text);
console.log(JSON.stringify({count: found.length, ms: performance.now() - t0, chars: text.length}));""",
        None,
    )
    # Speed belongs to the benchmark, not to a test on a noisy machine: here, every time is found.
    assert got["count"] == 2000
