"""A code block's run kept with its answer: what is stored, what is refused, what the model is sent."""

from __future__ import annotations

import asyncio
import base64
import struct
import zlib

import pytest
from platform_memory import memory_platform

from margin.base.errors import MarginError
from margin.images.figures import prepare_history_for_model
from margin.sandbox import code_runs
from margin.storage import stored_values
from margin.storage.history import Record, parse_history
from margin.turn import saved_runs


def png(width: int, height: int) -> str:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw = b"".join(b"\x00" + b"\xff" * width for _ in range(height))
    data = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + base64.b64encode(data).decode()


def run(**changes):
    base = {
        "block": 0,
        "code": "print(1)",
        "status": "ok",
        "stdout": "1\n",
        "stderr": "",
        "value": None,
        "tables": [],
        "figures": [],
        "error": "",
        "note": "",
        "startedAt": 1_700_000_000_000,
        "ms": 120,
    }
    return {**base, **changes}


TABLE = {
    "columns": ["month", "sales"],
    "index": ["0", "1"],
    "rows": [["Jan", "3"], ["Feb", "5"]],
    "shape": [2, 2],
}


def test_a_clean_run_is_stored_as_sent_and_reads_back_valid():
    sent = run(tables=[TABLE], figures=[{"dataUrl": png(64, 48), "width": 1, "height": 1}])
    kept = code_runs.clean_run(sent)
    # the pixel size is read from the PNG itself, not taken from the panel
    assert kept["figures"][0]["width"] == 64 and kept["figures"][0]["height"] == 48
    assert kept["tables"] == [TABLE]
    assert code_runs.is_runs([kept])


def test_outputs_past_their_bound_keep_their_head_and_say_how_much_was_cut():
    kept = code_runs.clean_run(run(stdout="x" * 3_000_000, value="v" * 50_000))
    assert len(kept["stdout"]) <= code_runs.STREAM_CHARS
    assert kept["stdout"].startswith("xxx") and "truncated: 2.9 million characters more" in kept["stdout"]
    assert len(kept["value"]) <= code_runs.VALUE_CHARS
    wide = {"columns": [str(i) for i in range(50)], "rows": [["cell"] * 50] * 500, "shape": [500, 50]}
    table = code_runs.clean_run(run(tables=[wide, wide]))["tables"]
    assert len(table) == 1 and len(table[0]["rows"]) == code_runs.TABLE_ROWS
    assert len(table[0]["columns"]) == code_runs.TABLE_COLUMNS == len(table[0]["rows"][0])


def test_the_wait_before_a_run_is_kept_only_when_there_was_one_and_old_runs_stay_valid():
    waited = code_runs.clean_run(run(loadMs=2_100))
    assert waited["loadMs"] == 2_100 and waited["ms"] == 120
    assert code_runs.is_runs([waited])
    # no wait (a warm sandbox, nothing loaded), and a run stored before loadMs existed: no field
    assert "loadMs" not in code_runs.clean_run(run(loadMs=0))
    assert code_runs.is_runs([run()]) and code_runs.clean_run(run()) == run()
    # a stored run never holds loadMs 0 (a save would not write it)
    assert not code_runs.is_runs([run(loadMs=0)])
    # the wait is not the model's business
    assert "2100" not in code_runs.run_text(waited) and "2,100" not in code_runs.run_text(waited)


def test_missing_table_values_reach_the_model_in_the_words_the_panel_shows():
    table = {
        "columns": ["city", "temp"],
        "index": ["0", "1"],
        "rows": [["Oslo", "NaN"], ["None", "3.5"]],
        "shape": [2, 2],
    }
    text = code_runs.run_text(code_runs.clean_run(run(tables=[table])))
    assert "0\tOslo\tNaN" in text and "1\tNone\t3.5" in text


@pytest.mark.parametrize(
    "bad",
    [
        "not a run",
        run(loadMs=-1),
        run(loadMs="2 s"),
        run(status="pwned"),
        run(block=-1),
        run(block=1.5),
        run(ms=float("nan")),
        run(stdout=["a list"]),
        run(tables=[{"columns": ["a"], "rows": [["1", "2"]], "shape": [1, 1]}]),
        run(tables=[{"columns": ["a"], "rows": [[{"html": "<b>"}]], "shape": [1, 1]}]),
        run(figures=[{"dataUrl": "data:image/svg+xml;base64,PHN2Zz4="}]),
        run(figures=[{"dataUrl": "javascript:alert(1)"}]),
        run(
            figures=[
                {"dataUrl": "data:image/png;base64," + base64.b64encode(b"GIF89a" + b"\0" * 40).decode()}
            ]
        ),
    ],
)
def test_what_is_not_a_run_is_refused_with_bad_payload(bad):
    with pytest.raises(MarginError) as raised:
        code_runs.clean_run(bad)
    assert raised.value.code == "bad_payload"


