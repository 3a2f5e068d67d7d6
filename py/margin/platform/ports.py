"""The seams: the only ways the core reaches the outside world.

Rule 1: the core never imports `js` or `pyodide`; it receives a `Platform` and talks to its
`local` and `session` storage areas, its HTTP `transport` and its `tabs`.
Rule 2: a storage area behaves like chrome.storage: values are JSON (they round-trip through
JSON), absent keys are absent from the result, a multi-key `set` is all or nothing, and there is
no "get everything" call at all (see the GET_ALL_KEYS contract in `margin.storage.keys`); `keys()` lists
the stored key NAMES only (chrome.storage's `getKeys()`), so a caller can check that a body exists
without reading it; `bytes_in_use()` is chrome.storage's `getBytesInUse()`, so a caller can check a
heavy value's size without reading it. A refused read or write raises the `StorageError` that
`storage_refused` builds from Chrome's own words, on both platforms, so callers catch
`StorageError` and nothing broader.
Rule 3: HTTP is one method, `open()`, which resolves once the status and headers arrived; the
body is then read chunk by chunk (decoded text) until `None`, or abandoned with `aclose()`.
Rule 4: a transport never follows a redirect (a redirect could send the conversation, and its
API key, to an address the user never typed): a 3xx answer with a Location is the
`TransportError` kind "redirect", its `detail` the Location when the platform can read it. No
request follows one: a file a page names is read by the page itself (docs/security.md).
Rule 5: the ports the panel opens to the worker are named here (a turn's, a summary pass's, a
backup's), with the most characters one port message carries; `margin.app.api` re-exports them.
Rule 6: encryption (sync's, margin.sync.crypto) is the platform's `crypto`: WebCrypto in the
worker, never a Python implementation of AES there; keys and ciphertexts cross as base64 text.

`margin.platform.browser` implements these over the JS bridge; `platform_memory` implements them in
memory for CPython tests and benchmarks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..base.errors import StorageError

# Rule 5. One port per turn (margin.turn.chat).
TURN_PORT_NAME = "chat.turn"
# One port per summary pass of an attachment (margin.page.summaries), run like a turn.
SUMMARY_PORT_NAME = "attachment.summarize"
# One port per backup export or import (margin.backup.stream): the file streams over it in chunks.
BACKUP_PORT_NAME = "backup.stream"
# The most characters of text one port message carries: at most 4 bytes each in UTF-8, twice that
# when escaped, well under Chrome's 64 MiB per message. Longer messages go in pieces.
PORT_CHUNK_CHARS = 4 * 1024 * 1024


class StorageArea(Protocol):
    async def get(self, keys: list[str]) -> dict[str, Any]: ...

    async def set(self, items: dict[str, Any]) -> None: ...

    async def remove(self, keys: list[str]) -> None: ...

    async def keys(self) -> list[str]:
        """The names of every stored key (no values are read)."""
        ...

    async def bytes_in_use(self, keys: list[str]) -> int:
        """What these keys take, as chrome.storage's getBytesInUse counts it: for each present
        key, its name's length plus the length of its value written as compact JSON (no value
        is read into the caller)."""
        ...


def storage_refused(detail: str) -> StorageError:
    """The error a storage area raises when chrome.storage refuses (rule 2): `storage_full` when
    Chrome says the quota is exceeded, `storage_failed` with Chrome's words otherwise."""
    if "quota" in detail.lower():
        return StorageError.said("storage_full", "py_error_storage_full")
    return StorageError.said("storage_failed", "py_error_storage_failed", detail)


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    # Seconds to wait for the status line and headers; the body has its own idle timeout.
    timeout: float = 60.0


class HttpResponse(Protocol):
    status: int
    headers: dict[str, str]

    async def read_chunk(self) -> str | None:
        """The next piece of the body as text, or None at the end."""
        ...

    async def aclose(self) -> None:
        """Abort the request; reading afterwards returns None."""
        ...


class Transport(Protocol):
    async def open(self, request: HttpRequest) -> HttpResponse:
        """Send `request`. Raises `TransportError` when no HTTP response arrives."""
        ...


