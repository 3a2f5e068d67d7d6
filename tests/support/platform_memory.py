"""The in-memory twin of `margin.platform.browser`, for CPython tests and benchmarks.

It keeps chrome.storage's semantics that the core relies on:
- values round-trip through JSON (a tuple comes back a list, a set fails like Chrome's), and keep
  only chrome.storage's 100 levels of nesting (`as_chrome_stores`);
- absent keys are absent from a `get`;
- a multi-key `set` is all or nothing;
- there is no get-everything call; every key read is recorded in `reads` so tests can prove
  what was (and was not) read; `keys()` lists key names (like chrome.storage's getKeys()) and is
  counted in `key_listings`, not in `reads`; `bytes_in_use()` counts like getBytesInUse() and is
  not a read either;
- a refusal raises the same `StorageError` as the browser platform (`ports.storage_refused`):
  `quota_bytes=n` refuses a `set` that would store more than n characters the way Chrome words it
  (`storage_full`); `fail_after_writes=k` makes the store "die" after k successful writes (set or
  remove), for crash-safety tests: every later call raises `StoreCrashed` (a `storage_failed`
  StorageError) and changes nothing;
- a value holding NaN or an infinity is refused like the browser platform refuses it
  (`margin.base.wire.NotFiniteError`, `not_finite_number`), before anything changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from margin.base import wire
from margin.base.errors import StorageError
from margin.platform.ports import (
    CryptoRefused,
    HttpRequest,
    Platform,
    ScriptError,
    Transport,
    TransportError,
    WebTab,
    storage_refused,
)

# Measured in Chromium 156 (docs/storage-model.md, "Reading stored values"): chrome.storage.set keeps a
# value's first 100 levels of nesting, the root being level 1; what lies deeper is silently dropped
# (an object's key is left out, a list's item becomes null).
CHROME_MAX_DEPTH = 100


def as_chrome_stores(value: Any, depth: int = 1) -> Any:
    """`value` as chrome.storage keeps it: levels past CHROME_MAX_DEPTH dropped."""
    if isinstance(value, dict):
        if depth >= CHROME_MAX_DEPTH:
            return {}
        return {k: as_chrome_stores(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if depth >= CHROME_MAX_DEPTH:
            return [None] * len(value)
        return [as_chrome_stores(v, depth + 1) for v in value]
    return value


def compact_json(value: Any) -> str:
    """`value` as Chromium's JSONWriter writes it (no spaces; non-ASCII as UTF-8, counted in bytes
    there: the callers that compare sizes use ASCII values only)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class StoreCrashed(StorageError):
    """The simulated process died: nothing more is written. Callers see what Chrome's refusal
    gives them (a StorageError); crash tests can still tell a crash apart."""

    def __init__(self) -> None:
        refused = storage_refused("the store stopped (simulated crash)")
        super().__init__(refused.code, refused.message)


class MemoryStorageArea:
    def __init__(
        self,
        initial: dict[str, Any] | None = None,
        *,
        fail_after_writes: int | None = None,
        quota_bytes: int | None = None,
    ):
        self._data: dict[str, str] = {}
        self.reads: list[str] = []
        self.key_listings = 0
        self.writes: list[dict[str, Any] | tuple[str, list[str]]] = []
        self.fail_after_writes = fail_after_writes
        self.quota_bytes = quota_bytes
        self._crashed = False
        for key, value in (initial or {}).items():
            self._data[key] = json.dumps(as_chrome_stores(value))

    # -- the StorageArea protocol ------------------------------------------------------------
    async def get(self, keys: list[str]) -> dict[str, Any]:
        self._check_alive()
        if not isinstance(keys, (list, tuple)):
            raise TypeError("get() takes a list of keys; reading everything is not allowed")
        self.reads.extend(keys)
        return {k: json.loads(self._data[k]) for k in keys if k in self._data}

    async def set(self, items: dict[str, Any]) -> None:
        self._before_write()
        items = {k: as_chrome_stores(v) for k, v in items.items()}
        wire.dumps(items, root="")  # a NaN is refused as in the browser, before anything changes
        encoded = {k: json.dumps(v) for k, v in items.items()}  # raises before anything changes
        if self.quota_bytes is not None:
            after = {**self._data, **encoded}
            used = sum(len(k) + len(v) for k, v in after.items())
            if used > self.quota_bytes:
                raise storage_refused("Resource::kQuotaBytes quota exceeded")
        self._data.update(encoded)
        self.writes.append(dict(items))

    async def remove(self, keys: list[str]) -> None:
        self._before_write()
        for k in keys:
            self._data.pop(k, None)
        self.writes.append(("remove", list(keys)))

    async def keys(self) -> list[str]:
        self._check_alive()
        self.key_listings += 1
        return sorted(self._data)

    async def bytes_in_use(self, keys: list[str]) -> int:
        """chrome.storage's count: the key's length plus its value as compact JSON (Chromium's
        JSONWriter; no value is recorded as read)."""
        self._check_alive()
        return sum(len(k) + len(compact_json(json.loads(self._data[k]))) for k in keys if k in self._data)

    # -- test helpers -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything stored (for assertions only; the core cannot call this)."""
        return {k: json.loads(v) for k, v in self._data.items()}

    def stored_keys(self) -> list[str]:
        """The stored key names, synchronously (for assertions)."""
        return sorted(self._data)

    def revive(self) -> None:
        """A new process starts on the same data."""
        self._crashed = False
        self.fail_after_writes = None

    def _check_alive(self) -> None:
        if self._crashed:
            raise StoreCrashed()

    def _before_write(self) -> None:
        self._check_alive()
        if self.fail_after_writes is not None and len(self.writes) >= self.fail_after_writes:
            self._crashed = True
            raise StoreCrashed()


