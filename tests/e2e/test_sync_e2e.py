"""Sync end to end (py/margin/sync, extension/options/sync.js): a real WsgiDAV server with basic auth
on 127.0.0.1, and Margin in two (then three) Chromium profiles syncing through it from the options
page's "Sync" section, driven by its accessible names. A session made on A appears on B; a rename on
B reaches A; a wrong passphrase on a third profile changes no byte on the server; the server's files
hold no plaintext of any message, name or title."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cheroot import wsgi
from harness import COLD_TIMEOUT_MS, Margin, launch, poll
from platform_memory import memory_platform
from playwright.sync_api import expect
from wsgidav.wsgidav_app import WsgiDAVApp

from margin.sync import crypto

USER, PASSWORD = "margin-user", "dav-password-1"
PASSPHRASE = "tulip otter marble seven"
SECRET_QUESTION = "What is the Zanzibar budget for the llama trip?"
SECRET_NAME = "Quokka migration plan"
SECRET_PROMPT = {"name": "Wombat tone", "text": "Rewrite {{selection}} as a wombat would."}


@pytest.fixture
def webdav(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """WsgiDAV on a free port, serving tmp_path/files at /dav/ to USER:PASSWORD only."""
    root = tmp_path / "files"
    root.mkdir()
    app = WsgiDAVApp(
        {
            "provider_mapping": {"/dav": str(root)},
            "simple_dc": {"user_mapping": {"*": {USER: {"password": PASSWORD}}}},
            "http_authenticator": {"accept_basic": True, "accept_digest": False, "default_to_digest": False},
            "verbose": 1,
            "logging": {"enable_loggers": []},
            "dir_browser": {"enable": False},
            "lock_storage": True,
        }
    )
    server = wsgi.Server(("127.0.0.1", 0), app)
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.bind_addr[1]}/dav/", root
    finally:
        server.stop()
        thread.join(timeout=5)


def in_a_thread(coroutine):
    """Run a coroutine to its end (Playwright's sync API keeps an event loop in this thread)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def open_with_passphrase(root: Path, name: str) -> str:
    platform = memory_platform()
    folder = root / "margin-sync"
    key = await crypto.open_key_check(platform, PASSPHRASE, (folder / "keycheck").read_text())
    return await crypto.unseal(platform, key, name, (folder / name).read_text())


def files_on_server(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def turn_on(margin: Margin, url: str, passphrase: str = PASSPHRASE):
    page = margin.open_options()
    page.get_by_role("textbox", name="WebDAV URL").fill(url)
    page.get_by_role("textbox", name="User name").fill(USER)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Sync passphrase").fill(passphrase)
    page.get_by_role("button", name="Turn on sync").click()
    return page


def wait_synced(margin: Margin, page, before: int | None = None) -> None:
    """Until a sync newer than `before` (its `syncStatus.at`) ended; the status then says "Synced …"."""

    def ended():
        status = margin.storage_get(["syncStatus"]).get("syncStatus") or {}
        return status if status.get("at", 0) != (before or 0) else None

    status = poll(ended, timeout=COLD_TIMEOUT_MS / 1000, interval=0.25, message="no sync ended")
    assert "error" not in status, status
    expect(page.locator("#sync-status")).to_have_text(re.compile(r"^Synced "), timeout=10_000)


def sync_now(margin: Margin, page) -> None:
    before = (margin.storage_get(["syncStatus"]).get("syncStatus") or {}).get("at")
    page.get_by_role("button", name="Sync now").click()
    wait_synced(margin, page, before)


def alarm(margin: Margin, name: str):
    return margin._extension_page().evaluate("(name) => chrome.alarms.get(name)", name)


def sessions(margin: Margin) -> dict[str, str]:
    reply = margin.send_message({"type": "session.list", "payload": {}})
    assert reply["ok"], reply
    return {s["id"]: s["name"] for s in reply["value"]["sessions"]}


def test_a_session_made_on_a_reaches_b_a_rename_on_b_reaches_a_and_the_server_reads_nothing(
    launched, playwright_instance, dist_dir, webdav
):
    url, root = webdav
    a = Margin(launched)
    a.storage_set(
        {
            "history": [
                {"role": "user", "content": SECRET_QUESTION},
                {"role": "assistant", "content": "About 900 dollars."},
            ]
        }
    )
    saved = a.send_message({"type": "session.new", "payload": {}})
    sid = saved["value"]["savedId"]
    assert a.send_message({"type": "prompts.save", "payload": {"prompts": [SECRET_PROMPT]}})["ok"]
    page_a = turn_on(a, url)
    wait_synced(a, page_a)
    assert page_a.get_by_role("button", name="Sync now").is_visible()
    # Sync is on: the periodic alarm exists (extension/worker/sync.js), and a save asks for a sync soon.
    assert alarm(a, "margin.sync")["periodInMinutes"] == 30
    a.storage_set({"history": [{"role": "user", "content": "a second question"}]})
    assert a.send_message({"type": "session.new", "payload": {}})["ok"]
    poll(lambda: alarm(a, "margin.sync.soon"), timeout=10, message="no sync planned after a save")

    other = launch(playwright_instance, dist_dir)
    try:
        b = Margin(other)
        page_b = turn_on(b, url)
        wait_synced(b, page_b)
        assert sessions(b)[sid] == SECRET_QUESTION
        body = b.storage_get([f"session_{sid}"])[f"session_{sid}"]
        assert body["history"][0]["content"] == SECRET_QUESTION
        listed = b.send_message({"type": "prompts.list", "payload": {}})["value"]["prompts"]
        mine = [{"name": p["name"], "text": p["text"]} for p in listed if not p["builtin"]]
        assert mine == [SECRET_PROMPT]  # the saved prompt came too

        assert b.send_message({"type": "session.rename", "payload": {"id": sid, "name": SECRET_NAME}})["ok"]
        sync_now(b, page_b)
        assert not other.page_errors and not other.csp_violations
    finally:
        other.close()
    sync_now(a, page_a)
    poll(lambda: sessions(a)[sid] == SECRET_NAME, timeout=10, message=lambda: str(sessions(a)))

    # What WebCrypto wrote opens with the passphrase in CPython too (PBKDF2-SHA256, AES-256-GCM):
    # the server holds the real thing, encrypted, and nothing else.
    manifest = json.loads(in_a_thread(open_with_passphrase(root, "manifest")))
    assert manifest["sessions"][sid]["name"] == SECRET_NAME

    stored = {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert {"keycheck", "manifest"} <= set(stored)
    for name, data in stored.items():
        assert name in ("keycheck", "manifest") or re.fullmatch(r"[0-9a-f]{32}", name), name
        for secret in (SECRET_QUESTION, "Zanzibar", "Quokka", "900 dollars", sid, "Wombat"):
            assert secret.encode() not in data, (name, secret)


def test_a_wrong_passphrase_on_a_third_profile_changes_no_byte_on_the_server_and_says_so(
    launched, playwright_instance, dist_dir, webdav
):
    url, root = webdav
    a = Margin(launched)
    a.storage_set({"history": [{"role": "user", "content": SECRET_QUESTION}]})
    wait_synced(a, turn_on(a, url))
    before = files_on_server(root)
    assert len(before) == 4  # the key check, the manifest, the session, the settings

    third = launch(playwright_instance, dist_dir)
    try:
        c = Margin(third)
        page = turn_on(c, url, passphrase="not the passphrase at all")
        page.get_by_role("status").filter(has_text="passphrase does not match").wait_for(
            timeout=COLD_TIMEOUT_MS
        )
        assert files_on_server(root) == before
        assert c.storage_get(["syncConfig", "syncBase"]) == {}
        assert page.get_by_role("button", name="Turn on sync").is_visible()
        assert alarm(c, "margin.sync") is None
        assert not third.page_errors and not third.csp_violations
    finally:
        third.close()
