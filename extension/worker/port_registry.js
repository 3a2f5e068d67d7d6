// The open ports of the work the pages start on a port: a turn, a summary pass, a backup (one port
// each, docs/protocol.md), by the id the worker gave the work; and posting an event on one.
//
// Rules:
// 1. ports.js adds a port when it connects and deletes it when it disconnects or its work ends;
//    nothing else changes the registry.
// 2. Python posts each event of any of the three kinds through the bridge's `postTurnEvent` (its
//    name in py/margin/platform/browser.py, from when turns were the only kind): `postPortEvent` here.
// 3. Posting never throws: false when the page's port is gone (the work then stops).

import { fromPython } from './wire.js';

export const openPorts = new Map(); // work id -> chrome.runtime.Port (a turn's, a summary's, a backup's)

export function postPortEvent(workId, eventJson) {
  const port = openPorts.get(workId);
  if (!port) return false;
  try {
    port.postMessage(JSON.parse(fromPython(eventJson)));
    return true;
  } catch {
    openPorts.delete(workId);
    return false;
  }
}
