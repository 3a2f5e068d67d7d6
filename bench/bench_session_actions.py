"""Session actions of issue 14: every Python session action at 100 and at 1,000 sessions x 100K
digests, what chrome.storage itself costs at those sizes, and the one-time move to layout 2.

Concept: measurement functions in the style of `bench/run.py` (as bench_sessions.py, whose
seeding they share). Run alone:
`MARGIN_DIST=dist/margin python3 bench/bench_session_actions.py [--runs N]`.

1. `session_actions`: the store seeded with n sessions (layout 2 by default; the env variable
   BENCH_SESSIONS_LAYOUT=apart seeds the list of entries, the layout before, to measure a build
   from before), each action sent as the panel sends it and timed from the page (the round trip
   bounds the worker's time from above), ACTION_SAMPLES per action; `session.check` twice: as
   most calls are (this browser run looked for lost bodies already) and as the first of a run
   (`sessionBodiesChecked` removed from chrome.storage.session first: it lists every key's name);
   and a rename sent just after such a first check, as the user's first action in a panel just
   opened is (the check looks without the storage lock: the rename must not wait for it);
   the medians at 1,000 and at 100 say whether an action on one session grows with the number of
   sessions (more than 1.5x and more than FLAT_MS: GROWS, a failure). Beside it, in the same run,
   what no Python does: chrome.storage's get and set of one ~282 K-character value (the whole
   index of the layout before), the get of 1,000 small entry keys (what listing reads now), and
   the get and set of one entry.
2. Every action timed inside the worker's Python too (no messaging: the worker's own time, its
   storage calls included), at both sizes: independence is judged on these medians, since the
   round trip's messaging moves with the machine's load (app.ping is reported beside it). For
   the rename, its storage calls alone.
3. The one-time move of the list of 1,000 entries (the layout before) to layout 2, on the first
   `session.check`.

Rules: every call is checked (the reply is ok, the migration left layout 2 with 1,000 entries),
so a broken product gives an error, not a figure.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from bench_result import median, result
from bench_sessions import SESSIONS, _seed_index

ACTION_SAMPLES = 9
SMALL = 100
# An action is independent of the number of sessions when its median at 1,000 is within 1.5x of
# its median at 100, or within FLAT_MS of it: a few ms is what one chrome.storage call itself
# varies between the two sizes (measured beside it: the get / set of one entry), while the layout
# before grew by 40-130 ms.
FLAT_MS = 5.0

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
  const timed = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t; };
  const talk = (i) => [{role: 'user', content: 'Question ' + i + ' about café'},
                       {role: 'assistant', content: 'Answer ' + i}];
  await send('session.check', {});
  const out = {rename: [], pin: [], new: [], open: [], delete: [], undelete: [], check: [], checkScan: [],
               renameWhileLooking: [], lookWithRename: [],
               ping: [], getWhole: [], setWhole: [], getEntries: [], getEntry: [], setEntry: []};
  // The whole index as one value (the layout before), built from the entries, under a scratch key.
  const entryKeys = ids.map((id) => 'sessionEntry_' + id);
  const got = await chrome.storage.local.get(entryKeys);
  const whole = entryKeys.map((k) => got[k]);
  await chrome.storage.local.set({benchIndexCopy: whole});
  const wholeChars = JSON.stringify(whole).length;
  for (let i = 0; i < samples; i++) {
    // Baselines at this size: a worker round trip with no storage, and the page's own storage calls.
    out.ping.push((await send('app.ping', {})).ms);
    out.getWhole.push(await timed(() => chrome.storage.local.get('benchIndexCopy')));
    out.setWhole.push(await timed(() => chrome.storage.local.set({benchIndexCopy: whole})));
    out.getEntries.push(await timed(() => chrome.storage.local.get(entryKeys)));
    const one = entryKeys[(i * 13) % entryKeys.length];
    out.getEntry.push(await timed(() => chrome.storage.local.get(one)));
    out.setEntry.push(await timed(() => chrome.storage.local.set({benchEntryCopy: got[one]})));
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
    await chrome.storage.session.remove('sessionBodiesChecked');  // as after a browser start
    out.checkScan.push((await send('session.check', {})).ms);
    // A rename sent just after the first check of a run, as the user's first action after opening
    // the panel would be: the check's look must not hold it up.
    await chrome.storage.session.remove('sessionBodiesChecked');
    const looking = send('session.check', {});
    out.renameWhileLooking.push((await send('session.rename', {id, name: 'Renamed mid-check ' + i})).ms);
    out.lookWithRename.push((await looking).ms);
  }
  await chrome.storage.local.remove(['benchIndexCopy', 'benchEntryCopy']);
  return {...out, wholeChars};
}"""