def test_a_stored_runs_field_that_a_save_could_not_have_written_is_dropped_on_read_and_parked():
    good = code_runs.clean_run(run())
    stored = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "runs": [good]},
        {"role": "assistant", "content": "b", "runs": [{**good, "stdout": "y" * 500_000}]},
        {"role": "assistant", "content": "c", "runs": "not a list"},
    ]
    read = parse_history(stored)
    assert read.records[1].fields["runs"] == [good]
    assert "runs" not in read.records[2].fields and "runs" not in read.records[3].fields
    assert read.unreadable_raw == stored  # kept whole under historyUnreadable on the next write
    assert stored_values.RECORD_FIELDS["runs"] is code_runs.is_runs


def test_a_new_run_of_a_block_replaces_the_old_one_and_runs_are_bounded():
    runs = code_runs.with_run([], code_runs.clean_run(run(block=2, stdout="old")))
    runs = code_runs.with_run(runs, code_runs.clean_run(run(block=0)))
    runs = code_runs.with_run(runs, code_runs.clean_run(run(block=2, stdout="new")))
    assert [(r["block"], r["stdout"]) for r in runs] == [(0, "1\n"), (2, "new")]
    for block in range(40):
        runs = code_runs.with_run(runs, code_runs.clean_run(run(block=block)))
    assert len(runs) == code_runs.MAX_RUNS


def test_the_model_gets_a_compact_view_never_the_pixels_or_the_whole_output():
    kept = code_runs.clean_run(
        run(
            stdout="line\n" * 20_000,
            tables=[
                {
                    **TABLE,
                    "rows": [["m", str(i)] for i in range(10)],
                    "index": [str(i) for i in range(10)],
                    "shape": [12, 2],
                }
            ],
            figures=[{"dataUrl": png(640, 480)}],
            status="error",
            error="Traceback (most recent call last):\n" + "  frame\n" * 30 + "ValueError: bad month\n",
        )
    )
    text = code_runs.run_text(kept)
    assert text.startswith("[Output of code block 1: error]")
    assert "[figure: 640×480]" in text and "base64" not in text
    assert "[table: 12 rows × 2 columns]" in text and "\tmonth\tsales" in text
    assert text.count("\tm\t") == code_runs.MODEL_TABLE_ROWS
    assert "ValueError: bad month" in text and text.count("frame") < 10
    assert len(text) < 3_000


def test_the_next_request_carries_the_runs_after_the_answer_and_storage_is_untouched():
    answer = Record(
        "assistant", "Here:\n```python\nprint(6*7)\n```", {"runs": [code_runs.clean_run(run(stdout="42\n"))]}
    )
    records = [Record("user", "q"), answer, Record("user", "now per month")]
    prepared = prepare_history_for_model(records)
    assert prepared[1].content == answer.content + "\n\n[Output of code block 1: ok]\n42"
    assert prepared[0] is records[0] and prepared[2] is records[2]
    assert answer.content.endswith("```")  # the stored record is not changed


def seeded():
    return memory_platform(
        {
            "history": [
                {"role": "user", "content": "q", "createdAt": 1},
                {"role": "assistant", "content": "a", "createdAt": 2},
            ]
        }
    )


def test_save_run_stores_the_run_on_its_answer():
    platform = seeded()
    reply = asyncio.run(
        saved_runs.handle_save_run(platform, {"index": 1, "createdAt": 2, "run": run(stdout="42\n")})
    )
    assert reply == {"saved": True, "runs": 1}
    stored = asyncio.run(platform.local.get(["history"]))["history"]
    assert stored[1]["runs"][0]["stdout"] == "42\n" and stored[1]["content"] == "a"


@pytest.mark.parametrize("index, created_at", [(1, 3), (0, 1), (5, 2)])
def test_save_run_on_another_record_writes_nothing(index, created_at):
    platform = seeded()
    before = asyncio.run(platform.local.get(["history"]))
    with pytest.raises(MarginError) as raised:
        asyncio.run(
            saved_runs.handle_save_run(platform, {"index": index, "createdAt": created_at, "run": run()})
        )
    assert raised.value.code == "run_answer_gone"
    assert asyncio.run(platform.local.get(["history"])) == before


@pytest.mark.parametrize(
    "payload", [{"index": 1}, {"index": -1, "createdAt": 2}, {"index": "1", "createdAt": 2}]
)
def test_save_run_without_a_readable_index_and_time_is_bad_payload(payload):
    platform = seeded()
    with pytest.raises(MarginError) as raised:
        asyncio.run(saved_runs.handle_save_run(platform, {**payload, "run": run()}))
    assert raised.value.code == "bad_payload"
    assert "runs" not in asyncio.run(platform.local.get(["history"]))["history"][1]
