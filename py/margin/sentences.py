"""Sentences: what Python tells the user (errors, notices) in the user's language, from the
catalogue (docs/i18n.md, "Python's sentences").

Rules:
1. A `Sentence` is a catalogue key (`py_error_*`, `py_notice_*`) and its arguments; an argument
   may itself be a Sentence (a tail such as "The provider said: …"), said in the same language.
2. `ENGLISH` (margin.sentences_english) holds each key's English template (`$1`..`$9` the
   arguments): the fallback when no catalogue is loaded, so a sentence never fails to be said.
   The English catalogue says exactly the same bytes (tests/unit/test_i18n_sentences.py).
3. `say(sentence)` renders in the user's language: the language the worker last loaded through
   `catalogue.ensure` (the user's setting, `options.model_language`), when its catalogue is loaded;
   else English. It never loads a file and never raises: a missing or unreadable catalogue, or a
   key an older catalogue lacks, says the English.
4. A count the user reads is a `Number` argument: its digits are grouped the way the language
   groups them (the catalogue's `py_number_group`: "20,000", "20 000"), never spelled in a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .sentences_english import ENGLISH

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
        entry = _entry("py_number_group", messages, fallback)
        group = entry["message"] if entry is not None else ","
        return f"{self.value:,}".replace(",", group)


def sentence(key: str, *args: Argument) -> Sentence:
    return Sentence(key, args)


def _entry(key: str, messages: dict[str, Any], fallback: dict[str, Any]) -> dict[str, Any] | None:
    for table in (messages, fallback):
        entry = table.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            return entry
    return None


def _render(s: Sentence, messages: dict[str, Any], fallback: dict[str, Any]) -> str:
    from .catalogue import (
        render,
        substitute,
    )  # here: margin.catalogue imports margin.errors, which imports this

    subs = tuple(
        a.said_in(messages, fallback) if isinstance(a, Sentence | Number) else str(a) for a in s.args
    )
    entry = _entry(s.key, messages, fallback)
    return render(entry, subs) if entry is not None else substitute(ENGLISH[s.key], subs)


def say(s: Sentence) -> str:
    """Rule 3."""
    from . import catalogue

    return s.said_in(*catalogue.spoken_messages())
