"""Session search figures of issues 3 and 14: search as you type over 1,000 sessions x 100K
digests, the panel's preload of them (main-thread time), opening the sessions panel, and the
service worker's one-time backfill of the search copy.

Concept: measurement functions in the style of `bench/run.py` (see bench_sessions.py, whose
seeding this module uses). Run alone:
`MARGIN_DIST=dist/margin python3 bench/bench_session_search.py [--runs N]`.

1. `search_and_open`: 1,000 sessions whose digests are full (100,000 characters each, ~100 MB),
   seeded into chrome.storage.local from a page. Then, in the same run, so that the ratios hold on
   a noisy machine:
   - the service worker's backfill of the whole copy (its database deleted first), timed, and
     what the copy adds on disk (the origin's IndexedDB usage before and after);
   - the preload's main-thread time (index + every digest ready to search) on a fresh extension
     page with the search worker (reading the copy) and without it (the main-thread path, as
     before the copy): target <= 500 ms with the worker; the ratio is printed;
   - search per keystroke (median, p95) of several queries (Latin, diacritics, Cyrillic, CJK, no
     match) typed at ~16 keys/s into the sessions panel, query to painted rows + layout, in the
     side panel (worker) and on plain pages (with the panel's stylesheet) searching in the worker
     and on the main thread; target p95 < 20 ms;
   - "Sessions" click to painted list, preloaded (target < 100 ms), and cold (no preload).
   The load average (/proc/loadavg) before and after is in the notes.

Rules: every measured call is checked (match counts, rows painted, where search ran, how many
digests the main thread read), so a broken product gives an error, not a figure.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_result import median, result
from bench_sessions import DIGEST_CHARS, QUERIES, SESSIONS, _p95, _seed_index

# The preload's main-thread time, measured three ways while it reads the index and every digest:
# long tasks (> 50 ms, as Chrome reports them), the time inside the preload's own callbacks, and a
# 16 ms heartbeat's lateness summed (what the page could not run: deserializing storage's answers
# included, which no callback of ours sees). `worker` false: search on the main thread (before).
PRELOAD_JS = """async (worker) => {
  const m = await import('./panel/sessions/drawer.js');
  if (!worker) m.useSearchWorker(false);
  const long = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) long.push(e.duration); });
  observer.observe({type: 'longtask', buffered: false});
  let late = 0, worst = 0, last = performance.now(), beating = true;
  const beat = () => { const now = performance.now(); const lag = Math.max(0, now - last - 16);
    late += lag; worst = Math.max(worst, lag); last = now; if (beating) setTimeout(beat, 16); };
  setTimeout(beat, 16);
  const t = performance.now();
  await m.preloadSessions();
  const loaded = performance.now() - t;
  while (m.sessionsIndexTimings().prepareMs === null) await new Promise((r) => setTimeout(r, 50));
  beating = false;
  await new Promise((r) => setTimeout(r, 100));
  observer.disconnect();
  return {...m.sessionsIndexTimings(), preloadResolvedMs: loaded, wallMs: performance.now() - t - 100,
          longTasks: long.length, longTaskMs: long.reduce((a, b) => a + b, 0),
          longestTaskMs: Math.max(0, ...long),
          heartbeatLateMs: late, heartbeatWorstMs: worst};
}"""

# The sessions panel mounted in a plain extension page (after PRELOAD_JS there), with its
# stylesheet, as the side panel has it: unstyled rows are cheaper to lay out.
MOUNT_JS = """async () => {
  const css = document.createElement('link');
  css.rel = 'stylesheet';
  css.href = 'panel/sessions/drawer.css';
  await new Promise((r) => { css.onload = r; css.onerror = r; document.head.append(css); });
  const m = await import('./panel/sessions/drawer.js');
  const root = document.createElement('div');
  root.id = 'sessions-root';
  document.body.append(root);
  m.mountSessionsPanel(root, {call: async () => ({})});
  await new Promise((r) => setTimeout(r, 200));
  return root.querySelectorAll('li[role=listitem]').length;
}"""

# From the click to the frame that shows the list (a rAF runs just before its frame is painted;
# the setTimeout inside it fires once that frame is done).
OPEN_JS = """() => new Promise((resolve, reject) => {
  const root = document.getElementById('sessions-root');
  const button = document.getElementById('sessions');
  const t0 = performance.now();
  button.click();
  const deadline = t0 + 60000;
  const check = () => {
    const rows = root.hidden ? 0 : root.querySelectorAll('li[role=listitem]').length;
    if (rows) {
      requestAnimationFrame(() => setTimeout(() => resolve({ms: performance.now() - t0, rows}), 0)); return;
    }
    if (performance.now() > deadline) { reject(new Error('no list painted')); return; }
    setTimeout(check, 0);
  };
  check();
})"""

CLOSE_JS = """() => { const root = document.getElementById('sessions-root');
  if (!root.hidden) document.getElementById('sessions').click(); return root.hidden; }"""

# Each keystroke: the query to the worker (or the main thread), its rows painted, layout forced.
SEARCH_JS = """async (queries) => {
  const m = await import('./panel/sessions/drawer.js');
  const panel = m.activePanel();
  const list = document.querySelector('#sessions-root .sp-list');
  const samples = [];
  const inWorker = [], hops = [], paints = [];
  const labels = [];
  const counts = {};
  for (const q of queries) {
    for (let i = 1; i <= q.length; i++) {
      const t = performance.now();
      const n = await panel.search(q.slice(0, i));
      list.getBoundingClientRect();  // layout included
      samples.push(performance.now() - t);
      const spent = panel.lastSearch();
      if (spent?.workerMs != null) inWorker.push(spent.workerMs);
      if (spent?.hopMs != null) hops.push(spent.hopMs);
      if (spent) paints.push(spent.paintMs);
      labels.push(q.slice(0, i));
      counts[q.slice(0, i)] = n;
      await new Promise((r) => setTimeout(r, 60));  // a fast typist: ~16 keys a second
    }
    const t = performance.now();
    await panel.search('');
    list.getBoundingClientRect();
    samples.push(performance.now() - t);
    labels.push('(cleared)');
  }
  await panel.search('привет');
  const marks = document.querySelectorAll('#sessions-root mark').length;
  await panel.search('');
  const timings = (await import('./panel/sessions/drawer.js')).sessionsIndexTimings();
  return {samples, inWorker, hops, paints, labels, counts, marks, searchIn: timings.searchIn};
}"""

# What the extension's origin holds in IndexedDB (the copy, and the Python memory snapshot) and
# what chrome.storage.local holds, in bytes as each counts them.
SIZES_JS = """async () => { const e = await navigator.storage.estimate();
  const storageLocal = await chrome.storage.local.getBytesInUse(null);
  return {indexedDB: e.usageDetails?.indexedDB ?? null, storageLocal}; }"""

BACKFILL_JS = """() => new Promise((resolve, reject) => {
  const request = indexedDB.deleteDatabase('margin-search');
  request.onsuccess = () => resolve(true);
  request.onerror = () => reject(request.error);
  request.onblocked = () => reject(new Error('the copy is held open'));
})"""


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _page(bench: Any, path: str):
    page = bench.launched.context.new_page()
    page.goto(bench.margin.url(path))
    if path == "sidepanel.html":
        bench.margin.wait_panel_ready(page, timeout_ms=60_000)
    return page


def _settle_copy(bench: Any) -> float:
    started = time.monotonic()
    bench.margin.worker().evaluate("() => globalThis.marginSearchCopy.settled()")
    return (time.monotonic() - started) * 1000


def _task_seconds(cdp: Any) -> float:
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return next(m["value"] for m in metrics if m["name"] == "TaskDuration")


def _main_thread_ms(page: Any, script: str, arg: Any) -> tuple[Any, float]:
    """`script`'s result and the page's main-thread task time while it ran (Chrome's own count,
    CDP Performance TaskDuration: every task of the page's main thread, deserializing storage's
    answers included; a dedicated Worker's thread is not counted)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    before = _task_seconds(cdp)
    value = page.evaluate(script, arg)
    busy = (_task_seconds(cdp) - before) * 1000
    cdp.detach()
    return value, busy


IDLE_JS = """async (ms) => { let beats = 0; const end = performance.now() + ms;
  while (performance.now() < end) { await new Promise((r) => setTimeout(r, 16)); beats++; } return beats; }"""


def _preload(bench: Any, worker: bool) -> dict[str, Any]:
    page = _page(bench, "blank.html")
    prepared, busy = _main_thread_ms(page, PRELOAD_JS, worker)
    prepared["taskMs"] = busy
    if prepared["sessions"] != SESSIONS or prepared["prepared"] != SESSIONS:
        raise RuntimeError(f"the preload holds {prepared}")
    if prepared["searchIn"] != ("worker" if worker else "page"):
        raise RuntimeError(f"search ran in {prepared['searchIn']}")
    if worker and prepared["digestsReadHere"]:
        read = prepared["digestsReadHere"]
        raise RuntimeError(f"the main thread read {read} digests: the copy was incomplete")
    # The same page idle for as long, heartbeat included: what no preload costs.
    _, prepared["idleTaskMs"] = _main_thread_ms(page, IDLE_JS, prepared["wallMs"])
    prepared["mainThreadMs"] = max(prepared["prepareBusyMs"], prepared["longTaskMs"], busy)
    return {"page": page, **prepared}


def _typed(pages: list[Any], rounds: int = 1) -> list[dict[str, Any]]:
    """Every query typed into each page in turn (the order flipped each round), so that pages
    compared with each other see the same moments of a noisy machine."""
    out: list[dict[str, Any]] = [
        {"samples": [], "inWorker": [], "hops": [], "paints": [], "labels": [], "searchIn": set()}
        for _ in pages
    ]
    for turn in range(rounds):
        for query in QUERIES:
            order = list(range(len(pages)))[:: -1 if turn % 2 else 1]
            for k in order:
                searched = pages[k].evaluate(SEARCH_JS, [query])
                counts = searched["counts"]
                expected = {"zebra": 0, "привет": SESSIONS, "你好世界": SESSIONS}
                if query in expected and counts.get(query) != expected[query]:
                    raise RuntimeError(f"unexpected match counts: {counts}")
                if searched["marks"] < 1:
                    raise RuntimeError("no highlighted match for привет")
                for key in ("samples", "inWorker", "hops", "paints", "labels"):
                    out[k][key] += [round(v, 2) for v in searched[key]] if key != "labels" else searched[key]
                out[k]["searchIn"].add(searched["searchIn"])
    for typed in out:
        typed["slowest"] = sorted(zip(typed["samples"], typed["labels"], strict=True), reverse=True)[:5]
        typed["searchIn"] = "/".join(sorted(typed["searchIn"]))
    return out


def _preload_note(p: dict[str, Any]) -> str:
    return (
        f"the page's main-thread tasks {round(p['taskMs'], 1)} ms while it ran, against "
        f"{round(p['idleTaskMs'], 1)} ms for the same page idle as long (CDP TaskDuration: the figure, "
        f"unless one of the next two is larger); "
        f"callbacks {round(p['prepareBusyMs'], 1)} ms, long tasks {p['longTasks']} totalling "
        f"{round(p['longTaskMs'], 1)} ms (longest {round(p['longestTaskMs'], 1)} ms), a 16 ms heartbeat "
        f"late by {round(p['heartbeatLateMs'], 1)} ms in all (worst {round(p['heartbeatWorstMs'], 1)} ms); "
        f"wall time to every digest ready {round(p['wallMs'])} ms; digests read on the main thread "
        f"{p['digestsReadHere']}"
    )


def search_and_open(bench: Any) -> list[dict[str, Any]]:
    """One seeded 100 MB set of digests for every figure (seeding it costs seconds)."""
    load_before = _loadavg()
    seeded = _seed_index(bench)
    if seeded["chars"] != SESSIONS * DIGEST_CHARS:
        raise RuntimeError(f"seeded {seeded['chars']} characters of digests, not {SESSIONS * DIGEST_CHARS}")
    # Seeded from a page, not through Python's bridge: the copy knows none of it. Its database is
    # deleted (as on a profile from before the copy) and the service worker's backfill timed.
    bench.margin._extension_page().evaluate(BACKFILL_JS)
    without_copy = bench.margin._extension_page().evaluate(SIZES_JS)
    backfill_ms = _settle_copy(bench)
    with_copy = bench.margin._extension_page().evaluate(SIZES_JS)
    copy_mb = (with_copy["indexedDB"] - without_copy["indexedDB"]) / 1e6 if with_copy["indexedDB"] else None

    cold_samples = []
    for _ in range(max(1, min(bench.runs, 3))):
        page = _page(bench, "sidepanel.html")
        cold_samples.append(page.evaluate(OPEN_JS)["ms"])
        page.close()

    with_worker = _preload(bench, worker=True)
    on_main = _preload(bench, worker=False)
    for preloaded in (with_worker, on_main):
        if preloaded["page"].evaluate(MOUNT_JS) < 10:
            raise RuntimeError("the mounted sessions panel painted no list")
    typed_blank, typed_main = _typed([with_worker["page"], on_main["page"]], rounds=2)
    with_worker["page"].close()
    on_main["page"].close()

    page = _page(bench, "sidepanel.html")
    opened = page.evaluate(PRELOAD_JS, True)  # the panel's own preload is already running: wait for it
    if opened["searchIn"] != "worker":
        raise RuntimeError(f"the side panel searched in {opened['searchIn']}")
    open_samples: list[float] = []
    for run in range(bench.runs + 1):
        shown = page.evaluate(OPEN_JS)
        if shown["rows"] < 10:
            raise RuntimeError(f"the list painted {shown['rows']} rows")
        open_samples.append(shown["ms"])
        if run < bench.runs:
            page.evaluate(CLOSE_JS)
            page.wait_for_timeout(200)
    [typed] = _typed([page])
    page.close()
    where = (typed["searchIn"], typed_blank["searchIn"], typed_main["searchIn"])
    if where != ("worker", "worker", "page"):
        raise RuntimeError(f"search ran in {where}")
    load = f"load average {load_before} before, {_loadavg()} after"

    samples, before, beside = typed["samples"], typed_main["samples"], typed_blank["samples"]
    p95, p95_before, p95_beside = _p95(samples), _p95(before), _p95(beside)
    main_ms, main_before = round(with_worker["mainThreadMs"], 1), round(on_main["mainThreadMs"], 1)
    return [
        result(
            "search 1,000 sessions x 100K chars, per keystroke in the side panel (search worker, median)",
            median(samples),
            "ms",
            20.0,
            samples=samples,
            note=(
                f"p95 {p95} ms, max {round(max(samples), 2)} ms over {len(samples)} keystrokes of {QUERIES} "
                f"(~16 keys/s, then cleared): the query to the worker, its first page of rows (10) with "
                f"previews and highlights painted, layout; slowest: "
                f"{', '.join(f'{label!r} {v} ms' for v, label in typed['slowest'])}; the worker's own "
                f"search per keystroke: median {median(typed['inWorker'])} ms, "
                f"p95 {_p95(typed['inWorker'])} ms; its answer's trip back to the page: median "
                f"{median(typed['hops'])} ms, p95 {_p95(typed['hops'])} ms; painting the rows: median "
                f"{median(typed['paints'])} ms, p95 {_p95(typed['paints'])} ms; "
                f"{load}"
            ),
        ),
        result("search 1,000 sessions, per keystroke (search worker, p95)", p95, "ms", 20.0, samples=samples),
        result(
            "search on a plain extension page, search worker / main thread, typed alternately (p95)",
            p95_beside,
            "ms",
            None,
            samples=beside,
            note=(
                f"main thread p95 {p95_before} ms; ratio worker / main thread "
                f"{round(p95_beside / p95_before, 3)} "
                f"(medians {median(beside)} / {median(before)} ms); {len(beside)} keystrokes each, every "
                f"query typed into one page then the other, the order flipped in the second round"
            ),
        ),
        result(
            "panel preload (index + 1,000 x 100K digests): main-thread time, search worker",
            main_ms,
            "ms",
            500.0,
            note=f"{_preload_note(with_worker)}; {load}",
        ),
        result(
            "the same preload searching on the main thread (as before the copy), same run",
            main_before,
            "ms",
            None,
            note=f"{_preload_note(on_main)}; worker / main thread = {round(main_ms / main_before, 4)}",
        ),
        result(
            "open sessions panel, 1,000 sessions, index preloaded: click to painted list",
            median(open_samples[1:]),
            "ms",
            100.0,
            samples=[round(s, 2) for s in open_samples],
            note=(
                f"first open (mounts the panel) {round(open_samples[0], 2)} ms; "
                f"seeding took {round(seeded['setMs'])} ms"
            ),
        ),
        result(
            "open sessions panel, 1,000 sessions, COLD (no preload): click to painted list",
            median(cold_samples),
            "ms",
            None,
            samples=[round(s, 2) for s in cold_samples],
            note="reads and parses the light index on the click (digests follow: the worker reads the copy)",
        ),
        result(
            "search copy: the service worker's one-time backfill of 1,000 x 100K digests into IndexedDB",
            round(backfill_ms, 1),
            "ms",
            None,
            note=(
                "its database deleted, then rebuilt from chrome.storage 20 digests at a time, in the "
                "service worker (off every page's main thread); on disk the copy adds "
                f"{copy_mb if copy_mb is None else round(copy_mb, 1)} MB to the origin's IndexedDB "
                f"(navigator.storage.estimate, before and after), beside chrome.storage.local's "
                f"{round(with_copy['storageLocal'] / 1e6, 1)} MB (getBytesInUse: digests, entries, bodies)"
            ),
        ),
    ]


METRICS = [search_and_open]


if __name__ == "__main__":
    import bench_sessions

    sys.exit(bench_sessions.main(metrics=METRICS))
