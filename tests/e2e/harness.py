"""Driving the built extension in Chromium: launch, find the worker, stop it, read storage, use the UI.

Concept: one place that knows how to run Margin in a real browser, shared by the pytest fixtures
(`conftest.py`) and the benchmark (`bench/run.py`).

Rules:
1. The UI is driven only through the accessible names of docs/interface.md ("Message", "Send",
   "Stop", "Conversation", "Copy", "Edit", "Regenerate", the options form). Bubbles are found as
   `article[data-role=user|assistant]`.
2. Storage is read directly with `chrome.storage.local.get(keys)` in an extension page; seeding it
   (`storage_set`) is for setting up a test, never for checking the product.
3. Stopping the service worker is proven, not assumed: `stop_service_worker()` returns only once
   no service-worker target of the extension is left.
4. Everything the browser logs (pages, page errors, the worker) goes to the `browser` logger and
   into `console_lines`, so a failing test shows it (browser_log.py).
5. Every Content-Security-Policy violation in one of Margin's pages is recorded in
   `csp_violations` (browser_log.py's listener in every page, reporting through the console): the
   panel runs with none, and the conftest fails a test that leaves any.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_log import CSP_LISTENER_JS, pipe_console
from playwright.sync_api import BrowserContext, Page, Playwright, Worker

if TYPE_CHECKING:
    from worker_starts import WorkerStarts


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--disable-quic",
]

# A cold start boots Pyodide (~1.7 s on an idle machine); leave room for a loaded one.
COLD_TIMEOUT_MS = 45_000
ANSWER_TIMEOUT_MS = 30_000
# A page's first paint needs no Python, but right after launch it competes with the install-time
# Pyodide boot for the same 2 cores.
PAGE_TIMEOUT_MS = 30_000

# The text of the first visible alert with text, read in one round trip (a count, then a
# visibility check, then inner_text() would race an alert that is cleared in between, and
# inner_text() on a vanished element waits 30 s before it fails).
VISIBLE_ALERT_TEXT_JS = """(nodes) => {
    for (const node of nodes) {
        const text = (node.innerText || '').trim();
        if (text && node.getClientRects().length && getComputedStyle(node).visibility !== 'hidden') return text;
    }
    return '';
}"""


# The model chip's name (docs/interface.md): "Switch model: " and its visible text.
MODEL_CHIP_NAME = re.compile(r"^Switch model: ")


def chromium_path() -> str:
    return os.environ.get("CHROMIUM", "/usr/bin/chromium")


@dataclass
class Launched:
    context: BrowserContext
    extension_id: str
    profile_dir: Path
    console_lines: list[str] = field(default_factory=list)
    # Uncaught exceptions in Margin's pages (the conftest fails a test that leaves any).
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)  # rule 5

    @property
    def origin(self) -> str:
        return f"chrome-extension://{self.extension_id}"

    def close(self) -> None:
        try:
            self.context.close()
        finally:
            shutil.rmtree(self.profile_dir, ignore_errors=True)


def unpacked_extension_id(dist_dir: Path) -> str:
    """The id Chromium gives an extension loaded from `dist_dir`: its path's SHA-256, in a–p."""
    digest = hashlib.sha256(str(Path(dist_dir).resolve()).encode()).hexdigest()[:32]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)


