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
   `margin.app.worker.Worker`, which calls `dispatch`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..base.errors import MarginError, internal_error
from ..platform.ports import BACKUP_PORT_NAME as BACKUP_PORT_NAME  # re-exported for margin.app.contract
from ..platform.ports import PORT_CHUNK_CHARS as PORT_CHUNK_CHARS
from ..platform.ports import SUMMARY_PORT_NAME as SUMMARY_PORT_NAME
from ..platform.ports import TURN_PORT_NAME as TURN_PORT_NAME
from ..platform.ports import Platform
from ..settings import options
from ..storage import keys as storage

Handler = Callable[[Platform, dict], Awaitable[Any]]

ROUTES: dict[str, str] = {
    "app.ping": "margin.app.api:handle_ping",
    "app.state": "margin.app.api:handle_state",
    "options.get": "margin.settings.options:handle_get",
    "options.save": "margin.settings.options:handle_save",
    "provider.test": "margin.settings.options:handle_test",
    "provider.models": "margin.settings.options:handle_models",
    "options.activate": "margin.settings.options:handle_activate",
    "prompts.list": "margin.settings.prompts:handle_list",
    "prompts.save": "margin.settings.prompts:handle_save",
    "prompts.fill": "margin.page.selection:handle_fill",
    "images.bound": "margin.images.bound:handle_bound",
    "images.original": "margin.images.originals:handle_original",
    "tab.screenshot": "margin.images.screenshot:handle_screenshot",
    "tab.attach": "margin.page.attach:handle_attach",
    "tabs.list": "margin.page.tab_list:handle_list",
    "file.attach": "margin.page.attach:handle_attach_file",
    "attachment.remove": "margin.page.attach:handle_remove",
    "attachment.reattach": "margin.page.attach:handle_reattach",
    "video.seek": "margin.page.video:handle_seek",
    "sitecache.status": "margin.page.site_caches:handle_status",
    "session.new": "margin.sessions.actions:handle_new",
    "session.list": "margin.sessions.actions:handle_list",
    "session.check": "margin.sessions.actions:handle_check",
    "session.open": "margin.sessions.actions:handle_open",
    "session.rename": "margin.sessions.actions:handle_rename",
    "session.pin": "margin.sessions.actions:handle_pin",
    "session.delete": "margin.sessions.actions:handle_delete",
    "session.undelete": "margin.sessions.actions:handle_undelete",
    "session.export": "margin.sessions.actions:handle_export",
    "history.save_answer": "margin.turn.unsaved_answers:handle_save_answer",
    "code.save_run": "margin.turn.saved_runs:handle_save_run",
    "answer.choose_version": "margin.turn.answer_versions:handle_choose_version",
    "sync.enable": "margin.sync.setup:handle_enable",
    "sync.disable": "margin.sync.setup:handle_disable",
    "sync.status": "margin.sync.setup:handle_status",
    "sync.now": "margin.sync.engine:handle_now",
    "tools.list": "margin.tools.servers:handle_list",
    "tools.add": "margin.tools.servers:handle_add",
    "tools.remove": "margin.tools.servers:handle_remove",
    "tools.set": "margin.tools.servers:handle_set",
    "tools.refresh": "margin.tools.servers:handle_refresh",
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
        await options.ensure_spoken(platform)
        return failure(error)
    except Exception as exc:
        await options.ensure_spoken(platform)
        return failure(internal_error(exc))


# -- handlers that belong to the app itself ---------------------------------------------------


async def handle_ping(platform: Platform, payload: dict) -> dict[str, Any]:
    """`app.ping`. The running worker answers it with its boot record (margin.app.worker, rule 2);
    here, with no worker, there is no boot to report."""
    return {"python": ".".join(map(str, sys.version_info[:3])), "bootMs": None, "bootedFrom": None}


async def handle_state(platform: Platform, payload: dict) -> dict[str, Any]:
    state = await storage.get_all(platform.local)
    providers = state[storage.PROVIDERS]
    # A stored value that is not a list of providers shows as none (margin.settings.options parks it on
    # the next save); the keys are masked either way.
    state[storage.PROVIDERS] = [
        {**p, "apiKey": options.mask_key(p.get("apiKey", ""))} if isinstance(p, dict) else p
        for p in (providers if isinstance(providers, list) else [])
    ]
    return state
