"""Long streams of issue 11 (finding 7): the event-stream decoder is linear in what it is fed.

Concept: measurements in the style of `bench/run.py` that need no browser (listed in
`BROWSERLESS_METRICS`), returning dicts with `Result`'s fields. Run alone:
`python3 bench/run.py --only stream_decoding` (or `python3 bench/bench_streams.py`).

1. The body arrives in `CHUNK` characters a read, as a browser's fetch hands it over.
2. "No line breaks": `SIZE` characters of `data: xxxx...` without a line end, read through the
   real reading loop (`SSEChatStream` over a scripted response): the answer must end with
   "stream_garbage" once the line passes `margin.base.sse.LINE_LIMIT`; the time to that error is the
   figure (before the fix the decoder rescanned its whole buffer at every chunk).
3. "Normal events": `SIZE` characters of Chat Completions events (a short text delta each)
   through `SSEDecoder` and the OpenAI `StreamParser`; the text must come out whole. Reported:
   the time, and the time for `SIZE` over the time for `SIZE / 2` (2 for a linear decoder).
4. Times are the best of `RUNS` runs (the machine is shared; the best run is the decoder's cost).
5. "A stored 1 MB answer" (browser): the panel opened on a conversation whose answer is 1 MB of
   Markdown (tests/e2e/long_answers.py), painted a slice per task (extension/panel/conversation.js
   rule 9); the figure is the longest the page was held (the longest gap of a 20 ms timer, from
   the page's start until the answer is Markdown to its end) over one whole render of the same
   text timed in the same page right after: a ratio, as the machine's speed varies.
6. "A streamed 1 MB answer" (browser): the same figure from the send until the stored answer is
   painted to its end, the answer streamed by the local fake provider in 4,000 chunks.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "py"))
sys.path.insert(0, str(REPO / "tests" / "support"))  # the in-memory platform

from bench_result import result
from platform_memory import ScriptedResponse

from margin.base.errors import ProviderError
from margin.base.sse import SSEDecoder
from margin.providers import openai
from margin.providers.streaming import SSEChatStream

SIZE = 8 * 1024 * 1024
CHUNK = 16 * 1024
RUNS = 3
PROVIDER = {"type": "openai", "baseUrl": "http://localhost:11434/v1", "apiKey": "", "model": "bench"}


def chunks_of(text: str, size: int = CHUNK) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _no_line_breaks_seconds() -> float:
    """Rule 2: seconds until the reading loop refuses one endless line."""
    body = chunks_of("data: " + "x" * (SIZE - 6))

    async def read_all() -> str:
        stream = SSEChatStream(ScriptedResponse(chunks=list(body)), PROVIDER, openai.StreamParser("bench"))
        try:
            while await stream.read() is not None:
                pass
        except ProviderError as error:
            return error.code
        return "no error"

    started = time.perf_counter()
    code = asyncio.run(read_all())
    elapsed = time.perf_counter() - started
    if code != "stream_garbage":
        raise RuntimeError(f"an endless line ended with {code!r}, not stream_garbage")
    return elapsed


def events_body(size: int) -> tuple[list[str], str]:
    """Rule 3: about `size` characters of Chat Completions events, and the text they carry."""
    pieces: list[str] = []
    events: list[str] = []
    total = 0
    n = 0
    while total < size:
        piece = f"word{n} and some more text, "
        event = "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]}) + "\n\n"
        pieces.append(piece)
        events.append(event)
        total += len(event)
        n += 1
    events.append("data: [DONE]\n\n")
    return chunks_of("".join(events)), "".join(pieces)


def _events_seconds(size: int) -> float:
    body, expected = events_body(size)
    started = time.perf_counter()
    decoder = SSEDecoder()
    parser = openai.StreamParser("bench")
    for chunk in body:
        for event in decoder.feed(chunk):
            parser.feed(event)
    for event in decoder.close():
        parser.feed(event)
    elapsed = time.perf_counter() - started
    if parser.text != expected or not parser.done:
        raise RuntimeError("the decoded events did not give back the text they carry")
    return elapsed


def _best(measure: Any, *args: Any) -> tuple[float, list[float]]:
    samples = [round(measure(*args), 3) for _ in range(RUNS)]
    return min(samples), samples


def stream_decoding(bench: Any = None) -> list[dict[str, Any]]:
    mb = SIZE // (1024 * 1024)
    endless, endless_samples = _best(_no_line_breaks_seconds)
    whole, whole_samples = _best(_events_seconds, SIZE)
    half, _ = _best(_events_seconds, SIZE // 2)
    return [
        result(
            f"{mb} MB without a line break: time to stream_garbage",
            endless,
            "s",
            1.0,
            samples=endless_samples,
            note=f"CPython, {CHUNK // 1024} KiB reads; the line limit is 4 MiB",
        ),
        result(
            f"{mb} MB of Chat Completions events: decode and parse",
            whole,
            "s",
            5.0,
            samples=whole_samples,
            note=f"CPython, {CHUNK // 1024} KiB reads",
        ),
        result(
            f"decode time, {mb} MB ÷ {mb // 2} MB of events",
            round(whole / half, 2),
            "x",
            2.5,
            compare="at_most",
            note="2 for a linear decoder, 4 for a quadratic one",
        ),
    ]


def _hold_row(name: str, gaps: list[float], whole_ms: float, note: str = "") -> dict[str, Any]:
    worst = max(gaps)
    return result(
        name,
        round(worst / whole_ms, 3),
        "x",
        0.5,
        compare="at_most",
        note=f"longest hold {worst:.0f} ms, one whole render {whole_ms:.0f} ms{note}",
    )


def streamed_long_answer_paint(bench: Any) -> list[dict[str, Any]]:
    from fake_provider import FakeProvider
    from long_answers import WHOLE_RENDER_JS, long_answer
    from test_long_stream_e2e import stream_long_answer

    margin = bench.margin
    fake = FakeProvider(api_key="sk-bench").start()
    try:
        margin.save_provider(base_url=fake.base_url, api_key="sk-bench")
        text = long_answer(1_000_000)
        page, gaps = stream_long_answer(margin, fake, text)
        whole = page.evaluate(WHOLE_RENDER_JS, text)
        page.close()
    finally:
        fake.stop()
    name = "longest hold of the panel while a 1 MB answer streams and is stored / one whole render"
    return [_hold_row(name, gaps, whole["ms"])]


def stored_long_answer_paint(bench: Any) -> list[dict[str, Any]]:
    from long_answers import ANSWER_PAINTED_JS, WHOLE_RENDER_JS, long_answer, open_panel_on_long_answer

    text = long_answer(1_000_000)
    page = open_panel_on_long_answer(bench.margin, text)
    page.wait_for_function(ANSWER_PAINTED_JS, timeout=180_000)
    gaps = page.evaluate("() => { clearInterval(window.__probe); return window.__gaps; }")
    first_frame = page.evaluate("() => window.__marginPaintBreakdown?.paintedAt ?? null")
    whole = page.evaluate(WHOLE_RENDER_JS, text)
    page.close()
    name = "longest hold of the panel painting a stored 1 MB answer / one whole render"
    return [_hold_row(name, gaps, whole["ms"], f", first frame at {first_frame or 0:.0f} ms")]


METRICS = [stream_decoding, streamed_long_answer_paint, stored_long_answer_paint]
BROWSERLESS_METRICS = [stream_decoding]


if __name__ == "__main__":
    for row in stream_decoding():
        print(f"{row['name']}: {row['value']} {row['unit']} ({row['note']})")
