"""Turning sync on and off, and what the options page shows of it (`sync.enable`, `sync.disable`,
`sync.status`; `sync.now` is margin.sync.engine's).

Invariants (docs/security.md, "Sync"):
1. Turning on checks, in order and before anything is stored here: the URL, the passphrase's
   length, that the address is a WebDAV folder (PROPFIND), Margin's folder in it (MKCOL), and the
   key check (margin.sync.crypto rule 4): a wrong passphrase writes nothing, here or there. The
   first device to turn on writes the key check (`If-None-Match: *`: two devices racing agree on
   the first one's).
2. What is stored (`syncConfig` in chrome.storage.local): the URL, user name and password, and
   the derived key with its id, never the passphrase: a periodic sync after a browser restart
   needs the key, and the passphrase may open other things of the user's.
3. Turning off forgets the settings, the key and the base; the server's files stay (another
   device may use them; turning on again with the passphrase picks them up).
4. `sync.status` never sends the password or the key to a page.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform
from ..storage.keys import SYNC_BASE, SYNC_CONFIG, SYNC_PROGRESS, SYNC_STATUS
from . import crypto, webdav

ENABLE_FIELDS = ("url", "user", "password", "passphrase")


def _text(payload: dict, name: str) -> str:
    value = payload.get(name)
    return value if isinstance(value, str) else ""


async def key_for(platform: Platform, store: webdav.Store, passphrase: str) -> crypto.SyncKey:
    """Rule 1: the store's key check opened (or, on a new store, written) with the passphrase."""
    for _ in range(2):
        answer = await webdav.exchange(platform, webdav.get(store, crypto.KEY_CHECK_NAME), ok=(200, 404))
        if answer.status == 200:
            if "html" in answer.content_type.lower():
                raise webdav.not_webdav()  # a login page in front of the folder
            return await crypto.open_key_check(platform, passphrase, answer.text)
        parameters = crypto.new_key_parameters()
        key = await crypto.derive(platform, passphrase, parameters)
        text = await crypto.key_check_text(platform, key, parameters)
        try:
            await webdav.exchange(
                platform, webdav.put(store, crypto.KEY_CHECK_NAME, text, etag=None), ok=(200, 201, 204)
            )
        except webdav.Precondition:
            continue  # another device wrote it first: open theirs
        return key
    raise MarginError.said("sync_busy", "py_error_sync_busy")


async def handle_enable(platform: Platform, payload: dict) -> dict:
    url = webdav.check_url(_text(payload, "url"))
    passphrase = _text(payload, "passphrase")
    if len(passphrase) < crypto.PASSPHRASE_MIN:
        raise MarginError.said(
            "sync_short_passphrase", "py_error_sync_short_passphrase", str(crypto.PASSPHRASE_MIN)
        )
    store = webdav.Store(url, _text(payload, "user"), _text(payload, "password"))
    folder = await webdav.exchange(platform, webdav.propfind(store, store.url, 0), ok=(207,))
    webdav.parse_multistatus(folder.text)
    await webdav.exchange(platform, webdav.mkcol(store), ok=(201, 405))
    key = await key_for(platform, store, passphrase)
    config = {"url": store.url, "user": store.user, "password": store.password, **key.to_json()}
    await platform.local.set({SYNC_CONFIG: config, SYNC_BASE: {"records": {}}})
    await platform.local.remove([SYNC_STATUS])
    return {"on": True}


async def handle_disable(platform: Platform, payload: dict) -> dict:
    await platform.local.remove([SYNC_CONFIG, SYNC_BASE, SYNC_STATUS])
    return {"on": False}


async def handle_status(platform: Platform, payload: dict) -> dict[str, Any]:
    """Rule 4."""
    stored = await platform.local.get([SYNC_CONFIG, SYNC_STATUS])
    config = stored.get(SYNC_CONFIG)
    progress = (await platform.session.get([SYNC_PROGRESS])).get(SYNC_PROGRESS)
    if not isinstance(config, dict):
        return {"on": False}
    return {
        "on": True,
        "url": config.get("url", ""),
        "user": config.get("user", ""),
        "status": stored.get(SYNC_STATUS),
        "progress": progress,
    }
