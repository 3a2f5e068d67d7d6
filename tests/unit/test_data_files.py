"""Data files the user attaches ("Attach file"): the checks, the stored record, what the model reads
for it, and the whole file under /data/ in the sandbox (margin.page.data_files, margin.page.sandbox_files)."""

import json
import re

import pytest
from attach_tabs import history, run, setup, turn
from chat_turns import answer

from margin.base.errors import MarginError
from margin.page import attach, data_files, sandbox_files
from margin.sandbox import tool_loop
from margin.storage.history import Record
from margin.turn import slimming

SALES = "region,amount\n" + "".join(f"r{i},{i}\n" for i in range(1, 101))


def attach_file(platform, name, text):
    return run(attach.handle_attach_file(platform, {"name": name, "text": text}))


def refusal(payload):
    with pytest.raises(MarginError) as info:
        data_files.check_request(payload)
    return info.value


def test_an_attached_csv_is_a_card_record_with_its_head_row_count_and_whole_text():
    platform = setup()
    result = attach_file(platform, "sales.csv", SALES)
    assert result["duplicate"] is False and result["summarize"] is False
    card = result["attachment"]
    assert (card["kind"], card["name"], card["mediaType"]) == ("file", "sales.csv", "text/csv")
    assert card["size"] == len(SALES.encode())
    [record] = history(platform)
    header, body = record["content"].split("\n\n", 1)
    lines = header.splitlines()
    assert lines[0] == "[Page context] File: sales.csv"
    assert lines[1] == f"Type: text/csv, {len(SALES):,} bytes"
    assert "Rows: 100 (after the header row)" in lines
    assert any(line.startswith("Note: only the beginning is shown") for line in lines)
    assert body.splitlines()[0] == "region,amount"
    assert len(body.splitlines()) == data_files.VIEW_ROWS
    assert record["file"] == {"name": "sales.csv", "size": len(SALES), "mediaType": "text/csv", "text": SALES}
    assert record["attachment"]["rows"] == 100


def test_the_next_question_sends_the_view_and_the_file_stays_whole_for_the_sandbox():
    platform = setup(responses=[answer("5050.")])
    attach_file(platform, "sales.csv", SALES)
    turn(platform, {"action": "send", "text": "Sum of amount?", "images": []})
    messages = json.loads(platform.transport.requests[0].body)["messages"]
    assert messages[0]["content"].startswith("[Page context] File: sales.csv")
    assert "r100,100" not in messages[0]["content"]  # only the head goes to the model
    records = [Record.from_json(r) for r in history(platform)]
    [entry] = sandbox_files.conversation_files(records)
    assert entry["path"] == "/data/sales.csv" and entry["text"] == SALES
    assert "/data/sales.csv" in tool_loop.description(sandbox_files.listing([entry]))


def test_the_same_file_waiting_twice_is_not_added_and_remove_takes_it_back():
    platform = setup()
    attach_file(platform, "notes.txt", "one\ntwo\n")
    again = attach_file(platform, "notes.txt", "one\ntwo\n")
    assert again["duplicate"] is True and len(history(platform)) == 1
    attach_file(platform, "other.txt", "one\ntwo\n")  # another name: another file
    assert len(history(platform)) == 2
    run(attach.handle_remove(platform, {"index": 1, "url": ""}))
    assert [r["file"]["name"] for r in history(platform)] == ["notes.txt"]


def test_a_changed_file_with_the_same_head_is_attached_again():
    platform = setup()
    attach_file(platform, "log.csv", SALES)
    changed = attach_file(platform, "log.csv", SALES + "r101,101\n")
    assert changed["duplicate"] is False
    assert [r["file"]["text"] for r in history(platform)] == [SALES, SALES + "r101,101\n"]


