"""The user's stored data the reliability cases start from, built through the real code paths."""

from __future__ import annotations

import asyncio
from typing import Any

from margin import sessions
from margin.session_index import stored_entries


def save_as_s1(platform: Any, saved: list[dict[str, Any]]) -> None:
    """Saves the conversation `saved` as a session (New session, as the user does), then gives it
    the id the corpus names, "s1": its entry, body and digest together."""
    run = asyncio.run
    run(platform.local.set({"history": saved}))
    run(sessions.handle_new(platform, {}))
    [entry] = stored_entries(platform.local.snapshot())
    keys = [f"session_{entry['id']}", f"sessionDigest_{entry['id']}"]
    body, digest = (run(platform.local.get(keys))[k] for k in keys)
    run(platform.local.remove([*keys, f"sessionEntry_{entry['id']}"]))
    run(
        platform.local.set(
            {
                "savedSessions": {"layout": 2, "ids": ["s1"]},
                "sessionEntry_s1": {**entry, "id": "s1"},
                "session_s1": body,
                "sessionDigest_s1": digest,
            }
        )
    )
