"""Image figures of issue 4: what seen images cost a request, and what bounding parked pixels costs.

Concept: three measurement functions in the style of `bench/run.py` (each takes the `Bench` of
run.py, or None where no browser is needed, and returns a list of dicts with `Result`'s fields:
`name, value, unit, target, compare, samples, note`), so run.py can append them with
`Result(**d)`. Run alone: `MARGIN_DIST=dist/margin python3 bench/bench_images.py [--runs N]`.

1. `request_bytes_ratio`: request bytes at turn N of a conversation with K SEEN images, against
   the same conversation with the images removed, built by the Python core exactly as a turn
   builds it (`prepare_history_for_model` + `providers.openai.build_chat_request`). Target: at most
   1.01. Also reported, for scale: the same request if the pixels were resent.
2. `bound_in_browser`: `images.bound` on ~20 MB of unseen phone-sized JPEGs (the newest record
   protected), timed from an extension page in Chromium: cold (worker stopped: Pyodide boot +
   Pillow load + work), first call with Python up (Pillow load + work), warm (Pillow loaded).
   Storage is re-seeded before every call, with the originals the failed turns that parked the
   images stored ahead with their thumbnails (margin.image_originals rule 7: written by the
   worker's own `image_bound.store_ahead`, once, untimed); the seeding is not timed. Also
   timed: the same warm bound when nothing was stored ahead (a worker stopped mid-turn, a
   session opened: the bound stores the originals and makes the thumbnails itself), and what
   storing ahead costs after a failed turn, per image.
3. `bound_in_cpython`: the same bound on the same data under CPython, in a fresh subprocess so the
   first call includes importing Pillow.
4. (huge images under CPython: bench_huge_images.py.)
5. `send_during_bound` (issue 14): the time from pressing Enter to the request reaching the fake
   provider while the panel's `images.bound` works on the same ~20 MB, against the same send with
   no bound running, in one run. Target: at most 1.5x (the send waits for one image's write at
   most). The scenario is tests/e2e/test_bound_yields_e2e.py's.
6. `worker_memory` (issue 14): the worker's wasm heap (`HEAPU8.length`; wasm memory never shrinks,
   so it is the peak so far) after a cold start, and after a turn over a 200-message conversation
   holding 8 MB of images.

`bound_in_browser` also reports, from the same run, the storage floor: what chrome.storage alone
takes to do the bound's storage work, timed in the worker's JS: read the 20 MB `history`, check
each original stored ahead (getBytesInUse), and write the bounded `history` over the 20 MB one
(chrome.storage reads the old value to report the change: overwriting costs more than writing a
new key); no bound that reads and rewrites `history` can be faster.

Rules: the data is deterministic (seeded noise, fixed texts); every measured call is checked (the
bound must end at or under 8 MB and report the 20 MB it started from), so a broken product gives
an error, not a figure.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "py"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from bench_result import result

UNSEEN_LIMIT = 8 * 1024 * 1024
BOUND_PHOTOS = 7  # 2400x1600 JPEGs, ~3 MB of data URL each: ~21 MB in all
PHOTO_SIZE = (2400, 1600)


def _median(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


# --- data ---------------------------------------------------------------------------------------------------


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def photo_jpeg(seed: int, size: tuple[int, int] = PHOTO_SIZE) -> bytes:
    """A phone-photo-sized JPEG that does not compress well (noise): ~2.6 MB at 2400x1600."""
    from PIL import Image

    random.seed(seed)
    bands = [Image.effect_noise(size, 40 + (seed + i) % 30) for i in range(3)]
    image = Image.merge("RGB", bands)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()


_IMAGE_META = [
    {"name": "IMG_2041.jpg", "source": "file", "capturedAt": 1764511500000},
    {
        "name": "Screenshot of Pricing - Example Cloud Platform",
        "source": "screenshot",
        "capturedAt": 1764512100000,
    },
    {"name": "image.png", "source": "paste", "capturedAt": 1764512700000},
    {"name": "whiteboard.jpg", "source": "drop", "capturedAt": 1764513300000},
    {"name": "Screenshot of Error log - CI run #4821", "source": "screenshot", "capturedAt": 1764513900000},
]


def conversation(turns: int, images: int, *, seen: bool = True) -> list[dict[str, Any]]:
    """`turns` user/assistant exchanges (histories.realistic_history texts); the first `images` user
    turns, spread over the conversation, each carry one image (stamped seen when `seen`)."""
    from histories import realistic_history

    records = realistic_history(turns * 2)
    step = max(1, turns // max(1, images))
    with_image = {i * step for i in range(images)}
    out = []
    for index, record in enumerate(records):
        record = dict(record, createdAt=1764511000000 + index * 60_000)
        turn = index // 2
        if record["role"] == "user" and turn in with_image:
            n = sorted(with_image).index(turn)
            url = _data_url("image/jpeg", photo_jpeg(n, (1280, 853)))
            meta = dict(_IMAGE_META[n % len(_IMAGE_META)])
            record["content"] = [
                {"type": "image_url", "image_url": {"url": url}, "meta": meta},
                {"type": "text", "text": record["content"]},
            ]
            if seen:
                record["imagesSeen"] = True
        out.append(record)
    return out


def without_images(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same conversation with every image part removed (text parts kept as they were)."""
    out = []
    for record in records:
        content = record["content"]
        if isinstance(content, list):
            content = [p for p in content if p.get("type") != "image_url"]
            record = {k: v for k, v in record.items() if k != "imagesSeen"}
            record["content"] = content
        out.append(record)
    return out


