// The service worker's half of the search copy (extension/common/copy_store.js): it keeps the
// IndexedDB copy of every `sessionDigest_<id>` in step with chrome.storage.local, so the side
// panel's search worker can read the digests off the panel's main thread.
//
// Rules (numbers continue copy_store.js's):
// 4. Before Python's write or removal of a digest goes to chrome.storage, the bridge calls
//    `beforeDigestWrite(ids)`: the copy's entries are removed first, so a worker stopped between
//    the two writes leaves them absent (unknown), never stale. When that removal fails, the same
//    chrome.storage write carries a new `searchCopyEpoch`: the whole copy is then invalid.
// 5. Once chrome.storage has the digests, the same bridge call puts them into the copy (a value
//    that is not a string stays absent). A put that fails leaves the entry absent. Python is the
//    one writer of digests (pages never write storage), and its writes all pass the bridge, so
//    no chrome.storage.onChanged listener is needed here: one would make the service worker
//    deserialize every change of every key, `history` with its images included.
//    An update of the extension starts the copy again (a new epoch): a version that did not keep
//    it may have run in between.
// 6. The backfill (a profile from before the copy, a copy invalidated by its epoch, entries
//    dropped) reads the missing digests from chrome.storage 20 at a time and puts each one only
//    if no change of that digest was seen since its read began: a change is newer than a read.
//    It also creates the epoch when there is none. It runs at each start of the service worker
//    and after the epoch changed; with nothing missing it costs two key listings.
//
// API: startDigestCopy({writeEpoch(epoch) -> Promise}) (once, at the service worker's start; the
//        writer is worker/storage.js's, the one module that writes storage), restartDigestCopy() (after
//        an update), beforeDigestWrite(ids) -> Promise<extra items for the same write>,
//      afterDigestWrite(items) -> Promise (never rejects), digestIdsOf(keys),
//      globalThis.marginSearchCopy.settled() -> Promise (the tests and the bench wait on it).

import { CONTRACT } from "../generated/contract.js";
import { copyEpoch, copyIds, openCopy, resetCopy, writeCopy } from "../common/copy_store.js";

const PREFIX = CONTRACT.storage.sessionDigestPrefix;
const EPOCH_KEY = CONTRACT.storage.keys.searchCopyEpoch;
const SLICE = 20;

const seen = new Map();  // id -> changes of its digest seen by this worker (rule 6)
let database = null;
let backfilling = null;
let again = false;
let lastWrite = Promise.resolve();
let writeEpoch = null;  // storage.js's (only it writes chrome.storage): startDigestCopy's

const newEpoch = () => crypto.randomUUID();
const bump = (id) => seen.set(id, (seen.get(id) ?? 0) + 1);

function db() {
  database ??= openCopy(() => { database = null; }).catch((error) => { database = null; throw error; });
  return database;
}

export function digestIdsOf(keys) {
  return keys.filter((key) => typeof key === "string" && key.startsWith(PREFIX)).map((key) => key.slice(PREFIX.length));
}

export async function beforeDigestWrite(ids) {
  if (!ids.length) return {};
  for (const id of ids) bump(id);
  try {
    const open = await db();
    await writeCopy(open, {}, ids);
    return {};
  } catch (error) {
    console.warn("Margin: the search copy could not drop a digest; it is invalidated", error);
    setTimeout(backfill, 0);  // after the write that carries the new epoch
    return { [EPOCH_KEY]: newEpoch() };
  }
}

export function afterDigestWrite(items) {
  const puts = {};
  for (const [key, value] of Object.entries(items)) {
    if (key.startsWith(PREFIX) && typeof value === "string") puts[key.slice(PREFIX.length)] = value;
  }
  if (!Object.keys(puts).length) return Promise.resolve();
  const write = db().then((open) => writeCopy(open, puts))
    .catch((error) => console.warn("Margin: the search copy could not take a digest (it stays absent)", error));
  lastWrite = lastWrite.then(() => write);
  return write;
}

async function fill() {
  const [stored, keys] = await Promise.all([chrome.storage.local.get(EPOCH_KEY), chrome.storage.local.getKeys()]);
  const open = await db();
  let epoch = stored[EPOCH_KEY];
  if (typeof epoch !== "string" || (await copyEpoch(open)) !== epoch) {
    // Copy first, storage second: a stop between them leaves the two epochs different, and the
    // next start begins again.
    epoch = typeof epoch === "string" ? epoch : newEpoch();
    await resetCopy(open, epoch);
    if (stored[EPOCH_KEY] !== epoch) await writeEpoch(epoch);
  }
  const wanted = new Set(digestIdsOf(keys));
  const have = new Set(await copyIds(open));
  const orphans = [...have].filter((id) => !wanted.has(id));
  if (orphans.length) await writeCopy(open, {}, orphans);
  const missing = [...wanted].filter((id) => !have.has(id));
  for (let at = 0; at < missing.length; at += SLICE) {
    const ids = missing.slice(at, at + SLICE);
    const before = ids.map((id) => seen.get(id) ?? 0);
    const got = await chrome.storage.local.get(ids.map((id) => PREFIX + id));
    const puts = {};
    ids.forEach((id, i) => {
      const value = got[PREFIX + id];
      if ((seen.get(id) ?? 0) === before[i] && typeof value === "string") puts[id] = value;
    });
    await writeCopy(open, puts);  // its transaction is created here, before any later change's
    await new Promise((resolve) => setTimeout(resolve, 0));  // let the worker's other work run
  }
}

function backfill() {
  if (backfilling) { again = true; return backfilling; }
  backfilling = fill()
    .catch((error) => console.warn("Margin: the search copy's backfill stopped", error))
    .finally(() => {
      backfilling = null;
      if (again) { again = false; backfill(); }
    });
  return backfilling;
}

export function startDigestCopy({ writeEpoch: writer }) {
  writeEpoch = writer;
  // After the start's own work (a cold start boots Python first if a request is waiting).
  setTimeout(backfill, 1000);
}

export function restartDigestCopy() {
  return writeEpoch(newEpoch()).then(backfill, (error) => console.warn("Margin: could not restart the search copy", error));
}

globalThis.marginSearchCopy = {
  async settled() {
    await new Promise((resolve) => setTimeout(resolve, 0));
    do {
      await (backfilling ?? backfill());
      await lastWrite;
    } while (backfilling || again);
  },
};
