"""The options page's settings: providers, the active provider, the UI language, and the size
above which an attached page is summarized.

Rules:
1. Six keys of `margin.storage.keys` (`providers`, `activeProviderId`, `uiLanguage`,
   `summarizeAboveChars`, `runPython`, `codeTimeLimitSeconds`), read by address with their
   defaults through `read_settings`; a stored value that is not valid reads as the default, and
   a save that replaces it parks it first (margin.storage.stored_values, rule 2). They are in
   GET_ALL_KEYS, so `app.state` sees them too, with API keys masked (`mask_key`).
2. `options.save` validates EVERYTHING before writing ANYTHING, then writes the keys in one
   `set` (all or nothing). Invalid input is `invalid_options` with a sentence naming the field.
3. `activeProviderId` always names a saved provider; when it does not (or is absent) the first
   provider the user set up here is active, never one marked `fromBackup` (a backup's provider is
   used only once the user chooses it: a shared file cannot make its endpoint the one a fresh
   profile talks to). No provider to use is `no_provider` when a turn needs one.
4. A storage refusal is the platform's `StorageError` (margin.platform.ports, rule 2), passed on as it is.
5. `supportsUsage: false` (the server refused `stream_options`), `supportsImages: false` (the
   model refused images) and `supportsTools: false` (the server refused tools) are learned by a
   turn and kept across saves of the same provider at the same address.
6. `summarizeAboveChars` is 0 (off) or a whole number of characters from
   `SUMMARIZE_MIN_CHARS` to `SUMMARIZE_MAX_CHARS`; an attachment with more `chars` than that gets
   one summary pass (`should_summarize`, margin.page.summaries).
7. `options.activate` changes only `activeProviderId` (the panel's model menu); the id must name
   a saved provider. Python writes storage, never a page.
8. `provider.models` asks the form's provider for its model list; a failure is a sentence in
   `message` (with `models: []`), never an error, since a typed model name always works.
9. Every read-modify-write of these keys (save, activate, what a turn learns) holds
   `storage.lock_for(local)`, the lock `history` is written under, and a turn reads the options
   under it too: a save that arrived before a turn is what the turn uses.
10. A provider whose API key would go over plain http:// to another machine is refused with
   `key_over_http` unless it carries `allowPlainHttpKey: true` (`margin.providers.plain_http`).
11. `runPython` is "off", "ask" (the default) or "auto" (margin.sandbox.tool_loop rule 1);
   `codeTimeLimitSeconds` a whole number of seconds from TIME_LIMIT_MIN_SECONDS to
   TIME_LIMIT_MAX_SECONDS (default 30), the limit of one code run in the sandbox.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from ..base.errors import MarginError, ProviderError
from ..base.sentences import ENGLISH, Number, say, sentence
from ..i18n import catalogue
from ..platform.ports import Platform
from ..providers import normalize_provider, plain_http, provider_module
from ..storage.keys import (
    ACTIVE_PROVIDER_ID,
    CODE_TIME_LIMIT,
    OPTION_DEFAULTS,
    PROVIDERS,
    RUN_PYTHON_MODE,
    SUMMARIZE_ABOVE_CHARS,
    UI_LANGUAGE,
    default_of,
    lock_for,
)
from ..storage.stored_values import Read, park

OPTION_KEYS = tuple(OPTION_DEFAULTS)
_LANGUAGE_TAG = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
SUMMARIZE_MIN_CHARS = 1_000
SUMMARIZE_MAX_CHARS = 2_000_000
RUN_PYTHON_MODES = ("off", "ask", "auto")  # margin.sandbox.tool_loop.MODES
TIME_LIMIT_MIN_SECONDS = 5
TIME_LIMIT_MAX_SECONDS = 600

NO_PROVIDER = ENGLISH["py_error_no_provider"]


def mask_key(key: Any) -> str:
    """An API key as a page may show it without holding it: "sk-…wxyz", or "" for no key."""
    if not isinstance(key, str) or not key:
        return ""
    if len(key) < 12:
        return "•" * 8
    return f"{key[:3]}…{key[-4:]}"


def read_settings(stored: dict[str, Any]) -> dict[str, Read]:
    """Each option key's stored value through its reader (margin.storage.stored_values, rule 1): an
    absent key is its default; a value that is not valid reads as the default, and `unreadable`
    holds it so the write that replaces it parks it first."""
    reads: dict[str, Read] = {}
    providers = stored.get(PROVIDERS, default_of(PROVIDERS))
    if isinstance(providers, list):
        kept = [p for p in providers if isinstance(p, dict)]
        reads[PROVIDERS] = Read(kept, unreadable=None if len(kept) == len(providers) else providers)
    else:
        reads[PROVIDERS] = Read([], unreadable=providers)
    active_id = stored.get(ACTIVE_PROVIDER_ID)
    reads[ACTIVE_PROVIDER_ID] = (
        Read(active_id)
        if active_id is None or isinstance(active_id, str)
        else Read(None, unreadable=active_id)
    )
    language = stored.get(UI_LANGUAGE, default_of(UI_LANGUAGE))
    if isinstance(language, str) and (language == "auto" or _LANGUAGE_TAG.match(language)):
        reads[UI_LANGUAGE] = Read(language)
    else:
        reads[UI_LANGUAGE] = Read(default_of(UI_LANGUAGE), unreadable=language)
    threshold = stored.get(SUMMARIZE_ABOVE_CHARS, default_of(SUMMARIZE_ABOVE_CHARS))
    if valid_threshold(threshold):
        reads[SUMMARIZE_ABOVE_CHARS] = Read(threshold)
    else:
        reads[SUMMARIZE_ABOVE_CHARS] = Read(default_of(SUMMARIZE_ABOVE_CHARS), unreadable=threshold)
    for key, valid in ((RUN_PYTHON_MODE, valid_run_python), (CODE_TIME_LIMIT, valid_time_limit)):
        value = stored.get(key, default_of(key))
        reads[key] = Read(value) if valid(value) else Read(default_of(key), unreadable=value)
    return reads


async def read_options(platform: Platform) -> dict[str, Any]:
    """The settings, defaults filled in; providers that are not objects are left out."""
    return _values(read_settings(await platform.local.get(list(OPTION_KEYS))))


def _values(reads: dict[str, Read]) -> dict[str, Any]:
    settings = {key: read.value for key, read in reads.items()}
    providers = settings[PROVIDERS]
    if not any(p.get("id") == settings[ACTIVE_PROVIDER_ID] for p in providers):
        own = [p for p in providers if p.get("fromBackup") is not True]  # rule 3
        settings[ACTIVE_PROVIDER_ID] = own[0].get("id") if own else None
    return settings


def valid_threshold(value: Any) -> bool:
    """A `summarizeAboveChars` value Margin accepts: 0 (off) or a size within the bounds."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (value == 0 or SUMMARIZE_MIN_CHARS <= value <= SUMMARIZE_MAX_CHARS)
    )


