"""A whole backup: every session (images included), the open conversation and the settings, as one
file that streams between the worker and the panel over a port, in both directions.

File format (version 1, JSON; files of earlier exports read the same):
    {format: "margin-backup", version: 1, exportedAt,
     settings: {providers, uiLanguage, summarizeAboveChars, prompts?},
     current: {history, historySessionId},
     sessions: [{...index entry, history}]}          # history = the body's records, verbatim
`format` and `version` come before `sessions`; the other members may come in any order. API keys
are blanked ("") unless the user asked to include them. A session whose body is missing is
exported with `history: null` and `damaged: "missing"`; one (or an open conversation) Margin cannot
read whole is exported as stored with `damaged: "unreadable"`: the file says what was lost, and
the importer skips what is marked.

The port (`backup.stream`, docs/protocol.md): the panel's first message is
`{action: "export", includeApiKeys}` or `{action: "import"}`.
- Export (margin.backup.exporter): `start {filename, mimeType, sessions}`, then `chunk {seq, text}`
  (the panel answers each with `{ack: seq}`) and `progress {sessions, total}`, then `done {chars}`.
- Import (margin.backup.importer): the worker asks `more`; the panel answers `{chunk: text}`, or
  `{end: true}` after the last one; `progress {sessions, chars}` follows each session read, and
  `done {result}` the commit. Chunks are at most PORT_CHUNK_CHARS characters, so no message nears
  Chrome's 64 MiB limit whatever the file's size.
Either way `error {error}` ends the port instead, and closing the port stops the work (an import
then removes what it staged).

Rules:
1. Validate first, show nothing of a bad file: everything is checked before the import commits,
   and a refused file leaves storage as it was (margin.backup.importer, rules 1-3).
2. Merge, never overwrite: a session that is here already is skipped or imported as a copy beside
   ours (margin.backup.importer, rule 2).
3. A worker stopped mid-import leaves nothing visible and loses nothing: what it staged is removed
   at the next worker start, or by the next import (`recover`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from ..base.errors import MarginError
from ..base.stoppable import Stopped
from ..platform.ports import PORT_CHUNK_CHARS, Platform
from ..settings import options
from ..storage.keys import lock_for
from . import importer as backup_import
from .exporter import Emit, Receive, export_backup

FORMAT = backup_import.FORMAT
VERSION = backup_import.VERSION


async def run(platform: Platform, start: Any, emit: Emit, stop: asyncio.Event, receive: Receive) -> None:
    """One backup port, from its first message to its last event (the worker's `run_backup_json`)."""
    action = start.get("action") if isinstance(start, dict) else None
    try:
        if action == "export":
            await export_backup(platform, start.get("includeApiKeys") is True, emit, receive)
        elif action == "import":

            async def read() -> str | None:
                emit({"event": "more"})
                message = await receive()
                if isinstance(message, dict):
                    if message.get("end") is True:
                        return None
                    if isinstance(message.get("chunk"), str):
                        return message["chunk"]
                raise MarginError.said("bad_payload", "py_error_backup_not_file")

            await options.ensure_spoken(platform)  # the result's message is said in the user's language
            async with lock_for(platform.local):
                result = await backup_import.import_backup(platform.local, read, emit)
            emit({"event": "done", "result": result})
        else:
            raise MarginError.said("bad_payload", "py_error_backup_bad_start")
    except Stopped:
        return  # the panel is gone (an import rolled back what it staged)


async def recover(platform: Platform) -> int:
    """Remove what an import stopped mid-way staged (rule 3); the keys removed."""
    async with lock_for(platform.local):
        return await backup_import.recover(platform.local)


# -- the same streams without a port (tests, the benchmark, the DevTools console) ------------------


async def export_text(
    platform: Platform, include_api_keys: bool = False, chunk_chars: int = PORT_CHUNK_CHARS
) -> tuple[str, list[dict[str, Any]]]:
    """The whole file as one string, and the events the panel would have received."""
    events: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        sent = [e["seq"] for e in events if e.get("event") == "chunk"]
        return {"ack": sent[-1]}

    await export_backup(platform, include_api_keys, events.append, receive, chunk_chars)
    return "".join(e["text"] for e in events if e["event"] == "chunk"), events


async def import_chunks(
    platform: Platform, chunks: Iterable[str], on_event: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Import a file given as text chunks, as the port does; returns the result (or raises)."""
    pieces = iter(chunks)

    async def read() -> str | None:
        return next(pieces, None)

    async with lock_for(platform.local):
        return await backup_import.import_backup(platform.local, read, on_event or (lambda event: None))


async def import_text(platform: Platform, text: str, chunk_chars: int = PORT_CHUNK_CHARS) -> dict[str, Any]:
    return await import_chunks(
        platform, (text[i : i + chunk_chars] for i in range(0, len(text), chunk_chars))
    )
