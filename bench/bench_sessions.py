"""Session figures of issues 3 and 14: session actions at 100 and 1,000 sessions, saving 8 MB of
images (search and the panel's preload: bench_session_search.py, which seeds through this module).

Concept: measurement functions in the style of `bench/run.py` (each takes the `Bench` of run.py,
or None where no browser is needed, and returns a list of dicts with `Result`'s fields:
`name, value, unit, target, compare, samples, note`), so run.py can append them with
`Result(**d)`. Run alone: `MARGIN_DIST=dist/margin python3 bench/bench_sessions.py [--runs N]`.

1. `session_actions`: every Python session action at 100 and at 1,000 sessions x 100K digests
   (round trips from a page, with the page's own chrome.storage get/set of the index beside
   them), and the one-time move of inline digests to their own keys.
2. `save_8mb`: `session.new` with 8 MB of images in `history` and 20 other saved sessions (each
   with an image): the round trip in Chromium, with `chrome.storage.onChanged` watched during the
   call (no other session's body may change); the same save in CPython on the memory store,
   counting the writes.

Rules: data is deterministic (seeded generators); every measured call is checked (match counts,
rows painted, keys changed), so a broken product gives an error, not a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "py"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from bench_result import result

from margin import session_index, sessions

SESSIONS = 1000
DIGEST_CHARS = session_index.DIGEST_CAP
# Digest text: Latin with diacritics, Cyrillic, CJK, so search exercises every folding path.
WORDS = (
    "the quick brown fox jumps over a lazy dog while reading café naïve résumé "
    "Привет мир 你好世界 données straße notes about the article and the video"
).split()
IMAGE_BYTES = 8 * 1024 * 1024
QUERIES = ["quick brown", "café", "naïve résumé", "привет", "你好世界", "straße", "données notes", "zebra"]


def _median(samples: list[float]) -> float:
    return round(statistics.median(samples), 2)


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 2)


# --- seeding in the page (100 MB does not go through Playwright's wire) ------------------------------

SEED_JS = """async ({n, digestChars, words, layout}) => {
  let seed = 1234;
  const rnd = () => { seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff; return seed / 0x80000000; };
  const base = 1700000000000;
  const index = [];
  const bodies = {};
  let chars = 0;
  for (let i = 0; i < n; i++) {
    const parts = [];
    let length = 0;
    while (length <= digestChars) {
      const w = words[Math.floor(rnd() * words.length)]; parts.push(w); length += w.length + 1;
    }
    const text = parts.join(' ').slice(0, digestChars);
    const id = 'bench' + String(i).padStart(5, '0');
    const entry = {id, name: 'Bench session ' + i, createdAt: base + i, pinned: i % 50 === 0,
                   savedAt: base + i, bodyHash: ''};
    // 'inline': the layout before digests moved out of the index; 'apart': sessionDigest_<id>.
    if (layout === 'inline') entry.textDigest = text;
    else { entry.digestHead = text.slice(0, 140); bodies['sessionDigest_' + id] = text; }
    index.push(entry);
    chars += text.length;
    // Bodies are small: listing and searching never read them.
    bodies['session_' + id] = {history: [{role: 'user', content: 'Bench session ' + i}], savedAt: base + i};
  }
  await chrome.storage.local.clear();
  const t = performance.now();
  const keys = Object.keys(bodies);
  for (let k = 0; k < keys.length; k += 200) {
    const slice = keys.slice(k, k + 200).map((key) => [key, bodies[key]]);
    await chrome.storage.local.set(Object.fromEntries(slice));
  }
  await chrome.storage.local.set({savedSessions: index});
  return {setMs: performance.now() - t, chars, indexChars: JSON.stringify(index).length};
}"""


def _seed_index(bench: Any, n: int = SESSIONS, layout: str = "apart") -> dict[str, Any]:
    margin = bench.margin
    margin._extension_page().evaluate("() => 1")
    return margin._extension_page().evaluate(
        SEED_JS, {"n": n, "digestChars": DIGEST_CHARS, "words": WORDS, "layout": layout}
    )


# --- session actions at 100 and 1,000 sessions ---------------------------------------------------------

ACTION_SAMPLES = 5
SMALL = 100

# Each action as the panel sends it, timed from the page: the round trip is the worker's time plus
# messaging (a few ms), so it bounds the worker's time from above. `history` is set (untimed)
# before "New session" and "Open" so that each saves a conversation, as the user's would.
ACTIONS_JS = """async ({ids, samples}) => {
  const send = async (type, payload) => {
    const t = performance.now();
    const reply = await chrome.runtime.sendMessage({type, payload});
    const ms = performance.now() - t;
    if (!reply.ok) throw new Error(type + ': ' + JSON.stringify(reply.error));
    return {ms, value: reply.value};
  };
  const talk = (i) => [{role: 'user', content: 'Question ' + i + ' about café'},
                       {role: 'assistant', content: 'Answer ' + i}];
  await send('session.check', {});
  const out = {rename: [], pin: [], new: [], open: [], delete: [], undelete: [], check: [],
               ping: [], storageGet: [], storageSet: []};
  for (let i = 0; i < samples; i++) {
    // Baselines at this size: a worker round trip with no storage, and the page's own read and
    // write of the index through chrome.storage (no Python at all).
    out.ping.push((await send('app.ping', {})).ms);
    let t = performance.now();
    const got = await chrome.storage.local.get('savedSessions');
    out.storageGet.push(performance.now() - t);
    t = performance.now();
    await chrome.storage.local.set({benchIndexCopy: got.savedSessions});
    out.storageSet.push(performance.now() - t);
    const id = ids[(i * 7) % ids.length];
    out.rename.push((await send('session.rename', {id, name: 'Renamed ' + i})).ms);
    out.pin.push((await send('session.pin', {id, pinned: i % 2 === 0})).ms);
    await chrome.storage.local.set({history: talk(i), historySessionId: null});
    out.new.push((await send('session.new', {})).ms);
    await chrome.storage.local.set({history: talk(i + 100), historySessionId: null});
    out.open.push((await send('session.open', {id})).ms);
    const deleted = await send('session.delete', {id: ids[ids.length - 1 - i]});
    out.delete.push(deleted.ms);
    out.undelete.push((await send('session.undelete', {undo: deleted.value.undo})).ms);
    out.check.push((await send('session.check', {})).ms);
  }
  await chrome.storage.local.remove('benchIndexCopy');
  return out;
}"""

MIGRATE_JS = """async () => { const t = performance.now();
  const reply = await chrome.runtime.sendMessage({type: 'session.check', payload: {}});
  const ms = performance.now() - t;
  const got = await chrome.storage.local.get(['savedSessions', 'sessionDigest_bench00000']);
  return {ms, ok: reply.ok, inline: got.savedSessions.filter((e) => 'textDigest' in e).length,
          digest: (got.sessionDigest_bench00000 || '').length,
          indexChars: JSON.stringify(got.savedSessions).length}; }"""


def session_actions(bench: Any) -> list[dict[str, Any]]:
    """Every Python session action at 100 and at 1,000 sessions x 100K digests, and the one-time
    move of inline digests (the layout before) to their own keys."""
    figures: dict[int, dict[str, list[float]]] = {}
    index_chars: dict[int, int] = {}
    page = bench.margin._extension_page()
    # BENCH_SESSIONS_LAYOUT=inline measures a build from before digests moved out (the "before").
    layout = os.environ.get("BENCH_SESSIONS_LAYOUT", "apart")
    for n in (SMALL, SESSIONS):
        seeded = _seed_index(bench, n, layout)
        index_chars[n] = seeded["indexChars"]
        bench.margin.send_message({"type": "app.ping", "payload": {}})
        ids = [f"bench{i:05d}" for i in range(n)]
        figures[n] = page.evaluate(ACTIONS_JS, {"ids": ids, "samples": ACTION_SAMPLES})
    rows: list[dict[str, Any]] = []
    baselines = ("ping", "storageGet", "storageSet")
    base = {b: f"{_median(figures[SMALL][b])} -> {_median(figures[SESSIONS][b])} ms" for b in baselines}
    for action, samples in figures[SESSIONS].items():
        if action in baselines:
            continue
        small = _median(figures[SMALL][action])
        big = _median(samples)
        ratio = round(big / small, 2) if small else None
        rows.append(
            result(
                f"session.{action} at 1,000 sessions x 100K digests (round trip from the page)",
                big,
                "ms",
                200.0,
                samples=[round(v, 2) for v in samples],
                note=(
                    f"at {SMALL} sessions {small} ms: ratio 1,000/{SMALL} = {ratio} "
                    f"({'independent' if ratio is not None and ratio <= 1.5 else 'GROWS'} "
                    "with the number of sessions); "
                    f"index {index_chars[SESSIONS] / 1e3:.0f} K characters at 1,000 sessions; same run, "
                    f"{SMALL} -> 1,000 sessions, no Python: app.ping {base['ping']}, the page's "
                    f"chrome.storage get of the index {base['storageGet']}, set {base['storageSet']}"
                ),
            )
        )
    if layout == "inline":
        return rows
    seeded = _seed_index(bench, SESSIONS, layout="inline")
    migrated = page.evaluate(MIGRATE_JS)
    if not migrated["ok"] or migrated["inline"] or migrated["digest"] != DIGEST_CHARS:
        raise RuntimeError(f"the migration left {migrated}")
    rows.append(
        result(
            "one-time move of 1,000 inline 100K digests to sessionDigest_<id> (first session.check)",
            round(migrated["ms"], 1),
            "ms",
            None,
            note=(
                f"index before {seeded['indexChars'] / 1e6:.1f} M characters, after "
                f"{migrated['indexChars'] / 1e3:.0f} K characters"
            ),
        )
    )
    return rows


# --- saving 8 MB of images ----------------------------------------------------------------------------


def _image_url(seed: int, size: int) -> str:
    raw = random.Random(seed).randbytes(size * 3 // 4)
    return "data:image/jpeg;base64," + base64.b64encode(raw).decode("ascii")


def _heavy_history() -> list[dict[str, Any]]:
    per_image = IMAGE_BYTES // 4
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Photo {i}: what is in it?"},
                {"type": "image_url", "image_url": {"url": _image_url(i, per_image)}},
            ],
            "imagesSeen": True,
        }
        if k == 0
        else {"role": "assistant", "content": f"Photo {i} shows a landscape."}
        for i in range(4)
        for k in range(2)
    ]


def _others(n: int = 20) -> dict[str, Any]:
    """`n` saved sessions in the current format, each with a 200 KB image in its body."""
    index: list[dict[str, Any]] = []
    items: dict[str, Any] = {}
    for i in range(n):
        sid = f"other{i:02d}"
        history = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"other {i}"},
                    {"type": "image_url", "image_url": {"url": _image_url(100 + i, 200_000)}},
                ],
            }
        ]
        items[f"session_{sid}"] = {"history": history, "savedAt": 1_700_000_000_000 + i}
        items[f"sessionDigest_{sid}"] = f"other {i}"
        index.append(
            {
                "id": sid,
                "name": f"other {i}",
                "createdAt": 1_700_000_000_000 + i,
                "pinned": False,
                "digestHead": f"other {i}",
                "savedAt": 1_700_000_000_000 + i,
                "bodyHash": session_index.body_hash(history),
            }
        )
    items["savedSessions"] = index
    return items


WATCH_JS = """() => { window.__changed = []; if (!window.__watching) { window.__watching = true;
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'local') window.__changed.push(...Object.keys(changes)); }); } }"""

SAVE_JS = """async () => { const t = performance.now();
  const reply = await chrome.runtime.sendMessage({type: 'session.new', payload: {}});
  const ms = performance.now() - t;
  await new Promise((r) => setTimeout(r, 300));  // let the last onChanged events arrive
  return {ms, reply, changed: [...new Set(window.__changed)]}; }"""


def save_8mb(bench: Any) -> list[dict[str, Any]]:
    margin = bench.margin
    page = margin._extension_page()
    history = _heavy_history()
    chars = sum(
        len(p["image_url"]["url"])
        for r in history
        if isinstance(r["content"], list)
        for p in r["content"]
        if p["type"] == "image_url"
    )
    others = _others()
    page.evaluate("() => chrome.storage.local.clear()")
    margin.storage_set(others)
    margin.send_message({"type": "app.ping", "payload": {}})
    samples: list[float] = []
    rewritten: list[str] = []
    for _ in range(bench.runs):
        margin.storage_set({"history": history, "historySessionId": None})
        page.evaluate(WATCH_JS)
        done = page.evaluate(SAVE_JS)
        if not done["reply"].get("ok"):
            raise RuntimeError(f"session.new failed: {done['reply']}")
        sid = done["reply"]["value"]["savedId"]
        allowed = {f"session_{sid}", f"sessionDigest_{sid}", "savedSessions", "history", "historySessionId"}
        if not set(done["changed"]) <= allowed or f"session_{sid}" not in done["changed"]:
            raise RuntimeError(f"session.new changed {done['changed']}")
        rewritten.extend(k for k in done["changed"] if k.startswith("session_") and k != f"session_{sid}")
        samples.append(round(done["ms"], 2))
    cpython = _save_8mb_cpython(history, others)
    return [
        result(
            "save conversation with 8 MB of images (session.new, Chromium)",
            _median(samples),
            "ms",
            None,
            samples=samples,
            note=(
                f"{chars / 1e6:.1f} M characters of image data URLs; 20 other sessions stored; "
                f"keys changed per "
                f"save: only its own body and digest, savedSessions, history, historySessionId; "
                f"other bodies rewritten: "
                f"{len(rewritten)}"
            ),
        ),
        cpython,
    ]


def _run_async(coro: Any) -> Any:
    """asyncio.run in a thread of its own: sync Playwright keeps an event loop in this one."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _save_8mb_cpython(history: list[dict[str, Any]], others: dict[str, Any]) -> dict[str, Any]:
    from margin.platform_memory import MemoryStorageArea, memory_platform

    samples, other_writes = [], 0
    for _ in range(5):
        platform = memory_platform({**others, "history": history, "historySessionId": None})
        started = time.perf_counter()
        _run_async(sessions.handle_new(platform, {}))
        samples.append(round((time.perf_counter() - started) * 1000, 2))
        assert isinstance(platform.local, MemoryStorageArea)
        written = [k for w in platform.local.writes if isinstance(w, dict) for k in w]
        other_writes += sum(1 for k in written if k.startswith("session_other"))
        bodies = [k for k in written if k.startswith("session_")]
        if len(bodies) != 1:
            raise RuntimeError(f"the save wrote {bodies}")
    return result(
        "save conversation with 8 MB of images (CPython, memory store)",
        _median(samples),
        "ms",
        None,
        samples=samples,
        note=f"body writes per save: 1 (its own); other sessions' bodies written: {other_writes}",
    )


