"""Long streams of issue 11 (finding 7): the event-stream decoder is linear in what it is fed.

Concept: measurements in the style of `bench/run.py` that need no browser (listed in
`BROWSERLESS_METRICS`), returning dicts with `Result`'s fields. Run alone:
`python3 bench/run.py --only stream_decoding` (or `python3 bench/bench_streams.py`).

1. The body arrives in `CHUNK` characters a read, as a browser's fetch hands it over.
2. "No line breaks": `SIZE` characters of `data: xxxx...` without a line end, read through the
   real reading loop (`SSEChatStream` over a scripted response): the answer must end with
   "stream_garbage" once the line passes `margin.sse.LINE_LIMIT`; the time to that error is the
   figure (before the fix the decoder rescanned its whole buffer at every chunk).
3. "Normal events": `SIZE` characters of Chat Completions events (a short text delta each)
   through `SSEDecoder` and the OpenAI `StreamParser`; the text must come out whole. Reported:
   the time, and the time for `SIZE` over the time for `SIZE / 2` (2 for a linear decoder).
4. Times are the best of `RUNS` runs (the machine is shared; the best run is the decoder's cost).
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

from bench_result import result

from margin.errors import ProviderError
from margin.platform_memory import ScriptedResponse
from margin.providers import openai
from margin.providers.streaming import SSEChatStream
from margin.sse import SSEDecoder

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


METRICS = [stream_decoding]
BROWSERLESS_METRICS = [stream_decoding]


if __name__ == "__main__":
    for row in stream_decoding():
        print(f"{row['name']}: {row['value']} {row['unit']} ({row['note']})")
