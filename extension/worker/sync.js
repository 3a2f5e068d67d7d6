// When sync runs by itself (py/margin/sync/engine.py does the run): a periodic chrome.alarms alarm,
// and a one-shot alarm soon after a session is saved. "Sync now" is a request like any other.
//
// Rules:
// 1. The periodic alarm (CONTRACT.sync.alarm) exists exactly while sync is on: the options page
//    creates it when "Turn on sync" succeeds and clears it with "Turn off sync". Its existence is
//    how this worker knows sync is on without reading storage.
// 2. Alarms are the only wake-ups: onAlarm is registered at top level by background.js; no
//    listener follows browsing (docs/architecture.md, wake hygiene).
// 3. A saved session (`session.new`) asks for a sync in SOON_MINUTES, one alarm for any number of
//    saves (creating an alarm with the same name replaces it).
// 4. Chrome may clear alarms when the browser restarts: at startup the periodic alarm is made again
//    when sync's settings are stored.

import { CONTRACT } from '../generated/contract.js';
import { python } from './boot.js';

const SOON_MINUTES = 0.5; // Chrome's shortest delay

export function onAlarm(alarm) {
  if (alarm?.name !== CONTRACT.sync.alarm && alarm?.name !== CONTRACT.sync.soonAlarm) return;
  python()
    .then(({ worker }) => worker.dispatch_json('sync.now', '{"reason":"alarm"}', 'extension'))
    .then((replyJson) => {
      const reply = JSON.parse(replyJson);
      if (!reply.ok) console.warn('Margin: sync did not complete:', reply.error?.message);
    })
    .catch((error) => console.error('Margin: sync failed', error));
}

// Rule 3.
export async function syncSoon() {
  try {
    if (await chrome.alarms.get(CONTRACT.sync.alarm)) {
      await chrome.alarms.create(CONTRACT.sync.soonAlarm, { delayInMinutes: SOON_MINUTES });
    }
  } catch (error) {
    console.warn('Margin: could not plan a sync', error);
  }
}

// Rule 4 (runtime.onStartup).
export async function keepSyncAlarm() {
  try {
    const key = CONTRACT.storage.keys.syncConfig;
    const stored = await chrome.storage.local.get(key);
    if (stored[key] && !(await chrome.alarms.get(CONTRACT.sync.alarm))) {
      await chrome.alarms.create(CONTRACT.sync.alarm, { periodInMinutes: CONTRACT.sync.periodMinutes });
    }
  } catch (error) {
    console.warn('Margin: could not keep the sync alarm', error);
  }
}
