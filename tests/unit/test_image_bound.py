"""images.bound never delays a turn (margin.images.bound, rules 2, 4 and 5): the turn goes first,
the bound after, against what is stored then; nothing a turn wrote is overwritten."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import random

import pytest
from chat_turns import SETTINGS
from PIL import Image
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform
from test_image_originals import sent_urls

from margin.images import bound as image_bound
from margin.images import codec as image_codec
from margin.images import data_urls
from margin.images import originals as image_originals
from margin.platform.ports import TransportError
from margin.storage import keys
from margin.storage.history import HISTORY, Record, history_json, read_history
from margin.storage.keys import lock_for
from margin.turn import chat


def noisy_png(seed: int) -> str:
    image = Image.frombytes("RGB", (700, 500), random.Random(seed).randbytes(700 * 500 * 3))
    out = io.BytesIO()
    image.save(out, "PNG")
    return data_urls.build_data_url("image/png", out.getvalue())


def parked(count: int = 3) -> list[dict]:
    """`count` unseen pictures, each with a lost answer: ~1 MB of data URL each."""
    records = []
    for seed in range(count):
        records.append(Record("user", [{"type": "text", "text": f"photo {seed}"}, image_part(seed)]))
        records.append(Record("assistant", f"(lost answer {seed})"))
    return history_json(records)


def image_part(seed: int) -> dict:
    return {"type": "image_url", "image_url": {"url": noisy_png(seed)}, "meta": {"name": f"{seed}.png"}}


def limit_for(history: list[dict]) -> int:
    """Room for one picture and the thumbnails: every older one must shrink."""
    return len(history[-2]["content"][1]["image_url"]["url"]) + 200_000


def sse_answer(text: str) -> ScriptedResponse:
    pieces = [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}]
    return ScriptedResponse(chunks=[f"data: {json.dumps(p)}\n\n" for p in pieces] + ["data: [DONE]\n\n"])


class FirstThumbnail:
    """Wraps image_codec.downscale: `started` is set while the bound makes its first thumbnail."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.started = asyncio.Event()
        self.calls: list[tuple[str, int]] = []
        real = image_codec.downscale

        def downscale(data: bytes, side: int):
            self.calls.append((hashlib.sha256(data).hexdigest(), side))
            self.started.set()
            return real(data, side)

        monkeypatch.setattr(image_codec, "downscale", downscale)


@pytest.mark.parametrize("answered", [False, True], ids=["the turn fails", "the turn is answered"])
def test_a_turn_sent_while_the_bound_works_goes_first_and_nothing_it_stored_is_overwritten(
    monkeypatch, answered
):
    history = parked()
    at_request: list[dict] = []

    def provider(request):
        at_request.append(platform.local.snapshot())
        if not answered:
            raise TransportError("connect", "the provider is down")
        return sse_answer("A cat.")

    platform = memory_platform({**SETTINGS, HISTORY: history}, ScriptedTransport([provider]))
    first = FirstThumbnail(monkeypatch)
    events: list[dict] = []

    async def a_turn_once_the_bound_works():
        await first.started.wait()
        start = {"action": "send", "text": "And now?"}
        await chat.run_turn(platform, start, events.append, asyncio.Event())

    async def both():
        bound = asyncio.ensure_future(
            image_bound.bound_unseen_image_bytes(
                platform, limit_bytes=limit_for(history), collect_garbage=True
            )
        )
        await asyncio.wait_for(a_turn_once_the_bound_works(), 30)
        return await asyncio.wait_for(bound, 30)

    result = asyncio.run(both())

    # The request went out before the bound wrote anything.
    assert len(at_request) == 1
    assert not any(image_originals.is_original_key(k) for k in at_request[0])
    assert sent_urls(at_request[0][HISTORY]) == sent_urls(history)
    stored = platform.local.snapshot()
    question = stored[HISTORY][len(history)]
    assert question["role"] == "user" and question["content"] == "And now?", "the turn's question was lost"
    if answered:
        # Every picture was seen by the model: nothing is parked any more, nothing is shrunk.
        assert [e["event"] for e in events][-1] == "done"
        assert result["changed"] == 0
        assert stored[HISTORY][-1]["content"] == "A cat."
        assert sent_urls(stored[HISTORY]) == sent_urls(history)
        assert not any(image_originals.is_original_key(k) for k in stored)
        return
    # The bound ran after the turn, against what the turn stored: the older pictures shrink,
    # their exact originals under their keys, the turn's records untouched.
    assert [e["event"] for e in events][-1] == "error"
    assert result["changed"] == 2 and result["bytesAfter"] <= limit_for(history)
    assert len(stored[HISTORY]) == len(history) + 1
    for before, after in zip(history, stored[HISTORY], strict=False):
        if before == after:
            continue
        (old,) = sent_urls([before])
        (new_part,) = [p for p in after["content"] if p["type"] == "image_url"]
        assert stored[new_part["meta"]["originalKey"]]["url"] == old
    assert sent_urls(stored[HISTORY])[-1] == sent_urls(history)[-1]  # the newest: untouched


