"""Counting the service worker's starts from the outside (`Margin.watch_worker_starts()`), for the
tests that prove a step wakes no worker."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness import Margin


class WorkerStarts:
    """Starts of the extension's service worker from now on, seen in the browser's target list
    over CDP (`Target.getTargets`): it observes, it never attaches. A started worker lives at
    least 30 s (Chrome's idle timeout), so sampling the list after each step misses no start."""

    def __init__(self, margin: Margin):
        self._margin = margin
        self._running = margin.worker_running()
        self.starts = 0

    def sample(self) -> None:
        running = self._margin.worker_running()
        if running and not self._running:
            self.starts += 1
        self._running = running

    def watch_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sample()
            time.sleep(0.1)

    @property
    def count(self) -> int:
        self.sample()
        return self.starts

    def close(self) -> None:
        pass
