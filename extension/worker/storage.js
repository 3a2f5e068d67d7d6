// chrome.storage for Python (py/margin/platform/browser.py `BrowserStorage`), through the bridge: reads,
// writes, removals, key names and sizes; and the native SHA-256 Python uses for the content
// address of a stored image.
//
// Rules:
// 1. This is the one module that writes chrome.storage (tests/unit/test_conventions.py): the
//    pages ask the worker, and every write of the worker is Python's, passing here.
// 2. Never get(null): the GET_ALL_KEYS contract (storage-model.md) forbids reading everything.
// 3. Bulk values cross in pieces, both ways (wire.js rule 3).
// 4. The search copy's entries go before the digests change, and come back after
//    (extension/worker/digest_copy.js, rules 4 and 5).
// 5. The worker registers no storage.onChanged listener: Chrome would hand it every change with
//    its old and new values, and a bound rewriting a 20 MB `history` cost ~150 ms more with one
//    (README.md "Measured"). Its followers (the language setting: background.js) hear of its own
//    writes through `onLocalWrite` instead.

import { CONTRACT } from '../generated/contract.js';
import { afterDigestWrite, beforeDigestWrite, digestIdsOf } from './digest_copy.js';
import { failed, fromPython, reply, replyPieces, withLongStrings } from './wire.js';

function area(name) {
  if (name !== 'local' && name !== 'session') throw new Error(`unknown storage area ${name}`);
  return chrome.storage[name];
}

export async function storageGet(areaName, keysJson) {
  try {
    const keys = JSON.parse(keysJson);
    if (!Array.isArray(keys)) return failed('bad_request', 'storageGet takes a list of keys'); // rule 2
    return replyPieces(await area(areaName).get(keys));
  } catch (error) {
    return failed('storage', error);
  }
}

// Rule 5: what Python wrote to chrome.storage.local, for the worker's own followers.
let localWritten = () => {};
export function onLocalWrite(listener) {
  localWritten = listener;
}

export async function storageSet(areaName, itemsJson, ...longStrings) {
  try {
    const pieces = longStrings.map(fromPython); // every PyProxy, before the first await
    const items = withLongStrings(JSON.parse(fromPython(itemsJson)), pieces);
    // Rule 4.
    const extra = areaName === 'local' ? await beforeDigestWrite(digestIdsOf(Object.keys(items))) : {};
    await area(areaName).set({ ...items, ...extra });
    if (areaName === 'local') {
      await afterDigestWrite(items);
      localWritten(items);
    }
    return reply(null);
  } catch (error) {
    return failed('storage', error);
  }
}

export async function storageRemove(areaName, keysJson) {
  try {
    const keys = JSON.parse(keysJson);
    if (areaName === 'local') {
      const extra = await beforeDigestWrite(digestIdsOf(Array.isArray(keys) ? keys : [keys]));
      if (Object.keys(extra).length) await area(areaName).set(extra);
    }
    await area(areaName).remove(keys);
    if (areaName === 'local') localWritten(Object.fromEntries([].concat(keys).map((key) => [key, undefined])));
    return reply(null);
  } catch (error) {
    return failed('storage', error);
  }
}

// The search copy's epoch (extension/worker/digest_copy.js): a new one invalidates the whole copy.
export function writeSearchCopyEpoch(epoch) {
  return chrome.storage.local.set({ [CONTRACT.storage.keys.searchCopyEpoch]: epoch });
}

// The names of the stored keys, no values: chrome.storage.<area>.getKeys() (Chrome 130+, hence
// minimum_chrome_version "130"). Lets Python check that a session body exists without reading it.
export async function storageKeys(areaName) {
  try {
    return reply(await area(areaName).getKeys());
  } catch (error) {
    return failed('storage', error);
  }
}

// What these keys take (chrome.storage.<area>.getBytesInUse: each key's name plus its value as
// JSON), without reading the values: lets Python check that a heavy value is stored whole.
export async function storageBytesInUse(areaName, keysJson) {
  try {
    const keys = JSON.parse(keysJson);
    if (!Array.isArray(keys)) return failed('bad_request', 'storageBytesInUse takes a list of keys');
    return reply(await area(areaName).getBytesInUse(keys));
  } catch (error) {
    return failed('storage', error);
  }
}

// The SHA-256 (hex) of UTF-8 bytes from Python, by the browser's native crypto: the content
// address of a 3 MB data URL in a few ms, against ~15 ms in Pyodide's hashlib.
export async function sha256Hex(bytes) {
  try {
    const data = bytes.toJs(); // a copy, made before the first await (wire.js rule 2)
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', data));
    return reply(Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join(''));
  } catch (error) {
    return failed('digest', error);
  }
}
