"""An answer's versions (margin.storage.versions, margin.turn.answer_versions): what Regenerate and
Edit & resend replace stays reachable on the answer, the shown version is the one stored and sent,
and one send stays one bubble."""

import asyncio
import json

import pytest
from chat_turns import PNG, Turn, answer, send
from platform_memory import ScriptedResponse

from margin.base.errors import MarginError
from margin.images import originals as image_originals
from margin.sessions import actions as sessions
from margin.storage import versions
from margin.storage.history import Record, parse_history
from margin.storage.keys import set_turn_running
from margin.turn import answer_versions


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def choose(turn, at, target, **changes):
    record = turn.history[at]
    count = len(versions.all_versions(Record.from_json(record))[0]) if record["role"] == "assistant" else None
    if count is None:
        count = len(record.get("versions", []))
    payload = {"index": at, "createdAt": record.get("createdAt"), "count": count, "version": target}
    return run(answer_versions.handle_choose_version(turn.platform, {**payload, **changes}))


def bubbles(turn):
    return [
        (r["role"], r["content"] if isinstance(r["content"], str) else r["content"][0]["text"])
        for r in turn.history
    ]


def refused():
    body = json.dumps({"error": {"message": "upstream is down"}})
    return ScriptedResponse(status=500, chunks=[body], headers={"content-type": "application/json"})


# -- regenerate ------------------------------------------------------------------------------------


def test_regenerating_twice_keeps_three_versions_and_the_shown_one_is_what_the_next_question_sends():
    turn = Turn(responses=[answer("first"), answer("second"), answer("third"), answer("later")])
    run(turn.run(send("Q")))
    run(turn.run({"action": "regenerate"}))
    run(turn.run({"action": "regenerate"}))
    assert bubbles(turn) == [("user", "Q"), ("assistant", "third")]  # one send, one bubble
    shown = Record.from_json(turn.history[1])
    every, at = versions.all_versions(shown)
    assert [v["content"] for v in every] == ["first", "second", "third"] and at == 2
    assert all(isinstance(v["createdAt"], int) and v["model"] == "llama3.2" for v in every)
    assert "versions" not in turn.history[0]  # the pending versions moved onto the answer

    assert choose(turn, 1, 1) == {"chosen": 1, "changed": True}  # "Previous version"
    assert bubbles(turn) == [("user", "Q"), ("assistant", "second")]
    assert turn.history[1]["versionAt"] == 1
    assert [v["content"] for v in turn.history[1]["versions"]] == ["first", "third"]

    run(turn.run(send("and then?")))
    messages = turn.request()["messages"]
    assert [m["content"] for m in messages] == ["Q", "second", "and then?"]
    assert "versions" not in json.dumps(messages) and "third" not in json.dumps(messages)


def test_the_regenerate_request_sends_no_earlier_version():
    turn = Turn(responses=[answer("first"), answer("second")])
    run(turn.run(send("Q")))
    run(turn.run({"action": "regenerate"}))
    assert [m["content"] for m in turn.request()["messages"]] == ["Q"]


def test_a_failed_regenerate_keeps_the_answers_on_the_question_and_one_can_be_put_back():
    turn = Turn(responses=[answer("kept"), refused()])
    run(turn.run(send("Q")))
    run(turn.run({"action": "regenerate"}))
    assert turn.kinds[-1] == "error"
    assert bubbles(turn) == [("user", "Q")]
    assert [v["content"] for v in turn.history[0]["versions"]] == ["kept"]
    assert choose(turn, 0, 0)["changed"]
    assert bubbles(turn) == [("user", "Q"), ("assistant", "kept")]
    assert "versions" not in turn.history[0] and "versions" not in turn.history[1]


