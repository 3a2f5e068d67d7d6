"""The GET_ALL_KEYS contract and the history invariant, against chrome.storage's semantics."""

import contextlib

from helpers import run
from platform_memory import MemoryStorageArea

from margin.storage import history
from margin.storage import keys as storage
from margin.storage.history import Record, for_edit, for_regenerate, user_record


def test_get_all_keys_is_defaults_minus_history_plus_the_option_settings():
    assert storage.HISTORY in storage.DEFAULTS
    assert storage.HISTORY not in storage.GET_ALL_KEYS
    expected = [k for k in storage.DEFAULTS if k != storage.HISTORY] + [
        storage.PROVIDERS,
        storage.ACTIVE_PROVIDER_ID,
        storage.UI_LANGUAGE,
        storage.SUMMARIZE_ABOVE_CHARS,
        storage.RUN_PYTHON_MODE,
        storage.CODE_TIME_LIMIT,
    ]
    assert list(storage.GET_ALL_KEYS) == expected
    assert not any(k.startswith(storage.SESSION_BODY_PREFIX) for k in storage.GET_ALL_KEYS)


def test_get_all_reads_exactly_the_fixed_list_never_history_nor_bodies():
    big_image = "data:image/png;base64," + "A" * 200_000
    area = MemoryStorageArea(
        {
            "history": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": big_image}}]}
            ],
            "session_abc": {"history": []},
            "savedSessions": [{"id": "abc", "name": "x", "createdAt": 1, "pinned": False, "textDigest": ""}],
            "providers": [{"id": "p1"}],
        }
    )
    value = run(storage.get_all(area))
    assert area.reads == list(storage.GET_ALL_KEYS)
    assert "history" not in value and "session_abc" not in value
    assert value["providers"] == [{"id": "p1"}]
    assert value["uiLanguage"] == "auto"  # absent -> default
    assert value["historySessionId"] is None


def test_get_all_defaults_are_fresh_copies():
    area = MemoryStorageArea()
    first = run(storage.get_all(area))
    first["savedSessions"].append("mutated")
    assert run(storage.get_all(area))["savedSessions"] == []


def test_memory_store_round_trips_json_and_is_all_or_nothing():
    area = MemoryStorageArea()
    run(area.set({"a": (1, 2)}))
    assert run(area.get(["a", "missing"])) == {"a": [1, 2]}
    with contextlib.suppress(TypeError):  # a set is not JSON: nothing is written
        run(area.set({"b": 1, "c": {1, 2}}))
    assert run(area.get(["b", "c"])) == {}


def test_history_round_trips_unknown_fields_and_keeps_unreadable_records():
    raw = [
        {"role": "user", "content": "hi", "createdAt": 5, "videoSrc": "https://v"},
        {"role": "robot", "content": "?"},
        {"role": "assistant", "content": "hello", "stopped": True},
    ]
    area = MemoryStorageArea({"history": raw})
    read = run(history.read_history(area))
    assert [r.role for r in read.records] == ["user", "assistant"]
    assert read.records[0].fields == {"createdAt": 5, "videoSrc": "https://v"}
    assert read.unreadable_raw == raw
    run(history.write_history(area, read.records, read))
    stored = area.snapshot()
    assert stored["historyUnreadable"] == raw  # nothing silently lost
    assert stored["history"][0] == raw[0]


def test_parking_unreadable_records_never_overwrites_what_was_parked_before():
    first = [{"role": "robot", "content": "lost once"}]
    area = MemoryStorageArea({"history": first})
    run(history.write_history(area, [], run(history.read_history(area))))
    second = [{"role": "user", "content": "ok"}, {"role": "robot", "content": "lost twice"}]
    run(area.set({"history": second}))
    run(history.write_history(area, [Record("user", "ok")], run(history.read_history(area))))
    parked = {k: v for k, v in area.snapshot().items() if k.startswith("historyUnreadable")}
    assert parked["historyUnreadable"] == first
    assert sorted(map(str, parked.values())) == sorted(map(str, [first, second]))


def test_history_that_is_not_a_list_is_kept_aside():
    area = MemoryStorageArea({"history": "garbage"})
    read = run(history.read_history(area))
    assert read.records == [] and read.unreadable_raw == "garbage"


def _conversation():
    return [
        user_record("q1"),
        Record("assistant", "a1"),
        user_record("q2"),
        Record("assistant", "a2"),
    ]


def test_regenerate_removes_the_old_answer_first():
    kept, answered = for_regenerate(_conversation())
    assert [r.text for r in kept] == ["q1", "a1", "q2"]
    assert answered == 3
    assert sum(r.role == "user" for r in kept) == 2


def _attachment(title):
    return Record("user", f"[Page context] {title}\n\ntext", {"attachment": {"kind": "page", "title": title}})


def test_regenerate_keeps_pages_attached_after_the_answer_for_the_next_question():
    records = [*_conversation(), _attachment("later page")]
    kept, answered = for_regenerate(records)
    assert [r.text.split("\n")[0] for r in kept] == ["q1", "a1", "q2", "[Page context] later page"]
    # The new answer answers q2 only: the page waits for the next question.
    assert answered == 3


def test_an_attachment_is_not_a_question_and_cannot_be_edited_or_regenerated_alone():
    import pytest

    from margin.base.errors import MarginError

    page = _attachment("p")
    assert page.is_attachment and not page.is_question
    # A typed message that merely starts like one is still the user's question.
    typed = user_record("[Page context] my own words")
    assert typed.is_question and not typed.is_attachment
    with pytest.raises(MarginError) as info:
        for_regenerate([page])
    assert info.value.code == "nothing_to_regenerate"
    with pytest.raises(MarginError) as info:
        for_edit([page, user_record("q")], 0)
    assert info.value.code == "edit_target_gone"


def test_edit_removes_the_bubble_and_everything_after_and_keeps_them_as_versions():
    kept, pending = for_edit(_conversation(), 2)
    assert [r.text for r in kept] == ["q1", "a1"]
    # The edited question and its answer are the new answer's earlier version (storage.versions rule 3).
    assert pending == [{"content": "a2", "question": {"role": "user", "content": "q2"}}]


def test_edit_of_a_record_that_is_not_a_user_bubble_is_refused():
    import pytest

    from margin.base.errors import MarginError

    with pytest.raises(MarginError) as info:
        for_edit(_conversation(), 1)
    assert info.value.code == "edit_target_gone"


def test_user_record_with_images_is_parts_text_first():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    record = user_record("look", [image])
    assert record.to_json()["content"] == [{"type": "text", "text": "look"}, image]
    assert record.text == "look" and record.image_parts == [image]
