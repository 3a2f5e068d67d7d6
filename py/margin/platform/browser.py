"""The browser side of the seams in `margin.platform.ports`: the ONLY module that imports `js`/`pyodide`.

Everything crosses the boundary as JSON strings (docs/architecture.md: no proxies to destroy, no Map
surprises). The JS half is `extension/bridge.js`; its functions never throw: they answer
`{ok: true, value}` or `{ok: false, error: {kind, message}}`, and this module turns failures into
`StorageError` (`ports.storage_refused`, the same as the memory twin's) / `TransportError`.
Every JSON text sent to JS is written by `margin.base.wire.dumps` (finite numbers only: a NaN is a
`not_finite_number` refusal before anything is written, never JS's "Unexpected token N").
"""

from __future__ import annotations

import asyncio
from typing import Any

import margin_bridge  # registered by the service worker: pyodide.registerJsModule("margin_bridge", bridge)

from ..base import wire
from .ports import (
    CryptoRefused,
    HttpRequest,
    Platform,
    ScriptError,
    TransportError,
    WebTab,
    storage_refused,
)


def _utf8(text: str) -> bytes:
    """Bulk text for the bridge as UTF-8 bytes: Pyodide converts a str argument to a JS string at
    ~5 MB/s, bytes with TextDecoder at ~100 MB/s (extension/bridge.js, `fromPython`)."""
    return text.encode("utf-8", "surrogatepass")


async def _call(function_name: str, *args: Any) -> Any:
    raw = await getattr(margin_bridge, function_name)(*args)
    if isinstance(raw, str):
        reply = wire.loads(raw)
    else:
        # A bulk reply (storageGet) comes as UTF-8 (same reason): an array of Uint8Arrays, the
        # JSON text and then the long strings it refers to (margin.base.wire, rule 6).
        buffers = [piece.to_bytes() for piece in raw]
        long_strings = [buffer.decode("utf-8") for buffer in buffers[1:]]
        reply = wire.join_long_strings(wire.loads(buffers[0]), long_strings)
    if reply.get("ok"):
        return reply.get("value")
    error = reply.get("error") or {}
    raise _BridgeFailure(error.get("kind", "unknown"), error.get("message", ""))


class _BridgeFailure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class ChromeStorageArea:
    """chrome.storage.<area> through the bridge."""

    def __init__(self, area: str):
        self.area = area

    async def get(self, keys: list[str]) -> dict[str, Any]:
        try:
            return await _call("storageGet", self.area, wire.dumps(list(keys)))
        except _BridgeFailure as failure:
            raise storage_refused(failure.message) from None

    async def set(self, items: dict[str, Any]) -> None:
        try:
            long_strings: list[str] = []
            light = wire.split_long_strings(items, long_strings)
            text = wire.dumps(light, root="")  # margin.base.wire, rule 6: the long strings apart
            await _call("storageSet", self.area, _utf8(text), *map(_utf8, long_strings))
        except _BridgeFailure as failure:
            raise storage_refused(failure.message) from None

    async def remove(self, keys: list[str]) -> None:
        try:
            await _call("storageRemove", self.area, wire.dumps(list(keys)))
        except _BridgeFailure as failure:
            raise storage_refused(failure.message) from None

    async def keys(self) -> list[str]:
        try:
            return list(await _call("storageKeys", self.area))
        except _BridgeFailure as failure:
            raise storage_refused(failure.message) from None

    async def bytes_in_use(self, keys: list[str]) -> int:
        try:
            return int(await _call("storageBytesInUse", self.area, wire.dumps(list(keys))))
        except _BridgeFailure as failure:
            raise storage_refused(failure.message) from None


class FetchResponse:
    def __init__(self, handle: int, status: int, headers: dict[str, str]):
        self._handle = handle
        self.status = status
        self.headers = headers
        self._closed = False

    async def read_chunk(self) -> str | None:
        if self._closed:
            return None
        try:
            value = await _call("httpRead", self._handle)
        except _BridgeFailure as failure:
            self._closed = True
            raise TransportError(failure.kind, failure.message) from None
        if value is None:
            self._closed = True
        return value

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await _call("httpAbort", self._handle)


class FetchTransport:
    def __init__(self) -> None:
        self._next_handle = 1

    async def open(self, request: HttpRequest) -> FetchResponse:
        spec = {
            "method": request.method,
            "url": request.url,
            "headers": request.headers,
            "body": request.body,
            "timeoutMs": int(request.timeout * 1000),
        }
        handle = self._next_handle
        self._next_handle += 1
        try:
            value = await _call("httpOpen", handle, wire.dumps(spec, root="request"))
        except _BridgeFailure as failure:
            raise TransportError(failure.kind, failure.message) from None
        except asyncio.CancelledError:
            # Stopped before the headers arrived: abort the fetch too, not just our wait.
            margin_bridge.httpAbort(handle)
            raise
        return FetchResponse(handle, value["status"], value["headers"])


