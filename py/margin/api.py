"""The message API: request names -> handlers, one reply envelope, and turns.

Rules:
1. `ROUTES` is the only map from a request name (docs/protocol.md) to its handler, written as
   "module:function" and imported on first use, so a cold start imports only what it needs.
2. Every handler is `async def handle_x(platform, payload) -> JSON value`.
3. Every reply is one envelope: `{ok: true, value}` or `{ok: false, error: {code, message}}`.
   A `MarginError` becomes its code and sentence; anything else is a bug, logged with its
   traceback and reported as `internal` with a sentence that says the data is safe.
4. Trust: the service worker tells us who sent a request; content scripts (tier "content") may
   only call `page.*` requests. The worker checks this too; checking twice is cheap.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import MarginError
from .ports import Platform

TURN_PORT_NAME = "chat.turn"

Handler = Callable[[Platform, dict], Awaitable[Any]]

ROUTES: dict[str, str] = {
    "app.ping": "margin.api:handle_ping",
    "app.state": "margin.api:handle_state",
    "options.get": "margin.options:handle_get",
    "options.save": "margin.options:handle_save",
    "provider.test": "margin.options:handle_test",
    "history.clear": "margin.history:handle_clear",
    "images.bound": "margin.image_bound:handle_bound",
    "tab.screenshot": "margin.screenshot:handle_screenshot",
    "tab.attach": "margin.attach:handle_attach",
    "attachment.remove": "margin.attach:handle_remove",
    "video.seek": "margin.video:handle_seek",
    "sitecache.status": "margin.site_caches:handle_status",
    "session.new": "margin.sessions:handle_new",
    "session.list": "margin.sessions:handle_list",
    "session.check": "margin.sessions:handle_check",
    "session.open": "margin.sessions:handle_open",
    "session.rename": "margin.sessions:handle_rename",
    "session.pin": "margin.sessions:handle_pin",
    "session.delete": "margin.sessions:handle_delete",
    "session.undelete": "margin.sessions:handle_undelete",
    "session.export": "margin.sessions:handle_export",
    "backup.export": "margin.backup:handle_export",
    "backup.import": "margin.backup:handle_import",
}

# Requests a content script (untrusted page context) may make.
CONTENT_SCRIPT_PREFIX = "page."

def resolve(name: str):
    target = ROUTES.get(name)
    if target is None:
        raise MarginError("unknown_message", f"Margin does not know the request {name!r}.")
    module_name, function_name = target.split(":")
    return getattr(importlib.import_module(module_name), function_name)


def ok(value: Any) -> dict[str, Any]:
    return {"ok": True, "value": value}


def failure(error: MarginError) -> dict[str, Any]:
    return {"ok": False, "error": error.to_json()}


def internal_error(exc: BaseException) -> MarginError:
    traceback.print_exception(exc, file=sys.stderr)
    return MarginError(
        "internal",
        f"Something went wrong inside Margin ({type(exc).__name__}: {exc}). "
        "Your conversation is saved; try again, and if it keeps happening, reload the extension.",
    )


async def dispatch(platform: Platform, name: str, payload: Any, tier: str = "extension",
                   handler: Handler | None = None) -> dict[str, Any]:
    """Run the request's handler (ROUTES', or `handler` for the worker's own events) in the envelope."""
    try:
        if tier != "extension" and not name.startswith(CONTENT_SCRIPT_PREFIX):
            raise MarginError("forbidden", f"Pages may not send {name!r} to Margin.")
        if payload is None:
            payload = {}
        if not isinstance(payload, dict):
            raise MarginError("bad_payload", f"The request {name!r} needs an object as its payload.")
        return ok(await (handler or resolve(name))(platform, payload))
    except MarginError as error:
        return failure(error)
    except Exception as exc:  # noqa: BLE001 - the envelope must always come back
        return failure(internal_error(exc))


# -- handlers that belong to the app itself ---------------------------------------------------

_boot: dict[str, Any] = {"bootMs": None, "bootedFrom": None}


def record_boot(boot_ms: int, booted_from: str) -> None:
    """The worker says how long Python took to start, and how ("snapshot" or "fresh")."""
    _boot.update(bootMs=boot_ms, bootedFrom=booted_from)


async def handle_ping(platform: Platform, payload: dict) -> dict[str, Any]:
    return {"python": ".".join(map(str, sys.version_info[:3])), **_boot}


async def handle_state(platform: Platform, payload: dict) -> dict[str, Any]:
    from . import storage
    from .options import mask_key

    state = await storage.get_all(platform.local)
    state[storage.PROVIDERS] = [
        {**p, "apiKey": mask_key(p.get("apiKey", ""))} if isinstance(p, dict) else p
        for p in state[storage.PROVIDERS] or []
    ]
    return state


# -- the browser entry points (called from extension/background.js) ---------------------------

_platform: Platform | None = None
_turn_stops: dict[str, asyncio.Event] = {}
_early_stops: set[str] = set()


def _browser() -> Platform:
    global _platform
    if _platform is None:
        from .platform import browser_platform

        _platform = browser_platform()
    return _platform


async def dispatch_json(name: str, payload_json: str, tier: str, handler: Handler | None = None) -> str:
    """The worker's onMessage handler calls this: JSON string in, JSON envelope string out."""
    try:
        payload = json.loads(payload_json)
    except ValueError:
        return json.dumps(failure(MarginError("bad_payload", "The request was not valid JSON.")))
    reply = await dispatch(_browser(), name, payload, tier, handler)
    return json.dumps(reply, ensure_ascii=False)


async def run_turn_json(turn_id: str, start_json: str) -> None:
    """The worker's turn port calls this once per turn; events go back through the bridge."""
    from . import chat
    from .platform import post_turn_event

    stop = _turn_stops[turn_id] = asyncio.Event()
    if turn_id in _early_stops:
        _early_stops.discard(turn_id)
        stop.set()

    def emit(event: dict[str, Any]) -> None:
        if not post_turn_event(turn_id, event):
            stop.set()

    try:
        start = json.loads(start_json)
        await chat.run_turn(_browser(), start, emit, stop)
    except MarginError as error:
        emit({"event": "error", "error": error.to_json()})
    except Exception as exc:  # noqa: BLE001
        emit({"event": "error", "error": internal_error(exc).to_json()})
    finally:
        _turn_stops.pop(turn_id, None)


async def explain_queue_json(info_json: str) -> str:
    """The context menu's "Explain with Margin" was clicked (margin.explain, rule 1)."""
    from . import explain

    return await dispatch_json("explain.queue", info_json, "extension", explain.queue)


async def site_cache_event(kind: str, tab_id: int, url: str | None) -> None:
    """A purge listener of the site caches fired (margin.site_caches, rule 3)."""
    from . import site_caches

    try:
        await site_caches.on_tab_event(_browser(), kind, int(tab_id), url)
    except Exception as exc:  # noqa: BLE001 - a listener has nobody to answer; log it
        internal_error(exc)


async def site_cache_restore() -> None:
    """A worker start found site-cache entries: restore them now (margin.site_caches, rule 3)."""
    from . import site_caches

    try:
        await site_caches.restore(_browser())
    except Exception as exc:  # noqa: BLE001
        internal_error(exc)


def stop_turn(turn_id: str) -> None:
    """Stop a turn. The worker calls this only for a turn it started and that has not finished,
    so an unknown id is a turn whose task has not run yet: remember the stop for it."""
    stop = _turn_stops.get(turn_id)
    if stop is None:
        _early_stops.add(turn_id)
    else:
        stop.set()