# -- HTTP -------------------------------------------------------------------------------------

Handler = Callable[[HttpRequest], "ScriptedResponse | Awaitable[ScriptedResponse]"]


@dataclass
class ScriptedResponse:
    """A response whose body arrives as the given text chunks, in order."""

    status: int = 200
    chunks: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    # Raise this TransportError kind when the reader reaches `fail_at` chunks ("timeout", ...).
    fail_at: int | None = None
    fail_kind: str = "timeout"
    closed: bool = False
    _index: int = 0

    async def read_chunk(self) -> str | None:
        if self.closed:
            return None
        if self.fail_at is not None and self._index >= self.fail_at:
            raise TransportError(self.fail_kind, "scripted")
        if self._index >= len(self.chunks):
            return None
        chunk = self.chunks[self._index]
        self._index += 1
        return chunk

    async def aclose(self) -> None:
        self.closed = True


class ScriptedTransport:
    """Answers each request with the next scripted response (or a handler's), recording requests."""

    def __init__(self, responses: Iterable[ScriptedResponse | TransportError | Handler] = ()):
        self.queue = list(responses)
        self.requests: list[HttpRequest] = []
        self.redirects_refused: list[str] = []

    def json_bodies(self) -> list[Any]:
        return [json.loads(r.body) if r.body else None for r in self.requests]

    async def open(self, request: HttpRequest) -> ScriptedResponse:
        self.requests.append(request)
        if not self.queue:
            raise TransportError("connect", "no scripted response left")
        item = self.queue.pop(0)
        if isinstance(item, TransportError):
            raise item
        if callable(item) and not isinstance(item, ScriptedResponse):
            result = item(request)
            if hasattr(result, "__await__"):
                result = await result
            item = result
        return self._refuse_redirect(item)

    def _refuse_redirect(self, response: ScriptedResponse) -> ScriptedResponse:
        """Like the browser's fetch with redirects refused (margin.platform.ports, rule 4): a 3xx with a
        Location is not followed; the target is kept in `redirects_refused`, never requested."""
        location = next((v for k, v in response.headers.items() if k.lower() == "location"), None)
        if 300 <= response.status < 400 and location is not None:
            self.redirects_refused.append(location)
            raise TransportError("redirect", location)
        return response


ScriptHandler = Callable[[WebTab, str, tuple], Any]


