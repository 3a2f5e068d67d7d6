"""The one reader every stored value passes (py/margin/storage/stored_values.py): its rules, each as a user
would meet it. The corpus in tests/reliability/test_stored_values.py plants bad values under every
key and runs the everyday actions; these tests pin the rules themselves."""

import asyncio

import pytest
from platform_memory import CHROME_MAX_DEPTH, MemoryStorageArea, as_chrome_stores

from margin.storage import history, stored_values
from margin.storage.stored_values import (
    Read,
    Unreadable,
    check_record,
    park,
    parked_key,
    read_list,
    read_trash,
)

GOOD = {"role": "user", "content": "hello", "createdAt": 1_700_000_000_000}


# -- rule 3: records ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record, why",
    [
        ("just text", "not an object"),
        ({"role": "robot", "content": "hi"}, "unknown role"),
        ({"role": "user"}, "neither text nor"),
        ({"role": "user", "content": 7}, "neither text nor"),
        ({"role": "user", "content": [{"type": "text", "text": 5}]}, "text is not a string"),
        ({"role": "user", "content": [{"type": "text", "text": ["a"]}]}, "text is not a string"),
        ({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}, "no url"),
        ({"role": "user", "content": [{"type": "image_url", "image_url": "data:x"}]}, "no url"),
        ({"role": "user", "content": ["plain string part"]}, "not {type"),
    ],
)
def test_a_record_with_no_readable_shape_is_unreadable_with_the_reason(record, why):
    with pytest.raises(Unreadable, match=why):
        check_record(record)


def test_the_text_of_a_record_that_passed_the_reader_never_crashes():
    # The finding: a text part whose `text` was a number passed and then crashed Record.text.
    with pytest.raises(ValueError):
        history.Record.from_json({"role": "user", "content": [{"type": "text", "text": 5}]})
    record = history.Record.from_json(
        {
            "role": "user",
            "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}],
        }
    )
    assert record.text == "a"


@pytest.mark.parametrize(
    "field, bad",
    [
        ("createdAt", "yesterday"),
        ("usage", {"input": -1}),
        ("usage", {"output": 1.5}),
        ("imagesSeen", "yes"),
        ("cost", True),
        ("model", 4),
        ("attachment", [1]),
    ],
)
def test_a_known_field_of_the_wrong_type_is_dropped_and_the_record_kept(field, bad):
    shape = check_record({**GOOD, field: bad})
    assert shape.role == "user" and shape.content == "hello"
    assert field not in shape.fields
    assert shape.repaired


def test_unknown_fields_and_good_ones_are_kept_verbatim_and_not_a_repair():
    shape = check_record({**GOOD, "futureField": {"x": [1, 2]}, "usage": {"input": 3, "output": 4}})
    assert shape.fields == {
        "createdAt": GOOD["createdAt"],
        "futureField": {"x": [1, 2]},
        "usage": {"input": 3, "output": 4},
    }
    assert not shape.repaired


def test_a_bad_summary_inside_an_attachment_is_dropped_and_the_page_kept():
    attachment = {"kind": "page", "title": "T", "summary": {"text": 12}}
    shape = check_record({"role": "user", "content": "page text", "attachment": attachment})
    assert shape.fields["attachment"] == {"kind": "page", "title": "T"}
    assert shape.repaired


def test_an_image_part_with_a_meta_that_is_not_an_object_keeps_its_pixels():
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}, "meta": "oops"}
    shape = check_record({"role": "user", "content": [part]})
    assert shape.content == [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    assert shape.repaired


# -- rule 1: a list read item by item ----------------------------------------------------------


def _item(value):
    if not isinstance(value, int):
        raise Unreadable("not a number")
    return value, value < 0


def test_a_list_keeps_its_readable_items_and_hands_back_the_whole_raw_value():
    raw = [1, "two", 3]
    read = read_list(raw, _item)
    assert read.value == [1, 3] and read.unreadable is raw and not read.clean


def test_a_clean_list_and_an_absent_one_have_nothing_unreadable():
    assert read_list([1, 2], _item) == Read([1, 2])
    assert read_list(None, _item) == Read([])


def test_a_value_that_is_not_a_list_reads_as_empty_and_is_kept_whole():
    assert read_list({"a": 1}, _item) == Read([], unreadable={"a": 1})


def test_a_repaired_item_marks_the_list_for_parking():
    assert read_list([1, -1], _item).unreadable == [1, -1]


def test_a_trash_entry_without_an_id_is_left_out_and_one_without_a_time_has_expired():
    read = read_trash([{"id": "a", "expiresAt": 5}, {"expiresAt": 5}, {"id": "b", "expiresAt": "soon"}])
    assert [e["id"] for e in read.value] == ["a", "b"]
    assert read.unreadable is not None


# -- rule 2: parking ---------------------------------------------------------------------------


def test_parking_is_named_by_the_value_so_it_never_overwrites_another():
    first, second = parked_key("providers", {"x": 1}), parked_key("providers", {"x": 2})
    assert first.startswith("providersUnreadable_") and len(first) == len("providersUnreadable_") + 12
    assert first == parked_key("providers", {"x": 1})  # parking twice writes the same key
    assert first != second
    assert parked_key("k", {"a": 1, "b": 2}) == parked_key("k", {"b": 2, "a": 1})  # canonical


def test_park_adds_nothing_for_a_clean_read():
    assert park("providers", Read([])) == {} and park("providers", None) == {}
    assert park("providers", Read([], unreadable=7)) == {parked_key("providers", 7): 7}


def test_a_cut_surrogate_pair_is_hashed_not_refused():
    assert len(stored_values.canonical_hash("half a pair \ud83d")) == 64


# -- rule 4: numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 3, 2.0, 1e15])
def test_counts(value):
    assert stored_values.is_count(value)


@pytest.mark.parametrize("value", [-1, 1.5, True, "3", None, float("nan"), float("inf")])
def test_not_counts(value):
    assert not stored_values.is_count(value)


# -- rule 5: depth, as chrome.storage keeps it -------------------------------------------------


def _depth(value):
    depth = 0
    while isinstance(value, (list, dict)) and value:
        value = value[0] if isinstance(value, list) else next(iter(value.values()))
        depth += 1
    return depth, value


def test_the_memory_store_keeps_the_first_100_levels_as_chrome_does():
    # Measured in Chromium: a list 100 deep keeps 100 levels and its leaf becomes null; an object
    # 100 deep loses the leaf's key; 99 levels come back whole.
    deep_list, deep_object = 1, 1
    for _ in range(CHROME_MAX_DEPTH):
        deep_list, deep_object = [deep_list], {"a": deep_object}
    assert _depth(as_chrome_stores(deep_list)) == (100, None)
    assert _depth(as_chrome_stores(deep_object)) == (99, {})
    assert _depth(as_chrome_stores(deep_list[0])) == (99, 1)


def test_a_value_10000_deep_is_stored_cut_and_read_back_without_an_error():
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    area = MemoryStorageArea()
    asyncio.run(area.set({"history": deep}))
    stored = asyncio.run(area.get(["history"]))["history"]
    assert _depth(stored)[0] == CHROME_MAX_DEPTH
    assert history.parse_history(stored).records == []