class ChromeTabs:
    async def active_web_tab(self) -> WebTab | None:
        value = await _call("activeWebTab")
        return _web_tab(value) if value is not None else None

    async def window_web_tabs(self) -> list[WebTab]:
        return [_web_tab(value) for value in await _call("windowWebTabs")]

    async def wake(self, tab_id: int, timeout: float) -> WebTab | None:
        value = await _call("tabsWake", tab_id, int(timeout * 1000))
        return _web_tab(value) if value else None

    async def capture_visible(self, window_id: int) -> str:
        return await _call("captureVisibleTab", window_id)

    async def get(self, tab_id: int) -> WebTab | None:
        value = await _call("tabsGet", tab_id)
        return _web_tab(value) if value else None

    async def run(self, tab_id: int, function: str, *args: Any) -> Any:
        try:
            return await _call("tabsRun", tab_id, function, wire.dumps(list(args), root="arguments"))
        except _BridgeFailure as failure:
            raise ScriptError(failure.message) from None

    async def focus(self, tab: WebTab) -> None:
        await _call("tabsFocus", tab.id, tab.window_id)

    async def open(self, url: str) -> WebTab:
        return _web_tab(await _call("tabsOpen", url))

    async def watch(self, tab_urls: dict[int, str], *, clear_stale: bool = False) -> None:
        await _call("tabsWatch", wire.dumps({str(k): v for k, v in tab_urls.items()}), clear_stale)


def _web_tab(value: dict[str, Any]) -> WebTab:
    return WebTab(
        id=value["id"],
        window_id=value["windowId"],
        url=value["url"],
        title=value["title"],
        active=bool(value.get("active")),
        discarded=bool(value.get("discarded")),
        loading=bool(value.get("loading")),
    )


async def load_package(name: str) -> None:
    await _call("loadPackage", name)


async def sha256_hex(text: str) -> str:
    """crypto.subtle's SHA-256 of the text's UTF-8 bytes (extension/bridge.js, `sha256Hex`)."""
    return str(await _call("sha256Hex", _utf8(text)))


class WebCrypto:
    """crypto.subtle through the bridge (extension/worker/crypto.js; margin.platform.ports rule 6).
    Bulk text goes as UTF-8 bytes and comes back in pieces, like storage's."""

    async def derive_key(self, passphrase: str, salt_b64: str, iterations: int) -> str:
        return str(await self._call("cryptoDeriveKey", _utf8(passphrase), salt_b64, int(iterations)))

    async def seal(self, key_b64: str, nonce_b64: str, plaintext: str, aad: str) -> str:
        return str(await self._call("cryptoSeal", key_b64, nonce_b64, _utf8(plaintext), _utf8(aad)))

    async def unseal(self, key_b64: str, nonce_b64: str, sealed_b64: str, aad: str) -> str:
        return str(await self._call("cryptoUnseal", key_b64, nonce_b64, _utf8(sealed_b64), _utf8(aad)))

    @staticmethod
    async def _call(name: str, *args: Any) -> Any:
        try:
            return await _call(name, *args)
        except _BridgeFailure as failure:
            raise CryptoRefused(failure.message) from None


async def read_catalogue(locale: str) -> str:
    return str(await _call("catalogue", locale))


def post_turn_event(turn_id: str, event: dict[str, Any]) -> bool:
    """Send a turn event to its panel; False when the panel's port is gone. An event that holds a
    non-finite number is sent as that error instead (margin.base.wire rule 2), so the panel still
    hears how the turn ended."""
    try:
        text = wire.dumps(event, root="event")
    except wire.NotFiniteError as error:
        text = wire.dumps({"event": "error", "error": error.to_json()})
    return bool(margin_bridge.postTurnEvent(turn_id, _utf8(text)))


def browser_platform() -> Platform:
    return Platform(
        local=ChromeStorageArea("local"),
        session=ChromeStorageArea("session"),
        transport=FetchTransport(),
        tabs=ChromeTabs(),
        load_package=load_package,
        read_catalogue=read_catalogue,
        sha256_hex=sha256_hex,
        crypto=WebCrypto(),
        browser_language=str(margin_bridge.uiLanguage()),
    )
