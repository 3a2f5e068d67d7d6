"""The catalogue: the words Margin writes into requests and notices, from the extension's own
`_locales/<locale>/messages.json` (docs/i18n.md): the same files the pages read, not a copy.

Rules:
1. A language is resolved to one of LOCALES by `locale_of`, the rule extension/i18n.js `localeOf`
   follows: the exact locale ("pt-BR" -> pt_BR), else the first with its language ("zh-TW" ->
   zh_CN, "ja-JP" -> ja), else English.
2. `words(language)` answers synchronously from catalogues already loaded. In the worker they are
   loaded by `await ensure(platform, language)` (the platform reads the file from the extension
   through the bridge); every entry point that writes words (a turn, Attach page, Explain) calls
   it first, and it loads English too, the fallback of a key a locale lacks. Under CPython the
   files are read from the checkout (extension/_locales) when nothing is loaded.
3. `Words.text(key, *subs)` substitutes the way Chrome does: each `$name$` becomes its
   placeholder's content, then `$1`..`$9` the arguments, `$$` a dollar sign. A key missing
   everywhere is `catalogue_missing_key`, never a silent empty string.
4. Numbers in notes are grouped with the locale's `py_number_group` ("20,000", "20 000").
5. The user's language is the one `ensure` last loaded (every caller passes the setting,
   `options.model_language`); `spoken_messages` gives its messages, loaded ones only, for the
   sentences of margin.base.sentences (installed there when this module is imported).
   `margin.settings.options.ensure_spoken` reads the setting and loads it; it never raises (the
   sentences then stay English).
6. Its own errors (`catalogue_*`) are English: they say the catalogue is missing or unreadable, so
   there is no catalogue to say them from (docs/i18n.md, "What stays English", under "Python's sentences").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..base import sentences
from ..base.errors import MarginError
from ..base.sentences import render as render  # rule 3 (Chrome's substitution), with the sentences
from ..base.sentences import substitute as substitute
from ..platform.ports import CHECKOUT_LOCALES, Platform

LOCALES = ("en", "zh_CN", "ja", "ko", "es", "pt_BR", "ru")


def locale_of(language: str) -> str:
    """Rule 1."""
    text = str(language or "").replace("-", "_").lower()
    for locale in LOCALES:
        if locale.lower() == text:
            return locale
    primary = text.split("_")[0]
    return next((locale for locale in LOCALES if locale.split("_")[0].lower() == primary), "en")


@dataclass(frozen=True)
class Words:
    """One locale's messages, with English behind them."""

    locale: str
    messages: dict[str, Any]
    fallback: dict[str, Any]

    def text(self, key: str, *subs: object) -> str:
        entry = self.messages.get(key) or self.fallback.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("message"), str):
            raise MarginError(
                "catalogue_missing_key",
                f"Margin's catalogue has no message “{key}”: the extension is incomplete. Reinstall it.",
            )
        return render(entry, tuple(str(s) for s in subs))

    def number(self, value: int) -> str:
        """Rule 4."""
        return f"{value:,}".replace(",", self.text("py_number_group"))


_loaded: dict[str, dict[str, Any]] = {}
_spoken = "en"


def parse(locale: str, text: str) -> dict[str, Any]:
    try:
        messages = json.loads(text)
    except ValueError as error:
        raise MarginError(
            "catalogue_unreadable", f"Margin's {locale} messages are not valid JSON ({error}). Reinstall it."
        ) from error
    if not isinstance(messages, dict):
        raise MarginError(
            "catalogue_unreadable", f"Margin's {locale} messages are not an object. Reinstall it."
        )
    return messages


def install(locale: str, text: str) -> None:
    """A catalogue read by someone else (the bridge, a test) made available to `words`."""
    _loaded[locale] = parse(locale, text)


def _from_checkout(locale: str) -> bool:
    path = CHECKOUT_LOCALES / locale / "messages.json"
    if not path.is_file():
        return False
    install(locale, path.read_text(encoding="utf-8"))
    return True


def _messages(locale: str) -> dict[str, Any]:
    if locale not in _loaded and not _from_checkout(locale):
        raise MarginError(
            "catalogue_not_loaded",
            f"Margin's {locale} messages were not loaded before they were needed. Try again.",
        )
    return _loaded[locale]


def words(language: str = "en") -> Words:
    """Rule 2: the words of `language` (a tag such as "zh-CN", or a locale such as "zh_CN")."""
    locale = locale_of(language)
    return Words(locale, _messages(locale), _messages("en"))


async def ensure(platform: Platform, language: str) -> Words:
    """Rule 2: load `language`'s catalogue (and English) through the platform, once each."""
    global _spoken
    for locale in dict.fromkeys(("en", locale_of(language))):
        if locale not in _loaded:
            install(locale, await platform.read_catalogue(locale))
    _spoken = locale_of(language)
    return words(language)


def spoken_messages() -> tuple[dict[str, Any], dict[str, Any]]:
    """Rule 5: (the user's messages, English's), each empty when it is not loaded."""
    return _loaded.get(_spoken, {}), _loaded.get("en", {})


# Rule 5: margin.base.sentences says its sentences with the messages loaded here.
sentences.speak_with(spoken_messages)
