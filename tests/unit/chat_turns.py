"""A chat turn driven against the memory platform and a scripted provider, for the chat tests.

`Turn(local, responses, **storage)` runs `chat.run_turn` and records its events; `answer(...)`
is a streamed Chat Completions reply; `send(text, images)` a turn's start message.
"""

import asyncio
import json

from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.turn import chat

PROVIDER = {
    "id": "p",
    "type": "openai",
    "name": "Local",
    "baseUrl": "http://localhost:11434/v1",
    "apiKey": "",
    "model": "llama3.2",
}
SETTINGS = {"providers": [PROVIDER], "activeProviderId": "p"}
PNG = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def sse(*items):
    return "".join(f"data: {i if isinstance(i, str) else json.dumps(i)}\n\n" for i in items)


def delta(text, finish=None):
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


def answer(*pieces, usage=None):
    items = [delta(p) for p in pieces] + [delta("", "stop")]
    if usage:
        items.append({"choices": [], "usage": usage})
    return ScriptedResponse(chunks=[sse(i) for i in items] + [sse("[DONE]")])


class HangingResponse:
    """Sends its chunks, then never sends anything again (a pending read), until aborted."""

    status = 200

    def __init__(self, *chunks):
        self.headers = {"content-type": "text/event-stream"}
        self.chunks = list(chunks)
        self.closed = False
        self._forever = asyncio.Event()

    async def read_chunk(self):
        if self.chunks:
            return self.chunks.pop(0)
        await self._forever.wait()

    async def aclose(self):
        self.closed = True


class Turn:
    """One run_turn with recorded events."""

    def __init__(self, local=None, responses=(), **storage):
        self.transport = ScriptedTransport(list(responses))
        self.platform = memory_platform({**SETTINGS, **(local or {})}, self.transport, **storage)
        self.events = []
        self.stop = asyncio.Event()

    def emit(self, event):
        self.events.append(event)

    async def run(self, start):
        self.stop = asyncio.Event()
        await asyncio.wait_for(chat.run_turn(self.platform, start, self.emit, self.stop), 5)

    @property
    def kinds(self):
        return [e["event"] for e in self.events]

    @property
    def history(self):
        return self.platform.local.snapshot().get("history", [])

    @property
    def texts(self):
        return [
            (r["role"], r["content"] if isinstance(r["content"], str) else r["content"][0].get("text"))
            for r in self.history
        ]

    def request(self, index=-1):
        return self.transport.json_bodies()[index]


def send(text, images=()):
    return {"action": "send", "text": text, "images": list(images)}