def valid_run_python(value: Any) -> bool:
    """A `runPython` value (rule 11): "off", "ask" or "auto"."""
    return value in RUN_PYTHON_MODES


def valid_time_limit(value: Any) -> bool:
    """A `codeTimeLimitSeconds` value (rule 11): a whole number of seconds within the bounds."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and TIME_LIMIT_MIN_SECONDS <= value <= TIME_LIMIT_MAX_SECONDS
    )


def valid_language(value: Any) -> bool:
    """A `uiLanguage` value Margin accepts: "auto" or a language tag such as "en" or "zh-CN"."""
    return isinstance(value, str) and (value == "auto" or bool(_LANGUAGE_TAG.match(value)))


def should_summarize(settings: dict[str, Any], chars: Any) -> bool:
    """Rule 6: whether an attachment of `chars` characters gets a summary pass."""
    threshold = settings.get(SUMMARIZE_ABOVE_CHARS)
    return (
        isinstance(threshold, int)
        and threshold > 0
        and isinstance(chars, int)
        and not isinstance(chars, bool)
        and chars > threshold
    )


def model_language(settings: dict[str, Any], browser_language: str = "en") -> str:
    """The language for text the model reads (image placeholders): "auto" follows the browser."""
    language = settings.get(UI_LANGUAGE) or "auto"
    return (browser_language or "en") if language == "auto" else language


async def ensure_spoken(platform: Platform) -> None:
    """Load the user's language for the sentences (margin.i18n.catalogue rule 5), or keep what is
    loaded. It never raises: a sentence in English is better than none."""
    with contextlib.suppress(Exception):
        await catalogue.ensure(
            platform, model_language(await read_options(platform), platform.browser_language)
        )


def active_provider_of(settings: dict[str, Any]) -> dict[str, Any]:
    providers = settings[PROVIDERS]
    if not providers:
        raise MarginError.said("no_provider", "py_error_no_provider")
    chosen = next((p for p in providers if p.get("id") == settings[ACTIVE_PROVIDER_ID]), None)
    if chosen is None:
        chosen = next((p for p in providers if p.get("fromBackup") is not True), None)
    if chosen is None:
        raise MarginError.said("no_provider", "py_error_choose_imported_provider")
    return normalize_provider(chosen)


async def active_provider(platform: Platform) -> dict[str, Any]:
    return active_provider_of(await read_options(platform))


async def mark_usage_unsupported(platform: Platform, provider_id: str) -> None:
    """Remember that this provider refuses `stream_options` (so later turns do not ask)."""
    await _mark_unsupported(platform, provider_id, "supportsUsage")


async def mark_images_unsupported(platform: Platform, provider_id: str) -> None:
    """Remember that this provider's model refuses images (later turns send placeholders)."""
    await _mark_unsupported(platform, provider_id, "supportsImages")


