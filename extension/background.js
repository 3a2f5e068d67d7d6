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

const EXTENSION_ORIGIN = new URL(chrome.runtime.getURL('/')).origin;
const KNOWN_REQUESTS = new Set(CONTRACT.messages);

// How the backend wheel gets into Pyodide: "unpack" writes the wheel's files straight into
// site-packages (a wheel is a zip); "micropip" installs it with micropip from Pyodide's file
// system. Both are offline. README.md records the measured cold-start cost of each.
const INSTALL_WITH = 'unpack';

let booting = null;

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
  const pyodide = await loadPyodide({
    indexURL: chrome.runtime.getURL('pyodide/'),
    stdout: (line) => console.log('[py]', line),
    stderr: (line) => console.warn('[py]', line),
  });
  bridge.attachPyodide(pyodide);
  const wheel = await (await fetch(chrome.runtime.getURL(`py/${CONTRACT.wheel}`))).arrayBuffer();
  if (INSTALL_WITH === 'micropip') {
    await pyodide.loadPackage('micropip', { messageCallback: () => {} });
    pyodide.FS.writeFile(`/tmp/${CONTRACT.wheel}`, new Uint8Array(wheel));
    await pyodide.runPythonAsync(
      `import micropip\nawait micropip.install("emfs:/tmp/${CONTRACT.wheel}", deps=False)`,
    );
  } else {
    const sitePackages = pyodide.runPython('import site; site.getsitepackages()[0]');
    pyodide.unpackArchive(wheel, 'wheel', { extractDir: sitePackages });
  }
  pyodide.registerJsModule('margin_bridge', bridge);
  const api = pyodide.pyimport('margin.api');
  const bootMs = Math.round(performance.now() - started);
  console.info(`Margin: Python ready in ${bootMs} ms (${INSTALL_WITH})`);
  return { pyodide, api, bootMs };
}

// -- trust tiers (uBlock Origin Lite style): who may ask what ---------------------------------

function senderTier(sender) {
  if (sender.id !== chrome.runtime.id) return null;
  // The side panel, the options page and extension pages opened as tabs.
  if ((sender.url || '').startsWith(EXTENSION_ORIGIN + '/')) return 'extension';
  // Content scripts run inside web pages: their messages are untrusted input.
  return sender.tab ? 'content' : null;
}

const failure = (code, message) => ({ ok: false, error: { code, message } });

async function handleRequest(message, sender) {
  const tier = senderTier(sender);
  if (tier === null) return failure('forbidden', 'Margin only answers its own pages.');
  if (!message || typeof message !== 'object' || typeof message.type !== 'string') {
    return failure('bad_message', 'A request to Margin needs a "type".');
  }
  const { type, payload } = message;
  // Tier 1: works without Python.
  if (!KNOWN_REQUESTS.has(type)) {
    return failure('unknown_message', `Margin does not know the request "${type}".`);
  }
  if (tier === 'content' && !type.startsWith('page.')) {
    return failure('forbidden', `Pages may not send "${type}" to Margin.`);
  }
  // Tier 2: needs Python.
  let api;
  try {
    ({ api } = await python());
  } catch (error) {
    console.error('Margin: Python failed to start', error);
    return failure('python_boot_failed',
      `Margin's Python backend failed to start (${error?.message ?? error}). Reload the extension.`);
  }
  const replyJson = await api.dispatch_json(type, JSON.stringify(payload ?? {}), tier);
  return JSON.parse(replyJson);
}

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  handleRequest(message, sender).then(sendResponse, (error) => {
    console.error('Margin: request failed', error);
    sendResponse(failure('internal', `Margin's background worker failed: ${error?.message ?? error}`));
  });
  return true; // the reply is sent asynchronously
});

// -- turns: one port per turn, events streamed back -------------------------------------------

chrome.runtime.onConnect.addListener((port) => {
  if (port.name !== CONTRACT.turnPort || senderTier(port.sender) !== 'extension') {
    port.disconnect();
    return;
  }
  const turnId = crypto.randomUUID();
  let started = false;
  bridge.turnPorts.set(turnId, port);

  port.onDisconnect.addListener(() => {
    bridge.turnPorts.delete(turnId);
    if (booting) booting.then(({ api }) => api.stop_turn(turnId), () => {});
  });

  port.onMessage.addListener(async (message) => {
    if (message?.action === 'stop') {
      if (booting) (await python()).api.stop_turn(turnId);
      return;
    }
    if (started) return;
    started = true;
    try {
      const { api } = await python();
      await api.run_turn_json(turnId, JSON.stringify(message ?? {}));
    } catch (error) {
      console.error('Margin: turn failed', error);
      bridge.postTurnEvent(turnId, JSON.stringify({
        event: 'error',
        error: { code: 'python_boot_failed', message: `Margin's Python backend failed to start (${error?.message ?? error}). Reload the extension.` },
      }));
    } finally {
      bridge.turnPorts.delete(turnId);
      try { port.disconnect(); } catch { /* already gone */ }
    }
  });
});

// -- browser UI wiring ------------------------------------------------------------------------

chrome.runtime.onInstalled.addListener(() => {
  // Clicking the toolbar icon opens the side panel (a persistent setting: set once per install).
  chrome.sidePanel.setPanelBehavior({ openPanelOnActionClick: true }).catch((error) =>
    console.error('Margin: could not set the side panel behaviour', error));
});
