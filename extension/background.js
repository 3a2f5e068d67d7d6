// Margin's service worker: a thin shell around the Python backend (py/margin, run in Pyodide).
//
// Rules (platform.md, "Service-worker lifecycle"):
// - every listener is registered synchronously at top level, so an event that wakes a stopped
//   worker reaches it;
// - Python boots lazily, once, on the first event that needs it; every handler awaits the same
//   promise; a failed boot is forgotten so the next event tries again;
// - nothing that matters lives only in memory: Python writes to chrome.storage before replying.

// Pyodide's asm script must be imported statically and first: service workers forbid import()
// and late importScripts (platform.md), so loadPyodide must not try to fetch it itself.
import './pyodide/pyodide.asm.js';
import { loadPyodide } from './pyodide/pyodide.mjs';
import { CONTRACT } from './generated/contract.js';
import * as bridge from './bridge.js';
import { restartDigestCopy, startDigestCopy } from './digest_copy.js';
import { joinPieces } from './port_chunks.js';
import * as i18n from './i18n.js';

const EXTENSION_ORIGIN = new URL(chrome.runtime.getURL('/')).origin;
const KNOWN_REQUESTS = new Set(CONTRACT.messages);

let booting = null;

// The digests' IndexedDB copy for the panel's search worker is kept from here (and bridge.js).
startDigestCopy({ writeEpoch: bridge.writeSearchCopyEpoch });

// For DevTools and the end-to-end tests (a worker's global scope is not reachable from pages):
// `await marginPython()` gives {pyodide, worker, bootMs}.
globalThis.marginPython = () => python();

function python() {
  if (!booting) {
    booting = bootPython().catch((error) => {
      booting = null;
      throw error;
    });
  }
  return booting;
}

async function bootPython() {
  const started = performance.now();
  const wheel = new Uint8Array(
    await (await fetch(chrome.runtime.getURL(`py/${CONTRACT.wheel}`))).arrayBuffer());
  const snapshotKey = await snapshotKeyFor(wheel);
  let pyodide = null;
  let how = 'snapshot';
  const snapshot = await snapshots.read(snapshotKey);
  if (snapshot) {
    try {
      pyodide = await loadPyodide({ ...PYODIDE_OPTIONS, _loadSnapshot: snapshot });
      // The snapshot holds the heap, not the file system: put the package files back.
      installBackend(pyodide, wheel);
      pyodide.runPython('import random; random.seed()');
    } catch (error) {
      console.warn('Margin: memory snapshot refused, starting Python from scratch', error);
      pyodide = null;
      snapshots.clear();
    }
  }
  if (!pyodide) {
    how = 'fresh';
    pyodide = await loadPyodide({ ...PYODIDE_OPTIONS, _makeSnapshot: true });
    installBackend(pyodide, wheel);
    // Import the pure-Python core before anything touches JS: a snapshot must hold no JS
    // references (platform.md), so margin.platform is imported only after it.
    pyodide.runPython(PRELOAD);
    try {
      // Awaited: a worker stopped right after its first boot must still leave the snapshot
      // behind (~0.1-0.3 s, once per install or update).
      await snapshots.write(snapshotKey, pyodide.makeMemorySnapshot());
    } catch (error) {
      console.warn('Margin: could not take a memory snapshot', error);
    }
  }
  bridge.attachPyodide(pyodide);
  pyodide.registerJsModule('margin_bridge', bridge);
  // The running worker's state (platform, turns, boot record) is one Python object, built after
  // the snapshot: every call below goes to its methods (py/margin/worker.py).
  const worker = pyodide.pyimport('margin.worker').browser_worker();
  const bootMs = Math.round(performance.now() - started);
  worker.record_boot(bootMs, how);
  console.info(`Margin: Python ready in ${bootMs} ms (${how})`);
  return { pyodide, worker, bootMs };
}

// -- arrival order: requests reach Python in the order they arrived ----------------------------
//
// A request's listener runs when it arrives; `inArrivalOrder(start)` queues its start there,
// synchronously, and once Python is up starts every queued request back to back, oldest first,
// whatever path it came by (a message, a port) and however long the boot took. Python keeps
// that order from there: each task starts in order and takes the storage lock before anything
// else it awaits (py/margin/worker.py, rule 6). So a Save on the options page followed by a send
// from the panel, in the first seconds of a cold worker, answers with the saved provider.
const arrivals = [];

class BootFailed extends Error {}

function inArrivalOrder(start) {
  return new Promise((resolve, reject) => {
    arrivals.push({ start, resolve, reject });
    if (arrivals.length === 1) startArrivals();
  });
}