# Every action inside the worker's Python (no messaging: the worker's own time, its storage calls
# through the bridge included), as ACTIONS_JS sends them; and, for the rename, its storage calls
# alone, so the rest is Python's own work.
WORKER_PY = r"""
import json, time, statistics
from margin.app import worker as w
from margin.sessions import actions as sessions
from margin.sessions.index import read_session_index
from margin.storage.keys import SAVED_SESSIONS
try:
    from margin.storage.keys import session_entry_key
except ImportError:  # a build from before layout 2 (BENCH_SESSIONS_LAYOUT=apart)
    session_entry_key = None

async def measure(ids, samples):
    platform = w.browser_worker().platform
    area = platform.local
    out = {}

    async def timed(name, call):
        t = time.perf_counter()
        value = await call
        out.setdefault(name, []).append((time.perf_counter() - t) * 1000)
        return value

    def talk(i):
        return [{"role": "user", "content": f"Worker question {i}"}, {"role": "assistant", "content": "A"}]

    for i in range(samples):
        sid = ids[(i * 11) % len(ids)]
        await timed("rename", sessions.handle_rename(platform, {"id": sid, "name": f"Worker rename {i}"}))
        await timed("pin", sessions.handle_pin(platform, {"id": sid, "pinned": i % 2 == 0}))
        await area.set({"history": talk(i), "historySessionId": None})
        await timed("new", sessions.handle_new(platform, {}))
        await area.set({"history": talk(i + 100), "historySessionId": None})
        await timed("open", sessions.handle_open(platform, {"id": sid}))
        undo = await timed("delete", sessions.handle_delete(platform, {"id": ids[-2 - i]}))
        await timed("undelete", sessions.handle_undelete(platform, undo))
        await timed("check", sessions.handle_check(platform, {}))
        await platform.session.remove(["sessionBodiesChecked"])  # as after a browser start
        await timed("checkScan", sessions.handle_check(platform, {}))
        index = await read_session_index(area)
        await timed("readEntries", index.entries())  # what every check reads
        await timed("getHeader", area.get([SAVED_SESSIONS]))
        await timed("keyNames", area.keys())  # what the check lists to find lost bodies
        if session_entry_key:
            got = await timed("getEntry", area.get([session_entry_key(sid)]))
            await timed("setEntry", area.set(got))
    return json.dumps({k: round(statistics.median(v), 2) for k, v in out.items()})
"""
WORKER_JS = """async ([code, ids, samples]) => { const { pyodide } = await marginPython();
  await pyodide.runPythonAsync(code);
  return await pyodide.runPythonAsync(`await measure(${JSON.stringify(ids)}, ${samples})`); }"""

MIGRATE_JS = """async () => { const t = performance.now();
  const reply = await chrome.runtime.sendMessage({type: 'session.check', payload: {}});
  const ms = performance.now() - t;
  const got = await chrome.storage.local.get(['savedSessions']);
  const ids = got.savedSessions && got.savedSessions.ids;
  const keys = Array.isArray(ids) ? ids.map((id) => 'sessionEntry_' + id) : [];
  const entries = await chrome.storage.local.get(keys);
  return {ms, ok: reply.ok, layout: got.savedSessions && got.savedSessions.layout,
          entries: Object.keys(entries).length, headerChars: JSON.stringify(got.savedSessions).length}; }"""


LABELS = {"checkScan": "check, first of a browser run (lists every key's name)"}


def _ms(samples: list[float]) -> str:
    return f"{median(samples)} ms"


