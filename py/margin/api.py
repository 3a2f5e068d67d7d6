"""The message API: request names -> handlers, and one reply envelope.

Rules:
1. `ROUTES` is the only map from a request name (docs/protocol.md) to its handler, written as
   "module:function" and imported on first use, so a cold start imports only what it needs.
2. Every handler is `async def handle_x(platform, payload) -> JSON value`.
3. Every reply is one envelope: `{ok: true, value}` or `{ok: false, error: {code, message}}`.
   A `MarginError` becomes its code and sentence; anything else is a bug, logged with its
   traceback and reported as `internal` with a sentence that says the data is safe.
4. Trust: the service worker tells us who sent a request; content scripts (tier "content") may
   only call `page.*` requests. The worker checks this too; checking twice is cheap.
5. No state lives here: the running worker's (its platform, its turns, its boot record) is a
   `margin.worker.Worker`, which calls `dispatch`.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from . import catalogue
from .errors import MarginError
from .ports import Platform

TURN_PORT_NAME = "chat.turn"
# One port per summary pass of an attachment (margin.summaries), run like a turn.
SUMMARY_PORT_NAME = "attachment.summarize"
# One port per backup export or import (margin.backup): the file streams over it in chunks.
BACKUP_PORT_NAME = "backup.stream"
# The most characters of text one port message carries: at most 4 bytes each in UTF-8, twice that
# when escaped, well under Chrome's 64 MiB per message. Longer messages go in pieces.
PORT_CHUNK_CHARS = 4 * 1024 * 1024

Handler = Callable[[Platform, dict], Awaitable[Any]]

ROUTES: dict[str, str] = {
    "app.ping": "margin.api:handle_ping",
    "app.state": "margin.api:handle_state",
    "options.get": "margin.options:handle_get",
    "options.save": "margin.options:handle_save",
    "provider.test": "margin.options:handle_test",
    "provider.models": "margin.options:handle_models",
    "options.activate": "margin.options:handle_activate",
    "images.bound": "margin.image_bound:handle_bound",
    "images.original": "margin.image_originals:handle_original",
    "tab.screenshot": "margin.screenshot:handle_screenshot",
    "tab.attach": "margin.attach:handle_attach",
    "file.attach": "margin.attach:handle_attach_file",
    "attachment.remove": "margin.attach:handle_remove",
    "attachment.reattach": "margin.attach:handle_reattach",
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
    "history.save_answer": "margin.unsaved_answers:handle_save_answer",
    "code.save_run": "margin.code_runs:handle_save_run",
}

# Requests a content script (untrusted page context) may make.
CONTENT_SCRIPT_PREFIX = "page."


def resolve(name: str) -> Handler:
    target = ROUTES.get(name)
    if target is None:
        raise MarginError.said("unknown_message", "py_error_unknown_request", repr(name))
    module_name, function_name = target.split(":")
    return getattr(importlib.import_module(module_name), function_name)


def ok(value: Any) -> dict[str, Any]:
    return {"ok": True, "value": value}


def failure(error: MarginError) -> dict[str, Any]:
    return {"ok": False, "error": error.to_json()}


def internal_error(exc: BaseException) -> MarginError:
    traceback.print_exception(exc, file=sys.stderr)
    return MarginError.said("internal", "py_error_internal", type(exc).__name__, exc)


async def dispatch(
    platform: Platform, name: str, payload: Any, tier: str = "extension", handler: Handler | None = None
) -> dict[str, Any]:
    """Run the request's handler (ROUTES', or `handler` for the worker's own events) in the envelope."""
    try:
        if tier != "extension" and not name.startswith(CONTENT_SCRIPT_PREFIX):
            raise MarginError.said("forbidden", "py_error_request_forbidden", repr(name))
        if payload is None:
            payload = {}
        if not isinstance(payload, dict):
            raise MarginError.said("bad_payload", "py_error_payload_not_object", repr(name))
        return ok(await (handler or resolve(name))(platform, payload))
    except MarginError as error:
        await catalogue.ensure_spoken(platform)
        return failure(error)
    except Exception as exc:
        await catalogue.ensure_spoken(platform)
        return failure(internal_error(exc))


# -- handlers that belong to the app itself ---------------------------------------------------


async def handle_ping(platform: Platform, payload: dict) -> dict[str, Any]:
    """`app.ping`. The running worker answers it with its boot record (margin.worker, rule 2);
    here, with no worker, there is no boot to report."""
    return {"python": ".".join(map(str, sys.version_info[:3])), "bootMs": None, "bootedFrom": None}


async def handle_state(platform: Platform, payload: dict) -> dict[str, Any]:
    from . import storage
    from .options import mask_key

    state = await storage.get_all(platform.local)
    providers = state[storage.PROVIDERS]
    # A stored value that is not a list of providers shows as none (margin.options parks it on
    # the next save); the keys are masked either way.
    state[storage.PROVIDERS] = [
        {**p, "apiKey": mask_key(p.get("apiKey", ""))} if isinstance(p, dict) else p
        for p in (providers if isinstance(providers, list) else [])
    ]
    return state
