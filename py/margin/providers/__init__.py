"""Model providers: one module per wire protocol, all with the same functions.

Rules:
1. A provider config is plain JSON: `{id, type, name, baseUrl, apiKey, model, systemPrompt}`
   (plus `supportsUsage: false` once a server has refused `stream_options`, and
   `supportsImages: false` once a model has refused images, `margin.providers.image_refusal`;
   `supportsTools: false` once a server has refused the `run_python` tool, `margin.sandbox.tool_loop`; and
   `allowPlainHttpKey: true` when the user confirmed a key over http://, `margin.providers.plain_http`).
   `normalize_provider` is the only gate into storage: it names the first bad field in a plain sentence.
   A provider without a name gets one, "<model> at <host>" (`py_provider_default_name`), in the
   user's language when it is made (the caller loaded it: `options.ensure_spoken`); like any
   name, it keeps those words.
   `systemPrompt` is trimmed text of at most `SYSTEM_PROMPT_MAX_CHARS` (empty = none), sent as
   the provider's own system instruction; it is kept only when not empty. `prices` (optional)
   is `{input?, cachedInput?, output?}` in US dollars per 1 million tokens, each a finite number
   of 0 or more (`margin.providers.usage.clean_prices`); kept only when at least one is given.
2. `PROVIDER_TYPES` maps a `type` to its module, imported on first use (a cold start imports
   only the provider it needs). Every provider module offers the same four functions:
   - `build_chat_request(provider, records, *, stream, include_usage) -> HttpRequest`
   - `async open_stream(transport, provider, records) -> stream` whose `read()` returns the next
     text pieces (a list, maybe empty, per body chunk) or None at the end, and `aclose()`;
     after the end it tells `usage` (`margin.providers.usage`'s `{input, cachedInput, output}` or None),
     `finish_reason`, `usage_unsupported`, `text`;
   - `async test_connection(platform, provider) -> {ok, message}`;
   - `async list_models(platform, provider) -> list[str]`: the model ids the provider offers,
     for the options page's picker (a failure is a `ProviderError` like a turn's).
   `DEFAULT_BASE_URLS` holds each type's usual address, which the options page fills in.
   Adding `anthropic`, `gemini` or `openai-responses` = a sibling module + one line here.
3. Every failure a user can see is a `ProviderError(code, sentence with a next step)`; the
   helpers below are shared by all provider modules so the sentences stay alike. Provider text
   quoted in a sentence is cut to about 200 characters.
4. A context overflow, in any provider's words (`margin.providers.overflow`), is a `ContextOverflowError`:
   code "context_overflow", its `overflow` attribute holding the numbers the provider gave, so a
   turn can shorten the attached pages and retry (`margin.turn.rescue`).
5. A 403 from a local server (localhost, 127.0.0.1, ::1, *.local, or Ollama's port 11434) with
   no API key set, or with an empty or "Forbidden" body, is code "origin_refused": the server's
   CORS check refused the extension's origin (Ollama without `OLLAMA_ORIGINS`); the sentence
   says how to allow it. Any other 401/403 is "bad_key".
6. A redirect (the transport's "redirect" kind: it never follows one) is "redirect_refused",
   naming where it pointed when the platform can tell.
"""

from __future__ import annotations

import importlib
import json
import uuid
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from ..base.errors import MarginError, ProviderError
from ..base.sentences import ENGLISH, Number, Sentence, say, sentence
from ..base.wire_json import decode_or_none, too_deep
from ..platform.ports import TransportError
from .image_refusal import ImagesRefusedError, images_refused_sentence, refuses_images
from .overflow import ContextOverflowError, context_overflow, too_long_for
from .usage import PriceError, clean_prices

