"""Sentences: what Python tells the user (errors, notices) in the user's language, from the
catalogue (docs/i18n.md, "Python's sentences").

Rules:
1. A `Sentence` is a catalogue key (`py_error_*`, `py_notice_*`; also the other words Python
   writes for the user: the Markdown export's `py_export_*`, the names it makes) and its
   arguments; an argument may itself be a Sentence (a tail such as "The provider said: …"), said
   in the same language.
2. `ENGLISH` (margin.base.sentences_english) holds each key's English template (`$1`..`$9` the
   arguments): the fallback when no catalogue is loaded, so a sentence never fails to be said.
   The English catalogue says exactly the same bytes (tests/unit/test_i18n_sentences.py).
3. `say(sentence)` renders in the user's language: the language the worker last loaded through
   `catalogue.ensure` (the user's setting, `options.model_language`), when its catalogue is loaded;
   else English. It never loads a file and never raises: a missing or unreadable catalogue, or a
   key an older catalogue lacks, says the English.
4. A count the user reads is a `Number` argument: its digits are grouped the way the language
   groups them (the catalogue's `py_number_group`: "20,000", "20 000"), never spelled in a message.
5. A sentence about a count is a `Plural` (`plural(key, count, ...)`): the catalogue has one key
   per plural form, `<key>__<form>` (docs/i18n.md, "Plurals"), and the count is its `$1`. The form
   is the one the language has for the count, told from the forms it has: `__few` means the
   Russian rule (one, few, many), `__one` "one" for 1, else `__other` (Chinese, Japanese, Korean).
   That is what `Intl.PluralRules` picks for the seven languages and any count from 1; a missing
   form is `__other`, as in extension/i18n.js.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .sentences_english import ENGLISH

_PLACEHOLDER = re.compile(r"\$([A-Za-z0-9_@]+)\$")
_ARGUMENT = re.compile(r"\$(\d)|\$\$")

Argument = Any  # str | int | Sentence | Number


@dataclass(frozen=True)
class Sentence:
    key: str
    args: tuple[Argument, ...] = ()

    def english(self) -> str:
        return _render(self, {}, {})

    def said_in(self, messages: dict[str, Any], fallback: dict[str, Any]) -> str:
        return _render(self, messages, fallback)


@dataclass(frozen=True)
class Number:
    """Rule 4."""

    value: int

    def said_in(self, messages: dict[str, Any], fallback: dict[str, Any]) -> str:
        entry = _entry(sentence("py_number_group"), messages, fallback)
        group = entry["message"] if entry is not None else ","
        return f"{self.value:,}".replace(",", group)


@dataclass(frozen=True)
class Plural(Sentence):
    """Rule 5."""

    count: int = 0


def sentence(key: str, *args: Argument) -> Sentence:
    return Sentence(key, args)


def plural(key: str, count: int, *args: Argument) -> Plural:
    """Rule 5: the sentence `key` about `count` (its `$1`, grouped), then `args`."""
    return Plural(key, (Number(count), *args), count)


def _form(count: int, forms: set[str]) -> str:
    if "few" in forms:
        if count % 10 == 1 and count % 100 != 11:
            return "one"
        if 2 <= count % 10 <= 4 and not 12 <= count % 100 <= 14:
            return "few"
        return "many"
    return "one" if "one" in forms and count == 1 else "other"


def _key_in(s: Sentence, table: dict[str, Any]) -> str:
    """The key of `s` in `table`: itself, or a Plural's form there (rule 5)."""
    if not isinstance(s, Plural):
        return s.key
    prefix = f"{s.key}__"
    forms = {key[len(prefix) :] for key in table if key.startswith(prefix)}
    form = _form(s.count, forms)
    return f"{prefix}{form if form in forms else 'other'}"


def _entry(s: Sentence, messages: dict[str, Any], fallback: dict[str, Any]) -> dict[str, Any] | None:
    for table in (messages, fallback):
        entry = table.get(_key_in(s, table))
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            return entry
    return None


def render(entry: dict[str, Any], subs: tuple[str, ...]) -> str:
    """Chrome's substitution of one messages.json entry (margin.i18n.catalogue, rule 3)."""
    contents = {
        name.lower(): str(value.get("content", ""))
        for name, value in (entry.get("placeholders") or {}).items()
        if isinstance(value, dict)
    }
    expanded = _PLACEHOLDER.sub(lambda m: contents.get(m.group(1).lower(), ""), str(entry["message"]))
    return substitute(expanded, subs)


def substitute(text: str, subs: tuple[str, ...]) -> str:
    """`$1`..`$9` the arguments, `$$` a dollar sign (the second half of catalogue rule 3)."""

    def argument(match: re.Match[str]) -> str:
        digit = match.group(1)
        if digit is None:
            return "$"
        index = int(digit) - 1
        return subs[index] if 0 <= index < len(subs) else ""

    return _ARGUMENT.sub(argument, text)


def _render(s: Sentence, messages: dict[str, Any], fallback: dict[str, Any]) -> str:
    subs = tuple(
        a.said_in(messages, fallback) if isinstance(a, Sentence | Number) else str(a) for a in s.args
    )
    entry = _entry(s, messages, fallback)
    return render(entry, subs) if entry is not None else substitute(ENGLISH[_key_in(s, ENGLISH)], subs)


def _nothing_loaded() -> tuple[dict[str, Any], dict[str, Any]]:
    return {}, {}


# Where `say` finds the user's messages: margin.i18n.catalogue installs its `spoken_messages` here
# when it is imported (it sits above this module and loads the files); before that, English.
_spoken_messages: Callable[[], tuple[dict[str, Any], dict[str, Any]]] = _nothing_loaded


def speak_with(spoken_messages: Callable[[], tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Rule 3: the catalogue hands over how to find (the user's messages, English's)."""
    global _spoken_messages
    _spoken_messages = spoken_messages


def say(s: Sentence) -> str:
    """Rule 3."""
    return s.said_in(*_spoken_messages())
