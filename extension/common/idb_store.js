// One transaction on a database of a single object store, opened for it and closed after: the
// snapshot stores of Python's boot (worker/boot.js) and of the code sandbox (panel/sandbox_snapshot.js).
//
// `inStore(database, store, mode, body)` resolves with `body(objectStore)`'s `.result` (an
// IDBRequest's, or any object with a `result` read once the transaction completes) and rejects
// when the transaction fails. A transaction that aborts (quota exceeded, for one) may fire no
// error event: without onabort a caller awaiting a write would never settle.

function open(database, store) {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(database, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(store);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

export async function inStore(database, store, mode, body) {
  const db = await open(database, store);
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(store, mode);
      const request = body(tx.objectStore(store));
      tx.oncomplete = () => resolve(request?.result);
      tx.onabort = tx.onerror = () => reject(tx.error ?? new Error(`${database}: transaction aborted`));
    });
  } finally {
    db.close();
  }
}