async def mark_tools_unsupported(platform: Platform, provider_id: str) -> None:
    """Remember that this provider refuses tools (later turns offer none: margin.sandbox.tool_loop rule 7)."""
    await _mark_unsupported(platform, provider_id, "supportsTools")


async def _mark_unsupported(platform: Platform, provider_id: str, flag: str) -> None:
    async with lock_for(platform.local):  # rule 9
        await _mark_unsupported_locked(platform, provider_id, flag)


async def _mark_unsupported_locked(platform: Platform, provider_id: str, flag: str) -> None:
    stored = await platform.local.get([PROVIDERS])
    providers = stored.get(PROVIDERS)
    if not isinstance(providers, list):
        return
    changed = False
    updated = []
    for provider in providers:
        if (
            isinstance(provider, dict)
            and provider.get("id") == provider_id
            and provider.get(flag) is not False
        ):
            provider = {**provider, flag: False}
            changed = True
        updated.append(provider)
    if changed:
        await platform.local.set({PROVIDERS: updated})


# -- handlers -------------------------------------------------------------------------------


async def handle_get(platform: Platform, payload: dict) -> dict[str, Any]:
    """`options.get`: the settings, API keys included (the options page shows them masked in a field)."""
    return await read_options(platform)


async def handle_save(platform: Platform, payload: dict) -> dict[str, Any]:
    """`options.save`: validate all, then write all in one `set`; returns the saved, normalized value."""
    # Rule 9: the lock comes before any await (margin.app.worker rule 6: a turn that arrived after this
    # save must not take the lock first and read the providers from before it).
    async with lock_for(platform.local):
        await ensure_spoken(platform)  # a provider saved without a name is named in these words
        return await _save_locked(platform, payload)


async def save_while_locked(platform: Platform, payload: dict) -> dict[str, Any]:
    """`options.save` for a caller that holds `lock_for(local)` already: margin.sync.settings
    saves the settings that came from another machine through the same checks."""
    await ensure_spoken(platform)
    return await _save_locked(platform, payload)


async def _save_locked(platform: Platform, payload: dict) -> dict[str, Any]:
    raw_providers = payload.get("providers")
    if not isinstance(raw_providers, list):
        raise MarginError.said("invalid_options", "py_error_providers_missing")
    providers = [normalize_provider(p, i) for i, p in enumerate(raw_providers)]
    seen: set[str] = set()
    for provider in providers:
        if provider["id"] in seen:
            raise MarginError.said("invalid_options", "py_error_provider_ids_repeat", provider["id"])
        seen.add(provider["id"])
    for index, provider in enumerate(providers):
        exposed = plain_http.key_exposed(provider)
        if exposed is not None:
            named = sentence(
                "py_error_provider_named", sentence("py_error_provider_n", index + 1), provider["name"]
            )
            raise plain_http.refused_at_save(named, exposed)

    active_id = payload.get("activeProviderId")
    if active_id is None or active_id == "":
        active_id = providers[0]["id"] if providers else None
    elif not any(p["id"] == active_id for p in providers):
        raise MarginError.said("invalid_options", "py_error_active_provider_missing")

    items: dict[str, Any] = {PROVIDERS: providers, ACTIVE_PROVIDER_ID: active_id}
    if "uiLanguage" in payload:
        language = payload["uiLanguage"]
        if not isinstance(language, str) or not (language == "auto" or _LANGUAGE_TAG.match(language)):
            raise MarginError.said("invalid_options", "py_error_language_setting")
        items[UI_LANGUAGE] = language
    if SUMMARIZE_ABOVE_CHARS in payload:
        threshold = payload[SUMMARIZE_ABOVE_CHARS]
        if not valid_threshold(threshold):
            raise MarginError.said(
                "invalid_options",
                "py_error_summarize_setting",
                Number(SUMMARIZE_MIN_CHARS),
                Number(SUMMARIZE_MAX_CHARS),
            )
        items[SUMMARIZE_ABOVE_CHARS] = threshold
    if RUN_PYTHON_MODE in payload:
        if not valid_run_python(payload[RUN_PYTHON_MODE]):
            raise MarginError.said("invalid_options", "py_error_run_python_setting")
        items[RUN_PYTHON_MODE] = payload[RUN_PYTHON_MODE]
    if CODE_TIME_LIMIT in payload:
        if not valid_time_limit(payload[CODE_TIME_LIMIT]):
            raise MarginError.said(
                "invalid_options",
                "py_error_time_limit_setting",
                TIME_LIMIT_MIN_SECONDS,
                TIME_LIMIT_MAX_SECONDS,
            )
        items[CODE_TIME_LIMIT] = payload[CODE_TIME_LIMIT]

    reads = read_settings(await platform.local.get(list(OPTION_KEYS)))
    before = _values(reads)
    _keep_learned_usage(providers, before[PROVIDERS])
    # What was stored unreadable under a key this save replaces is parked in the same write.
    parked = {k: v for key in items for k, v in park(key, reads[key]).items()}
    await platform.local.set({**items, **parked})  # a refusal: the StorageError, sent as it is
    return {
        PROVIDERS: providers,
        ACTIVE_PROVIDER_ID: active_id,
        UI_LANGUAGE: items.get(UI_LANGUAGE, before[UI_LANGUAGE]),
        SUMMARIZE_ABOVE_CHARS: items.get(SUMMARIZE_ABOVE_CHARS, before[SUMMARIZE_ABOVE_CHARS]),
        RUN_PYTHON_MODE: items.get(RUN_PYTHON_MODE, before[RUN_PYTHON_MODE]),
        CODE_TIME_LIMIT: items.get(CODE_TIME_LIMIT, before[CODE_TIME_LIMIT]),
    }