def test_choosing_the_shown_version_writes_nothing_and_a_changed_answer_is_refused():
    turn = Turn(responses=[answer("one"), answer("two")])
    run(turn.run(send("Q")))
    run(turn.run({"action": "regenerate"}))
    writes = len(turn.platform.local.writes)
    assert choose(turn, 1, 1) == {"chosen": 1, "changed": False}
    assert len(turn.platform.local.writes) == writes
    for changes in ({"createdAt": 1}, {"count": 5}, {"version": 9}, {"index": 0}):
        with pytest.raises(MarginError) as info:
            choose(turn, 1, 0, **changes)
        assert info.value.code == "version_gone", changes
    with pytest.raises(MarginError) as info:
        choose(turn, 1, 0, version="0")
    assert info.value.code == "bad_payload"
    assert len(turn.platform.local.writes) == writes


def test_no_version_is_chosen_while_a_turn_runs():
    turn = Turn(responses=[answer("one"), answer("two")])
    run(turn.run(send("Q")))
    run(turn.run({"action": "regenerate"}))
    set_turn_running(True)
    try:
        with pytest.raises(MarginError) as info:
            choose(turn, 1, 0)
        assert info.value.code == "turn_in_progress"
    finally:
        set_turn_running(False)


# -- edit & resend ---------------------------------------------------------------------------------


def test_edit_keeps_the_old_question_its_answer_and_the_turns_after_them_as_a_version():
    turn = Turn(responses=[answer("A1"), answer("A2"), answer("A1 reworded")])
    run(turn.run(send("Q1")))
    run(turn.run(send("Q2")))
    run(turn.run({"action": "edit", "index": 0, "text": "Q1 reworded", "images": []}))
    assert bubbles(turn) == [("user", "Q1 reworded"), ("assistant", "A1 reworded")]
    assert [m["content"] for m in turn.request()["messages"]] == ["Q1 reworded"]
    (earlier,) = turn.history[1]["versions"]
    assert earlier["content"] == "A1" and earlier["question"]["content"] == "Q1"
    assert [r["content"] for r in earlier["later"]] == ["Q2", "A2"]

    choose(turn, 1, 0)  # "Previous version": the old question, its answer and what followed
    assert bubbles(turn) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q2"), ("assistant", "A2")]
    (other,) = turn.history[1]["versions"]
    assert other["content"] == "A1 reworded" and other["question"]["content"] == "Q1 reworded"
    assert "later" not in other

    choose(turn, 1, 1)  # "Next version": back, and the turns after Q1 go with their version
    assert bubbles(turn) == [("user", "Q1 reworded"), ("assistant", "A1 reworded")]
    assert [r["content"] for r in turn.history[1]["versions"][0]["later"]] == ["Q2", "A2"]


def test_an_edit_after_a_regenerate_keeps_every_answer_each_with_its_question():
    turn = Turn(responses=[answer("a"), answer("b"), answer("c")])
    run(turn.run(send("Q")))
    run(turn.run({"action": "regenerate"}))
    run(turn.run({"action": "edit", "index": 0, "text": "Q, fixed", "images": []}))
    every, at = versions.all_versions(Record.from_json(turn.history[1]))
    assert at == 2
    assert [(v["content"], v.get("question", {}).get("content")) for v in every] == [
        ("a", "Q"),
        ("b", "Q"),
        ("c", None),
    ]
    choose(turn, 1, 0)
    assert bubbles(turn) == [("user", "Q"), ("assistant", "a")]
    every, at = versions.all_versions(Record.from_json(turn.history[1]))
    assert at == 0
    # Versions answered by the question now shown carry no `question`; the edited one does.
    assert [(v["content"], v.get("question", {}).get("content")) for v in every] == [
        ("a", None),
        ("b", None),
        ("c", "Q, fixed"),
    ]


def test_an_edited_question_s_images_stay_whole_in_its_version():
    turn = Turn(responses=[answer("a dot"), answer("words only")])
    run(turn.run(send("What is this?", [{"dataUrl": PNG, "name": "dot.png"}])))
    run(turn.run({"action": "edit", "index": 0, "text": "Describe it in words", "images": []}))
    question = turn.history[1]["versions"][0]["question"]
    assert question["content"][1]["image_url"]["url"] == PNG
    choose(turn, 1, 0)
    assert turn.history[0]["content"][1]["image_url"]["url"] == PNG


