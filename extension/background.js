// Margin's service worker: a thin shell around the Python backend (py/margin, run in Pyodide).
// This is its entry (manifest.json): it registers every listener and starts what each instance
// starts; the work is done by the modules of worker/.
//
// Rules (docs/architecture.md, "Boot and the memory snapshot"):
// 1. Every listener is registered synchronously at the top level of this file, so an event that
//    wakes a stopped worker reaches it (the handlers live in worker/).
// 2. Python boots lazily, once, on the first event that needs it (worker/boot.js).
// 3. Nothing that matters lives only in memory: Python writes to chrome.storage before replying.
//
// worker/boot.js           Python's boot: Pyodide, the memory snapshot and its store, the bridge
// worker/bridge.js         `margin_bridge`, the functions Python calls (thin wrappers over the next ones)
// worker/wire.js           the replies, UTF-8 bulk text and the bulk-piece codec between Python and JS
// worker/storage.js        chrome.storage for Python (the one writer of storage), SHA-256
// worker/http.js           fetch with a streaming body reader and abort
// worker/tabs.js           tab calls, the page script, the site caches' purge listeners
// worker/catalogue.js      the UI language and the locales' catalogues for Python
// worker/packages.js       Pyodide packages loaded late
// worker/port_registry.js  the open ports of turns, summary passes and backups
// worker/routing.js        requests from the pages: trust tiers, arrival order
// worker/ports.js          work started on a port: turns, summary passes, backups
// worker/explain_menu.js   the "Explain with Margin" context menu
// worker/prompt_menu.js    the saved prompts' items in that menu
// worker/restore.js        what a new instance picks up: site caches, an unfinished import
// worker/digest_copy.js    the digests' search copy in IndexedDB, for the panel's search worker
// worker/sync.js           sync's alarms: periodic, soon after a save, kept across browser restarts

// Pyodide's asm script must be imported statically and first: service workers forbid import()
// and late importScripts (docs/architecture.md), so loadPyodide must not try to fetch it itself.
import './pyodide/pyodide.asm.js';
import * as i18n from './common/i18n.js';
import { python } from './worker/boot.js';
import { restartDigestCopy, startDigestCopy } from './worker/digest_copy.js';
import { followPromptWrites, installMenu, onExplainClicked, rebuildMenu, retitleMenu } from './worker/explain_menu.js';
import { onConnect } from './worker/ports.js';
import { recoverBackupImport, followTabEvents, restoreSiteCaches } from './worker/restore.js';
import { onMessage } from './worker/routing.js';
import { onLocalWrite, writeSearchCopyEpoch } from './worker/storage.js';
import { keepSyncAlarm, onAlarm } from './worker/sync.js';

// The digests' IndexedDB copy for the panel's search worker is kept from here (and storage.js).
startDigestCopy({ writeEpoch: writeSearchCopyEpoch });

// For DevTools and the end-to-end tests (a worker's global scope is not reachable from pages):
// `await marginPython()` gives {pyodide, worker, bootMs}.
globalThis.marginPython = () => python();

// The worker's words (its errors, the menu's title) follow the language setting. The setting is
// only ever written by this worker, so it follows its own writes (storage.js `onLocalWrite`), with
// no storage.onChanged listener, which would be handed every `history`.
const languageReady = i18n.start({ follow: false });
onLocalWrite((items) => {
  i18n.settingWritten(items);
  followPromptWrites(items); // the saved prompts' menu items (worker/prompt_menu.js)
});
languageReady.then(retitleMenu);
i18n.onLanguageChange(rebuildMenu);

// A new worker instance picks up what the previous one left (worker/restore.js).
followTabEvents();
restoreSiteCaches();
recoverBackupImport();

// -- every listener, at top level (rule 1) -----------------------------------------------------

chrome.runtime.onMessage.addListener(onMessage);
chrome.runtime.onConnect.addListener(onConnect);
chrome.contextMenus.onClicked.addListener(onExplainClicked);
// Sync runs on its alarms only (worker/sync.js): nothing here follows browsing.
chrome.alarms.onAlarm.addListener(onAlarm);
chrome.runtime.onStartup.addListener(keepSyncAlarm);
// Native menus cannot be clicked from a test: the tests call the same handler.
globalThis.marginExplainClicked = onExplainClicked;

chrome.runtime.onInstalled.addListener((details) => {
  // A version that did not keep the search copy may have written digests since it was made.
  if (details?.reason === 'update') restartDigestCopy();
  languageReady.then(installMenu);
  // Boot Python once now, so its memory snapshot exists before the panel is first opened (the
  // first boot of a version takes seconds; later cold starts restore the snapshot in ~0.3 s).
  python().catch((error) => console.error('Margin: Python failed to start', error));
  // Clicking the toolbar icon opens the side panel (a persistent setting: set once per install).
  chrome.sidePanel.setPanelBehavior({ openPanelOnActionClick: true }).catch((error) =>
    console.error('Margin: could not set the side panel behaviour', error));
});
