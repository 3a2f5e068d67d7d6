"""The running worker: what one service-worker instance holds in memory, in one object.

A `Worker` holds the platform, the sink that sends port events (a turn's, a summary pass's) to
their panel, the stop signals of the turns and summary passes it runs and its boot record. The
JS shell (extension/background.js) builds none of it: it calls the methods of the one browser
Worker, `browser_worker()`; tests build their own `Worker(memory_platform(), sink)`.

Rules:
1. Every entry point takes and returns JSON strings or plain numbers (no Python proxies
   cross the boundary), except a port's data (a turn's start, a summary's, a backup's messages),
   which may come as UTF-8 bytes of JSON: Pyodide converts a large JS string at ~11 MB/s, bytes
   at memory speed (`_json_text`). Requests and the worker's own events go through
   `api.dispatch`'s envelope. JSON is read and written by `margin.base.wire`: NaN and Infinity are
   refused both ways (a payload holding them is `bad_payload`; a reply holding one is its
   `not_finite_number` error).
2. `app.ping` is answered here, with the boot record `record_boot` keeps (how long Python took
   to start, and whether from a snapshot).
3. A turn's events go to `post_event(turn_id, event)`, which says False when the panel's port is
   gone: the turn then stops. A stop may arrive before its turn's task runs (Python still
   booting): it is remembered and applied when the turn starts. A summary pass
   (`run_summary_json`, margin.page.summaries) is run the same way, on its own port, and so is a
   backup (`run_backup_json`, margin.backup.stream), whose port also carries messages from the panel to
   the running work: `backup_message` queues each one for it, in order.
4. Entry points with nobody to answer (a turn's or a summary's port, the site caches' purge
   listeners) report or log every failure themselves; only Pyodide failing reaches the JS shell.
5. `browser_worker()` imports `margin.platform.browser` (and so touches JS) only when first called, after
   the memory snapshot was taken: importing this module is safe before it.
6. Arrival order: the shell calls `dispatch_json`, `run_turn_json` and `run_summary_json` in the
   order the requests arrived (background.js's `inArrivalOrder`, across a cold boot too); each
   call starts its task in that order and runs without awaiting until its handler takes
   `storage.lock_for(local)`, whose waiters are served first come, first served. So requests
   that touch the same keys are handled in arrival order (a Save, then a send: the turn reads
   the saved provider, margin.settings.options rule 9).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..base import wire
from ..base.errors import MarginError
from ..base.stoppable import race
from ..platform.ports import Platform
from ..settings import options
from ..turn import chat, explain
from . import api

# Sends one event to the panel's port (a turn's or a summary pass's); False when the port is gone.
PostEvent = Callable[[str, dict[str, Any]], bool]


def _json_text(value: Any) -> str | bytes:
    """A port's message as the shell passes it: text, or UTF-8 bytes (a JS Uint8Array arrives as
    a proxy with `to_bytes()`; the shell sends bulk data so, docs/protocol.md)."""
    if isinstance(value, (str, bytes)):
        return value
    return bytes(value.to_bytes())


class Worker:
    def __init__(self, platform: Platform, post_event: PostEvent):
        self.platform = platform
        self.post_event = post_event
        self.boot: dict[str, Any] = {"bootMs": None, "bootedFrom": None}
        self._turn_stops: dict[str, asyncio.Event] = {}
        self._early_stops: set[str] = set()
        self._inboxes: dict[str, asyncio.Queue[Any]] = {}
        self._own_handlers: dict[str, api.Handler] = {"app.ping": self._handle_ping}

    # -- requests -------------------------------------------------------------------------------

    def record_boot(self, boot_ms: int, booted_from: str) -> None:
        """The shell says how long Python took to start, and how ("snapshot" or "fresh")."""
        self.boot = {"bootMs": boot_ms, "bootedFrom": booted_from}

    async def _handle_ping(self, platform: Platform, payload: dict) -> dict[str, Any]:
        return {**await api.handle_ping(platform, payload), **self.boot}

    async def dispatch_json(
        self, name: str, payload_json: str, tier: str, handler: api.Handler | None = None
    ) -> str:
        """The shell's onMessage handler calls this: JSON string in, JSON envelope string out."""
        try:
            payload = wire.loads(payload_json)
        except ValueError:
            await options.ensure_spoken(self.platform)
            return wire.dumps(api.failure(_not_json()))
        reply = await api.dispatch(
            self.platform, name, payload, tier, handler or self._own_handlers.get(name)
        )
        try:
            return wire.dumps(reply, root="reply")
        except wire.NotFiniteError as error:
            return wire.dumps(api.failure(error))

    async def explain_queue_json(self, info_json: str) -> str:
        """The context menu's "Explain with Margin" was clicked (margin.turn.explain, rule 1)."""
        return await self.dispatch_json("explain.queue", info_json, "extension", explain.queue)

    # -- turns ----------------------------------------------------------------------------------

    async def run_turn_json(self, turn_id: str, start_json: Any) -> None:
        """The shell's turn port calls this once per turn; events go back through `post_event`.
        The panel's later messages on the port (a code run's result, margin.sandbox.tool_turn) are queued
        for the turn by `turn_message`, as a backup's are (rule 3)."""
        await self._run_port_with_inbox(turn_id, start_json, chat.run_turn, what="the code run")

    def turn_message(self, turn_id: str, message_json: Any) -> None:
        """A later message on a turn's port: a tool call's result, queued for the turn. It answers
        a call the running turn sent, so a turn that is over (stopped, finished) drops it."""
        inbox = self._inboxes.get(turn_id)
        if inbox is not None:
            inbox.put_nowait(wire.loads(_json_text(message_json)))

    def stop_turn(self, turn_id: str) -> None:
        """Stop a turn. The shell calls this only for a turn it started and that has not finished,
        so an unknown id is a turn whose task has not run yet: remember the stop for it (rule 3)."""
        self._stop(turn_id)
        self._inboxes.pop(turn_id, None)

    # -- summary passes -------------------------------------------------------------------------

    async def run_summary_json(self, port_id: str, ident_json: Any) -> None:
        """The shell's summary port calls this once, with `{capturedAt, url}` (margin.page.summaries)."""
        from ..page import summaries  # on first use: outside the preloaded modules, so a boot skips it

        await self._run_port(port_id, ident_json, summaries.summarize)

    def stop_summary(self, port_id: str) -> None:
        """Cancel a summary pass; like `stop_turn` (rule 3)."""
        self._stop(port_id)

    # -- backups ------------------------------------------------------------------------------

    async def run_backup_json(self, port_id: str, start_json: Any) -> None:
        """The shell's backup port calls this once, with its first message (margin.backup.stream)."""
        from ..backup import stream as backup  # on first use: a boot need not load the backup modules

        await self._run_port_with_inbox(port_id, start_json, backup.run, what="the backup")

    async def _run_port_with_inbox(
        self, port_id: str, start_json: Any, work: Callable[..., Any], *, what: str
    ) -> None:
        """`_run_port` for work that also reads the port's later messages: they are queued in the
        port's inbox, and `work(platform, start, emit, stop, receive)` awaits the next with
        `receive()`, which a stop ends (margin.base.stoppable.race; `what` names the wait)."""
        inbox = self._inboxes.setdefault(port_id, asyncio.Queue())

        async def run(
            platform: Platform, start: Any, emit: Callable[[dict], None], stop: asyncio.Event
        ) -> None:
            async def receive() -> Any:
                return await race(inbox.get(), stop, what=what)

            await work(platform, start, emit, stop, receive)

        try:
            await self._run_port(port_id, start_json, run)
        finally:
            self._inboxes.pop(port_id, None)

    def backup_message(self, port_id: str, message_json: Any) -> None:
        """A later message on a backup port (a chunk of the file, an ack): queued for its work. It
        may arrive before the work's task runs, so the queue is made by whichever comes first."""
        self._inboxes.setdefault(port_id, asyncio.Queue()).put_nowait(wire.loads(_json_text(message_json)))

    def stop_backup(self, port_id: str) -> None:
        """The backup port closed or said stop; like `stop_turn` (rule 3)."""
        self._stop(port_id)
        self._inboxes.pop(port_id, None)

    async def backup_recover(self) -> None:
        """A worker start found an import's staged keys: remove them (margin.backup.stream, rule 3)."""
        from ..backup import stream as backup  # on first use: a boot need not load the backup modules

        try:
            await backup.recover(self.platform)
        except Exception as exc:
            api.internal_error(exc)

    # -- what both ports share ------------------------------------------------------------------

    async def _run_port(
        self,
        port_id: str,
        start_json: Any,
        run: Callable[[Platform, Any, Callable[[dict], None], asyncio.Event], Awaitable[None]],
    ) -> None:
        stop = self._turn_stops[port_id] = asyncio.Event()
        if port_id in self._early_stops:
            self._early_stops.discard(port_id)
            stop.set()

        def emit(event: dict[str, Any]) -> None:
            if not self.post_event(port_id, event):
                stop.set()

        try:
            try:
                start = wire.loads(_json_text(start_json))
            except ValueError:
                raise _not_json() from None
            await run(self.platform, start, emit, stop)
        except MarginError as error:
            await options.ensure_spoken(self.platform)
            emit({"event": "error", "error": error.to_json()})
        except Exception as exc:
            await options.ensure_spoken(self.platform)
            emit({"event": "error", "error": api.internal_error(exc).to_json()})
        finally:
            self._turn_stops.pop(port_id, None)

    def _stop(self, port_id: str) -> None:
        stop = self._turn_stops.get(port_id)
        if stop is None:
            self._early_stops.add(port_id)
        else:
            stop.set()

    # -- the site caches' listeners ---------------------------------------------------------------

    async def site_cache_event(self, kind: str, tab_id: int, url: str | None) -> None:
        """A purge listener of the site caches fired (margin.page.site_caches, rule 3)."""
        from ..page import site_caches  # on first use: only a tab event or a restore needs it

        try:
            await site_caches.on_tab_event(self.platform, kind, int(tab_id), url)
        except Exception as exc:
            api.internal_error(exc)

    async def site_cache_restore(self) -> None:
        """A worker start found site-cache entries: restore them now (margin.page.site_caches, rule 3)."""
        from ..page import site_caches  # on first use: only a tab event or a restore needs it

        try:
            await site_caches.restore(self.platform)
        except Exception as exc:
            api.internal_error(exc)


def _not_json() -> MarginError:
    return MarginError.said("bad_payload", "py_error_request_not_json")


_browser: Worker | None = None


def browser_worker() -> Worker:
    """The service worker's one Worker, built on first use (rule 5)."""
    global _browser
    if _browser is None:
        # Here, not at the top: it imports `js`, which must not be touched before the memory snapshot.
        from ..platform.browser import browser_platform, post_turn_event

        _browser = Worker(browser_platform(), post_turn_event)
    return _browser
