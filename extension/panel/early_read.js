// Starts reading what the side panel's first paint needs while the panel's other modules are still
// being run (sidepanel.js imports this first; in dist they are one bundle, buildsteps/bundle.py).
//
// Rules:
// 1. It reads only; sidepanel.js uses the result (`window.__marginEarlyRead.read`) only when no
//    `chrome.storage.local` change was seen since the read was asked for (`changed`), else it
//    reads again itself, after it follows storage: a change is never missed.
// 2. The keys are sidepanel.js's (`FIRST_PAINT_KEYS` in the contract's key names).
// 3. The language setting is read (and its catalogue fetched) from here too: `i18n.start()` is
//    one promise per page, so sidepanel.js awaits this same read instead of starting its own once
//    the modules have run.

import { CONTRACT } from "../generated/contract.js";
import { start as startLanguage } from "../common/i18n.js";

const KEYS = CONTRACT.storage.keys;
export const FIRST_PAINT_KEYS = [KEYS.history, KEYS.providers, KEYS.activeProviderId];

const early = { changed: false, read: null };
chrome.storage.onChanged.addListener((_changes, area) => {
  if (area === "local") early.changed = true;
});
early.read = chrome.storage.local.get(FIRST_PAINT_KEYS);
early.read.catch(() => {}); // sidepanel.js reports a failed read (it reads again)
window.__marginEarlyRead = early;
startLanguage();
