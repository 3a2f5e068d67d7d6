// The code sandbox's worker: its own Pyodide, which runs an answer's code (runner.py).
//
// A classic script, started by sandbox.js as a `blob:` worker (a sandboxed page has an opaque
// origin and cannot start a worker from an extension URL; measured, README "Running code").
// It loads Pyodide from the extension's own files and knows nothing of the user: what it gets is
// the code to run, posted by sandbox.js.
//
// Rules:
// 1. Messages in: {type: "boot", base, fontList?, snapshot?, snapshotKey?} once, then {type: "run", id, code,
//    limit, files}, one at a time, and {type: "prepare", code} (rule 5). Out: "snapshot" {bytes, key}
//    (rule 6), "booted" {ms, heapBytes, how: "snapshot" | "fresh"}, "progress" {id, text: the
//    packages being loaded, "pandas, matplotlib"; the panel says "Loading …" in the user's
//    language}, "started" {id}, "stdout"/"stderr" {id, text}, "fontlist" {text} (matplotlib's font
//    list, for the next worker: runner.py rule 7), "prepared" {heapBytes, wheelsMs, importsMs: {module: ms}},
//    "done" {id, result, ms}, "failed" {text} (Pyodide could not start or suffered a fatal error:
//    sandbox.js starts a fresh worker).
// 2. Packages are loaded on first import (loadPackagesFromImports, from the extension's wheels,
//    each checked against pyodide-lock.json), with a "Loading pandas…" progress line; numpy,
//    pandas and matplotlib.pyplot are imported then too (PREIMPORTS), before the time limit starts.
// 3. The code cannot post to the page: `postMessage` is taken away from the worker's global scope
//    once Pyodide is up (the worker keeps its own bound copy), so `import js` finds no way out.
// 4. Before each run, /data/ is emptied and the run's files (the conversation's attachments, for
//    the model's run_python calls) are written there; nothing else of the user's is inside.
// 5. {type: "prepare", code} (the import lines of a block on screen: panel/sandbox_warmup.js)
//    loads and imports its packages ahead of any Run, one preparation after the other, then posts
//    "prepared". A run waits for the preparations posted before it (they load what it would load
//    itself); while it waits, what they load is its progress ("Loading pandas…").
// 6. A memory snapshot (Pyodide's experimental `_makeSnapshot` / `_loadSnapshot`) of the bare
//    Python with runner.py imported, taken by a worker that booted from scratch before any code ran,
//    is posted once as "snapshot" {bytes, key}; the panel keeps it (panel/sandbox_snapshot.js) and
//    the next "boot" brings it back: loaded if its key is this Pyodide's and this runner.py's (else
//    a boot from scratch and a new one). Packages are never in it (Pyodide cannot snapshot loaded
//    packages' JS side): they load after, as without one.
"use strict";

const post = self.postMessage.bind(self);
let pyodide = null;
let runCode = null;
let harness = null;
let booting = null;
let fontList = ""; // matplotlib's font list from an earlier worker (runner.py rule 7)
let preparing = Promise.resolve(); // rule 5: the preparations, one after the other
let waitingRun = null; // the run whose progress the preparations' loading is
let loadingNow = ""; // what is loading now ("pandas, matplotlib"), "" between loads

const WARM_RUN = "import sandbox_runner\nawait sandbox_runner.run('value = 1\\nvalue', 1000, lambda stream, text: None)";

// Rule 6: the harness is a module of its own (`sandbox_runner`), so a snapshot holds it imported.
// A snapshot's key names the Pyodide (pyodide.js) and the runner.py it was made with; a snapshot
// is loaded only under the same key and with Pyodide's own magic number (loadPyodide never settles
// on a snapshot it refuses: the checks come first, and a refused one is a boot from scratch).
const PYODIDE_OPTIONS = { fullStdLib: false };
const SNAPSHOT_MAGIC = 1886286592; // pyodide.asm.js, makeSnapshot's first word (0.27.7)
function textKey(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return `${text.length}-${hash.toString(16)}`;
}

