// The panel's side of the search worker (extension/panel/sessions/search_worker.js): it starts the
// worker, hands it the index and every digest change, fills in what the search copy lacks, and
// turns its answers back into promises. extension/panel/sessions/preload.js owns it.
//
// Rules:
// 1. Messages go in the order they are made; those made before the copy's epoch is read wait
//    for it, so the worker's first message is the index with its epoch.
// 2. What the copy lacks (`missing`) is read from chrome.storage here, DIGEST_SLICE keys per
//    idle callback, as the preload did before the copy, and posted on; a value read before a
//    change of the same digest arrived (storage.onChanged) is dropped: the change is newer.
//    What the copy lacks in the first RETRY_MS is asked of it once more after them (with the
//    epoch read again) before it is read here: the service worker backfills the copy as it
//    starts (a profile from before the copy has none), and that costs this page nothing.
// 3. A worker that fails (it cannot start, an error event, a message it cannot read) is
//    stopped once: `onFail(requests)` hands the unanswered requests back, and the preload
//    answers them and every later search on the page's main thread, as before the worker.
//
// API: startSearchWorker({readEpoch, readDigests, onProgress, onFail, retryMs}) -> searcher | null
//      searcher = {setEntries(entries), setDigest(id, value), setEpoch(epoch),
//                  search(query, pageSize, untitledName) -> Promise<{ids, rows, pending}>,
//                  rows(query, ids, untitledName) -> Promise<rows>, pending(), settled(), busyMs(),
//                  readHere(), stop()}
//      untitledName: the word an untitled session is searched as (search.js `searchedName`)

import { CONTRACT } from "../../generated/contract.js";

const DIGEST_PREFIX = CONTRACT.storage.sessionDigestPrefix;
const DIGEST_SLICE = 20;
const RETRY_MS = 4000;

const requestIdle = (fn) => (globalThis.requestIdleCallback ? requestIdleCallback(fn) : setTimeout(fn, 0));

export function startSearchWorker({ readEpoch, readDigests, onProgress = () => {}, onFail = () => {}, retryMs = RETRY_MS }) {
  let worker;
  try {
    // From the extension's root: in dist this code is bundled into a chunk at the root (buildsteps/bundle.py).
    worker = new Worker(new URL("/panel/sessions/search_worker.js", import.meta.url), { type: "module" });
  } catch {
    return null;
  }
  let ready = false;
  let failed = false;
  let epoch = null;
  let entries = [];
  let seq = 0;
  let pending = null;        // the worker's count of entries without a digest; null until it says
  let unprepared = 0;
  let busy = 0;              // main-thread time in this module's callbacks
  let readHere = 0;          // digests read from chrome.storage on the main thread (rule 2)
  const queue = [];          // messages made before the epoch was read (rule 1)
  const waiting = new Map(); // seq -> {request, resolve}
  const missing = [];
  const changed = new Map(); // id -> changes posted (rule 2)
  let reading = false;
  const startedAt = performance.now();
  let retry = 0;             // the timer of rule 2's second asking

  const post = (message) => {
    if (failed) return;
    if (!ready) { queue.push(message); return; }
    try { worker.postMessage(message); } catch { fail(); }
  };

  function fail() {
    if (failed) return;
    failed = true;
    clearTimeout(retry);
    worker.terminate();
    const requests = [...waiting.values()];
    waiting.clear();
    onFail(requests);
  }

  function readMissing() {
    if (reading || !missing.length || failed) return;
    reading = true;
    requestIdle(async () => {
      const ids = missing.splice(0, DIGEST_SLICE);
      readHere += ids.length;
      const before = ids.map((id) => changed.get(id) ?? 0);
      let got = {};
      try { got = await readDigests(ids.map((id) => DIGEST_PREFIX + id)); } catch { got = {}; }
      const started = performance.now();
      const digests = {};
      ids.forEach((id, i) => {
        if ((changed.get(id) ?? 0) !== before[i]) return;
        const value = got[DIGEST_PREFIX + id];
        digests[id] = typeof value === "string" ? value : null;
      });
      post({ type: "digests", digests });
      busy += performance.now() - started;
      reading = false;
      readMissing();
    });
  }

  worker.onmessage = (event) => {
    const started = performance.now();
    const message = event.data;
    if (message.type === "missing") {
      if (performance.now() - startedAt < retryMs) {
        retry ||= setTimeout(askCopyAgain, retryMs);
      } else {
        missing.push(...message.ids);
        readMissing();
      }
    } else if (message.type === "progress") {
      ({ pending, unprepared } = message);
      onProgress();
    } else if (message.type === "result" || message.type === "rows") {
      const answer = waiting.get(message.seq);
      waiting.delete(message.seq);
      if (message.sentAt) message.hopMs = performance.timeOrigin + started - message.sentAt;
      answer?.resolve(message.type === "rows" ? message.rows : message);
    }
    busy += performance.now() - started;
  };
  worker.onerror = (event) => { event.preventDefault?.(); fail(); };
  worker.onmessageerror = fail;

  function askCopyAgain() {
    Promise.resolve().then(readEpoch).catch(() => null).then((value) => {
      epoch = typeof value === "string" ? value : null;
      post({ type: "entries", entries, epoch });  // the worker asks the copy for what it lacks
    });
  }

  Promise.resolve().then(readEpoch).catch(() => null).then((value) => {
    epoch = typeof value === "string" ? value : null;
    ready = true;
    for (const message of queue.splice(0)) post(message.type === "entries" ? { ...message, epoch } : message);
  });

  const ask = (request) => new Promise((resolve) => {
    seq += 1;
    waiting.set(seq, { request, resolve });
    post({ ...request, seq });
  });

  return {
    setEntries(next) {
      entries = next ?? [];
      post({ type: "entries", entries, epoch });
    },
    setDigest(id, value) {
      changed.set(id, (changed.get(id) ?? 0) + 1);
      post({ type: "digests", digests: { [id]: typeof value === "string" ? value : null } });
    },
    setEpoch(value) {
      epoch = typeof value === "string" ? value : null;
      post({ type: "entries", entries, epoch });
    },
    search: (query, pageSize, untitledName) => ask({ type: "search", query, pageSize, untitledName }),
    rows: (query, ids, untitledName) => ask({ type: "rows", query, ids, untitledName }),
    pending: () => pending ?? entries.length,
    // Every digest in the worker and folded, nothing left to read.
    settled: () => pending === 0 && unprepared === 0 && !missing.length && !reading,
    // (a retry still to come leaves pending > 0: nothing is settled before it)
    busyMs: () => busy,
    readHere: () => readHere,
    stop: fail,
  };
}