def launch(
    playwright: Playwright,
    dist_dir: Path,
    *,
    headless: bool = True,
    lang: str | None = None,
    file_access: bool = False,
    warm_sandbox: bool = False,
) -> Launched:
    """Chromium with the extension loaded and a fresh profile; waits for the service worker.
    `lang` ("ja", "ru", ...) is the browser's UI language, what chrome.i18n answers in.
    `file_access`: the user turned on "Allow access to file URLs" for Margin (written into the
    fresh profile's preferences, as the switch in chrome://extensions does).
    `warm_sandbox`: let the panel warm the code sandbox in the background (panel/code_runs.js); off,
    every test would pay a whole Pyodide boot per fresh profile. A page turns it back on with the
    init script `globalThis.__marginSandboxWarmup = true` (tests/e2e/test_sandbox_warmup_e2e.py)."""
    dist_dir = Path(dist_dir).resolve()
    if not (dist_dir / "manifest.json").is_file():
        raise FileNotFoundError(f"no built extension at {dist_dir} (run python3 build.py)")
    profile_dir = Path(tempfile.mkdtemp(prefix="margin-profile-"))
    if file_access:
        (profile_dir / "Default").mkdir()
        settings = {unpacked_extension_id(dist_dir): {"newAllowFileAccess": True}}
        (profile_dir / "Default" / "Preferences").write_text(
            json.dumps({"extensions": {"settings": settings}})
        )
    context = playwright.chromium.launch_persistent_context(
        str(profile_dir),
        headless=headless,
        executable_path=chromium_path(),
        args=[
            *CHROMIUM_ARGS,
            f"--disable-extensions-except={dist_dir}",
            f"--load-extension={dist_dir}",
            *([f"--lang={lang}"] if lang else []),
        ],
        # On Linux, Chromium takes its UI language from the environment; --lang alone is not enough.
        env={**os.environ, "LANGUAGE": lang, "LANG": f"{lang}.UTF-8"} if lang else None,
    )
    context.add_init_script(CSP_LISTENER_JS)
    if not warm_sandbox:
        context.add_init_script("globalThis.__marginSandboxWarmup = false")
    lines: list[str] = []
    page_errors: list[str] = []
    csp_violations: list[str] = []
    pipe_console(context, lines, page_errors, csp_violations)
    try:
        workers = [w for w in context.service_workers if w.url.startswith("chrome-extension://")]
        worker = (
            workers[0]
            if workers
            else context.wait_for_event(
                "serviceworker", predicate=lambda w: w.url.startswith("chrome-extension://"), timeout=20_000
            )
        )
    except Exception as error:
        context.close()
        shutil.rmtree(profile_dir, ignore_errors=True)
        raise RuntimeError(
            f"Chromium did not start the extension's service worker from {dist_dir}: the extension "
            f"probably failed to load (a file the manifest names is missing, or background.js throws "
            f"at import). Load it with `python3 build.py run` to see chrome://extensions errors. ({error})"
        ) from error
    extension_id = worker.url.split("/")[2]
    return Launched(context, extension_id, profile_dir, lines, page_errors, csp_violations)