# save_8mb first: the 100 MB seeded by session_actions keeps the worker busy for a while after.
# Search and the panel's preload are in bench_session_search.py.
METRICS = [save_8mb, session_actions]


def _verdict(row: dict[str, Any]) -> str:
    """PASS / FAIL against the row's target (and, for an action, its 1,000/100 ratio <= 1.5)."""
    if row.get("target") is None or row["value"] is None:
        return "-" if row["value"] is not None else "FAIL"
    ok = (
        row["value"] <= row["target"]
        if row.get("compare", "below") == "below"
        else row["value"] >= row["target"]
    )
    if "GROWS" in row.get("note", ""):
        ok = False
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None, metrics: list[Any] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    dist = Path(os.environ.get("MARGIN_DIST") or REPO / "dist" / "margin")
    only = {n.strip() for n in args.only.split(",") if n.strip()}

    from harness import Margin, launch
    from playwright.sync_api import sync_playwright

    class _Bench:
        def __init__(self, launched: Any, runs: int):
            self.launched, self.margin, self.runs = launched, Margin(launched), runs

    rows: list[dict[str, Any]] = []
    with sync_playwright() as playwright:
        launched = launch(playwright, dist)
        try:
            for metric in metrics or METRICS:
                if only and metric.__name__ not in only:
                    continue
                started = time.monotonic()
                try:
                    rows.extend(metric(_Bench(launched, args.runs)))
                except Exception as error:
                    rows.append(
                        {**result(metric.__name__, None, "ms"), "error": f"{type(error).__name__}: {error}"}
                    )
                print(f"  {metric.__name__}: {time.monotonic() - started:.1f}s", file=sys.stderr)
        finally:
            launched.close()
    for row in rows:
        value = "n/a" if row["value"] is None else f"{row['value']:.2f} {row['unit']}"
        target = f"< {row['target']:g}" if row.get("target") is not None else "-"
        print(
            f"{_verdict(row):4} {row['name']}: {value} (target {target})"
            + (f"\n    {row['note']}" if row.get("note") else "")
            + (f"\n    ERROR {row['error']}" if row.get("error") else "")
        )
    print(
        json.dumps(
            [{k: v for k, v in r.items() if k != "samples"} for r in rows], ensure_ascii=False, indent=1
        ),
        file=sys.stderr,
    )
    return 1 if any(r["value"] is None for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
