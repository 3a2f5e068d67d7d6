// The sessions index in memory: one per page, shared by every mounted sessions panel.
//
// The side panel calls preloadSessions() once after its first paint: the index is read in idle time
// (with a thousand full digests it is ~100 MB and takes seconds to read), then kept in step with
// storage.onChanged (the change's newValue, never a re-read), and the search data of every session
// (extension/sessions/search.js `searchData`) is prepared in idle slices. So "Sessions" opens as a
// paint from memory and the first keystroke is as fast as the others.
//
// API: preloadSessions({storage, readIndex}) -> Promise (resolves once the index is read)
//      sessionsIndexTimings() -> {readMs, prepareMs, prepareBusyMs, prepared, sessions, version}
//      useReadIndex(readIndex), followStorage(storage), readStoredIndex() -> Promise
//      indexEntries()    the readable index, or null until read / while Python must repair it
//      forgetEntry(id)   drops a deleted entry at once (storage.onChanged confirms it)
//      onIndexChange(listener) -> unsubscribe: called after each new value
//      dataOf(entry)     the entry's search data, cached while its name and digest are unchanged
// readIndex() resolves to the raw `savedSessions` value; it defaults to reading chrome.storage.local
// directly (pages may read storage, never write it).

import { CONTRACT } from "../generated/contract.js";
import { readableIndex, searchData } from "./search.js";

const SAVED_SESSIONS = CONTRACT.storage.keys.savedSessions;

function defaultReadIndex() {
  return chrome.storage.local.get(SAVED_SESSIONS).then((got) => got[SAVED_SESSIONS]);
}

const index = {
  entries: null,          // the readable index; null until read, or while Python must repair it
  version: 0,             // bumped at every new value
  loading: null,          // the read in flight
  readIndex: defaultReadIndex,
  following: false,
  listeners: new Set(),   // called after each new value
  cache: new Map(),       // id -> {key, data}: folded text + bigram filter
  warmHandle: 0,
  // For the bench and for honest figures: the cold read and the idle preparation.
  timings: { readMs: null, prepareMs: null, prepareBusyMs: null, prepared: 0 },
};

export function dataOf(entry) {
  const key = `${entry.name}\u0000${entry.savedAt ?? 0}\u0000${entry.textDigest.length}`;
  const hit = index.cache.get(entry.id);
  if (hit && hit.key === key) return hit.data;
  const data = searchData(entry);
  index.cache.set(entry.id, { key, data });
  return data;
}

export function indexEntries() { return index.entries; }

export function forgetEntry(id) {
  if (index.entries) index.entries = index.entries.filter((e) => e.id !== id);
}

export function onIndexChange(listener) {
  index.listeners.add(listener);
  return () => index.listeners.delete(listener);
}

export function useReadIndex(readIndex) {
  if (readIndex) index.readIndex = readIndex;
}

function setIndex(raw) {
  index.entries = readableIndex(raw);
  index.version++;
  warmIndex();
  for (const listener of index.listeners) listener();
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
    if (areaName === "local" && SAVED_SESSIONS in changes) setIndex(changes[SAVED_SESSIONS].newValue);
  });
}

// Build the search data in idle slices, so the first keystroke is as fast as the others.
function warmIndex() {
  cancelIdle(index.warmHandle);
  const entries = index.entries ?? [];
  const live = new Set(entries.map((e) => e.id));
  for (const id of index.cache.keys()) if (!live.has(id)) index.cache.delete(id);
  let i = 0;
  const started = performance.now();
  let busy = 0;
  const step = (deadline) => {
    const sliceStart = performance.now();
    let count = 0;  // without requestIdleCallback: 20 sessions per task
    const more = () => (deadline ? deadline.timeRemaining() > 2 : count++ < 20);
    while (i < entries.length && more()) dataOf(entries[i++]);
    busy += performance.now() - sliceStart;
    index.timings.prepared = i;
    if (i < entries.length) index.warmHandle = requestIdle(step);
    else Object.assign(index.timings, { prepareMs: performance.now() - started, prepareBusyMs: busy });
  };
  index.warmHandle = requestIdle(step);
}

export function preloadSessions({ storage = globalThis.chrome?.storage, readIndex = null } = {}) {
  useReadIndex(readIndex);
  followStorage(storage);
  if (index.entries !== null) return Promise.resolve();
  if (index.loading) return index.loading;
  return new Promise((resolve) => requestIdle(() => readStoredIndex().then(resolve, resolve)));
}

export function sessionsIndexTimings() {
  return { ...index.timings, sessions: index.entries?.length ?? null, version: index.version };
}

const requestIdle = (fn) => (globalThis.requestIdleCallback ? requestIdleCallback(fn) : setTimeout(() => fn(null), 0));
const cancelIdle = (handle) => (globalThis.cancelIdleCallback ? cancelIdleCallback(handle) : clearTimeout(handle));