def bound_history(photos: int = BOUND_PHOTOS) -> list[dict[str, Any]]:
    """~20 MB of UNSEEN photos in user records (answers between): pixels parked by failed turns."""
    records: list[dict[str, Any]] = []
    for n in range(photos):
        records.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"What is in photo {n + 1}?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": _data_url("image/jpeg", photo_jpeg(n))},
                        "meta": {"name": f"IMG_{3000 + n}.jpg", "source": "file"},
                    },
                ],
                "createdAt": 1764511000000 + n * 120_000,
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": "(the provider was unreachable)",
                "createdAt": 1764511000000 + n * 120_000 + 1,
            }
        )
    return records


def unseen_bytes(records: list[dict[str, Any]]) -> int:
    return sum(
        len(p["image_url"]["url"])
        for r in records
        if not r.get("imagesSeen") and isinstance(r["content"], list)
        for p in r["content"]
        if p.get("type") == "image_url"
    )


# --- 1. request bytes with seen images ----------------------------------------------------------------------

PROVIDER = {
    "id": "bench",
    "type": "openai",
    "name": "Bench",
    "baseUrl": "https://api.openai.com/v1",
    "apiKey": "sk-bench",
    "model": "gpt-4o-mini",
}


def request_body_bytes(records: list[dict[str, Any]]) -> int:
    from margin.figures import prepare_history_for_model
    from margin.history import Record
    from margin.providers.openai import build_chat_request

    prepared = prepare_history_for_model([Record.from_json(r) for r in records])
    body = build_chat_request(PROVIDER, prepared, stream=True).body
    assert body is not None
    return len(body.encode("utf-8") if isinstance(body, str) else body)


def request_bytes_ratio(
    bench: Any = None, grid: tuple[tuple[int, int], ...] = ((10, 1), (20, 1), (20, 3), (40, 1), (40, 5))
) -> list[dict[str, Any]]:
    """Ratio of request bytes, K seen images vs none, at turn N (the last user message is turn N)."""
    results = []
    for turns, images in grid:
        records = conversation(turns, images)
        # Turn N: the stored conversation up to and including the N-th question.
        at_turn_n = records[:-1]
        with_placeholders = request_body_bytes(at_turn_n)
        text_only = request_body_bytes(without_images(at_turn_n))
        resent = request_body_bytes([{k: v for k, v in r.items() if k != "imagesSeen"} for r in at_turn_n])
        ratio = with_placeholders / text_only
        per_image = (with_placeholders - text_only) / images
        results.append(
            result(
                f"request bytes, turn {turns} with {images} seen images / without images",
                round(ratio, 4),
                "x",
                1.01,
                compare="at_most",
                note=f"{with_placeholders} B vs {text_only} B: "
                f"+{with_placeholders - text_only} B for {images} placeholder(s)"
                f" ({per_image:.0f} B each; 1.01 needs >= {per_image / 0.01 / 1024:.1f} KB of request"
                f" per seen image);"
                f" resending the pixels instead: {resent} B ({resent / text_only:.0f}x)",
            )
        )
    return results


