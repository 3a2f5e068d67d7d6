// The sessions index in memory: one per page, shared by every mounted sessions panel, and the
// search over it.
//
// Where the digests go: to the search worker (extension/panel/sessions/searcher.js), which reads them
// from the search copy in IndexedDB off the main thread and answers `findSessions`; only what
// the copy lacks is read here, from chrome.storage, and handed on. Without a worker (it could not
// start, or failed) everything below runs on the page's main thread, as it did before the copy:
//
// The index (`savedSessions`) is light: ~300 bytes a session, each entry with its digest's head
// (the preview the list shows). The digests themselves (up to 100K characters each, ~100 MB for a
// thousand long sessions) are in `sessionDigest_<id>`, read by address (margin.sessions.index,
// rule 4). The side panel calls preloadSessions() once after its first paint: the index is read
// in idle time, then the digests DIGEST_SLICE at a time, and each digest's search data
// (extension/panel/sessions/search.js `searchData`) prepared in idle callbacks, as many per callback as
// its deadline allows (one at least); all of it kept in step with storage.onChanged (the change's
// newValue, never a re-read). So "Sessions" opens as a paint from memory, and no task of the
// preload holds the page for much longer than one digest's folding. Until every digest is in, a search finds sessions by name and by the
// digests read so far (`digestsPending()` says how many are missing; onDigests listeners run as
// slices arrive, so the panel refreshes its results).
//
// API: preloadSessions({storage, readIndex, readDigests}) -> Promise (resolves once the index is read)
//      findSessions(query, pageSize, untitledName) -> Promise<{ids, rows, pending}>: the matches in
//        list order, the first page's rows (what session.list returns for them), digests still missing
//      sessionRows(query, ids, untitledName) -> Promise<rows>: the rows of further matches (a next page)
//        untitledName: the word an untitled session is searched and highlighted as, the panel's
//        `py_session_untitled` in its language of the moment (search.js `searchedName`)
//      useSearchWorker(false): search on the main thread from now on (the bench's "before")
//      sessionsIndexTimings() -> {readMs, prepareMs, prepareBusyMs, prepared, sessions, version, slices,
//        searchIn: "worker" | "page", digestsReadHere: digests read from chrome.storage on the main thread}
//      useReadIndex(readIndex, readDigests), followStorage(storage), readStoredIndex() -> Promise
//      indexEntries()    the readable index, or null until read / while Python must repair it
//      forgetEntry(id)   drops a deleted entry at once (storage.onChanged confirms it)
//      onIndexChange(listener) -> unsubscribe: called after each new value of the index
//      onDigests(listener) -> unsubscribe: called after digests arrived or changed
//      digestsPending()  how many entries' digests are not read yet
//      dataOf(entry)     the entry's search data, cached while the name it searched (its name, or
//                        the untitled word of the latest search) and its digest are unchanged
//                        (main-thread search only)
// readIndex() resolves to the index as a list of stored entries (or an older raw `savedSessions`
// value) and readDigests(keys) to {key: value}; both default to reading chrome.storage.local
// directly (pages may read storage, never write it). The index's layout (a header of ids, one
// key per entry) is extension/panel/sessions/index_read.js's, which also follows its changes.

import { CONTRACT } from "../../generated/contract.js";
import { indexSource } from "./index_read.js";
import {
  matchSessions, narrows, queryWords, readableIndex, rowFor, searchData, searchedName, sortEntries,
} from "./search.js";
import { startSearchWorker } from "./searcher.js";

const DIGEST_PREFIX = CONTRACT.storage.sessionDigestPrefix;
const COPY_EPOCH = CONTRACT.storage.keys.searchCopyEpoch;
// Digests per read: 20 x 100K characters is ~2 MB to deserialize and fold in one idle slice.
const DIGEST_SLICE = 20;

const storedIndex = indexSource((keys) => chrome.storage.local.get(keys));
function defaultReadIndex() { return storedIndex.read(); }
function defaultReadDigests(keys) { return chrome.storage.local.get(keys); }
function readCopyEpoch() {
  return globalThis.chrome?.storage ? chrome.storage.local.get(COPY_EPOCH).then((got) => got[COPY_EPOCH]) : null;
}

