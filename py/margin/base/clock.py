"""Wall-clock time as the storage model writes it: integer milliseconds since the Unix epoch.

One function, so every record, session and cache entry is stamped the same way, and a test can
freeze time in one place (`monkeypatch.setattr(clock, "now_ms", ...)`).
"""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)
