"""Waiting on the network while the user may press Stop: what a turn and a summary pass share.

Rules:
1. Every wait on the provider races the stop event (`race`): Stop is prompt even while a read
   hangs. A stop raises `Stopped`; an idle `timeout` raises a `timeout` ProviderError that names
   `what` was given up.
2. The abandoned wait is cancelled and awaited; its own outcome no longer matters.
3. An event sink that fails (the panel's port is gone) is a stop too (`guarded_emit`): nobody is
   listening any more, so the work ends instead of streaming into the void.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import ProviderError
from .sentences import Sentence, sentence

WAITED_ANSWER = sentence("py_error_waited_answer")

Emit = Callable[[dict[str, Any]], None]


class Stopped(Exception):
    """The user stopped the work (or closed the panel)."""


async def race(
    awaitable: Awaitable[Any],
    stop: asyncio.Event,
    *,
    timeout: float | None = None,
    what: Sentence | str = WAITED_ANSWER,
) -> Any:
    """Await `awaitable`, unless stop comes first (Stopped) or `timeout` passes (rule 1); `what`
    names the wait in the timeout's sentence (a py_error_waited_* sentence)."""
    if stop.is_set():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise Stopped()
    work = asyncio.ensure_future(awaitable)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({work, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if work in done:
        return work.result()
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):  # rule 2
        await work
    if stop.is_set():
        raise Stopped()
    raise ProviderError.said("timeout", "py_error_idle_timeout", int(timeout or 0), what)


def guarded_emit(emit: Emit, stop: asyncio.Event) -> Emit:
    """`emit` that never raises: once it failed, `stop` is set and later events are dropped (rule 3)."""
    gone = False

    def send(event: dict[str, Any]) -> None:
        nonlocal gone
        if gone:
            return
        try:
            emit(event)
        except Exception:  # whatever the bridge raised, the port is gone: rule 3
            gone = True
            stop.set()

    return send
