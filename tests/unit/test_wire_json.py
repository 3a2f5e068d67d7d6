"""Provider JSON read safely (margin.base.wire_json): hostile JSON and wrong shapes get a sentence that
names the provider and the fault, never a RecursionError, ValueError or TypeError ("internal")."""

import pytest

from margin.base.errors import ProviderError
from margin.base.wire_json import MAX_DEPTH, NotJSON, decode, decode_or_none, item_of, member, too_deep

SOURCE = "The server at example.test"


def bad(call, *args):
    with pytest.raises(ProviderError) as caught:
        call(*args)
    assert caught.value.code == "provider_bad_reply"
    assert caught.value.message.startswith(f"{SOURCE} sent a reply Margin cannot read: ")
    return caught.value.message


def test_ordinary_json_decodes():
    assert decode('{"a": [1, 2.5, "x", null, true]}', SOURCE) == {"a": [1, 2.5, "x", None, True]}


def test_text_that_is_not_json_is_not_json():
    for text in ("", "<html>", "{not json", "data: x", '{"a": 1'):
        with pytest.raises(NotJSON):
            decode(text, SOURCE)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000, 200_000])
def test_deep_nesting_is_refused_before_python_recurses(depth):
    message = bad(decode, "[" * depth + "]" * depth, SOURCE)
    assert f"nested more than {MAX_DEPTH} levels deep" in message
    bad(decode, '{"a":' * depth + "1" + "}" * depth, SOURCE)


def test_nesting_at_the_limit_and_brackets_inside_strings_are_fine():
    assert decode("[" * MAX_DEPTH + "]" * MAX_DEPTH, SOURCE) is not None
    text = '{"text": "' + "[[[{{{" * 1000 + '"}'
    assert not too_deep(text)
    assert decode(text, SOURCE) == {"text": "[[[{{{" * 1000}
    assert too_deep('{"a": "\\"' + '", "b": ' + "[" * 200 + "]" * 200 + "}")


def test_a_number_with_too_many_digits_is_a_bad_reply():
    message = bad(decode, '{"usage": {"prompt_tokens": ' + "9" * 5000 + "}}", SOURCE)
    assert "a number with too many digits" in message


def test_a_non_finite_number_reads_as_null():
    assert decode('{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e999, "e": 1.5}', SOURCE) == {
        "a": None,
        "b": None,
        "c": None,
        "d": None,
        "e": 1.5,
    }


def test_the_lenient_decode_gives_none_for_everything_unreadable():
    for text in ("<html>502</html>", "[" * 10_000, "1" * 5000, "", "{"):
        assert decode_or_none(text) is None
    assert decode_or_none('{"error": {"message": "x"}}') == {"error": {"message": "x"}}


def test_member_names_the_field_and_both_types():
    assert member({"choices": []}, "choices", list, SOURCE) == []
    assert member({}, "choices", list, SOURCE) is None
    assert member({"choices": None}, "choices", list, SOURCE) is None
    assert "“choices” is a number, not a list" in bad(member, {"choices": 5}, "choices", list, SOURCE)
    assert "“choices[].delta” is a list, not an object" in bad(
        member, {"delta": []}, "delta", dict, SOURCE, "choices[]"
    )
    assert "“content” is a number, not text" in bad(member, {"content": 7}, "content", str, SOURCE)


def test_a_bool_is_not_a_number_and_item_of_wants_an_object():
    assert "is true or false, not a number" in bad(member, {"n": True}, "n", int, SOURCE)
    assert item_of({"a": 1}, SOURCE, "x") == {"a": 1}
    assert "“choices[0]” is text, not an object" in bad(item_of, "hi", SOURCE, "choices[0]")