PROVIDER_TYPES: dict[str, dict[str, str]] = {
    "openai": {
        "module": "margin.providers.openai",
        "label": "OpenAI-compatible",
    },
    "anthropic": {"module": "margin.providers.anthropic", "label": "Anthropic (Claude)"},
    "gemini": {"module": "margin.providers.gemini", "label": "Google Gemini"},
    "openai-responses": {
        "module": "margin.providers.responses",
        "label": "OpenAI Responses (agent)",
    },
}

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta",
    "openai-responses": "https://api.openai.com/v1",
}

PROVIDER_FIELDS = (
    "id",
    "type",
    "name",
    "baseUrl",
    "apiKey",
    "model",
    "systemPrompt",
    "prices",
    "supportsUsage",
    "supportsImages",
    "supportsTools",
    "allowPlainHttpKey",
)
SYSTEM_PROMPT_MAX_CHARS = 20_000
QUOTE_LIMIT = 200


def part_text(part: dict[str, Any]) -> str:
    """A text part's text, or "" when it is only blanks (an API refuses an empty text block)."""
    text = str(part.get("text", ""))
    return text if text.strip() else ""


def provider_types_for_js() -> list[dict[str, str]]:
    """`[{type, label, defaultBaseUrl}]` for the options page's "Provider type" list."""
    return [
        {"type": name, "label": entry["label"], "defaultBaseUrl": DEFAULT_BASE_URLS.get(name, "")}
        for name, entry in PROVIDER_TYPES.items()
    ]


def provider_module(provider_type: str) -> ModuleType:
    entry = PROVIDER_TYPES.get(provider_type)
    if entry is None:
        raise MarginError.said(
            "invalid_options", "py_error_provider_type_unknown", provider_type, ", ".join(PROVIDER_TYPES)
        )
    return importlib.import_module(entry["module"])


def normalize_usage(raw: Any, provider_type: str) -> dict[str, int] | None:
    """A provider's usage object in the one shape of margin.providers.usage (its rule 2), read by
    the module of `provider_type`."""
    return provider_module(provider_type).normalize_usage(raw)


# -- validation -----------------------------------------------------------------------------


def normalize_provider(value: Any, position: int | None = None) -> dict[str, Any]:
    """A clean provider config, or MarginError("invalid_options") naming the bad field."""
    where = (
        sentence("py_error_the_provider")
        if position is None
        else sentence("py_error_provider_n", position + 1)
    )
    if not isinstance(value, dict):
        raise MarginError.said("invalid_options", "py_error_field_not_settings", where)
    name = value.get("name")
    if isinstance(name, str) and name.strip():
        where = sentence("py_error_provider_named", where, _cut(name.strip(), 60))

    def bad(problem: Sentence) -> MarginError:
        return MarginError.said("invalid_options", "py_error_provider_field", where, problem)

    provider_type = value.get("type", "openai")
    if provider_type not in PROVIDER_TYPES:
        raise bad(sentence("py_error_field_type", provider_type, ", ".join(PROVIDER_TYPES)))

    base_url = value.get("baseUrl")
    if not isinstance(base_url, str) or not base_url.strip():
        raise bad(sentence("py_error_field_base_url_empty"))
    base_url = normalize_base_url(base_url)
    try:
        parts = urlsplit(base_url)
        scheme, hostname = parts.scheme, parts.hostname
    except ValueError:  # "http://[::1" and the like: an address no request could go to
        raise bad(sentence("py_error_field_base_url_not_address")) from None
    if scheme not in ("http", "https") or not hostname:
        raise bad(sentence("py_error_field_base_url_scheme"))

    model = value.get("model")
    if not isinstance(model, str) or not model.strip():
        raise bad(sentence("py_error_field_model_empty"))

    def optional_text(key: str, problem: str) -> str:
        found = value.get(key, "")
        if found is None:
            return ""
        if not isinstance(found, str):
            raise bad(sentence(problem))
        return found

    api_key = optional_text("apiKey", "py_error_field_key_not_text")

    provider_id = value.get("id")
    if provider_id is None or provider_id == "":
        provider_id = uuid.uuid4().hex[:12]
    if not isinstance(provider_id, str):
        raise bad(sentence("py_error_field_id_not_text"))

    if name is None or (isinstance(name, str) and not name.strip()):
        name = say(sentence("py_provider_default_name", model.strip(), hostname))
    if not isinstance(name, str):
        raise bad(sentence("py_error_field_name_not_text"))

    system_prompt = optional_text("systemPrompt", "py_error_field_prompt_not_text").strip()
    if len(system_prompt) > SYSTEM_PROMPT_MAX_CHARS:
        raise bad(
            sentence(
                "py_error_field_prompt_too_long", Number(len(system_prompt)), Number(SYSTEM_PROMPT_MAX_CHARS)
            )
        )

    clean: dict[str, Any] = {
        "id": provider_id,
        "type": provider_type,
        "name": name.strip(),
        "baseUrl": base_url,
        # Keys pasted from a page often carry a newline or spaces.
        "apiKey": api_key.strip(),
        "model": model.strip(),
    }
    if system_prompt:
        clean["systemPrompt"] = system_prompt
    try:
        prices = clean_prices(value.get("prices"))
    except PriceError as error:
        raise bad(error.problem) from None
    if prices:
        clean["prices"] = prices
    if value.get("supportsUsage") is False:
        clean["supportsUsage"] = False
    if value.get("fromBackup") is True:
        clean["fromBackup"] = True  # margin.settings.options rule 3: used only once the user chooses it
    if value.get("supportsImages") is False:
        clean["supportsImages"] = False
    if value.get("supportsTools") is False:  # margin.sandbox.tool_loop rule 7
        clean["supportsTools"] = False
    if value.get("allowPlainHttpKey") is True:  # margin.providers.plain_http, rule 2
        clean["allowPlainHttpKey"] = True
    return clean