def test_a_request_waiting_for_the_lock_takes_it_before_the_bound_writes(monkeypatch):
    history = parked()
    platform = memory_platform({HISTORY: history})
    first = FirstThumbnail(monkeypatch)

    async def another_writer():
        await first.started.wait()
        async with lock_for(platform.local):
            read = await read_history(platform.local)
            await platform.local.set({HISTORY: history_json([*read.records, Record("user", "a note")])})

    async def both():
        bound = asyncio.ensure_future(
            image_bound.bound_unseen_image_bytes(platform, limit_bytes=limit_for(history))
        )
        await another_writer()
        return await bound

    result = asyncio.run(both())
    writes = platform.local.writes
    assert isinstance(writes[0], dict) and list(writes[0]) == [HISTORY], "the bound wrote first"
    assert writes[0][HISTORY][-1] == {"role": "user", "content": "a note"}
    stored = platform.local.snapshot()[HISTORY]
    assert stored[-1] == {"role": "user", "content": "a note"}
    assert result["changed"] == 2
    # The restart read again but made no thumbnail twice.
    assert len(first.calls) == len(set(first.calls))


class HeldOriginalWrite:
    """Wraps platform.local.set: the first original's write waits for `release`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, platform):
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        real = platform.local.set

        async def set_(items: dict) -> None:
            if any(image_originals.is_original_key(k) for k in items) and not self.started.is_set():
                self.started.set()
                await self.release.wait()
            await real(items)

        monkeypatch.setattr(platform.local, "set", set_)


def original_writes(platform) -> list[str]:
    return [
        k for w in platform.local.writes if isinstance(w, dict) for k in w if k.startswith("imageOriginal_")
    ]


def test_pillow_makes_the_next_thumbnail_while_an_original_is_written(monkeypatch):
    history = parked()
    platform = memory_platform({HISTORY: history})

    async def scenario():
        held = HeldOriginalWrite(monkeypatch, platform)
        thumbnails = FirstThumbnail(monkeypatch)
        real = image_codec.downscale

        def downscale(data: bytes, side: int):
            made = real(data, side)
            if len(thumbnails.calls) == 2:
                writing_at_second.append(held.started.is_set())
                held.release.set()
            return made

        monkeypatch.setattr(image_codec, "downscale", downscale)
        return await asyncio.wait_for(
            image_bound.bound_unseen_image_bytes(platform, limit_bytes=limit_for(history)), 30
        )

    writing_at_second: list[bool] = []
    result = asyncio.run(scenario())
    assert writing_at_second == [True], "the second thumbnail waited for the first original's write"
    assert result["changed"] == 2
    *originals, last = platform.local.writes
    assert list(last) == [HISTORY], "history is written after every original"
    assert len(originals) == 2 and len(set(original_writes(platform))) == 2
    stored = platform.local.snapshot()
    for part in image_parts_of(stored[HISTORY][:-2]):
        assert stored[part["meta"]["originalKey"]]["url"] in sent_urls(history)


def test_an_original_written_while_the_bound_let_go_is_not_written_again(monkeypatch):
    history = parked()
    platform = memory_platform({HISTORY: history})

    async def scenario():
        held = HeldOriginalWrite(monkeypatch, platform)
        bound = asyncio.ensure_future(
            image_bound.bound_unseen_image_bytes(platform, limit_bytes=limit_for(history))
        )
        await held.started.wait()
        async with lock_for(platform.local):  # another writer comes while the write is in flight
            held.release.set()
            read = await read_history(platform.local)
            await platform.local.set({HISTORY: history_json([*read.records, Record("user", "a note")])})
        return await asyncio.wait_for(bound, 30)

    result = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert result["changed"] == 2
    written = original_writes(platform)
    assert len(written) == 2 and len(set(written)) == 2, "an original was written twice"
    stored = platform.local.snapshot()
    assert stored[HISTORY][-1] == {"role": "user", "content": "a note"}
    assert sorted(written) == sorted(p["meta"]["originalKey"] for p in image_parts_of(stored[HISTORY][:-3]))


def image_parts_of(history: list[dict]) -> list[dict]:
    return [
        p for r in history if isinstance(r["content"], list) for p in r["content"] if p["type"] == "image_url"
    ]


def test_the_bound_waits_for_a_running_turn_before_it_reads(monkeypatch):
    history = parked()
    platform = memory_platform({HISTORY: history})
    monkeypatch.setattr(keys, "_turn_running", True)

    async def scenario():
        bound = asyncio.ensure_future(
            image_bound.bound_unseen_image_bytes(platform, limit_bytes=limit_for(history))
        )
        await asyncio.sleep(0.2)
        read_while_the_turn_ran = list(platform.local.reads)
        keys._turn_running = False
        return read_while_the_turn_ran, await asyncio.wait_for(bound, 30)

    read_while_the_turn_ran, result = asyncio.run(scenario())
    assert read_while_the_turn_ran == []
    assert result["changed"] == 2


def test_two_bounds_at_once_are_one_bound():
    history = parked()
    platform = memory_platform({HISTORY: history})

    async def two():
        limit = limit_for(history)
        return await asyncio.gather(
            image_bound.bound_unseen_image_bytes(platform, limit_bytes=limit),
            image_bound.bound_unseen_image_bytes(platform, limit_bytes=limit),
        )

    first, second = asyncio.run(two())
    assert first == second and first["changed"] == 2
    assert len(platform.local.writes) == 3  # two originals, then history: once


def test_handle_bound_reads_history_once():
    history = parked()
    stale = image_originals.originals_items([noisy_png(99)])  # an orphan the collector removes
    platform = memory_platform({HISTORY: history, **stale})

    async def bound():
        return await image_bound.bound_unseen_image_bytes(
            platform, limit_bytes=limit_for(history), collect_garbage=True
        )

    result = asyncio.run(bound())
    assert result["changed"] == 2
    assert platform.local.reads.count(HISTORY) == 1
    stored = platform.local.snapshot()
    assert not set(stale) & set(stored), "the orphan original was kept"
    kept = sorted(k for k in stored if image_originals.is_original_key(k))
    assert kept == sorted(image_originals.references_in([Record.from_json(r) for r in stored[HISTORY]]))


def test_someone_waits_reads_asyncio_locks_waiters():
    # image_bound relies on asyncio.Lock keeping its waiters in `_waiters`: pinned here.
    async def scenario():
        lock = asyncio.Lock()
        assert not image_bound._someone_waits(lock)
        await lock.acquire()
        assert not image_bound._someone_waits(lock)
        waiter = asyncio.ensure_future(lock.acquire())
        await asyncio.sleep(0)
        assert image_bound._someone_waits(lock)
        lock.release()
        await waiter
        lock.release()
        assert not image_bound._someone_waits(lock)

    asyncio.run(scenario())