function usable(snapshot, snapshotKey, key) {
  if (!(snapshot instanceof Uint8Array) || snapshotKey !== key || snapshot.byteLength < 64 || snapshot.byteLength % 4) return false;
  return new Uint32Array(snapshot.buffer, snapshot.byteOffset, 1)[0] === SNAPSHOT_MAGIC;
}

async function boot(base, snapshot, snapshotKey) {
  const started = performance.now();
  self.importScripts(`${base}pyodide/pyodide.js`);
  const [source, pyodideScript] = await Promise.all(
    [`${base}sandbox/runner.py`, `${base}pyodide/pyodide.js`].map((url) => fetch(url).then((reply) => reply.text())),
  );
  const key = `${textKey(pyodideScript)}/${textKey(source)}`;
  const how = usable(snapshot, snapshotKey, key) ? "snapshot" : "fresh";
  if (how === "snapshot") {
    pyodide = await self.loadPyodide({ ...PYODIDE_OPTIONS, indexURL: `${base}pyodide/`, _loadSnapshot: snapshot });
    // The snapshot's random state would be every worker's: seeded afresh.
    pyodide.runPython('import sys\nif "random" in sys.modules: sys.modules["random"].seed()');
  } else {
    pyodide = await self.loadPyodide({ ...PYODIDE_OPTIONS, indexURL: `${base}pyodide/`, _makeSnapshot: true });
    pyodide.FS.writeFile("/home/pyodide/sandbox_runner.py", source);
    pyodide.runPython('import sys\nsys.path.insert(0, "/home/pyodide")\nimport sandbox_runner\nsys.path.remove("/home/pyodide")');
    // One run of nothing first: what a first run compiles and caches (its regular expressions, the
    // harness's lazy imports) is then in the snapshot. Python-only, so the snapshot holds no JS.
    await pyodide.runPythonAsync(WARM_RUN);
    try {
      const bytes = pyodide.makeMemorySnapshot();
      post({ type: "snapshot", bytes, key }, [bytes.buffer]);
    } catch {
      // no snapshot: the next sandbox boots from scratch too
    }
  }
  harness = pyodide.pyimport("sandbox_runner");
  runCode = harness.run;
  // A run of nothing through the whole path of a Run (its imports looked up, the harness), in the
  // background before any Run: the wasm and JS code it goes through is compiled then, not on the
  // first Run (a snapshot holds the heap, not compiled code).
  preparing = preparing
    .then(() => loadImports("import sys\nvalue = 1"))
    .then(() => pyodide.runPythonAsync(WARM_RUN))
    .catch(() => {});
  delete self.DedicatedWorkerGlobalScope?.prototype.postMessage;
  delete self.postMessage;
  post({ type: "booted", ms: Math.round(performance.now() - started), heapBytes: heapBytes(), how });
}

// "pandas, matplotlib": the packages the code imports, not every dependency pulled in.
function loadingNames(code, names) {
  const loading = names.split(",").map((n) => n.trim());
  let imported = [];
  try {
    imported = pyodide.pyodide_py.code.find_imports(code).toJs();
  } catch {
    // a syntax error: Python reports it when the code runs
  }
  const wanted = imported.filter((n) => loading.some((l) => l.toLowerCase() === n.toLowerCase()));
  return (wanted.length ? wanted : loading).join(", ");
}

// Importing these is part of loading them (pandas takes seconds, matplotlib's first import builds
// its font cache: tens of seconds on a busy machine): done before "started", outside the limit.
const PREIMPORTS = { numpy: "import numpy", pandas: "import pandas", matplotlib: "import matplotlib.pyplot" };

// What loads now, said as the waiting run's progress (rule 5: a preparation's too).
function loading(text) {
  loadingNow = text;
  if (waitingRun && text) post({ type: "progress", id: waitingRun, text });
}

// Where a load's time went (the benchmark reads it from "prepared"): wheels, then each import.
let lastLoad = { wheelsMs: 0, importsMs: {} };
let plottingWarmed = false;