def normalize_base_url(base_url: str) -> str:
    """Trailing slashes and a pasted "/chat/completions" are tolerated."""
    url = base_url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")].rstrip("/")
    return url


def host_of(url: str) -> str:
    parts = urlsplit(url)
    if not parts.hostname:
        return url
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


# -- errors shared by every provider --------------------------------------------------------


def _cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def quote(text: str) -> str:
    return f"“{_cut(text)}”"


def extract_error_message(body: str) -> str | None:
    """The provider's own error message from a body, in any of the usual shapes.

    OpenAI / llama.cpp / Groq / OpenRouter: {"error": {"message": ...}}; Ollama: {"error": "..."};
    vLLM: {"message": ...}; FastAPI-style servers: {"detail": ...}; Gemini: [{"error": {...}}].
    A short plain-text body (not HTML) is its own message.
    """
    text = (body or "").strip()
    if not text:
        return None
    value = decode_or_none(text)
    if value is None and text != "null":
        if text.startswith("<") or too_deep(text):
            return None
        return text
    if isinstance(value, list) and value:
        value = value[0]
    if not isinstance(value, dict):
        return None
    error = value.get("error")
    if isinstance(error, dict):
        for key in ("message", "msg", "detail"):
            if isinstance(error.get(key), str) and error[key].strip():
                return error[key]
        return json.dumps(error, ensure_ascii=False)
    if isinstance(error, str) and error.strip():
        return error
    for key in ("message", "detail"):
        if isinstance(value.get(key), str) and value[key].strip():
            return value[key]
        if isinstance(value.get(key), list) and value[key]:
            return json.dumps(value[key], ensure_ascii=False)
    return None


def header(headers: dict[str, str], name: str) -> str | None:
    wanted = name.lower()
    for key, value in (headers or {}).items():
        if key.lower() == wanted:
            return value
    return None


OLLAMA_PORT = 11434


def _is_local_server(base_url: str) -> bool:
    parts = urlsplit(base_url)
    hostname = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    local = hostname in ("localhost", "127.0.0.1", "::1") or hostname.endswith(".local")
    return local or port == OLLAMA_PORT