class TransportError(Exception):
    """No (whole) HTTP response: `kind` is "connect" (refused, DNS, offline, CORS), "timeout",
    "aborted" (we stopped it), "broken" (the connection died while the body was being read), or
    "redirect" (rule 4: not followed; `detail` is where it pointed, "" when unknown)."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class WebTab:
    id: int
    window_id: int
    url: str
    title: str
    # As Chrome reports them (`window_web_tabs`, `get`, `wake`): the tab in front of its window;
    # unloaded to save memory (Memory Saver), so it shows no document until it is loaded again;
    # still loading its page.
    active: bool = False
    discarded: bool = False
    loading: bool = False


class ScriptError(Exception):
    """Chrome refused to run Margin's script in a tab, or the tab is gone: `message` is Chrome's
    own words ("Cannot access contents of url ...", "No tab with id: 5", ...)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Tabs(Protocol):
    async def active_web_tab(self) -> WebTab | None:
        """The active http(s)/file tab of the last focused normal window, never an extension page."""
        ...

    async def window_web_tabs(self) -> list[WebTab]:
        """The web tabs (http, https, file) of the last focused normal window, in the order of its
        tab strip, with `active`, `discarded` and `loading` set; never an extension page. A tab
        whose URL Chrome hides from Margin (chrome://, another extension's page) is not one."""
        ...

    async def wake(self, tab_id: int, timeout: float) -> WebTab | None:
        """Make the tab's page readable: reload it if Chrome discarded it, then wait until it has
        loaded, at most `timeout` seconds. Returns the tab as it is then (`loading` still true
        when the time ran out), or None when it was closed."""
        ...

    async def capture_visible(self, window_id: int) -> str:
        """A PNG data URL of what the window shows."""
        ...

    async def get(self, tab_id: int) -> WebTab | None:
        """The tab as it is now, or None when it was closed."""
        ...

    async def run(self, tab_id: int, function: str, *args: Any) -> Any:
        """Call `globalThis.<function>(*args)` of Margin's page script (extension/content/extract.js)
        in the tab's top frame, injecting the script first; returns its JSON result. Raises
        `ScriptError` when Chrome refuses (a chrome:// page, the Web Store, a closed tab, ...)."""
        ...

    async def focus(self, tab: WebTab) -> None:
        """Bring the tab to the front of its window, and its window to the front."""
        ...

    async def open(self, url: str) -> WebTab:
        """Open `url` in a new tab of the last focused window, in front."""
        ...

    async def watch(self, tab_urls: dict[int, str], *, clear_stale: bool = False) -> None:
        """The purge listeners of the site caches: while `tab_urls` is not empty, Margin is told
        (`margin.page.site_caches.on_tab_event`) when one of these tabs closes or navigates away from its
        URL; when it is empty, the listeners are removed, so tab events no longer wake the worker.
        `clear_stale` with an empty map adds and removes them once: that clears the wake-up
        registration a previous worker instance may have left behind (docs/storage-model.md)."""
        ...


class CryptoRefused(Exception):
    """AES-GCM refused to open a sealed text: a wrong key, a damaged or truncated text, or another
    text's associated data (the authentication tag did not match)."""


class Crypto(Protocol):
    """Rule 6: WebCrypto's PBKDF2-SHA256 and AES-256-GCM, for sync (margin.sync.crypto). Bytes
    cross as base64 text; the envelope around them is made in Python."""

    async def derive_key(self, passphrase: str, salt_b64: str, iterations: int) -> str:
        """PBKDF2-SHA256 of the passphrase: a 256-bit key, as base64."""
        ...

    async def seal(self, key_b64: str, nonce_b64: str, plaintext: str, aad: str) -> str:
        """AES-256-GCM of the text's UTF-8 bytes with a 96-bit nonce and associated data: the
        ciphertext and its tag, as base64."""
        ...

    async def unseal(self, key_b64: str, nonce_b64: str, sealed_b64: str, aad: str) -> str:
        """The text `seal` sealed. Raises `CryptoRefused` when the tag does not match."""
        ...


class _NoCrypto:
    async def derive_key(self, passphrase: str, salt_b64: str, iterations: int) -> str:
        raise CryptoRefused("no crypto on this platform")

    async def seal(self, key_b64: str, nonce_b64: str, plaintext: str, aad: str) -> str:
        raise CryptoRefused("no crypto on this platform")

    async def unseal(self, key_b64: str, nonce_b64: str, sealed_b64: str, aad: str) -> str:
        raise CryptoRefused("no crypto on this platform")


async def _already_installed(name: str) -> None:
    """Under CPython every package is installed already."""


# The development checkout's catalogue (absent in the wheel: the worker reads the extension's).
CHECKOUT_LOCALES = Path(__file__).resolve().parents[3] / "extension" / "_locales"


async def _catalogue_from_checkout(locale: str) -> str:
    """Under CPython: extension/_locales/<locale>/messages.json of the checkout, as text."""
    return (CHECKOUT_LOCALES / locale / "messages.json").read_text(encoding="utf-8")


async def _hashlib_sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Platform:
    """Everything the core may touch, injected once per process."""

    local: StorageArea
    session: StorageArea
    transport: Transport
    tabs: Tabs
    # The browser's UI language ("en-US", "zh-CN", ...): what "auto" in the options means.
    browser_language: str = "en"
    # Makes a Pyodide package importable ("pillow"); a no-op under CPython, where it is installed.
    load_package: Callable[[str], Awaitable[None]] = field(default=_already_installed)
    # One locale's _locales/<locale>/messages.json as text (margin.i18n.catalogue).
    read_catalogue: Callable[[str], Awaitable[str]] = field(default=_catalogue_from_checkout)
    # The sha256 (hex) of a text's UTF-8 bytes: hashlib here; the browser's native crypto.subtle
    # in the worker (a 3 MB data URL: ~15 ms in Pyodide's hashlib, a few ms natively).
    sha256_hex: Callable[[str], Awaitable[str]] = field(default=_hashlib_sha256_hex)
    # Rule 6: WebCrypto in the worker; `cryptography` in the memory twin; none by default.
    crypto: Crypto = field(default_factory=_NoCrypto)