# --- 2. the bound in Chromium -------------------------------------------------------------------------------

BOUND_JS = """async () => {
    const t = performance.now();
    const reply = await chrome.runtime.sendMessage({type: 'images.bound', payload: {}});
    return [performance.now() - t, reply];
}"""


def _timed_bound(margin: Any, expected_before: int) -> tuple[float, dict[str, Any]]:
    elapsed, reply = margin._extension_page().evaluate(BOUND_JS)
    if not (isinstance(reply, dict) and reply.get("ok")):
        raise RuntimeError(f"images.bound failed: {reply!r}")
    value = reply["value"]
    if value["bytesAfter"] > UNSEEN_LIMIT or value["bytesBefore"] != expected_before or value["changed"] < 1:
        raise RuntimeError(f"images.bound did not bound {expected_before} B under 8 MB: {value}")
    return float(elapsed), value


def _seed(margin: Any, history: list[dict[str, Any]]) -> None:
    margin.storage_set({"history": history})
    stored = margin._extension_page().evaluate(
        "() => chrome.storage.local.get('history').then(s => (s.history || []).length)"
    )
    if stored != len(history):
        raise RuntimeError(f"seeding history failed: {stored} records stored of {len(history)}")


def _ping(margin: Any) -> None:
    reply = margin.send_message({"type": "app.ping", "payload": {}})
    if not (isinstance(reply, dict) and reply.get("ok")):
        raise RuntimeError(f"app.ping failed: {reply!r}")


# The worker stores the originals and thumbnails ahead as a failed turn's end does (margin.chat
# rule 13), timed; Pillow is loaded first, untimed, as the turn's attachment check loaded it.
STORE_AHEAD_JS = """async () => {
    const {pyodide} = await marginPython();
    const seconds = await pyodide.runPythonAsync(`
import time
from margin import image_bound
from margin.history import read_history
from margin.platform import browser_platform
_platform = browser_platform()
await _platform.load_package("pillow")
import margin.image_codec
_records = (await read_history(_platform.local)).records
_t = time.perf_counter()
_written = await image_bound.store_ahead(_platform, _records, turn_running=lambda: False)
[time.perf_counter() - _t, len(_written)]
`);
    return seconds.toJs();
}"""


# Reading the 20 MB history, in the worker: chrome.storage alone, and through the bridge into
# Python as the bound reads it (storageGet's JSON text and long strings as UTF-8 pieces, the
# copies into Pyodide, json.loads, parse_history).
READ_JS = """async () => {
    const t = performance.now();
    const {history} = await chrome.storage.local.get(['history']);
    if (!history?.length) throw new Error('no history to read');
    return performance.now() - t;
}"""
READ_PY_JS = """async () => {
    const {pyodide} = await marginPython();
    const seconds = await pyodide.runPythonAsync(`
import time
from margin.history import read_history
from margin.platform import ChromeStorageArea
_t = time.perf_counter()
_read = await read_history(ChromeStorageArea("local"))
assert _read.records
time.perf_counter() - _t
`);
    return seconds * 1000;
}"""


def _history_reads(margin: Any, runs: int) -> tuple[list[float], list[float]]:
    alone, bridged = [], []
    for _ in range(runs):
        alone.append(float(margin.worker().evaluate(READ_JS)))
        bridged.append(float(margin.worker().evaluate(READ_PY_JS)))
    return alone, bridged


def _store_ahead(margin: Any) -> tuple[float, int]:
    """Store every parked image's original and thumbnail ahead; (ms, how many keys were written)."""
    seconds, written = margin.worker().evaluate(STORE_AHEAD_JS)
    return float(seconds) * 1000, int(written)


def _seed_with_originals(margin: Any, history: list[dict[str, Any]], originals: dict[str, Any]) -> None:
    margin.storage_set(originals)
    _seed(margin, history)