def _origin_refused(body: str, provider: dict[str, Any]) -> bool:
    """A local server's 403 with no key set, or with no reason given, is its CORS check refusing
    the extension's origin (Ollama without OLLAMA_ORIGINS), not a bad key."""
    if not _is_local_server(provider.get("baseUrl", "")):
        return False
    no_reason = body.strip().lower() in ("", "forbidden")
    return no_reason or not str(provider.get("apiKey") or "").strip()


def _origin_refused_error(provider: dict[str, Any]) -> ProviderError:
    base_url = provider.get("baseUrl", "")
    host = host_of(base_url)
    try:
        port = urlsplit(base_url).port
    except ValueError:
        port = None
    if port == OLLAMA_PORT:
        return ProviderError.said("origin_refused", "py_error_ollama_origin", host)
    return ProviderError.said("origin_refused", "py_error_server_origin", host)


def http_error(status: int, body: str, headers: dict[str, str], provider: dict[str, Any]) -> ProviderError:
    """The ProviderError for an HTTP status that is not success."""
    said = extract_error_message(body)
    tail = sentence("py_error_provider_said", quote(said)) if said else ""
    host = host_of(provider.get("baseUrl", ""))
    model = provider.get("model", "")
    overflow = context_overflow(status, body)
    if overflow is not None:  # rule 4
        return ContextOverflowError(too_long_for(model), overflow)
    if status == 403 and _origin_refused(body, provider):
        return _origin_refused_error(provider)
    if refuses_images(status, body):  # margin.providers.image_refusal
        return ImagesRefusedError(images_refused_sentence(model))
    if status in (401, 403):
        return ProviderError.said("bad_key", "py_error_bad_key", status, tail)
    if status == 404:
        return ProviderError.said("not_found", "py_error_not_found", provider.get("baseUrl", ""), model, tail)
    if status == 429:
        retry_after = (header(headers, "retry-after") or "").strip()
        wait = (
            sentence("py_error_wait_seconds", retry_after)
            if retry_after.isdigit()
            else sentence("py_error_wait_a_little")
        )
        return ProviderError.said("rate_limited", "py_error_rate_limited", wait, tail)
    if status == 400 or status == 422:
        detail = f": {quote(said)}" if said else ""
        return ProviderError.said("bad_request", "py_error_bad_request", status, detail)
    if status == 408:
        return ProviderError.said("timeout", "py_error_http_timeout", host, tail)
    if status >= 500:
        return ProviderError.said("provider_down", "py_error_provider_down", host, status, tail)
    return ProviderError.said("provider_error", "py_error_provider_error", status, tail)


STREAM_CUT = ENGLISH["py_error_stream_cut"]


def stream_cut(partial_text: str | None = None) -> ProviderError:
    """The body ended before the answer did; `partial_text` is what had arrived."""
    error = ProviderError.said("stream_cut", "py_error_stream_cut")
    error.partial_text = partial_text
    return error


def transport_error(error: TransportError, provider: dict[str, Any]) -> ProviderError:
    """No (whole) HTTP response. `aborted` (we stopped it) becomes code "aborted", which is not a
    failure; `broken` (the connection died after the headers) is a cut stream."""
    host = host_of(provider.get("baseUrl", ""))
    if error.kind == "aborted":
        return ProviderError.said("aborted", "py_error_stopped")
    if error.kind == "broken":
        return stream_cut()
    if error.kind == "redirect":
        if error.detail:
            return ProviderError.said(
                "redirect_refused", "py_error_redirect_to", host, _cut(error.detail, 120)
            )
        return ProviderError.said("redirect_refused", "py_error_redirect", host)
    if error.kind == "timeout":
        return ProviderError.said("timeout", "py_error_timeout", host)
    return ProviderError.said("unreachable", "py_error_unreachable", host)