const index = {
  entries: null,          // the readable index; null until read, or while Python must repair it
  version: 0,             // bumped at every new value
  loading: null,          // the read in flight
  readIndex: defaultReadIndex,
  readDigests: defaultReadDigests,
  following: false,
  listeners: new Set(),   // called after each new value
  digestListeners: new Set(),
  digests: new Map(),     // id -> digest text ("" when its key is gone or not a string)
  generation: new Map(),  // id -> bumped when its digest changes (the cache key's part)
  cache: new Map(),       // id -> {key, data}: folded text + bigram filter
  warming: false,
  searcher: null,         // the search worker's client, or null: search on the main thread
  workerAllowed: true,    // false once the worker failed (or the bench turned it off)
  last: null,             // main-thread narrowing: {query, matched}
  untitledName: undefined, // the untitled word of the latest main-thread search (undefined: the stored name)
  // For the bench and for honest figures: the index read and the digests' reading + preparation.
  timings: { readMs: null, prepareMs: null, prepareBusyMs: null, prepared: 0, slices: 0, longestSliceMs: 0,
    digestsReadHere: 0 },
};

const digestOf = (value) => (typeof value === "string" ? value : "");

export function dataOf(entry) {
  const known = index.digests.has(entry.id);
  const key = `${searchedName(entry, index.untitledName)}\u0000${known}\u0000${index.generation.get(entry.id) ?? 0}`;
  const hit = index.cache.get(entry.id);
  if (hit && hit.key === key) return hit.data;
  const data = searchData(entry, index.digests.get(entry.id) ?? "", index.untitledName);
  index.cache.set(entry.id, { key, data });
  return data;
}

export function indexEntries() { return index.entries; }

export function digestsPending() {
  if (index.searcher) return index.searcher.pending();
  return (index.entries ?? []).reduce((n, e) => n + (index.digests.has(e.id) ? 0 : 1), 0);
}

export function useSearchWorker(allowed) {
  index.workerAllowed = allowed;
  if (!allowed && index.searcher) index.searcher.stop();
}

const entryIds = (ids) => {
  const byId = new Map((index.entries ?? []).map((e) => [e.id, e]));
  return ids.map((id) => byId.get(id)).filter(Boolean);
};

// A main-thread search in another language's words narrows nothing it found before.
function useWord(untitledName) {
  if (untitledName === index.untitledName) return;
  index.untitledName = untitledName;
  index.last = null;
}

function findHere(query, pageSize, untitledName) {
  useWord(untitledName);
  const within = index.last && narrows(index.last.query, query) ? index.last.matched : null;
  const matched = matchSessions(index.entries ?? [], query, dataOf, within);
  index.last = queryWords(query).length ? { query, matched } : null;
  return { ids: matched.map((e) => e.id), rows: matched.slice(0, pageSize).map((e) => rowFor(e, query, dataOf)),
    pending: queryWords(query).length ? digestsPending() : 0 };
}

// A query without words needs no digest: the list in its order, previews from `digestHead`.
export function findSessions(query, pageSize, untitledName) {
  if (!queryWords(query).length) {
    const sorted = sortEntries(index.entries ?? []);
    return Promise.resolve({ ids: sorted.map((e) => e.id), rows: sorted.slice(0, pageSize).map((e) => rowFor(e, query, dataOf)), pending: 0 });
  }
  if (index.searcher) return index.searcher.search(query, pageSize, untitledName);
  return Promise.resolve(findHere(query, pageSize, untitledName));
}

export function sessionRows(query, ids, untitledName) {
  if (index.searcher && queryWords(query).length) return index.searcher.rows(query, ids, untitledName);
  if (queryWords(query).length) useWord(untitledName);
  return Promise.resolve(entryIds(ids).map((e) => rowFor(e, query, dataOf)));
}

// The worker failed: what it had not answered is answered here, and the digests read here.
function searchHere(requests) {
  index.searcher = null;
  index.workerAllowed = false;
  index.last = null;
  warmDigests();
  for (const { request, resolve } of requests) {
    if (request.type === "rows") useWord(request.untitledName);
    resolve(request.type === "rows" ? entryIds(request.ids).map((e) => rowFor(e, request.query, dataOf))
      : findHere(request.query, request.pageSize, request.untitledName));
  }
}

function startSearcher() {
  if (index.searcher || !index.workerAllowed || !globalThis.Worker) return;
  const started = performance.now();
  index.searcher = startSearchWorker({
    readEpoch: readCopyEpoch,
    readDigests: (keys) => index.readDigests(keys),
    onProgress: () => {
      const searcher = index.searcher;
      if (!searcher) return;
      index.timings.prepared = (index.entries ?? []).length - searcher.pending();
      if (searcher.settled() && index.timings.prepareMs === null) {
        Object.assign(index.timings, { prepareMs: performance.now() - started, prepareBusyMs: searcher.busyMs() });
      }
      for (const listener of index.digestListeners) listener();
    },
    onFail: searchHere,
  });
  if (!index.searcher) index.workerAllowed = false;
}

export function forgetEntry(id) {
  if (index.entries) index.entries = index.entries.filter((e) => e.id !== id);
  if (index.entries && index.searcher) index.searcher.setEntries(index.entries);
}