def poll(
    check: Callable[[], Any], *, timeout: float, interval: float = 0.05, message: str | Callable[[], str] = ""
) -> Any:
    """Call `check` until it returns something truthy; raise AssertionError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout:.1f}s: {text}")
        time.sleep(interval)


# Records every value body[data-turn-state] takes from now on (panel/state.js: idle | starting |
# streaming | stopping), so a test can say which turn states a step went through.
WATCH_TURN_STATES_JS = """() => {
    window.__marginTurnStates = [];
    window.__marginTurnStatesWatch?.disconnect();
    window.__marginTurnStatesWatch = new MutationObserver((records) => {
        for (const record of records) window.__marginTurnStates.push(record.target.dataset.turnState);
    });
    window.__marginTurnStatesWatch.observe(document.body, { attributes: true, attributeFilter: ["data-turn-state"] });
}"""

# Records every sentence the alert line shows from now on (each time text is put into an element
# with role=alert), so a test can say a sentence was shown exactly once.
WATCH_ALERTS_JS = """() => {
    window.__marginAlerts = [];
    window.__marginAlertsWatch?.disconnect();
    window.__marginAlertsWatch = new MutationObserver((records) => {
        for (const record of records) {
            const text = (record.target.textContent || '').trim();
            if (record.addedNodes.length && text) window.__marginAlerts.push(text);
        }
    });
    for (const node of document.querySelectorAll('[role=alert]')) {
        window.__marginAlertsWatch.observe(node, { childList: true });
    }
}"""

BUBBLE_TEXT_JS = """(node) => {
    const copy = node.cloneNode(true);
    copy.querySelectorAll('button, [role=button], [aria-hidden=true], [hidden], .usage-line, .versions').forEach((n) => n.remove());
    return copy.textContent.replace(/\\s+/g, ' ').trim();
}"""


class Margin:
    """The extension under test, driven like a user would (plus storage access for asserts)."""

    def __init__(self, launched: Launched):
        self.launched = launched
        self.context = launched.context
        self.extension_id = launched.extension_id
        self.origin = launched.origin
        self._storage_page: Page | None = None

    # --- pages ---------------------------------------------------------------------------------

    def url(self, path: str) -> str:
        return f"{self.origin}/{path.lstrip('/')}"

    def open_panel(self, *, wait_ready: bool = True) -> Page:
        """sidepanel.html in a tab of its own, once its first paint is done."""
        page = self.context.new_page()
        page.goto(self.url("sidepanel.html"))
        if wait_ready:
            self.wait_panel_ready(page)
        return page

    def wait_panel_ready(self, page: Page, timeout_ms: int = PAGE_TIMEOUT_MS) -> None:
        page.get_by_role("textbox", name="Message").wait_for(state="visible", timeout=timeout_ms)
        page.wait_for_function(
            "() => document.body && document.body.dataset.ready === '1'", timeout=timeout_ms
        )

    def open_options(self) -> Page:
        page = self.context.new_page()
        page.goto(self.url("options.html"))
        page.get_by_role("button", name="Save", exact=True).wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
        # The saved settings fill the form once they arrive: typing before that would be lost.
        page.locator("body[data-ready]").wait_for(state="attached", timeout=COLD_TIMEOUT_MS)
        return page

    # --- storage -------------------------------------------------------------------------------

    def _extension_page(self) -> Page:
        """An extension page that sends no message (so reading storage never wakes the worker)."""
        if self._storage_page is None or self._storage_page.is_closed():
            page = self.context.new_page()
            # The manifest is an extension resource: the page has the extension's origin and
            # chrome.storage, and runs none of Margin's scripts.
            page.goto(self.url("manifest.json"))
            page.wait_for_function("() => !!(globalThis.chrome && chrome.storage && chrome.storage.local)")
            self._storage_page = page
        return self._storage_page

    def storage_get(self, keys: str | list[str] | None, area: str = "local") -> dict[str, Any]:
        return self._extension_page().evaluate(
            "([keys, area]) => chrome.storage[area].get(keys)", [keys, area]
        )

    def history(self) -> list[dict[str, Any]]:
        return self.storage_get(["history"]).get("history", [])

    def storage_set(self, items: dict[str, Any], area: str = "local") -> None:
        self._extension_page().evaluate("([items, area]) => chrome.storage[area].set(items)", [items, area])

    def page_storage_remove(self, *keys: str) -> None:
        """Removes `keys` from the extension pages' localStorage (the side panel's caches)."""
        self._extension_page().evaluate(
            "(keys) => keys.forEach((key) => localStorage.removeItem(key))", list(keys)
        )

    def storage_clear(self) -> None:
        self._extension_page().evaluate(
            "() => Promise.all([chrome.storage.local.clear(), chrome.storage.session.clear()])"
        )

    def send_message(self, message: dict[str, Any], page: Page | None = None) -> Any:
        """chrome.runtime.sendMessage from an extension page; returns the reply envelope."""
        page = page or self._extension_page()
        return page.evaluate("(m) => chrome.runtime.sendMessage(m)", message)

    # --- the service worker --------------------------------------------------------------------

    def _cdp_targets(self) -> list[dict[str, Any]]:
        session = self.context.new_cdp_session(self._extension_page())
        try:
            return session.send("Target.getTargets")["targetInfos"]
        finally:
            session.detach()

    def worker_targets(self) -> list[dict[str, Any]]:
        return [
            t
            for t in self._cdp_targets()
            if t["type"] == "service_worker" and t["url"].startswith(self.origin + "/")
        ]

    # --- Python's memory snapshot (IndexedDB "margin-python", written by background.js) ------------

    def snapshot_count(self) -> int:
        return self._extension_page().evaluate("""() => new Promise((resolve) => {
            const request = indexedDB.open('margin-python');
            request.onupgradeneeded = () => request.transaction.abort();
            request.onerror = () => resolve(0);
            request.onsuccess = () => {
                const db = request.result;
                if (!db.objectStoreNames.contains('snapshots')) { db.close(); return resolve(0); }
                const counted = db.transaction('snapshots').objectStore('snapshots').count();
                counted.onsuccess = () => { db.close(); resolve(counted.result); };
            };
        })""")

    def delete_snapshots(self) -> None:
        """Forget the snapshot: the next cold start boots Python from scratch (a new version's first)."""
        self._extension_page().evaluate("""() => new Promise((resolve, reject) => {
            const request = indexedDB.deleteDatabase('margin-python');
            request.onsuccess = resolve; request.onerror = reject; request.onblocked = resolve; })""")

    def worker_running(self) -> bool:
        return bool(self.worker_targets())

    def watch_worker_starts(self) -> WorkerStarts:
        """Count the extension's service-worker starts from now on, without attaching to it."""
        from worker_starts import WorkerStarts  # it names Margin: imported when used

        return WorkerStarts(self)

    def worker(self) -> Worker:
        """The running service worker (woken by a ping if it was stopped)."""
        self.send_message({"type": "app.ping", "payload": {}})
        return poll(
            lambda: [w for w in self.context.service_workers if w.url.startswith(self.origin)][-1:],
            timeout=COLD_TIMEOUT_MS / 1000,
            message="no service worker",
        )[0]

    def stop_service_worker(self, timeout: float = 15.0) -> None:
        """Stop the extension's service worker over CDP and wait until its target is gone.

        A worker that is still starting (just after launch, or woken by an event) may ignore one
        `stopAllWorkers`, so ask again every second, and close its target as a last resort."""
        session = self.context.new_cdp_session(self._extension_page())
        deadline = time.monotonic() + timeout
        try:
            session.send("ServiceWorker.enable")
            attempt = 0
            while True:
                session.send("ServiceWorker.stopAllWorkers")
                if attempt >= 2:
                    for target in self.worker_targets():
                        with contextlib.suppress(Exception):  # already gone
                            session.send("Target.closeTarget", {"targetId": target["targetId"]})
                try:
                    poll(
                        lambda: not self.worker_running(),
                        timeout=min(1.0, max(0.0, deadline - time.monotonic())),
                    )
                    break
                except AssertionError:
                    if time.monotonic() >= deadline:
                        raise AssertionError(
                            f"the service worker is still running: {self.worker_targets()}"
                        ) from None
                attempt += 1
            session.send("ServiceWorker.disable")
        finally:
            session.detach()

    # --- the options page ----------------------------------------------------------------------

    def configure_provider(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str = "fake-model",
        name: str = "Fake provider",
        provider_type: str = "openai",
        page: Page | None = None,
        system_prompt: str | None = None,
    ) -> Page:
        """Fill the provider form, Save, and wait until the provider is in storage."""
        page = page or self.open_options()
        self.fill_provider_form(
            page,
            base_url=base_url,
            api_key=api_key,
            model=model,
            name=name,
            provider_type=provider_type,
            system_prompt=system_prompt,
        )
        page.get_by_role("button", name="Save", exact=True).click()
        poll(
            lambda: (
                any(
                    p.get("baseUrl") == base_url and p.get("model") == model
                    for p in self.storage_get(["providers"]).get("providers", [])
                )
                and self.storage_get(["activeProviderId"]).get("activeProviderId")
            ),
            timeout=ANSWER_TIMEOUT_MS / 1000,
            message=lambda: (
                f"Save did not store the provider: {self.storage_get(['providers', 'activeProviderId'])}"
            ),
        )
        return page

    def save_provider(
        self, *, base_url: str, api_key: str, model: str = "fake-model", name: str = "Fake provider"
    ) -> dict[str, Any]:
        """Set the active provider through the service worker's `options.save` (no options page)."""
        provider = {
            "id": "fake",
            "type": "openai",
            "name": name,
            "baseUrl": base_url,
            "apiKey": api_key,
            "model": model,
        }
        reply = self.send_message(
            {"type": "options.save", "payload": {"providers": [provider], "activeProviderId": "fake"}}
        )
        if not (isinstance(reply, dict) and reply.get("ok")):
            raise AssertionError(f"options.save failed: {reply!r}")
        return reply["value"]

    def fill_provider_form(
        self,
        page: Page,
        *,
        base_url: str,
        api_key: str,
        model: str,
        name: str = "Fake provider",
        provider_type: str = "openai",
        system_prompt: str | None = None,
    ) -> None:
        kind = page.get_by_role("combobox", name="Provider type")
        kind.wait_for(state="visible")
        if kind.evaluate("e => e.tagName") == "SELECT":
            values = kind.evaluate("e => [...e.options].map(o => [o.value, o.textContent])")
            value = next((v for v, _ in values if v == provider_type), None) or next(
                v for v, label in values if provider_type.lower() in (v + label).lower()
            )
            kind.select_option(value)
        for label, value in (("Name", name), ("Base URL", base_url), ("API key", api_key)):
            page.get_by_role("textbox", name=label, exact=True).fill(value)
        self.model_field(page).fill(model)
        if system_prompt is not None:
            page.get_by_role("textbox", name="System prompt", exact=True).fill(system_prompt)

    @staticmethod
    def model_field(page: Page):
        """The options page's "Model" field: a combobox (an input with a list of the provider's models)."""
        return page.get_by_role("combobox", name="Model", exact=True)

    @staticmethod
    def switch_model(page: Page, item_name: str) -> None:
        """In the panel: open the model chip's menu and choose "<provider name> — <model>"."""
        page.get_by_role("button", name=MODEL_CHIP_NAME).click()
        page.get_by_role("menuitemradio", name=item_name, exact=True).click()

    # --- the side panel ------------------------------------------------------------------------

    @staticmethod
    def message_box(page: Page):
        return page.get_by_role("textbox", name="Message")

    @staticmethod
    def bubbles(page: Page, role: str | None = None):
        return page.locator(f"article[data-role={role}]" if role else "article[data-role]")

    def bubble_texts(self, page: Page, role: str | None = None) -> list[str]:
        """What each bubble says, whitespace collapsed, without its buttons and hidden decorations."""
        return self.bubbles(page, role).evaluate_all(f"(nodes) => nodes.map({BUBBLE_TEXT_JS})")

    def send(self, page: Page, text: str) -> None:
        """Type into "Message" and press Enter (remembers how many answers were shown before)."""
        page._margin_answers_before = self.bubbles(page, "assistant").count()  # type: ignore[attr-defined]
        box = self.message_box(page)
        box.fill(text)
        box.press("Enter")

    def wait_idle(self, page: Page, timeout_ms: int = COLD_TIMEOUT_MS) -> None:
        """Until no turn is streaming: "Stop" is gone, "Send" is back, the turn state is idle."""
        page.get_by_role("button", name="Stop").wait_for(state="hidden", timeout=timeout_ms)
        page.get_by_role("button", name="Send").wait_for(state="visible", timeout=timeout_ms)
        self.wait_turn_state(page, "idle", timeout_ms=timeout_ms)

    @staticmethod
    def turn_state(page: Page) -> str | None:
        return page.evaluate("() => document.body.dataset.turnState ?? null")

    @staticmethod
    def wait_turn_state(page: Page, state: str, timeout_ms: int = COLD_TIMEOUT_MS) -> None:
        """Until body[data-turn-state] is `state` (idle | starting | streaming | stopping)."""
        page.wait_for_function(
            "(state) => document.body.dataset.turnState === state", arg=state, timeout=timeout_ms
        )

    @staticmethod
    def watch_turn_states(page: Page) -> None:
        """Start recording the turn states the panel goes through (read them with `turn_states`)."""
        page.evaluate(WATCH_TURN_STATES_JS)

    @staticmethod
    def turn_states(page: Page) -> list[str]:
        """Every turn state the panel took since `watch_turn_states`, in order."""
        return page.evaluate("() => window.__marginTurnStates.slice()")

    def round_trip(self, page: Page) -> None:
        """One request from the panel to the worker and its answer (`app.ping`): what the panel
        sent before it has reached the worker, and the worker is answering."""
        reply = page.evaluate("() => chrome.runtime.sendMessage({ type: 'app.ping', payload: {} })")
        if not (isinstance(reply, dict) and reply.get("ok")):
            raise AssertionError(f"app.ping failed: {reply!r}")

    def wait_answer(self, page: Page, timeout_ms: int = COLD_TIMEOUT_MS, *, before: int | None = None) -> str:
        """Until a new answer is complete (more assistant bubbles than `before`, the answer stored,
        "Send" back); returns its text. `before` defaults to the count `send()` saw.

        Raises with the alert's text if the turn failed instead."""
        if before is None:
            before = getattr(page, "_margin_answers_before", 0)
        alert = page.get_by_role("alert")

        def done() -> bool:
            failed = alert.evaluate_all(VISIBLE_ALERT_TEXT_JS)
            if failed:
                raise AssertionError(f"the turn failed: {failed!r}")
            if self.bubbles(page, "assistant").count() <= before:
                return False
            if page.get_by_role("button", name="Stop").count():
                return False
            history = self.history()
            return bool(history) and history[-1].get("role") == "assistant"

        poll(
            done,
            timeout=timeout_ms / 1000,
            interval=0.1,
            message=lambda: f"no answer; history={self.history()}",
        )
        self.wait_idle(page)
        return self.bubble_texts(page, "assistant")[-1]

    @staticmethod
    def watch_alerts(page: Page) -> None:
        """Start recording the sentences the alert line shows (read them with `alerts`)."""
        page.evaluate(WATCH_ALERTS_JS)

    @staticmethod
    def alerts(page: Page) -> list[str]:
        """Every sentence the alert line showed since `watch_alerts`, in order (once per showing)."""
        return page.evaluate("() => window.__marginAlerts.slice()")

    def wait_alert(self, page: Page, timeout_ms: int = COLD_TIMEOUT_MS) -> str:
        alert = page.get_by_role("alert").filter(has_text=re.compile(r"\S"))
        alert.first.wait_for(state="visible", timeout=timeout_ms)
        return alert.first.inner_text().strip()