def _originals_ahead(margin: Any, history: list[dict[str, Any]]) -> tuple[dict[str, Any], list[float]]:
    """What a failed turn's end stores ahead, stored by the worker itself; and the time it took per
    image (ms), one sample per run of `store_ahead` over a history with nothing stored."""
    per_image = []
    for _ in range(2):
        margin.storage_clear()
        _seed(margin, history)
        elapsed, written = _store_ahead(margin)
        if written < 2 or written % 2:
            raise RuntimeError(f"storing ahead wrote {written} keys, not an original and a thumbnail each")
        per_image.append(elapsed / (written // 2))
    keys = margin._extension_page().evaluate("() => chrome.storage.local.getKeys()")
    ahead = [k for k in keys if k.startswith(("imageOriginal_", "imageThumbnail_"))]
    return margin.storage_get(ahead), per_image


def bound_in_browser(bench: Any) -> list[dict[str, Any]]:
    margin = bench.margin
    history = bound_history()
    before = unseen_bytes(history)
    runs = max(1, min(bench.runs, 3))  # each run seeds 21 MB four times
    originals, ahead = _originals_ahead(margin, history)
    cold, first, warm, unstored = [], [], [], []
    after = None
    for _ in range(runs):
        margin.stop_service_worker()
        _seed_with_originals(margin, history, originals)
        cold.append(_timed_bound(margin, before)[0])  # Pyodide boot + Pillow load + the work

        margin.stop_service_worker()
        _ping(margin)  # Python up, Pillow not loaded (a fresh worker)
        _seed_with_originals(margin, history, originals)
        first.append(_timed_bound(margin, before)[0])  # Pillow load + the work

        _seed_with_originals(margin, history, originals)
        elapsed, value = _timed_bound(margin, before)  # Pillow already loaded
        warm.append(elapsed)
        after = value["bytesAfter"]

        margin.storage_clear()  # nothing stored ahead: the bound stores the originals itself
        _seed(margin, history)
        unstored.append(_timed_bound(margin, before)[0])
    floors = [_storage_floor(margin, history, originals) for _ in range(runs)]
    _seed(margin, history)
    read_alone, read_bridged = _history_reads(margin, runs)
    mb = before / 1024 / 1024
    assert after is not None
    note = (
        f"{mb:.1f} MB of unseen data URLs in {BOUND_PHOTOS} JPEGs {PHOTO_SIZE[0]}x{PHOTO_SIZE[1]}"
        f" -> {after / 1024 / 1024:.2f} MB"
    )
    floor = _median(floors)
    return [
        result(
            f"images.bound {mb:.0f} MB -> under 8 MB, warm (Pillow loaded; Chromium)",
            _median(warm),
            "ms",
            1000.0,
            compare="at_most",
            samples=warm,
            note=note,
        ),
        result(
            "images.bound first call, Python up, Pillow not loaded (Chromium)",
            _median(first),
            "ms",
            samples=first,
            note=f"first - warm = {_median(first) - _median(warm):.0f} ms: with the thumbnails made"
            " ahead the bound loads no Pillow (it did: ~1.7 s before they were)",
        ),
        result(
            "images.bound, worker stopped (Pyodide boot + the work; Pillow only if not made ahead)",
            _median(cold),
            "ms",
            samples=cold,
        ),
        result(
            "images.bound warm, nothing stored ahead (it writes each original itself)",
            _median(unstored),
            "ms",
            samples=unstored,
        ),
        result(
            "chrome.storage alone: read the 20 MB history, check the originals stored ahead,"
            " write the bounded history over it",
            floor,
            "ms",
            samples=floors,
            note=f"images.bound warm / this floor = {_median(warm) / floor:.2f}x (same run)",
        ),
        result(
            "reading the 20 MB history: chrome.storage alone, in the worker's JS",
            _median(read_alone),
            "ms",
            samples=read_alone,
        ),
        result(
            "reading the 20 MB history into Python as the bound does (read_history through the bridge)",
            _median(read_bridged),
            "ms",
            samples=read_bridged,
            note="the bridge (the JSON text and the long strings apart as UTF-8 pieces, the copies"
            f" into Pyodide, json.loads) adds"
            f" {_median(read_bridged) - _median(read_alone):.0f} ms to chrome.storage's read",
        ),
        result(
            "storing a parked image's original and thumbnail ahead, after the failed turn (3 MB; background)",
            _median(ahead),
            "ms",
            samples=ahead,
            note="per image: sha256, a size check, the original's write, the thumbnail (Pillow"
            " loaded) and its write; the images the bound will shrink (the oldest five of the seven),"
            " one after another",
        ),
    ]


# The bound's storage work replayed by chrome.storage alone, in the worker: no Python, no Pillow.
# KEEP copies the bounded history a bound wrote to a scratch key; after the 20 MB history is seeded
# again, FLOOR reads it, checks the size of each original the bounded history refers to (they were
# stored ahead), and writes the bounded history over it, as the bound does.
FLOOR_KEEP_JS = """async () => {
    const {history} = await chrome.storage.local.get(['history']);
    await chrome.storage.local.set({benchFloorHistory: history});
}"""
FLOOR_JS = """async () => {
    const area = chrome.storage.local;
    const {benchFloorHistory: bounded} = await area.get(['benchFloorHistory']);
    const keys = [...new Set(bounded.flatMap((r) => Array.isArray(r.content) ? r.content : [])
        .map((p) => p?.meta?.originalKey).filter(Boolean))];
    const t = performance.now();
    const {history} = await area.get(['history']);
    if (!history?.length) throw new Error('no history to read');
    for (const key of keys) {
        if (!(await area.getBytesInUse([key]))) throw new Error('an original is not stored ahead');
    }
    await area.set({history: bounded});
    const elapsed = performance.now() - t;
    await area.remove(['benchFloorHistory']);
    return elapsed;
}"""


def _storage_floor(margin: Any, history: list[dict[str, Any]], originals: dict[str, Any]) -> float:
    _seed_with_originals(margin, history, originals)
    _timed_bound(margin, unseen_bytes(history))  # writes the bounded history
    margin.worker().evaluate(FLOOR_KEEP_JS)
    _seed(margin, history)
    return float(margin.worker().evaluate(FLOOR_JS))


# --- 3. the bound under CPython -----------------------------------------------------------------------------

_CPYTHON_CHILD = r"""
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[1])
history = json.load(open(sys.argv[2]))
t0 = time.perf_counter()
from margin.image_bound import bound_unseen_image_bytes
from margin.platform_memory import memory_platform
timings = []
for _ in range(int(sys.argv[3])):
    platform = memory_platform({"history": history})
    t = time.perf_counter()
    value = asyncio.run(bound_unseen_image_bytes(platform))
    timings.append((time.perf_counter() - t) * 1000)
    assert value["bytesAfter"] <= 8 * 1024 * 1024 and value["changed"] >= 1, value
print(json.dumps({"timings": timings, "value": value, "pillow_first": "PIL.Image" in sys.modules}))
"""


def bound_in_cpython(bench: Any = None, runs: int | None = None) -> list[dict[str, Any]]:
    runs = runs or (max(2, bench.runs) if bench is not None else 4)
    history = bound_history()
    with tempfile.TemporaryDirectory(prefix="margin-bench-") as tmp:
        path = Path(tmp) / "history.json"
        path.write_text(json.dumps(history))
        done = subprocess.run(
            [sys.executable, "-c", _CPYTHON_CHILD, str(REPO / "py"), str(path), str(runs)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode != 0:
        raise RuntimeError(f"the CPython bound failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    first, *rest = out["timings"]
    return [
        result(
            "bound_unseen_image_bytes 20 MB -> 8 MB, warm (CPython)",
            _median(rest),
            "ms",
            samples=rest,
            note=f"{sys.version.split()[0]}; in-memory storage (JSON round trip)",
        ),
        result(
            "bound_unseen_image_bytes first call, incl. importing Pillow (CPython)",
            round(first, 3),
            "ms",
            samples=[first],
        ),
    ]


# --- 5. a send while the bound works; 6. the worker's memory ----------------------------------------------

BENCH_KEY = "sk-bench"
# The send with the bound running may take this much longer than without (what one original's
# write can add); before the bound yielded to turns, the send waited for the whole bound.
MAX_DELAY_RATIO = 1.5


def _with_fake_provider(margin: Any) -> Any:
    from fake_provider import FakeProvider

    fake = FakeProvider(api_key=BENCH_KEY).start()
    margin.save_provider(base_url=fake.base_url, api_key=BENCH_KEY)
    return fake


def send_during_bound(bench: Any) -> list[dict[str, Any]]:
    from test_bound_yields_e2e import measure_send_delays, parked_photos

    margin = bench.margin
    fake = _with_fake_provider(margin)
    try:
        delays = measure_send_delays(margin, fake, parked_photos())
        margin.wait_alert(delays.page, timeout_ms=120_000)
        delays.page.close()
    finally:
        fake.stop()
    ratio = delays.with_bound / delays.baseline
    return [
        result(
            "send -> request while images.bound works on 20 MB / the same send with no bound",
            round(ratio, 4),
            "x",
            MAX_DELAY_RATIO,
            compare="at_most",
            note=f"{delays.with_bound:.2f} s with the bound running, {delays.baseline:.2f} s without"
            " (the turn itself reads and rewrites the 20 MB history)",
        )
    ]


HEAP_JS = "async () => (await marginPython()).pyodide._module.HEAPU8.length"


def _heap_mb(margin: Any) -> float:
    return round(float(margin.worker().evaluate(HEAP_JS)) / 1024 / 1024, 1)


def worker_memory(bench: Any) -> list[dict[str, Any]]:
    margin = bench.margin
    margin.storage_set({"history": []})
    margin.stop_service_worker()
    cold = _heap_mb(margin)  # worker() wakes it with a ping: Python restored from the snapshot
    history = conversation(100, 10)  # 200 messages, 10 seen photos of ~0.85 MB: ~8 MB
    megabytes = sum(len(p["image_url"]["url"]) for r in history for p in _parts(r)) / 1024 / 1024
    fake = _with_fake_provider(margin)
    try:
        margin.storage_set({"history": history})
        page = margin.open_panel()
        margin.send(page, "One more question about the last photo.")
        margin.wait_answer(page)
        page.close()
    finally:
        fake.stop()
    after = _heap_mb(margin)
    return [
        result("worker wasm heap after a cold start", cold, "MB"),
        result(
            f"worker wasm heap after a turn over 200 messages with {megabytes:.1f} MB of images",
            after,
            "MB",
            note="HEAPU8.length; wasm memory only grows, so this is the peak so far",
        ),
    ]


def _parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    content = record["content"]
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


METRICS = [
    request_bytes_ratio,
    bound_in_browser,
    bound_in_cpython,
    send_during_bound,
    worker_memory,
]


# --- alone --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated function names")
    args = parser.parse_args(argv)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    dist = Path(os.environ.get("MARGIN_DIST") or REPO / "dist" / "margin")

    from harness import Margin, launch
    from playwright.sync_api import sync_playwright

    class _Bench:
        def __init__(self, launched: Any, runs: int):
            self.launched, self.margin, self.runs = launched, Margin(launched), runs

    rows: list[dict[str, Any]] = []
    failed = False
    with sync_playwright() as playwright:
        launched = None
        try:
            for metric in METRICS:
                if only and metric.__name__ not in only:
                    continue
                if metric in (bound_in_browser, send_during_bound, worker_memory) and launched is None:
                    launched = launch(playwright, dist)
                try:
                    rows.extend(
                        metric(_Bench(launched, args.runs) if launched else None)
                        if metric is not bound_in_cpython
                        else metric(None, runs=max(2, args.runs + 1))
                    )
                except Exception as error:  # one failed metric must not hide the others
                    failed = True
                    rows.append(
                        result(metric.__name__, None, "", note=f"ERROR {type(error).__name__}: {error}")
                    )
        finally:
            if launched is not None:
                launched.close()
    for row in rows:
        value = "n/a" if row["value"] is None else f"{row['value']:g} {row['unit']}"
        at_most = row["compare"] == "at_most"
        target = (
            f" (target {'<=' if at_most else '<'} {row['target']:g})" if row["target"] is not None else ""
        )
        passed = (
            None
            if row["target"] is None or row["value"] is None
            else (row["value"] <= row["target"] if at_most else row["value"] < row["target"])
        )
        verdict = "" if passed is None else (" pass" if passed else " FAIL")
        print(f"{row['name']}: {value}{target}{verdict}")
        if row["note"]:
            print(f"    {row['note']}")
        if row["samples"]:
            print(f"    samples: {[round(s, 1) for s in row['samples']]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
