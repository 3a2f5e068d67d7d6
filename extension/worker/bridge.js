// The one module between Python and the browser APIs it needs: boot.js registers it with Pyodide
// as `margin_bridge`, which py/margin/platform/browser.py imports (its Python half). Only thin wrappers
// here: each export is a name Python calls, and the work is done by the module of its job.
// Modelled on uBlock Origin Lite's ext.js: one small module over browser APIs, no throwing.
//
// Rules:
// 1. Every export is called by Python by this exact name (py/margin/platform/browser.py): renaming one
//    is a change of platform.py too. Nothing here is for the worker's own JS.
// 2. Every function takes and returns JSON strings (or UTF-8 bytes for bulk text), and none
//    throws: a reply is {ok: true, value} or {ok: false, error: {kind, message}} (wire.js).
//
// storage.js        chrome.storage (reads in pieces, writes, removals, key names, sizes), SHA-256
// http.js           fetch with a streaming body reader and abort
// tabs.js           the active web tab, the window's web tabs, waking a tab, screenshots, the page script, tab focus/open, purge listeners
// catalogue.js      the browser's UI language, one locale's catalogue
// packages.js       Pyodide's packages, loaded late
// crypto.js         WebCrypto for sync: PBKDF2 and AES-GCM
// port_registry.js  the open ports of turns, summary passes and backups: an event posted on one

export {
  storageGet,
  storageSet,
  storageRemove,
  storageKeys,
  storageBytesInUse,
  sha256Hex,
} from './storage.js';
export { httpOpen, httpRead, httpAbort } from './http.js';
export { activeWebTab, windowWebTabs, captureVisibleTab, tabsGet, tabsWake, tabsRun, tabsFocus, tabsOpen, tabsWatch } from './tabs.js';
export { uiLanguage, catalogue } from './catalogue.js';
export { loadPackage } from './packages.js';
export { cryptoDeriveKey, cryptoSeal, cryptoUnseal } from './crypto.js';
// Python's name for posting an event on any work's port (port_registry.js rule 2).
export { postPortEvent as postTurnEvent } from './port_registry.js';
