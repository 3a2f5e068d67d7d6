// The code sandbox's worker: its own Pyodide, which runs an answer's code (runner.py).
//
// A classic script, started by sandbox.js as a `blob:` worker (a sandboxed page has an opaque
// origin and cannot start a worker from an extension URL; measured, README "Running code").
// It loads Pyodide from the extension's own files and knows nothing of the user: what it gets is
// the code to run, posted by sandbox.js.
//
// Rules:
// 1. Messages in: {type: "boot", base, fontList?} once, then {type: "run", id, code, limit, files}, one at
//    a time. Out: "booted", "progress" {id, text: the packages being loaded, "pandas, matplotlib";
//    the panel says "Loading …" in the user's language}, "started" {id}, "stdout"/"stderr" {id, text},
//    "fontlist" {text} (matplotlib's font list, for the next worker: runner.py rule 7),
//    "done" {id, result, ms}, "failed" {text} (Pyodide could not start or suffered a fatal error:
//    sandbox.js starts a fresh worker).
// 2. Packages are loaded on first import (loadPackagesFromImports, from the extension's wheels,
//    each checked against pyodide-lock.json), with a "Loading pandas…" progress line; numpy,
//    pandas and matplotlib.pyplot are imported then too (PREIMPORTS), before the time limit starts.
// 3. The code cannot post to the page: `postMessage` is taken away from the worker's global scope
//    once Pyodide is up (the worker keeps its own bound copy), so `import js` finds no way out.
// 4. Before each run, /data/ is emptied and the run's files (the conversation's attachments, for
//    the model's run_python calls) are written there; nothing else of the user's is inside.
"use strict";

const post = self.postMessage.bind(self);
let pyodide = null;
let runCode = null;
let harness = null;
let booting = null;
let fontList = ""; // matplotlib's font list from an earlier worker (runner.py rule 7)

async function boot(base) {
  const started = performance.now();
  self.importScripts(`${base}pyodide/pyodide.js`);
  pyodide = await self.loadPyodide({ indexURL: `${base}pyodide/`, fullStdLib: false });
  const source = await (await fetch(`${base}sandbox/runner.py`)).text();
  const namespace = pyodide.globals.get("dict")();
  pyodide.runPython(source, { globals: namespace });
  runCode = namespace.get("run");
  harness = namespace;
  delete self.DedicatedWorkerGlobalScope?.prototype.postMessage;
  delete self.postMessage;
  post({ type: "booted", ms: Math.round(performance.now() - started) });
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

async function loadImports(id, code) {
  await pyodide.loadPackagesFromImports(code, {
    messageCallback: (text) => {
      const names = /^Loading (.+)$/.exec(String(text).trim());
      if (names) post({ type: "progress", id, text: loadingNames(code, names[1]) });
    },
    errorCallback: () => {},
  });
  const imported = pyodide.pyodide_py.code.find_imports(code).toJs();
  for (const name of imported) {
    const top = name.split(".")[0];
    const statement = PREIMPORTS[top];
    if (!statement || pyodide.runPython(`__import__("sys").modules.get(${JSON.stringify(top)}) is not None`)) continue;
    post({ type: "progress", id, text: top });
    if (top === "matplotlib") useFontList();
    await pyodide.runPythonAsync(statement);
    if (top === "matplotlib" && !fontList) {
      const kept = harness.get("kept_font_list")();
      if (typeof kept === "string") post({ type: "fontlist", text: kept });
    }
  }
}

function useFontList() {
  if (!fontList) return;
  try {
    pyodide.FS.writeFile(harness.get("font_list_path")(), fontList);
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
  try {
    await loadImports(id, code);
  } catch {
    // A package the extension does not ship: the import itself fails, with Python's own message.
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
    booting = boot(String(message.base)).catch((error) => post({ type: "failed", text: String(error?.message || error) }));
  } else if (message.type === "run" && booting) {
    booting.then(() => (runCode ? run(message) : null));
  }
});
