"""Reading what a provider sends as JSON: one safe decode, and typed access that says what was wrong.

A provider's reply is untrusted input: a stream event, a success body, an error body, a model
list. Python's `json.loads` fails on hostile JSON in ways that are not `ValueError` (deep nesting
is a `RecursionError`) or quietly accepts what is not JSON (`NaN`, `1e999` as infinity), and a
parser that indexes an unexpected shape fails with `TypeError`: each would reach the user as
"internal". This module turns each into a sentence that names the provider and the problem.

Rules:
1. `decode(text, source)` is the strict decode for replies that must be JSON (stream events,
   success bodies, model lists). Text that is not JSON at all raises `NotJSON` (a `ValueError`),
   so each protocol keeps its own "not a stream of this API" sentence. JSON nested deeper than
   `MAX_DEPTH` and an integer longer than Python reads (its int max str digits) raise
   ProviderError "provider_bad_reply". A non-finite number (`NaN`, `Infinity`, `1e999`) reads as
   null: only counts (usage) are numbers, and a garbage count must not cost the answer
   (`margin.providers.usage` then leaves that count out).
2. `decode_or_none(text)` is the lenient decode for error bodies: whatever fails is None, so the
   HTTP status still decides the error (an HTML 502 page is still "provider_down").
3. `member(value, key, kinds, source, path)` reads one field of a JSON object: None when absent or
   null, the value when it has one of `kinds`, else ProviderError "provider_bad_reply" saying
   which field had which type ("“choices” is a number, not a list"). `item_of` does the same for
   a value that must itself be an object. A bool is never a number here.
4. The nesting check is linear and cheap: only text with more than `MAX_DEPTH` brackets is
   scanned, after its strings are removed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import ProviderError
from .sentences import Sentence, sentence

MAX_DEPTH = 128
CODE = "provider_bad_reply"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_KIND_NAMES = {
    dict: "py_error_kind_object",
    list: "py_error_kind_list",
    str: "py_error_kind_text",
    int: "py_error_kind_number",
    float: "py_error_kind_number",
    bool: "py_error_kind_bool",
    type(None): "py_error_kind_null",
}


Kinds = type | tuple[type, ...]
# Who sent the reply ("The server at example.com": a py_error_source_* sentence); "" when unnamed.
Source = Sentence | str


class NotJSON(ValueError):
    """Rule 1: the text is not JSON at all."""


def bad_reply(source: Source, problem: Sentence) -> ProviderError:
    """The error for a reply Margin cannot read; `source` names the provider, `problem` the fault."""
    return ProviderError.said(CODE, "py_error_bad_reply", source, problem)


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Rule 4: whether `text` nests arrays or objects more than `limit` levels deep."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for bracket in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        depth = depth + 1 if bracket in "[{" else depth - 1
        if depth > limit:
            return True
    return False


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _no_constant(name: str) -> None:
    return None


def decode(text: str, source: Source) -> Any:
    """Rule 1."""
    if too_deep(text):
        raise bad_reply(source, sentence("py_error_reply_nested_over", MAX_DEPTH))
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError:
        raise NotJSON(text) from None
    except RecursionError:
        raise bad_reply(source, sentence("py_error_reply_nested")) from None
    except ValueError:
        # Not a JSONDecodeError: int() refused a number with too many digits.
        raise bad_reply(source, sentence("py_error_reply_digits")) from None


def decode_or_none(text: str) -> Any:
    """Rule 2."""
    try:
        return decode(text, "")
    except (ValueError, ProviderError):
        return None


def kind_name(value: Any) -> Sentence:
    return sentence(_KIND_NAMES.get(type(value), "py_error_kind_other"))


def _names(kinds: Kinds) -> Sentence:
    wanted = kinds if isinstance(kinds, tuple) else (kinds,)
    names = [
        sentence(key) for key in dict.fromkeys(_KIND_NAMES.get(k, "py_error_kind_other") for k in wanted)
    ]
    either = names[-1]
    for name in reversed(names[:-1]):
        either = sentence("py_error_kind_either", name, either)
    return either


def _is(value: Any, kinds: Kinds) -> bool:
    if isinstance(value, bool):
        return bool in (kinds if isinstance(kinds, tuple) else (kinds,))
    return isinstance(value, kinds)


def member(
    value: dict[str, Any], key: str, kinds: type | tuple[type, ...], source: Source, path: str = ""
) -> Any:
    """Rule 3: `value[key]` if it is of `kinds`, None if absent or null."""
    found = value.get(key)
    if found is None or _is(found, kinds):
        return found
    where = f"{path}.{key}" if path else key
    raise bad_reply(source, sentence("py_error_reply_field", where, kind_name(found), _names(kinds)))


def item_of(value: Any, source: Source, path: str) -> dict[str, Any]:
    """Rule 3: `value` must be a JSON object."""
    if isinstance(value, dict):
        return value
    raise bad_reply(source, sentence("py_error_reply_field", path, kind_name(value), _names(dict)))
