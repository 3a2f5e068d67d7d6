// The sessions index as the panel reads it (pages read storage, never write it).
//
// Layout 2 (margin.sessions.index): `savedSessions` = {layout: 2, ids: [id, ...]}, the ids in their
// stored order, and each session's light entry in `sessionEntry_<id>`. Before Python's first
// session call migrates them, older profiles still hold a list of entries in `savedSessions`:
// that list is passed on as it is (extension/panel/sessions/search.js `readableIndex` checks it).
//
// Rules:
// 1. What this module hands on is always a list of the stored entry values in the index's order
//    (or the raw older value): an entry that is gone, or that names another id than its key's, is
//    handed on as null, so `readableIndex` says "Python must repair it" (session.check does).
// 2. Following storage.onChanged, an entry that changed is taken from the change's newValue; the
//    header's new ids whose entries were never seen are read by address, so a change is never a
//    re-read of the whole index. Changes are applied one at a time, in the order they arrived.
//
// API: indexSource(get) -> {read, follow}: one copy of the index, `get(keys)` = storage's get
//        read() -> Promise<list | raw>              the whole index read (header, then entries)
//        follow(changes) -> Promise<list | raw> | null   one storage.onChanged event applied;
//                                                   null when it touched no key of the index
//      isIndexKey(key)                              `savedSessions` or a `sessionEntry_<id>`

import { CONTRACT } from "../../generated/contract.js";

const SAVED_SESSIONS = CONTRACT.storage.keys.savedSessions;
const ENTRY_PREFIX = CONTRACT.storage.sessionEntryPrefix;
const LAYOUT = CONTRACT.storage.sessionIndexLayout;

function isHeader(raw) {
  return raw !== null && typeof raw === "object" && !Array.isArray(raw) && raw.layout === LAYOUT &&
    Array.isArray(raw.ids);
}

export function isIndexKey(key) { return key === SAVED_SESSIONS || key.startsWith(ENTRY_PREFIX); }

// One copy of the index: the header's ids and every entry value seen (by id).
function indexCopy() {
  return { raw: undefined, entries: new Map() };
}

function listOf(copy) {
  if (!isHeader(copy.raw)) return copy.raw;
  return copy.raw.ids.map((id) => {
    const entry = copy.entries.get(id);
    return entry && typeof entry === "object" && entry.id === id ? entry : null;
  });
}

async function readMissing(copy, get) {
  if (!isHeader(copy.raw)) return;
  const missing = copy.raw.ids.filter((id) => typeof id === "string" && !copy.entries.has(id));
  if (!missing.length) return;
  const got = await get(missing.map((id) => ENTRY_PREFIX + id));
  for (const id of missing) copy.entries.set(id, got[ENTRY_PREFIX + id]);
}

async function readInto(copy, get) {
  copy.raw = (await get([SAVED_SESSIONS]))[SAVED_SESSIONS];
  copy.entries.clear();
  await readMissing(copy, get);
  return listOf(copy);
}

function applyChanges(copy, changes) {
  for (const [key, change] of Object.entries(changes)) {
    if (key === SAVED_SESSIONS) copy.raw = change.newValue;
    else if (key.startsWith(ENTRY_PREFIX)) {
      const id = key.slice(ENTRY_PREFIX.length);
      if ("newValue" in change) copy.entries.set(id, change.newValue); else copy.entries.delete(id);
    }
  }
}

export function indexSource(get) {
  const copy = indexCopy();
  let whole = false;   // the copy holds a whole read
  let queue = Promise.resolve();
  const inTurn = (step) => (queue = queue.then(step, step));
  const readWhole = async () => { const list = await readInto(copy, get); whole = true; return list; };
  return {
    read: () => inTurn(readWhole),
    follow(changes) {
      if (!Object.keys(changes).some(isIndexKey)) return null;
      return inTurn(async () => {
        if (!whole) await readWhole();
        applyChanges(copy, changes);
        await readMissing(copy, get);
        return listOf(copy);
      });
    },
  };
}