async function loadImports(code) {
  const started = performance.now();
  lastLoad = { wheelsMs: 0, importsMs: {} };
  try {
    await pyodide.loadPackagesFromImports(code, {
      messageCallback: (text) => {
        const names = /^Loading (.+)$/.exec(String(text).trim());
        if (names) loading(loadingNames(code, names[1]));
      },
      errorCallback: () => {},
    });
    lastLoad.wheelsMs = Math.round(performance.now() - started);
    const imported = pyodide.pyodide_py.code.find_imports(code).toJs();
    for (const name of imported) {
      const top = name.split(".")[0];
      const statement = PREIMPORTS[top];
      if (!statement || pyodide.runPython(`__import__("sys").modules.get(${JSON.stringify(top)}) is not None`)) continue;
      loading(top);
      if (top === "matplotlib") useFontList();
      const importing = performance.now();
      await pyodide.runPythonAsync(statement);
      lastLoad.importsMs[top] = Math.round(performance.now() - importing);
      if (top === "matplotlib" && !fontList) {
        const kept = harness.kept_font_list();
        if (typeof kept === "string") post({ type: "fontlist", text: kept });
      }
    }
    // runner.py rule 8, once numpy, pandas and matplotlib are in: the first plot is drawn ahead.
    if (!plottingWarmed && imported.some((name) => name.split(".")[0] === "matplotlib")) {
      plottingWarmed = true;
      const drawing = performance.now();
      harness.warm_plotting().destroy?.();
      lastLoad.importsMs.firstPlot = Math.round(performance.now() - drawing);
    }
  } finally {
    loadingNow = "";
  }
}

// The worker's wasm memory: what the sandbox costs (it never shrinks).
const heapBytes = () => pyodide?._module?.HEAP8?.buffer?.byteLength || 0;

// Rule 5.
function prepare(code) {
  preparing = preparing
    .then(() => loadImports(code))
    .catch(() => {}) // what cannot load now fails again, in Python's words, when the code runs
    .then(() => post({ type: "prepared", heapBytes: heapBytes(), ...lastLoad }));
}

function useFontList() {
  if (!fontList) return;
  try {
    pyodide.FS.writeFile(harness.font_list_path(), fontList);
  } catch {
    // matplotlib builds its own list, as without one
  }
}

// Rule 4: /data holds exactly this run's files (none for a block the user runs).
function writeFiles(files) {
  const FS = pyodide.FS;
  FS.mkdirTree("/data");
  for (const name of FS.readdir("/data")) if (name !== "." && name !== "..") FS.unlink(`/data/${name}`);
  for (const file of files || []) {
    const data = typeof file.text === "string" ? file.text : Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0));
    FS.writeFile(file.path, data);
  }
}

async function run({ id, code, limit, files }) {
  const started = performance.now();
  try {
    writeFiles(files);
  } catch (error) {
    post({ type: "stderr", id, text: `The attached files could not be written to /data: ${error?.message || error}\n` });
  }
  waitingRun = id;
  if (loadingNow) post({ type: "progress", id, text: loadingNow });
  try {
    await preparing;
    await loadImports(code);
  } catch {
    // A package the extension does not ship: the import itself fails, with Python's own message.
  } finally {
    waitingRun = null;
  }
  post({ type: "started", id });
  const emit = (stream, text) => post({ type: stream === "stderr" ? "stderr" : "stdout", id, text: String(text) });
  let result;
  try {
    result = JSON.parse(await runCode(code, limit, emit));
  } catch (error) {
    post({ type: "failed", text: String(error?.message || error) });
    return;
  }
  post({ type: "done", id, result, ms: Math.round(performance.now() - started) });
}

self.addEventListener("message", (event) => {
  const message = event.data;
  if (!message || typeof message !== "object") return;
  if (message.type === "boot" && !booting) {
    if (typeof message.fontList === "string") fontList = message.fontList;
    booting = boot(String(message.base), message.snapshot, message.snapshotKey).catch((error) => post({ type: "failed", text: String(error?.message || error) }));
  } else if (message.type === "run" && booting) {
    booting.then(() => (runCode ? run(message) : null));
  } else if (message.type === "prepare" && booting && typeof message.code === "string") {
    booting.then(() => (runCode ? prepare(message.code) : null));
  }
});
