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
   sentences of margin.sentences. `ensure_spoken` reads the setting and loads it; it never raises
   (the sentences then stay English).
6. Its own errors (`catalogue_*`) are English: they say the catalogue is missing or unreadable, so
   there is no catalogue to say them from (docs/i18n.md, "What stays English", under "Python's sentences").
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import MarginError
from .ports import CHECKOUT_LOCALES, Platform

LOCALES = ("en", "zh_CN", "ja", "ko", "es", "pt_BR", "ru")

_PLACEHOLDER = re.compile(r"\$([A-Za-z0-9_@]+)\$")
_ARGUMENT = re.compile(r"\$(\d)|\$\$")


def locale_of(language: str) -> str:
    """Rule 1."""
    text = str(language or "").replace("-", "_").lower()
    for locale in LOCALES:
        if locale.lower() == text:
            return locale
    primary = text.split("_")[0]
    return next((locale for locale in LOCALES if locale.split("_")[0].lower() == primary), "en")


def render(entry: dict[str, Any], subs: tuple[str, ...]) -> str:
    """Rule 3: Chrome's substitution of one messages.json entry."""
    contents = {
        name.lower(): str(value.get("content", ""))
        for name, value in (entry.get("placeholders") or {}).items()
        if isinstance(value, dict)
    }
    expanded = _PLACEHOLDER.sub(lambda m: contents.get(m.group(1).lower(), ""), str(entry["message"]))
    return substitute(expanded, subs)


def substitute(text: str, subs: tuple[str, ...]) -> str:
    """`$1`..`$9` the arguments, `$$` a dollar sign (the second half of rule 3)."""

    def argument(match: re.Match[str]) -> str:
        digit = match.group(1)
        if digit is None:
            return "$"
        index = int(digit) - 1
        return subs[index] if 0 <= index < len(subs) else ""

    return _ARGUMENT.sub(argument, text)


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


async def ensure_spoken(platform: Platform) -> None:
    """Rule 5: load the user's language for the sentences, or keep what is loaded."""
    from .options import model_language, read_options  # here: margin.options imports margin.errors

    with contextlib.suppress(Exception):  # a sentence in English is better than none
        await ensure(platform, model_language(await read_options(platform), platform.browser_language))