def session_actions(bench: Any) -> list[dict[str, Any]]:
    import os

    figures: dict[int, dict[str, Any]] = {}
    seeded: dict[int, dict[str, Any]] = {}
    page = bench.margin._extension_page()
    layout = os.environ.get("BENCH_SESSIONS_LAYOUT", "keys")
    in_worker: dict[int, dict[str, float]] = {}
    for n in (SMALL, SESSIONS):
        seeded[n] = _seed_index(bench, n, layout)
        bench.margin.send_message({"type": "app.ping", "payload": {}})
        ids = [f"bench{i:05d}" for i in range(n)]
        figures[n] = page.evaluate(ACTIONS_JS, {"ids": ids, "samples": ACTION_SAMPLES})
        in_worker[n] = json.loads(bench.margin.worker().evaluate(WORKER_JS, [WORKER_PY, ids, ACTION_SAMPLES]))
    small, big = figures[SMALL], figures[SESSIONS]
    storage = (
        f"same run, {SMALL} -> 1,000 sessions, no Python: app.ping {_ms(small['ping'])} -> "
        f"{_ms(big['ping'])}; "
        f"chrome.storage from the page: get / set of the whole index as one value "
        f"({big['wholeChars'] / 1e3:.0f} K characters at 1,000) {_ms(small['getWhole'])} -> "
        f"{_ms(big['getWhole'])} / {_ms(small['setWhole'])} -> {_ms(big['setWhole'])}; get of every "
        f"entry key {_ms(small['getEntries'])} -> {_ms(big['getEntries'])}; get / set of one entry "
        f"{_ms(small['getEntry'])} -> {_ms(big['getEntry'])} / {_ms(small['setEntry'])} -> "
        f"{_ms(big['setEntry'])} (chrome.storage's own floor: its database holds ~10 MB of "
        f"digests at {SMALL} sessions, ~100 MB at 1,000); the header "
        f"{seeded[SESSIONS]['headerChars'] / 1e3:.0f} K characters at 1,000"
    )
    rows: list[dict[str, Any]] = []
    for action in ("rename", "pin", "new", "open", "delete", "undelete", "check", "checkScan"):
        at_small, at_big = median(small[action]), median(big[action])
        # Independence is judged on the worker's own time (the round trip adds messaging, whose
        # time moves with the machine's load: app.ping is beside it).
        worker_small, worker_big = in_worker[SMALL][action], in_worker[SESSIONS][action]
        ratio = round(worker_big / worker_small, 2) if worker_small else None
        growth = round(worker_big - worker_small, 1)
        flat = ratio is not None and (ratio <= 1.5 or growth <= FLAT_MS)
        note = (
            f"in the worker's Python (no messaging) {worker_small} ms at {SMALL} sessions -> "
            f"{worker_big} ms at 1,000: ratio {ratio}, {growth:+} ms "
            f"({'independent' if flat else 'GROWS'} with the sessions); round trip at {SMALL} "
            f"sessions {at_small} ms"
        )
        if action.startswith("check"):
            # Not an action on one session: it reads every entry (and, first in a run, every key name).
            note = note.replace("GROWS", "grows: it checks every session")
            note += (
                f"; of which reading every entry {in_worker[SESSIONS].get('readEntries')} ms and, when it "
                f"lists them, chrome.storage's getKeys() {in_worker[SESSIONS]['keyNames']} ms at 1,000"
            )
        if action == "rename":
            w = in_worker[SESSIONS]
            note += (
                f"; of the rename's worker time at 1,000, chrome.storage through the bridge: get of "
                f"the index {w['getHeader']} ms, get / set of one entry {w.get('getEntry')} / "
                f"{w.get('setEntry')} ms"
            )
        rows.append(
            result(
                f"session.{LABELS.get(action, action)} at 1,000 sessions x 100K digests "
                "(round trip from the page)",
                at_big,
                "ms",
                200.0,
                samples=[round(v, 2) for v in big[action]],
                note=f"{note}; {storage}",
            )
        )
    rows.append(
        result(
            "session.rename sent just after the first check of a browser run, at 1,000 sessions x "
            "100K digests (round trip from the page)",
            median(big["renameWhileLooking"]),
            "ms",
            200.0,
            samples=[round(v, 2) for v in big["renameWhileLooking"]],
            note=(
                f"the check it follows took {_ms(big['lookWithRename'])} (alone: "
                f"{_ms(big['checkScan'])}); the rename alone {_ms(big['rename'])}; at {SMALL} "
                f"sessions {_ms(small['renameWhileLooking'])}. The check looks without the storage "
                "lock (margin.sessions.actions rule 8): the rename waits only for chrome.storage's call in "
                "flight"
            ),
        )
    )
    if layout != "keys":
        return rows
    before = _seed_index(bench, SESSIONS, layout="apart")
    migrated = page.evaluate(MIGRATE_JS)
    if not migrated["ok"] or migrated["layout"] != 2 or migrated["entries"] != SESSIONS:
        raise RuntimeError(f"the migration left {migrated}")
    rows.append(
        result(
            "one-time move of the 1,000-entry index to layout 2 (sessionEntry_<id>; first session.check)",
            round(migrated["ms"], 1),
            "ms",
            None,
            note=(
                f"savedSessions before {before['indexChars'] / 1e3:.0f} K characters (the list of "
                f"entries), after {migrated['headerChars'] / 1e3:.0f} K characters (the ids)"
            ),
        )
    )
    return rows


METRICS = [session_actions]


if __name__ == "__main__":
    import bench_sessions

    sys.exit(bench_sessions.main(metrics=METRICS))