async function startArrivals() {
  while (arrivals.length) {
    let worker;
    try {
      ({ worker } = await python());
    } catch (error) {
      for (const waiting of arrivals.splice(0)) waiting.reject(new BootFailed(error?.message ?? String(error)));
      return;
    }
    for (const waiting of arrivals.splice(0)) {
      try {
        waiting.resolve(waiting.start(worker));
      } catch (error) {
        waiting.reject(error);
      }
    }
  }
}

const PYODIDE_OPTIONS = {
  indexURL: chrome.runtime.getURL('pyodide/'),
  stdout: (line) => console.log('[py]', line),
  stderr: (line) => console.warn('[py]', line),
};

// The modules every request needs; imported before the snapshot so a cold start skips them.
const PRELOAD = 'import margin.api, margin.worker, margin.storage, margin.history, margin.chat, margin.options';

// The backend wheel goes into site-packages by unpacking it (a wheel is a zip): measured
// 1.6-2.0 s to the first reply, against 2.2-2.5 s when micropip installs the same wheel.
function installBackend(pyodide, wheel) {
  const sitePackages = pyodide.runPython('import site; site.getsitepackages()[0]');
  pyodide.unpackArchive(wheel, 'wheel', { extractDir: sitePackages });
}

// A snapshot is only valid for the exact Pyodide build and backend that made it
// ("Snapshot build id mismatch" otherwise), so its key covers both.
async function snapshotKeyFor(wheel) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', wheel));
  const hex = Array.from(digest.slice(0, 8), (b) => b.toString(16).padStart(2, '0')).join('');
  return `${chrome.runtime.getManifest().version}-${hex}`;
}

// Memory snapshots live in IndexedDB (chrome.storage holds JSON only). Never throws.
const snapshots = {
  open() {
    return new Promise((resolve, reject) => {
      const request = indexedDB.open('margin-python', 1);
      request.onupgradeneeded = () => request.result.createObjectStore('snapshots');
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  },
  async run(mode, body) {
    try {
      const db = await this.open();
      return await new Promise((resolve, reject) => {
        const tx = db.transaction('snapshots', mode);
        const result = body(tx.objectStore('snapshots'));
        tx.oncomplete = () => { db.close(); resolve(result?.result); };
        // A transaction that aborts (quota exceeded, for one) may fire no error event: without
        // onabort this promise, and with it the boot that awaits a snapshot write, would never settle.
        tx.onabort = tx.onerror = () => { db.close(); reject(tx.error ?? new Error('snapshot transaction aborted')); };
      });
    } catch (error) {
      console.warn('Margin: snapshot store unavailable', error);
      return undefined;
    }
  },
  read(key) { return this.run('readonly', (store) => store.get(key)); },
  write(key, bytes) {
    return this.run('readwrite', (store) => { store.clear(); store.put(bytes, key); });
  },
  clear() { return this.run('readwrite', (store) => store.clear()); },
};

// -- trust tiers (uBlock Origin Lite style): who may ask what ---------------------------------

function senderTier(sender) {
  if (sender.id !== chrome.runtime.id) return null;
  // The side panel, the options page and extension pages opened as tabs.
  if ((sender.url || '').startsWith(EXTENSION_ORIGIN + '/')) return 'extension';
  // Content scripts run inside web pages: their messages are untrusted input.
  return sender.tab ? 'content' : null;
}

const failure = (code, message) => ({ ok: false, error: { code, message } });

// A port's data (a turn's start with its images, a backup's chunks) goes to Python as UTF-8
// bytes: Pyodide converts a JS string argument at ~11 MB/s, a Uint8Array at memory speed.
const utf8 = new TextEncoder();

async function handleRequest(message, sender) {
  const tier = senderTier(sender);
  if (tier === null) return failure('forbidden', i18n.t('bg_error_foreign'));
  if (!message || typeof message !== 'object' || typeof message.type !== 'string') {
    return failure('bad_message', i18n.t('bg_error_no_type'));
  }
  const { type, payload } = message;
  // Tier 1: works without Python.
  if (!KNOWN_REQUESTS.has(type)) {
    return failure('unknown_message', i18n.t('bg_error_unknown', type));
  }
  if (tier === 'content' && !type.startsWith(CONTRACT.contentScriptPrefix)) {
    return failure('forbidden', i18n.t('bg_error_page_forbidden', type));
  }
  // Tier 2: needs Python.
  let replyJson;
  try {
    replyJson = await inArrivalOrder((worker) => worker.dispatch_json(type, JSON.stringify(payload ?? {}), tier));
  } catch (error) {
    if (!(error instanceof BootFailed)) throw error;
    console.error('Margin: Python failed to start', error);
    return failure('python_boot_failed', i18n.t('bg_error_boot', error.message));
  }
  return JSON.parse(replyJson);
}

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  handleRequest(message, sender).then(sendResponse, (error) => {
    console.error('Margin: request failed', error);
    sendResponse(failure('internal', `Margin's background worker failed: ${error?.message ?? error}`));
  });
  return true; // the reply is sent asynchronously
});