def test_attachments_waiting_for_the_next_question_stay_for_the_edited_one():
    page = {
        "role": "user",
        "content": "[Page context] Page: P\n\ntext",
        "attachment": {"kind": "page", "title": "P", "url": "https://example.com/p", "capturedAt": 5},
        "createdAt": 5,
    }
    history = [
        {"role": "user", "content": "Q", "createdAt": 1},
        {"role": "assistant", "content": "A", "createdAt": 2},
        page,
    ]
    turn = Turn({"history": history}, [answer("A, again")])
    run(turn.run({"action": "edit", "index": 0, "text": "Q again", "images": []}))
    assert [r["content"].split("\n")[0] for r in turn.history] == [
        "[Page context] Page: P",
        "Q again",
        "A, again",
    ]


# -- reading, pixels, sessions ------------------------------------------------------------------


def test_a_corrupt_versions_value_never_loses_the_answer_and_is_parked():
    good = {"content": "kept", "createdAt": 1}
    for bad in ("not a list", [{"content": 7}, good], [good, {"content": "x", "question": {"role": "bot"}}]):
        raw = [
            {"role": "user", "content": "Q"},
            {"role": "assistant", "content": "A", "versions": bad, "versionAt": 0},
        ]
        read = parse_history(raw)
        answer_record = read.records[1]
        assert answer_record.text == "A" and read.unreadable_raw == raw  # kept whole, parked
        assert answer_record.fields.get("versions", []) == ([] if bad == "not a list" else [good])
    out_of_range = [{"role": "assistant", "content": "A", "versions": [good], "versionAt": 4}]
    read = parse_history(out_of_range)
    assert "versionAt" not in read.records[0].fields and read.unreadable_raw == out_of_range
    clean = [{"role": "assistant", "content": "A", "versions": [good], "versionAt": 0}]
    assert parse_history(clean).unreadable_raw is None


def test_an_original_referenced_only_inside_a_version_is_kept_and_inlined_into_a_session_body():
    key = image_originals.original_key(PNG)
    thumb = {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA"},
        "meta": {"originalKey": key},
    }
    question = {"role": "user", "content": [{"type": "text", "text": "Q"}, thumb], "imagesSeen": True}
    history = [
        {"role": "user", "content": "Q, edited", "createdAt": 3},
        {
            "role": "assistant",
            "content": "new",
            "createdAt": 4,
            "versions": [{"content": "old", "question": question}],
        },
    ]
    turn = Turn({"history": history, key: {"url": PNG, "sha256": image_originals.url_digest(PNG)}})
    assert run(image_originals.collect_garbage(turn.platform.local)) == []
    saved = run(sessions.save_current(turn.platform.local))
    body = turn.platform.local.snapshot()[f"session_{saved}"]["history"]
    part = body[1]["versions"][0]["question"]["content"][1]
    assert part["image_url"]["url"] == PNG and "originalKey" not in part.get("meta", {})


def test_versions_survive_a_session_put_away_and_opened_again():
    turn = Turn(responses=[answer("one"), answer("two")])
    run(turn.run(send("Q")))
    run(turn.run({"action": "regenerate"}))
    saved = run(sessions.save_current(turn.platform.local, clear=True))
    assert turn.history == []
    run(sessions.handle_open(turn.platform, {"id": saved}))
    assert [v["content"] for v in turn.history[1]["versions"]] == ["one"]
    choose(turn, 1, 0)
    assert bubbles(turn) == [("user", "Q"), ("assistant", "one")]


def test_a_conversation_nested_past_chrome_storage_s_depth_is_refused_before_anything_is_written():
    records = [Record("user", "Q")]
    deep: dict = {"content": "x"}
    for _ in range(90):
        deep = {"a": deep}
    records.append(Record("assistant", "A", {"versions": [{"content": "old", "deep": deep}]}))
    with pytest.raises(MarginError) as info:
        versions.check_depth(records)
    assert info.value.code == "versions_too_deep"
    versions.check_depth(records[:1])