class MemoryTabs:
    """Tabs in memory: `tabs` by id, the active one, and the page script answered by `script`
    (`script(tab, function, args)` returns the JSON result or raises ScriptError). Records what
    the core asked for: `runs`, `focused`, `opened`, `watches` (each `watch()` call), `woken`.
    "Attach tabs": the window is the active tab's; a tab added `discarded` or `loading` loads when
    woken, unless its id is in `stuck` (it never finishes loading)."""

    def __init__(self, tab: WebTab | None = None, screenshot: str = "", script: ScriptHandler | None = None):
        self.tabs: dict[int, WebTab] = {}
        self.active_id: int | None = None
        if tab is not None:
            self.add(tab, active=True)
        self.screenshot = screenshot
        self.script = script
        self.runs: list[tuple[int, str, tuple]] = []
        self.focused: list[int] = []
        self.opened: list[str] = []
        self.watches: list[tuple[dict[int, str], bool]] = []
        self.woken: list[int] = []
        self.stuck: set[int] = set()

    @property
    def tab(self) -> WebTab | None:
        return self.tabs.get(self.active_id) if self.active_id is not None else None

    def add(self, tab: WebTab, *, active: bool = False) -> WebTab:
        self.tabs[tab.id] = tab
        if active:
            self.active_id = tab.id
        return tab

    def close(self, tab_id: int) -> None:
        self.tabs.pop(tab_id, None)
        if self.active_id == tab_id:
            self.active_id = None

    @property
    def watched(self) -> dict[int, str]:
        """What the purge listeners watch now ({} = no listener registered)."""
        return self.watches[-1][0] if self.watches else {}

    async def active_web_tab(self) -> WebTab | None:
        return self.tab

    def _seen(self, tab: WebTab) -> WebTab:
        return replace(tab, active=tab.id == self.active_id)

    async def window_web_tabs(self) -> list[WebTab]:
        window = self.tab.window_id if self.tab is not None else None
        return [
            self._seen(tab)
            for tab in self.tabs.values()
            if (window is None or tab.window_id == window)
            and tab.url.lower().startswith(("http:", "https:", "file:"))
        ]

    async def wake(self, tab_id: int, timeout: float) -> WebTab | None:
        self.woken.append(tab_id)
        tab = self.tabs.get(tab_id)
        if tab is None:
            return None
        if tab_id not in self.stuck:
            tab = self.tabs[tab_id] = replace(tab, discarded=False, loading=False)
        return self._seen(tab)

    async def capture_visible(self, window_id: int) -> str:
        return self.screenshot

    async def get(self, tab_id: int) -> WebTab | None:
        tab = self.tabs.get(tab_id)
        return self._seen(tab) if tab is not None else None

    async def run(self, tab_id: int, function: str, *args: Any) -> Any:
        self.runs.append((tab_id, function, args))
        tab = self.tabs.get(tab_id)
        if tab is None:
            raise ScriptError(f"No tab with id: {tab_id}.")
        if self.script is None:
            raise ScriptError("Cannot access contents of the page.")
        result = self.script(tab, function, args)
        if hasattr(result, "__await__"):
            result = await result
        return json.loads(json.dumps(result))

    async def focus(self, tab: WebTab) -> None:
        self.focused.append(tab.id)
        self.active_id = tab.id

    async def open(self, url: str) -> WebTab:
        self.opened.append(url)
        new_id = max(self.tabs, default=100) + 1
        return self.add(WebTab(id=new_id, window_id=1, url=url, title=""), active=True)

    async def watch(self, tab_urls: dict[int, str], *, clear_stale: bool = False) -> None:
        self.watches.append((dict(tab_urls), clear_stale))


class MemoryCrypto:
    """WebCrypto's PBKDF2-SHA256 and AES-256-GCM (margin.platform.ports rule 6), with hashlib and
    the `cryptography` package: the same bytes as the worker's crypto.subtle. `derivations` counts
    the key derivations (each costs what the iteration count says)."""

    def __init__(self) -> None:
        self.derivations = 0

    async def derive_key(self, passphrase: str, salt_b64: str, iterations: int) -> str:
        self.derivations += 1
        key = hashlib.pbkdf2_hmac("sha256", passphrase.encode(), base64.b64decode(salt_b64), iterations, 32)
        return base64.b64encode(key).decode()

    async def seal(self, key_b64: str, nonce_b64: str, plaintext: str, aad: str) -> str:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aes = AESGCM(base64.b64decode(key_b64))
        sealed = aes.encrypt(
            base64.b64decode(nonce_b64), plaintext.encode("utf-8", "surrogatepass"), aad.encode()
        )
        return base64.b64encode(sealed).decode()

    async def unseal(self, key_b64: str, nonce_b64: str, sealed_b64: str, aad: str) -> str:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            aes = AESGCM(base64.b64decode(key_b64))
            sealed = base64.b64decode(sealed_b64, validate=True)
            opened = aes.decrypt(base64.b64decode(nonce_b64), sealed, aad.encode())
            return opened.decode("utf-8")
        except (InvalidTag, ValueError) as error:
            raise CryptoRefused(str(error) or "tag mismatch") from None


def memory_platform(
    local: dict[str, Any] | None = None,
    transport: Transport | None = None,
    tabs: MemoryTabs | None = None,
    **kwargs: Any,
) -> Platform:
    return Platform(
        local=MemoryStorageArea(local, **kwargs),
        session=MemoryStorageArea(),
        transport=transport or ScriptedTransport(),
        tabs=tabs or MemoryTabs(),
        crypto=MemoryCrypto(),
    )
