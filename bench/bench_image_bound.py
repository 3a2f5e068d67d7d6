"""The image bound's figures (issue 14): `images.bound` on ~20 MB of unseen photos, in Chromium and
under CPython, with the storage floor it is measured against. The data is bench_images.py's.

Concept: measurement functions in the style of `bench/run.py` (each takes run.py's `Bench`, or
None where no browser is needed, and returns a list of dicts with `Result`'s fields). Run alone:
`python3 bench/run.py --only bound_in_browser,bound_in_cpython`.

1. `bound_in_browser`: `images.bound` on ~20 MB of unseen phone-sized JPEGs (the newest record
   protected), timed from an extension page in Chromium: cold (worker stopped: Pyodide boot +
   Pillow load + work), first call with Python up (Pillow load + work), warm (Pillow loaded).
   Storage is re-seeded before every call, with the originals the failed turns that parked the
   images stored ahead with their thumbnails (margin.images.originals rule 7: written by the
   worker's own `image_bound.store_ahead`, once, untimed); the seeding is not timed. Also
   timed: the same warm bound when nothing was stored ahead (a worker stopped mid-turn, a
   session opened: the bound stores the originals and makes the thumbnails itself), what
   storing ahead costs after a failed turn, per image, and reading the 20 MB `history` by
   chrome.storage alone and into Python through the bridge.
2. The storage floor, from the same run: what chrome.storage alone takes to do the bound's
   storage work, timed in the worker's JS: read the 20 MB `history`, check each original stored
   ahead (getBytesInUse), and write the bounded `history` over the 20 MB one (chrome.storage
   reads the old value to report the change: overwriting costs more than writing a new key); no
   bound that reads and rewrites `history` can be faster.
3. `bound_in_cpython`: the same bound on the same data under CPython, in a fresh subprocess so the
   first call includes importing Pillow.

Rules: every measured call is checked (the bound must end at or under 8 MB and report the 20 MB
it started from), so a broken product gives an error, not a figure.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_images import BOUND_PHOTOS, PHOTO_SIZE, REPO, UNSEEN_LIMIT, bound_history, unseen_bytes
from bench_result import median, python_child, result

# --- 1. the bound in Chromium -------------------------------------------------------------------------------

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


# The worker stores the originals and thumbnails ahead as a failed turn's end does (margin.turn.chat
# rule 13), timed; Pillow is loaded first, untimed, as the turn's attachment check loaded it.
STORE_AHEAD_JS = """async () => {
    const {pyodide} = await marginPython();
    const seconds = await pyodide.runPythonAsync(`
import time
from margin.images import bound as image_bound
from margin.storage.history import read_history
from margin.platform.browser import browser_platform
_platform = browser_platform()
await _platform.load_package("pillow")
import margin.images.codec
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
from margin.storage.history import read_history
from margin.platform.browser import ChromeStorageArea
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
    floor = median(floors)
    return [
        result(
            f"images.bound {mb:.0f} MB -> under 8 MB, warm (Pillow loaded; Chromium)",
            median(warm),
            "ms",
            1000.0,
            compare="at_most",
            samples=warm,
            note=note,
        ),
        result(
            "images.bound first call, Python up, Pillow not loaded (Chromium)",
            median(first),
            "ms",
            samples=first,
            note=f"first - warm = {median(first) - median(warm):.0f} ms: with the thumbnails made"
            " ahead the bound loads no Pillow (it did: ~1.7 s before they were)",
        ),
        result(
            "images.bound, worker stopped (Pyodide boot + the work; Pillow only if not made ahead)",
            median(cold),
            "ms",
            samples=cold,
        ),
        result(
            "images.bound warm, nothing stored ahead (it writes each original itself)",
            median(unstored),
            "ms",
            samples=unstored,
        ),
        result(
            "chrome.storage alone: read the 20 MB history, check the originals stored ahead,"
            " write the bounded history over it",
            floor,
            "ms",
            samples=floors,
            note=f"images.bound warm / this floor = {median(warm) / floor:.2f}x (same run)",
        ),
        result(
            "reading the 20 MB history: chrome.storage alone, in the worker's JS",
            median(read_alone),
            "ms",
            samples=read_alone,
        ),
        result(
            "reading the 20 MB history into Python as the bound does (read_history through the bridge)",
            median(read_bridged),
            "ms",
            samples=read_bridged,
            note="the bridge (the JSON text and the long strings apart as UTF-8 pieces, the copies"
            f" into Pyodide, json.loads) adds"
            f" {median(read_bridged) - median(read_alone):.0f} ms to chrome.storage's read",
        ),
        result(
            "storing a parked image's original and thumbnail ahead, after the failed turn (3 MB; background)",
            median(ahead),
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
sys.path.insert(0, sys.argv[1] + "/../tests/support")  # the in-memory platform
history = json.load(open(sys.argv[2]))
t0 = time.perf_counter()
from margin.images.bound import bound_unseen_image_bytes
from platform_memory import memory_platform
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
        out = python_child(_CPYTHON_CHILD, str(REPO / "py"), str(path), str(runs), what="the CPython bound")
    first, *rest = out["timings"]
    return [
        result(
            "bound_unseen_image_bytes 20 MB -> 8 MB, warm (CPython)",
            median(rest),
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


METRICS = [bound_in_browser, bound_in_cpython]
BROWSERLESS_METRICS = [bound_in_cpython]