// -- ports: one per turn, one per summary pass, one per backup; events streamed back ------------

const postPortError = (portId, code, message) =>
  bridge.postTurnEvent(portId, JSON.stringify({ event: 'error', error: { code, message } }));

// What each port name runs (py/margin/worker.py), how its panel says stop, and what a failure is
// said to interrupt.
const PORT_KINDS = {
  [CONTRACT.turnPort]: {
    run: (worker, id, startJson) => worker.run_turn_json(id, startJson),
    stop: (worker, id) => worker.stop_turn(id),
    isStop: (message) => message?.action === 'stop',
    // A code run's result for the model's run_python call (py/margin/tool_turn.py); keepalives are not.
    forward: (worker, id, messageJson) => worker.turn_message(id, messageJson),
    forwards: (message) => message?.action === 'tool_result',
    during: 'during this answer',
    failedKey: 'bg_error_turn',
  },
  [CONTRACT.summaryPort]: {
    run: (worker, id, startJson) => worker.run_summary_json(id, startJson),
    stop: (worker, id) => worker.stop_summary(id),
    isStop: (message) => message?.stop === true || message?.action === 'stop',
    during: 'while summarizing the page',
    failedKey: 'bg_error_summary',
  },
  // A backup's later messages (the file's chunks, acks) are its data: each goes to the running work.
  [CONTRACT.backupPort]: {
    run: (worker, id, startJson) => worker.run_backup_json(id, startJson),
    stop: (worker, id) => worker.stop_backup(id),
    isStop: (message) => message?.action === 'stop',
    forward: (worker, id, messageJson) => worker.backup_message(id, messageJson),
    during: 'during the backup',
    failedKey: 'bg_error_backup',
  },
};

chrome.runtime.onConnect.addListener((port) => {
  const kind = Object.hasOwn(PORT_KINDS, port.name) ? PORT_KINDS[port.name] : null;
  if (!kind || senderTier(port.sender) !== 'extension') {
    port.disconnect();
    return;
  }
  const portId = crypto.randomUUID();
  let started = false;
  let finished = false;
  // A start message too large for one port message (a turn with several big images) comes in
  // pieces (extension/port_chunks.js); the work starts once all of them arrived.
  const nextPiece = joinPieces();
  bridge.turnPorts.set(portId, port);

  // Closing the port is a stop too. Only work that started and has not finished can be
  // stopped; Python remembers a stop that arrives before the work's task runs.
  const stop = () => {
    if (!started || finished) return;
    python().then(({ worker }) => kind.stop(worker, portId), () => {});
  };
  port.onDisconnect.addListener(() => {
    bridge.turnPorts.delete(portId);
    stop();
  });

  port.onMessage.addListener(async (message) => {
    if (kind.isStop(message)) {
      stop();
      return;
    }
    if (started) {
      // A turn's keepalive: receiving it already reset the idle timer. A backup's data: forwarded.
      if (kind.forward && !finished && (!kind.forwards || kind.forwards(message))) {
        python().then(({ worker }) => kind.forward(worker, portId, utf8.encode(JSON.stringify(message ?? {}))), () => {});
      }
      return;
    }
    let startJson;
    try {
      startJson = nextPiece(message)?.json;
    } catch (error) {
      postPortError(portId, 'bad_message', i18n.t('bg_error_damaged', error.message));
      try { port.disconnect(); } catch { /* already gone */ }
      return;
    }
    if (startJson === undefined) return; // more pieces to come
    started = true;
    try {
      try {
        await inArrivalOrder((worker) => kind.run(worker, portId, utf8.encode(startJson)));
      } catch (error) {
        if (error instanceof BootFailed) {
          console.error('Margin: Python failed to start', error);
          postPortError(portId, 'python_boot_failed', i18n.t('bg_error_boot', error.message));
          return;
        }
        // The run reports every failure of its own: what lands here is Pyodide failing.
        console.error(`Margin: failed ${kind.during}`, error);
        postPortError(portId, 'internal', i18n.t(kind.failedKey, String(error?.message ?? error)));
      }
    } finally {
      finished = true;
      bridge.turnPorts.delete(portId);
      try { port.disconnect(); } catch { /* already gone */ }
    }
  });
});

// -- browser UI wiring ------------------------------------------------------------------------