@pytest.mark.parametrize(
    ("payload", "code", "words"),
    [
        (
            {"name": "big.csv", "text": "a\n" * (data_files.MAX_FILE_BYTES // 2 + 1)},
            "file_too_large",
            "larger than 5 MB",
        ),
        (
            {"name": "wide.txt", "text": "é" * (data_files.MAX_FILE_BYTES // 2 + 1)},
            "file_too_large",
            "larger than 5 MB",
        ),
        ({"name": "blob.txt", "text": "PK\x03\x04\x00\x00"}, "file_not_text", "not a text file in UTF-8"),
        ({"name": "half.txt", "text": "ab\ud800cd"}, "file_not_text", "not a text file in UTF-8"),
        ({"name": "sheet.xlsx", "text": "x"}, "file_type_unsupported", "Save the sheet as CSV"),
        ({"name": "run.exe", "text": "x"}, "file_type_unsupported", "run.exe is none of them"),
        ({"name": "noext", "text": "x"}, "file_type_unsupported", "none of them"),
        ({"name": "empty.json", "text": " \n"}, "file_empty", "empty.json is empty"),
        ({"name": ["a.csv"], "text": "x"}, "bad_payload", "Reload the panel"),
        ({"name": "a.csv", "text": 12}, "bad_payload", "Reload the panel"),
        ("a.csv", "bad_payload", "Reload the panel"),
    ],
)
def test_files_margin_cannot_take_are_refused_with_a_sentence_and_store_nothing(payload, code, words):
    error = refusal(payload)
    assert error.code == code and words in error.message
    platform = setup()
    with pytest.raises(MarginError):
        run(attach.handle_attach_file(platform, payload if isinstance(payload, dict) else {"x": payload}))
    assert history(platform) == []


def test_a_hostile_json_is_stored_as_text_and_its_view_is_a_bounded_prefix():
    hostile = "[" * 200_000 + "1e999999" + "]" * 200_000
    name, media_type, text = data_files.check_request({"name": "deep.json", "text": hostile})
    record = data_files.file_record(name, media_type, text, captured_at=1_700_000_000_000)
    assert media_type == "application/json"
    body = record.text.split("\n\n", 1)[1]
    assert len(body) == data_files.VIEW_CHARS and body == hostile[: data_files.VIEW_CHARS]
    assert record.fields["file"]["text"] == hostile
    assert "Note: only the beginning is shown here; the file has 400,008 characters" in record.text


def test_a_short_text_file_is_shown_whole_and_a_bom_is_dropped():
    name, media_type, text = data_files.check_request(
        {"name": "C:\\Users\\me\\read me.md", "text": "\ufeff# Hi\n"}
    )
    assert (name, media_type, text) == ("read me.md", "text/markdown", "# Hi\n")
    record = data_files.file_record(name, media_type, text, captured_at=1)
    assert record.text.endswith("\n\n# Hi\n") and "Note:" not in record.text
    assert record.fields["attachment"]["truncated"] is False


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("sales.csv", "sales.csv"),
        ("../../etc/passwd.txt", "passwd.txt"),
        ("..\\..\\win.ini.txt", "win.ini.txt"),
        (".hidden.csv", "hidden.csv"),
        ("my report (final).tsv", "my_report_final.tsv"),
        ("日本語.json", "file.json"),
        ("a" * 300 + ".csv", "a" * 76 + ".csv"),
        ("..", "file"),
        ("-rf.csv", "rf.csv"),
        ("__init__.txt", "init.txt"),
        ("a..b.csv", "a.b.csv"),
    ],
)
def test_names_become_safe_names_under_data(name, safe):
    assert data_files.safe_name(name) == safe
    # The sandbox refuses a whole run whose file paths are not of this shape (sandbox.js DATA_PATH).
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", safe) and ".." not in safe


def test_duplicate_names_are_numbered_and_never_take_a_page_s_path():
    records = [
        data_files.file_record("page-1.md", "text/markdown", "mine", captured_at=1),
        Record("user", "[Page context] Page: P\n\nbody", {"attachment": {"kind": "page", "title": "P"}}),
        data_files.file_record("data.csv", "text/csv", "a\n1\n", captured_at=2),
        data_files.file_record("data.csv", "text/csv", "a\n2\n", captured_at=3),
    ]
    files = sandbox_files.conversation_files(records)
    assert [f["path"] for f in files] == [
        "/data/page-1-2.md",
        "/data/page-1.md",
        "/data/data.csv",
        "/data/data-2.csv",
    ]
    assert files[0]["text"] == "mine" and files[3]["text"] == "a\n2\n"


def test_a_file_record_whose_file_field_was_lost_gives_no_sandbox_file():
    record = data_files.file_record("data.csv", "text/csv", "a\n1\n", captured_at=2)
    broken = Record(record.role, record.text, {k: v for k, v in record.fields.items() if k != "file"})
    assert sandbox_files.conversation_files([broken]) == []


def test_an_old_file_ages_to_a_stub_like_a_page():
    big = "x\n" * 40_000
    records = [
        data_files.file_record("big.txt", "text/plain", big, captured_at=1),
        *[
            Record(role, text)
            for n in range(slimming.AGING_MIN_USER_TURNS)
            for role, text in (("user", f"q{n}"), ("assistant", "a"))
        ],
        data_files.file_record("other.txt", "text/plain", "y", captured_at=2),
    ]
    sent = slimming.age_stale_attachments(records)
    assert slimming.aged_indices(records) == [0]
    assert sent[0].text.startswith("[Page context]") and "big.txt" in sent[0].text
    assert "left out" in sent[0].text and len(sent[0].text) < 300


def test_attach_again_of_an_answered_file_brings_the_whole_file_back():
    platform = setup(responses=[answer("ok")])
    first = attach_file(platform, "sales.csv", SALES)["attachment"]
    turn(platform, {"action": "send", "text": "q", "images": []})
    again = run(attach.handle_reattach(platform, {"capturedAt": first["capturedAt"], "url": ""}))
    assert again["duplicate"] is False and again["summarize"] is False
    copy = history(platform)[-1]
    assert copy["file"]["text"] == SALES and copy["content"].startswith("[Page context] File: sales.csv")
