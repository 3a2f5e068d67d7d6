"""Telling what a user reads after a request, under a language setting: the helpers of the tests of
Python's converted sentences (test_i18n_converted.py, test_i18n_backup_sentences.py)."""

from __future__ import annotations

import json
from asyncio import Event

from helpers import run
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.app import api
from margin.backup import stream as backup
from margin.storage.keys import ACTIVE_PROVIDER_ID, PROVIDERS, UI_LANGUAGE
from margin.turn import chat

PROVIDER = {"baseUrl": "https://api.example.com/v1", "model": "m-1", "apiKey": "sk-x"}
OLLAMA = {"id": "o", "type": "openai", "name": "Ollama", "baseUrl": "http://localhost:11434/v1", "model": "m"}


def told(language: str, request: tuple) -> str:
    """The sentence the user reads for `request` ((name, payload[, handler[, responses]])) under
    the language setting; a "turn" request is a chat turn (its payload is the provider, its
    handler the turn's start, a question by default)."""
    name, payload, handler, responses = (*request, None, ())[:4] if len(request) == 2 else (*request, ())[:4]
    transport = ScriptedTransport([replied(*response) for response in responses])
    if name == "turn":
        settings = {PROVIDERS: [payload], ACTIVE_PROVIDER_ID: payload["id"], UI_LANGUAGE: language}
        platform = memory_platform(settings, transport)
        events: list[dict] = []
        start = handler or {"action": "send", "text": "hi", "images": []}
        run(chat.run_turn(platform, start, events.append, Event()))
        return next(e["error"]["message"] for e in events if e["event"] == "error")
    platform = memory_platform({UI_LANGUAGE: language}, transport)
    reply = run(api.dispatch(platform, name, payload, handler=handler))
    return reply["error"]["message"] if not reply["ok"] else reply["value"]["message"]


def replied(body: str, content_type: str = "text/event-stream", status: int = 200) -> ScriptedResponse:
    return ScriptedResponse(status=status, chunks=[body], headers={"content-type": content_type})


ANTHROPIC = {**PROVIDER, "id": "a", "type": "anthropic", "baseUrl": "https://api.anthropic.com/v1"}
GEMINI = {
    **PROVIDER,
    "id": "g",
    "type": "gemini",
    "baseUrl": "https://generativelanguage.googleapis.com/v1beta",
}
RESPONSES = {**PROVIDER, "id": "r", "type": "openai-responses", "baseUrl": "https://api.openai.com/v1"}


def save(*providers, **settings) -> tuple[str, dict]:
    return "options.save", {"providers": list(providers), **settings}


def backup_import(text: str) -> tuple:
    async def importing(platform, payload):
        return await backup.import_text(platform, text)

    return "backup.import", {}, importing


BACKUP = {"format": "margin-backup", "version": 1}


def imported(language: str, members: dict) -> str:
    """The summary the sessions panel shows after importing `members` over the backup port."""
    platform = memory_platform({UI_LANGUAGE: language})
    pieces = iter([{"chunk": json.dumps({**BACKUP, **members})}, {"end": True}])
    events: list[dict] = []

    async def receive():
        return next(pieces)

    run(backup.run(platform, {"action": "import"}, events.append, Event(), receive))
    return next(e["result"]["message"] for e in events if e["event"] == "done")


def saved_session(number: int) -> dict:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    return {"id": f"s{number}", "name": f"S{number}", "savedAt": 1000 + number, "history": history}
