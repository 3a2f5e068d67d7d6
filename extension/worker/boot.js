// Python's boot in the service worker: Pyodide started once, from the memory snapshot when one
// fits, else from scratch (and a snapshot taken); the backend wheel unpacked; the bridge
// registered; the worker's Python object built. And the store of the snapshots (IndexedDB).
//
// Rules (docs/architecture.md, "Boot and the memory snapshot"):
// 1. Python boots lazily, once, on the first event that needs it (`python()`); every handler
//    awaits the same promise; a failed boot is forgotten so the next event tries again.
// 2. A snapshot must hold no JS references: the pure-Python core (PRELOAD) is imported before it
//    is taken, margin.platform.browser (which imports the bridge) only after. A snapshot is only valid for
//    the exact Pyodide build and backend that made it, so its key covers both.
// 3. Pyodide's asm script is imported statically and first by background.js: service workers
//    forbid import() and late importScripts, so loadPyodide must not try to fetch it itself.
// 4. The snapshot store never throws: a store that fails is a boot from scratch, not an error.
// 5. A start from the snapshot overlaps what does not depend on each other: the snapshot is read
//    while the wheel is fetched and hashed, and Pyodide's wasm is compiled while the snapshot is
//    read (`compiledWasm`); the backend is imported from its wheel in place (zipimport), so a
//    restore writes one file instead of unpacking a hundred (docs/performance.md, "Cold start").

import { loadPyodide } from '../pyodide/pyodide.mjs';
import { CONTRACT } from '../generated/contract.js';
import * as bridge from './bridge.js';
import { attachPyodide } from './packages.js';
import { inStore } from '../common/idb_store.js';

let booting = null;

export function python() {
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
  const stored = snapshots.readAny(); // rule 5: its key is checked once the wheel is hashed
  const wasm = compiledWasm();
  const wheel = new Uint8Array(
    await (await fetch(chrome.runtime.getURL(`py/${CONTRACT.wheel}`))).arrayBuffer());
  const snapshotKey = await snapshotKeyFor(wheel);
  let pyodide = null;
  let how = 'snapshot';
  const found = await stored;
  const snapshot = found?.key === snapshotKey ? found.value : null;
  if (snapshot) {
    try {
      pyodide = await withCompiledWasm(wasm, () => loadPyodide({ ...PYODIDE_OPTIONS, _loadSnapshot: snapshot }));
      // The snapshot holds the heap, not the file system: put the wheel back where it was.
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
    pyodide = await withCompiledWasm(wasm, () => loadPyodide({ ...PYODIDE_OPTIONS, _makeSnapshot: true }));
    installBackend(pyodide, wheel);
    pyodide.runPython(`import sys; sys.path.insert(0, ${JSON.stringify(BACKEND_PATH)})`);
    // Rule 2: the pure-Python core before anything touches JS.
    pyodide.runPython(PRELOAD);
    try {
      // Awaited: a worker stopped right after its first boot must still leave the snapshot
      // behind (~0.1-0.3 s, once per install or update).
      await snapshots.write(snapshotKey, pyodide.makeMemorySnapshot());
    } catch (error) {
      console.warn('Margin: could not take a memory snapshot', error);
    }
  }
  attachPyodide(pyodide);
  pyodide.registerJsModule('margin_bridge', bridge);
  // The running worker's state (platform, turns, boot record) is one Python object, built after
  // the snapshot: every call goes to its methods (py/margin/app/worker.py).
  const worker = pyodide.pyimport('margin.app.worker').browser_worker();
  const bootMs = Math.round(performance.now() - started);
  worker.record_boot(bootMs, how);
  console.info(`Margin: Python ready in ${bootMs} ms (${how})`);
  return { pyodide, worker, bootMs };
}

const PYODIDE_OPTIONS = {
  indexURL: chrome.runtime.getURL('pyodide/'),
  stdout: (line) => console.log('[py]', line),
  stderr: (line) => console.warn('[py]', line),
};

// The modules every request needs; imported before the snapshot so a cold start skips them.
const PRELOAD = 'import margin.app.api, margin.app.worker, margin.storage.keys, margin.storage.history, margin.turn.chat, margin.settings.options';

// The backend is imported from its wheel (a pure-Python wheel is a zip, and zipimport reads it in
// place: https://docs.python.org/3/library/zipimport.html). The first boot puts BACKEND_PATH on
// sys.path before the snapshot; a restore only writes the same bytes back to the same path (the
// snapshot's key covers the wheel). Unpacking it instead took 5-20% of a restore.
const BACKEND_PATH = '/lib/margin-backend.whl';

function installBackend(pyodide, wheel) {
  pyodide.FS.writeFile(BACKEND_PATH, wheel);
}

// Rule 5: Pyodide's wasm, compiled from the moment the boot starts (V8 compiles a stream on
// background threads), rather than once the snapshot has been read.
function compiledWasm() {
  const compiling = WebAssembly.compileStreaming(fetch(chrome.runtime.getURL('pyodide/pyodide.asm.wasm')));
  compiling.catch(() => {}); // loadPyodide compiles by itself when this failed
  return compiling;
}

// loadPyodide instantiates with WebAssembly.instantiateStreaming (pyodide.mjs, 0.27.7): for its
// duration that call takes the module compiled ahead, falling back to the original on a failure.
async function withCompiledWasm(compiling, load) {
  const original = WebAssembly.instantiateStreaming;
  WebAssembly.instantiateStreaming = async (source, imports) => {
    let module;
    try {
      module = await compiling;
    } catch {
      return original.call(WebAssembly, source, imports);
    }
    return { module, instance: await WebAssembly.instantiate(module, imports) };
  };
  try {
    return await load();
  } finally {
    WebAssembly.instantiateStreaming = original;
  }
}

// Rule 2: "Snapshot build id mismatch" otherwise.
async function snapshotKeyFor(wheel) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', wheel));
  const hex = Array.from(digest.slice(0, 8), (b) => b.toString(16).padStart(2, '0')).join('');
  return `${chrome.runtime.getManifest().version}-${hex}`;
}

// Memory snapshots live in IndexedDB (chrome.storage holds JSON only). Rule 4.
const snapshots = {
  async run(mode, body) {
    try {
      return await inStore('margin-python', 'snapshots', mode, body);
    } catch (error) {
      console.warn('Margin: snapshot store unavailable', error);
      return undefined;
    }
  },
  // The store holds one snapshot (`write` clears it first): `{key, value}`, or undefined.
  async readAny() {
    const [entry] = (await this.run('readonly', (store) => {
      const request = store.openCursor();
      const found = [];
      request.onsuccess = () => {
        if (request.result) found.push({ key: request.result.key, value: request.result.value });
      };
      return { get result() { return found; } };
    })) ?? [];
    return entry;
  },
  write(key, bytes) {
    return this.run('readwrite', (store) => { store.clear(); store.put(bytes, key); });
  },
  clear() { return this.run('readwrite', (store) => store.clear()); },
};