def _keep_learned_usage(providers: list[dict[str, Any]], stored: list[dict[str, Any]]) -> None:
    for flag in ("supportsUsage", "supportsImages", "supportsTools"):
        learned = {p.get("id"): p.get("baseUrl") for p in stored if p.get(flag) is False}
        for provider in providers:
            if provider["id"] in learned and learned[provider["id"]] == provider["baseUrl"]:
                provider[flag] = False


async def handle_test(platform: Platform, payload: dict) -> dict[str, Any]:
    """`provider.test`: `{ok, message}`; an incomplete form is a sentence too, not an error."""
    await ensure_spoken(platform)  # its sentences are in the user's language
    try:
        provider = normalize_provider(payload.get("provider"))
    except MarginError as error:
        return {"ok": False, "message": error.in_language()}
    return await provider_module(provider["type"]).test_connection(platform, provider)


async def handle_activate(platform: Platform, payload: dict) -> dict[str, Any]:
    """`options.activate {id}`: make a saved provider the active one (rule 7)."""
    provider_id = payload.get("id")
    async with lock_for(platform.local):  # rule 9
        reads = read_settings(await platform.local.get(list(OPTION_KEYS)))
        settings = _values(reads)
        chosen = next((p for p in settings[PROVIDERS] if p.get("id") == provider_id), None)
        if not isinstance(provider_id, str) or chosen is None:
            raise MarginError.said("invalid_options", "py_error_provider_gone")
        await platform.local.set(
            {ACTIVE_PROVIDER_ID: provider_id, **park(ACTIVE_PROVIDER_ID, reads[ACTIVE_PROVIDER_ID])}
        )
    return {ACTIVE_PROVIDER_ID: provider_id, "name": chosen.get("name", ""), "model": chosen.get("model", "")}


LIST_PLACEHOLDER_MODEL = "model-list"  # normalize_provider needs a model; the list does not


async def handle_models(platform: Platform, payload: dict) -> dict[str, Any]:
    """`provider.models {provider}`: `{models: [ids]}`, or `{models: [], message}` (rule 8)."""
    raw = payload.get("provider")
    if isinstance(raw, dict) and not str(raw.get("model") or "").strip():
        raw = {**raw, "model": LIST_PLACEHOLDER_MODEL}
    await ensure_spoken(platform)
    try:
        provider = normalize_provider(raw)
    except MarginError as error:
        return {"models": [], "message": error.in_language()}
    module = provider_module(provider["type"])
    list_models = getattr(module, "list_models", None)
    if list_models is None:
        return {"models": [], "message": say(sentence("py_notice_no_model_list"))}
    try:
        models = await list_models(platform, provider)
    except ProviderError as error:
        reason = sentence("py_notice_models_not_offered") if error.code == "not_found" else error.sentence
        said = say(sentence("py_notice_type_the_model", reason)) if reason else error.message
        return {"models": [], "message": said}
    if not models:
        return {"models": [], "message": say(sentence("py_notice_no_models"))}
    return {"models": models}
