// The search copy's database: the session digests mirrored into IndexedDB, where a page's
// dedicated Worker can read them (it has no chrome.storage). The service worker writes it
// (extension/worker/digest_copy.js); the sessions search worker reads it (extension/panel/sessions/search_worker.js).
//
// Rules:
// 1. The copy is a cache of `sessionDigest_<id>` in chrome.storage.local, never a source: losing
//    it loses nothing, and every reader falls back to chrome.storage for what it lacks.
// 2. An entry that is present equals what chrome.storage holds under its key, while the copy's
//    epoch (META "epoch") equals chrome.storage's `searchCopyEpoch`: a writer removes an entry
//    before it changes the digest, and changes the stored epoch in the same chrome.storage write
//    when it could not (digest_copy.js). A reader checks the epoch in the same transaction as the
//    entries it reads, so what it gets is consistent.
// 3. Absent means unknown (not written yet, or invalidated), never "no digest".
//
// API: openCopy(onClosed) -> Promise<IDBDatabase>; readCopy(db, ids) -> Promise<{epoch, found: {id: text}}>;
//      writeCopy(db, puts, removals) -> Promise (its transaction is created synchronously, so
//      writes keep the order of the calls); copyIds(db), copyEpoch(db), resetCopy(db, epoch).

export const COPY_DATABASE = "margin-search";
const DIGESTS = "digests";  // key: session id, value: the digest (a string)
const META = "meta";        // key "epoch": the epoch the entries are valid under

// `onClosed` runs when the connection is closed for another context's deleteDatabase or upgrade.
export function openCopy(onClosed = () => {}) {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(COPY_DATABASE, 1);
    request.onupgradeneeded = () => {
      request.result.createObjectStore(DIGESTS);
      request.result.createObjectStore(META);
    };
    request.onsuccess = () => {
      const db = request.result;
      db.onversionchange = () => { db.close(); onClosed(); };
      resolve(db);
    };
    request.onerror = () => reject(request.error);
    request.onblocked = () => reject(new Error("the search copy's database is blocked"));
  });
}

function finished(tx, result) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve(result());
    // A transaction that aborts (quota exceeded) may fire no error event: onabort too.
    tx.onabort = tx.onerror = () => reject(tx.error ?? new Error("search copy transaction aborted"));
  });
}

export function readCopy(db, ids) {
  const tx = db.transaction([DIGESTS, META], "readonly");
  const found = {};
  let epoch = null;
  const epochRequest = tx.objectStore(META).get("epoch");
  epochRequest.onsuccess = () => { epoch = epochRequest.result ?? null; };
  const digests = tx.objectStore(DIGESTS);
  for (const id of ids) {
    const request = digests.get(id);
    request.onsuccess = () => { if (typeof request.result === "string") found[id] = request.result; };
  }
  return finished(tx, () => ({ epoch, found }));
}

export function writeCopy(db, puts, removals = []) {
  const tx = db.transaction(DIGESTS, "readwrite");
  const digests = tx.objectStore(DIGESTS);
  for (const id of removals) digests.delete(id);
  for (const [id, text] of Object.entries(puts)) digests.put(text, id);
  return finished(tx, () => undefined);
}

export function copyIds(db) {
  const tx = db.transaction(DIGESTS, "readonly");
  const request = tx.objectStore(DIGESTS).getAllKeys();
  return finished(tx, () => request.result);
}

export function copyEpoch(db) {
  const tx = db.transaction(META, "readonly");
  const request = tx.objectStore(META).get("epoch");
  return finished(tx, () => request.result ?? null);
}

// Every entry dropped and the epoch set, in one transaction.
export function resetCopy(db, epoch) {
  const tx = db.transaction([DIGESTS, META], "readwrite");
  tx.objectStore(DIGESTS).clear();
  tx.objectStore(META).put(epoch, "epoch");
  return finished(tx, () => undefined);
}