// "Explain with Margin" on a selection. The menu item is created once per install (Chrome keeps
// it); this listener is registered at top level like every other, and fires only on a user's click.
const EXPLAIN_MENU_ID = 'margin-explain';
// Its title follows the language setting (extension/i18n.js): Chrome's i18n cannot switch at run time.
// The setting is only ever written by this worker, so it follows its own writes (bridge.js
// `onLocalWrite`), with no storage.onChanged listener, which would be handed every `history`.
const languageReady = i18n.start({ follow: false });
bridge.onLocalWrite(i18n.settingWritten);
const retitleExplain = () =>
  chrome.contextMenus.update(EXPLAIN_MENU_ID, { title: i18n.t('bg_explain') }, () => void chrome.runtime.lastError);
// Chrome keeps the item between worker starts: a start brings its title up to the setting, a
// change of the setting while the worker runs does so at once.
languageReady.then(retitleExplain);
i18n.onLanguageChange(retitleExplain);

function onExplainClicked(info, tab) {
  if (info.menuItemId !== EXPLAIN_MENU_ID) return;
  // sidePanel.open() needs the click's user gesture, so it is called before anything is awaited.
  const where = tab?.windowId !== undefined && tab.windowId >= 0 ? { windowId: tab.windowId } : { tabId: tab?.id };
  try {
    chrome.sidePanel.open(where).catch((error) => console.warn('Margin: could not open the side panel', error));
  } catch (error) {
    console.warn('Margin: could not open the side panel', error);
  }
  const request = { selectionText: info.selectionText, pageUrl: info.pageUrl || tab?.url || '', title: tab?.title || '' };
  // The panel picks the request up from chrome.storage.session and runs the turn (py/margin/explain.py).
  return python()
    .then(({ worker }) => worker.explain_queue_json(JSON.stringify(request)))
    .then((replyJson) => {
      const reply = JSON.parse(replyJson);
      if (!reply.ok) console.warn('Margin: Explain was not queued:', reply.error?.message);
      return reply;
    })
    .catch((error) => console.error('Margin: Explain failed', error));
}
chrome.contextMenus.onClicked.addListener(onExplainClicked);
// Native menus cannot be clicked from a test: the tests call the same handler.
globalThis.marginExplainClicked = onExplainClicked;

// -- site caches: purge listeners exist only while a tab is cached (py/margin/site_caches.py) ---

bridge.setTabEventHandler((kind, tabId, url) => {
  python()
    .then(({ worker }) => worker.site_cache_event(kind, tabId, url))
    .catch((error) => console.error('Margin: site cache purge failed', error));
});

// A new worker instance: if nothing is cached, add and remove the purge listeners once, which
// clears a wake-up registration a previous instance may have left behind; if something is,
// restore the cache now (dead tabs dropped, listeners back for the live ones).
chrome.storage.session.get(CONTRACT.storage.sessionKeys.siteCacheIndex).then((stored) => {
  const index = stored[CONTRACT.storage.sessionKeys.siteCacheIndex];
  if (index && typeof index === 'object' && Object.keys(index).length) {
    python().then(({ worker }) => worker.site_cache_restore()).catch((error) => console.error('Margin: site cache restore failed', error));
  } else {
    bridge.tabsWatch('{}', true);
  }
}, (error) => console.warn('Margin: could not read the site cache index', error));

// A new worker instance: an import the previous one was running when it stopped left its staged
// session bodies listed; they are removed before anything else can see them (py/margin/backup.py).
chrome.storage.local.get(CONTRACT.storage.keys.backupImportStaging).then((stored) => {
  if (Object.hasOwn(stored, CONTRACT.storage.keys.backupImportStaging)) {
    python().then(({ worker }) => worker.backup_recover()).catch((error) => console.error('Margin: backup clean-up failed', error));
  }
}, (error) => console.warn('Margin: could not check for an unfinished import', error));

chrome.runtime.onInstalled.addListener((details) => {
  // A version that did not keep the search copy may have written digests since it was made.
  if (details?.reason === 'update') restartDigestCopy();
  languageReady.then(() => {
    chrome.contextMenus.create({ id: EXPLAIN_MENU_ID, title: i18n.t('bg_explain'), contexts: ['selection'] }, () => {
      // "duplicate id" after an update that kept the item: its title is brought up to date.
      if (chrome.runtime.lastError) retitleExplain();
    });
  });
  // Boot Python once now, so its memory snapshot exists before the panel is first opened (the
  // first boot of a version takes seconds; later cold starts restore the snapshot in ~0.3 s).
  python().catch((error) => console.error('Margin: Python failed to start', error));
  // Clicking the toolbar icon opens the side panel (a persistent setting: set once per install).
  chrome.sidePanel.setPanelBehavior({ openPanelOnActionClick: true }).catch((error) =>
    console.error('Margin: could not set the side panel behaviour', error));
});
