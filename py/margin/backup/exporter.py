"""Exporting a backup as a stream of text chunks, one session at a time.

Rules:
1. The file is written as it is read: its head (format, version, date, settings, the open
   conversation), then the sessions one by one, each read from storage alone; at most one body is
   in memory at a time, whatever the total.
2. The text goes out in `chunk` events of at most PORT_CHUNK_CHARS characters (a session longer
   than that is split across chunks), so no message nears Chrome's 64 MiB. The panel joins them
   into a Blob. At most WINDOW chunks are unacknowledged: the panel acks each one, so a slow page
   never has the whole file queued in the worker.
3. The index, the open conversation and the settings are read together under the storage lock;
   the bodies after it, each read being atomic. A body that is gone by then is exported as
   `history: null, damaged: "missing"`, as is a body lost before; a body (or the open
   conversation) that is not a list, or holds records Margin cannot read, is exported as it is
   stored, with `damaged: "unreadable"`: the file says what Margin could not read, and still
   carries it. The importer skips what the file marks damaged (margin.backup.check, rule 3).
4. API keys are blanked ("") unless the user asked to include them.
5. The saved prompts go with the settings (`settings.prompts`) once the user saved any: built-ins
   as their ids, the user's own with their words (margin.settings.prompts rule 1).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from ..base import clock, wire
from ..images import originals as image_originals
from ..platform.ports import PORT_CHUNK_CHARS, Platform
from ..sessions import index as s
from ..sessions.search import sort_entries
from ..settings.prompts import read_prompts
from ..storage.history import parse_history
from ..storage.keys import (
    HISTORY,
    HISTORY_SESSION_ID,
    MCP_SERVERS,
    PROMPTS,
    PROVIDERS,
    SUMMARIZE_ABOVE_CHARS,
    UI_LANGUAGE,
    get_all,
    lock_for,
)
from ..tools import servers as mcp_servers
from .importer import FORMAT, VERSION

WINDOW = 4
Emit = Callable[[dict[str, Any]], None]
Receive = Callable[[], Awaitable[dict[str, Any]]]


class _ChunkedOut:
    """Text in, `chunk` events out, at most WINDOW of them unacknowledged (rule 2)."""

    def __init__(self, emit: Emit, receive: Receive, chunk_chars: int):
        self.emit = emit
        self.receive = receive
        self.chunk_chars = chunk_chars
        self.pending: list[str] = []
        self.pending_chars = 0
        self.sent = 0
        self.acked = 0
        self.chars = 0

    async def write(self, text: str) -> None:
        self.pending.append(text)
        self.pending_chars += len(text)
        self.chars += len(text)
        if self.pending_chars >= self.chunk_chars:
            joined = "".join(self.pending)
            whole = len(joined) - len(joined) % self.chunk_chars
            for start in range(0, whole, self.chunk_chars):
                await self._send(joined[start : start + self.chunk_chars])
            rest = joined[whole:]
            self.pending, self.pending_chars = ([rest], len(rest)) if rest else ([], 0)

    async def close(self) -> None:
        if self.pending_chars:
            await self._send("".join(self.pending))
        self.pending, self.pending_chars = [], 0
        while self.acked < self.sent:
            await self._wait_ack()

    async def _send(self, text: str) -> None:
        while self.sent - self.acked >= WINDOW:
            await self._wait_ack()
        self.sent += 1
        self.emit({"event": "chunk", "seq": self.sent, "text": text})

    async def _wait_ack(self) -> None:
        message = await self.receive()
        ack = message.get("ack") if isinstance(message, dict) else None
        if isinstance(ack, int) and not isinstance(ack, bool) and self.acked < ack <= self.sent:
            self.acked = ack


def _settings(light: dict[str, Any], include_api_keys: bool, saved_prompts: Any) -> dict[str, Any]:
    providers = []
    for provider in light[PROVIDERS] if isinstance(light[PROVIDERS], list) else []:
        if isinstance(provider, dict):
            provider = dict(provider)
            if not include_api_keys and "apiKey" in provider:
                provider["apiKey"] = ""
            providers.append(provider)
    settings = {
        "providers": providers,
        UI_LANGUAGE: light[UI_LANGUAGE],
        SUMMARIZE_ABOVE_CHARS: light[SUMMARIZE_ABOVE_CHARS],
    }
    if saved_prompts is not None:  # rule 5
        settings[PROMPTS] = read_prompts(saved_prompts).value
    return settings


def _unreadable(raw: Any) -> bool:
    """A history Margin cannot read whole (not a list, or records it cannot read)."""
    return not isinstance(raw, list) or parse_history(raw).unreadable_raw is not None


def filename_for(exported_at: int) -> str:
    day = datetime.fromtimestamp(exported_at / 1000, tz=UTC).strftime("%Y-%m-%d")
    return f"margin-backup-{day}.json"


async def export_backup(
    platform: Platform,
    include_api_keys: bool,
    emit: Emit,
    receive: Receive,
    chunk_chars: int = PORT_CHUNK_CHARS,
) -> None:
    area = platform.local
    async with lock_for(area):
        entries = sort_entries(await (await s.read_session_index(area)).entries())
        current = await area.get([HISTORY, HISTORY_SESSION_ID, PROMPTS, MCP_SERVERS])
        # The open conversation's thumbnails get their originals back: the file holds what the
        # user sent, never a reference to a key it does not carry (margin.images.originals).
        current[HISTORY] = await image_originals.inline(area, current.get(HISTORY, []))
        light = await get_all(area)
    exported_at = clock.now_ms()
    total = len(entries)
    emit(
        {
            "event": "start",
            "filename": filename_for(exported_at),
            "mimeType": "application/json",
            "sessions": total,
        }
    )
    out = _ChunkedOut(emit, receive, chunk_chars)
    current_part: dict[str, Any] = {
        "history": current.get(HISTORY, []),
        "historySessionId": current.get(HISTORY_SESSION_ID),
    }
    if _unreadable(current_part["history"]):
        current_part["damaged"] = "unreadable"
    head = {
        "format": FORMAT,
        "version": VERSION,
        "exportedAt": exported_at,
        "settings": {
            **_settings(light, include_api_keys, current.get(PROMPTS)),
            **mcp_servers.for_backup(current.get(MCP_SERVERS), include_api_keys),  # headers as API keys
        },
        "current": current_part,
    }
    await out.write(wire.dumps(head, root="backup")[:-1] + ', "sessions": [')
    for done, entry in enumerate(entries, 1):
        stored = await area.get([entry.body_key])  # one body at a time (rule 1)
        raw = s.body_history(stored.get(entry.body_key))
        item: dict[str, Any] = {**entry.to_json(), "history": raw}
        item.pop("damaged", None)
        if entry.body_key not in stored:
            item["damaged"] = "missing"
        elif _unreadable(raw):
            item["damaged"] = "unreadable"
        await out.write(("\n" if done == 1 else ",\n") + wire.dumps(item, root="backup.sessions"))
        del stored, raw, item
        emit({"event": "progress", "sessions": done, "total": total})
    await out.write("\n]}")
    await out.close()
    emit({"event": "done", "chars": out.chars})