export function onIndexChange(listener) {
  index.listeners.add(listener);
  return () => index.listeners.delete(listener);
}

export function onDigests(listener) {
  index.digestListeners.add(listener);
  return () => index.digestListeners.delete(listener);
}

export function useReadIndex(readIndex, readDigests) {
  if (readIndex) index.readIndex = readIndex;
  if (readDigests) index.readDigests = readDigests;
}

function setIndex(raw) {
  index.entries = readableIndex(raw);
  index.version++;
  index.last = null;
  const live = new Set((index.entries ?? []).map((e) => e.id));
  for (const map of [index.cache, index.digests, index.generation]) {
    for (const id of map.keys()) if (!live.has(id)) map.delete(id);
  }
  if (index.entries) startSearcher();
  if (index.searcher && index.entries) index.searcher.setEntries(index.entries);
  else warmDigests();
  for (const listener of index.listeners) listener();
}

function setDigest(id, value) {
  index.last = null;
  if (index.searcher) { index.searcher.setDigest(id, value); return; }
  index.digests.set(id, digestOf(value));
  index.generation.set(id, (index.generation.get(id) ?? 0) + 1);
}

export function readStoredIndex() {
  if (!index.loading) {
    const version = index.version;
    const started = performance.now();
    index.loading = Promise.resolve(index.readIndex()).then((raw) => {
      index.timings.readMs = performance.now() - started;
      if (index.version === version) setIndex(raw);  // a change that arrived meanwhile is newer
    }).finally(() => { index.loading = null; });
  }
  return index.loading;
}

export function followStorage(storage) {
  if (index.following || !storage?.onChanged) return;
  index.following = true;
  storage.onChanged.addListener((changes, areaName) => {
    if (areaName !== "local") return;
    let digests = false;
    for (const [key, change] of Object.entries(changes)) {
      if (key.startsWith(DIGEST_PREFIX)) { setDigest(key.slice(DIGEST_PREFIX.length), change.newValue); digests = true; }
    }
    if (COPY_EPOCH in changes) index.searcher?.setEpoch(changes[COPY_EPOCH].newValue);
    storedIndex.follow(changes)?.then(setIndex, () => {});
    if (digests) for (const listener of index.digestListeners) listener();
  });
}

// Read the digests not read yet, DIGEST_SLICE per idle callback, and prepare each one's search
// data as it arrives, so the first keystroke is as fast as the others.
function warmDigests() {
  if (index.warming || index.searcher) return;
  index.warming = true;
  const started = performance.now();
  let busy = 0;
  const step = async () => {
    const missing = (index.entries ?? []).filter((e) => !index.digests.has(e.id)).slice(0, DIGEST_SLICE);
    if (!missing.length) {
      index.warming = false;
      Object.assign(index.timings, { prepareMs: performance.now() - started, prepareBusyMs: busy });
      return;
    }
    let got = {};
    index.timings.digestsReadHere += missing.length;
    try { got = await index.readDigests(missing.map((e) => DIGEST_PREFIX + e.id)); } catch { got = {}; }
    let next = 0;
    const prepare = (deadline) => {
      const sliceStart = performance.now();
      do {
        const entry = missing[next++];
        if (!index.digests.has(entry.id)) setDigest(entry.id, got[DIGEST_PREFIX + entry.id]);
        dataOf(entry);
      } while (next < missing.length && deadline && deadline.timeRemaining() > 8);
      const sliceMs = performance.now() - sliceStart;
      busy += sliceMs;
      index.timings.slices++;
      index.timings.longestSliceMs = Math.max(index.timings.longestSliceMs, sliceMs);
      if (next < missing.length) { requestIdle(prepare); return; }
      index.timings.prepared = (index.entries ?? []).length - digestsPending();
      for (const listener of index.digestListeners) listener();
      requestIdle(step);
    };
    requestIdle(prepare);
  };
  requestIdle(step);
}

export function preloadSessions({ storage = globalThis.chrome?.storage, readIndex = null, readDigests = null } = {}) {
  useReadIndex(readIndex, readDigests);
  followStorage(storage);
  if (index.entries !== null) return Promise.resolve();
  if (index.loading) return index.loading;
  return new Promise((resolve) => requestIdle(() => readStoredIndex().then(resolve, resolve)));
}

export function sessionsIndexTimings() {
  return { ...index.timings, sessions: index.entries?.length ?? null, version: index.version,
    searchIn: index.searcher ? "worker" : "page",
    digestsReadHere: index.timings.digestsReadHere + (index.searcher?.readHere() ?? 0) };
}

const requestIdle = (fn) => (globalThis.requestIdleCallback ? requestIdleCallback(fn) : setTimeout(() => fn(null), 0));
