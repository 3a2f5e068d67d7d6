// The code sandbox's page: a sandboxed extension page (manifest `sandbox.pages`, its own CSP:
// no network, no remote scripts), framed by the side panel (panel/code_runs.js). It keeps one
// worker running Pyodide (runner.js) and relays between the panel and that worker.
//
// Rules:
// 1. Only the panel talks to this page: a message counts only if its source is `window.parent`
//    and its origin is this extension's; anything else is ignored. Every message is
//    {channel: "margin-sandbox", v: 1, type, ...}; a known sender's unknown or malformed message
//    gets {type: "refused", reason}.
// 2. In: "run" {id, code, timeoutMs, limit, files?} (one at a time; a second is refused as
//    busy), "stop" {id}, "prepare" {code} (the import lines of blocks on screen: their packages
//    are loaded ahead, runner.js rule 5), "boot" (rule 7), "ping". Out: "ready" {ms, how,
//    heapBytes} (the worker's Python is up, booted from a "snapshot" or "fresh"), "pong" {ready,
//    ms, how, heapBytes} (the answer to "ping"), "prepared" {heapBytes, wheelsMs, importsMs} (one
//    preparation ended, and where its time went), "starting" {id} (a run came while the worker's
//    Python is not up yet, after a Stop or a time limit: it waits for it), "progress", "stdout",
//    "stderr" {id, text}, "snapshot" {bytes, key} (runner.js rule 6) and "fontlist" {text} (runner.py
//    rule 7): the panel keeps them for the next sandbox,
//    "started" {id} (the packages are loaded, the code and its time limit start),
//    "done" {id, status: ok | error | timeout | stopped | crashed, result?, ms, noteKey?, detail?}:
//    a note is a catalogue key and its detail (Pyodide's own words), said by the panel in the
//    user's language (this page has no chrome.i18n: an opaque origin).
// 3. The time limit counts from the moment the code starts (packages loaded); at the limit, or on
//    "stop", the worker is terminated (a busy loop cannot refuse) and a fresh one is started.
// 4. What the worker posts is checked too (its type, the running id, text fields as text): the
//    code could try to post itself (runner.js takes postMessage away from it, rule 3 there).
// 5. The worker is a classic `blob:` worker that importScripts runner.js: an opaque origin cannot
//    start a worker from an extension URL (measured in Chromium 156).
// 6. A run may bring files (`files`: [{path, text} | {path, base64}], paths "/data/<name>", at
//    most MAX_FILES and MAX_FILES_CHARS in all): the model's run_python calls read the
//    conversation's attachments there. The worker's /data holds exactly them during that run.
// 7. The worker starts on the panel's "boot" {snapshot?, snapshotKey?, fontList?} (a memory snapshot and
//    matplotlib's font list the panel kept: runner.js rule 6, runner.py rule 7), or on the first "run" or "prepare" if none came first. The snapshot is kept here for
//    the workers started after a Stop or a time limit. A worker may hand over a snapshot only
//    before it says "booted" (the code it runs later cannot: rule 4 and runner.js rule 3).
"use strict";

(() => {
  const CHANNEL = "margin-sandbox";
  const VERSION = 1;
  const BASE = new URL("../", location.href).href;
  const PANEL_ORIGIN = `chrome-extension://${location.host}`;
  const MAX_CODE_CHARS = 1_000_000;
  const MAX_TIMEOUT_MS = 600_000;
  const MAX_LIMIT = 1_000_000;
  const MAX_PREPARE_CHARS = 10_000;
  const MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024;
  // The conversation's files for the model's run_python calls (py/margin/page/sandbox_files.py's bounds).
  const MAX_FILES = 40;
  const MAX_FILES_CHARS = 40_000_000;
  const DATA_PATH = /^\/data\/[A-Za-z0-9][A-Za-z0-9._-]{0,120}$/;

  let worker = null;
  let ready = false;
  // Pyodide that cannot start twice in a row is not started again (no restart loop); runs are
  // then answered "crashed" with the reason.
  let bootFailures = 0;
  let broken = ""; // why Python could not start, twice: every later run is refused with it
  // matplotlib's font list, built by the first worker, handed to the next ones (runner.py rule 7)
  let fontList = "";
  const FONT_LIST_MAX_CHARS = 2_000_000;
  let current = null; // {id, timeoutMs, started, timer}
  let heapBytes = 0; // the worker's wasm memory, as it last said
  let snapshot = null; // rule 7: Uint8Array, the memory snapshot the workers boot from
  let snapshotKey = ""; // which Pyodide and runner.py it was made by (runner.js rule 6)
  let snapshotTaken = false;
  let booted = { ms: 0, how: "fresh" }; // how long the worker's boot took, and from what

  function send(message) {
    // An opaque origin cannot name the panel's origin as the target; the panel checks the source.
    window.parent.postMessage({ channel: CHANNEL, v: VERSION, ...message }, "*");
  }

  function startWorker() {
    ready = false;
    snapshotTaken = false;
    const script = `importScripts(${JSON.stringify(`${BASE}sandbox/runner.js`)});`;
    const url = URL.createObjectURL(new Blob([script], { type: "text/javascript" }));
    worker = new Worker(url);
    URL.revokeObjectURL(url);
    worker.addEventListener("message", (event) => fromWorker(event.data));
    worker.addEventListener("error", (event) => {
      event.preventDefault();
      crashed(event.message || "the sandbox's Python stopped");
    });
    worker.postMessage({ type: "boot", base: BASE, fontList, snapshot, snapshotKey });
  }

  function restart() {
    worker?.terminate();
    worker = null;
    startWorker();
  }

  function finish(status, extra) {
    if (!current) return;
    clearTimeout(current.timer);
    const ms = current.started ? Math.round(performance.now() - current.started) : 0;
    send({ type: "done", id: current.id, status, ms, ...extra });
    current = null;
  }

  function crashed(text) {
    const detail = String(text).slice(0, 300);
    const noteKey = /memory|allocation|OOM/i.test(text) ? "panel_run_out_of_memory_note" : "panel_run_python_stopped_note";
    finish("crashed", { noteKey, detail });
    if (!ready) snapshot = null; // a worker that could not boot: the next one starts from scratch
    if (!ready && ++bootFailures >= 2) {
      broken = detail;
      worker?.terminate();
      worker = null;
      return;
    }
    restart();
  }

  const isText = (value) => typeof value === "string";

  // Rule 6: files are {path: "/data/<name>", text} or {path, base64}, bounded; anything else refuses the run.
  function checkedFiles(files) {
    if (files === undefined) return [];
    if (!Array.isArray(files) || files.length > MAX_FILES) return null;
    let total = 0;
    const kept = [];
    for (const file of files) {
      if (!file || typeof file !== "object" || !isText(file.path) || !DATA_PATH.test(file.path) || file.path.includes("..")) return null;
      const body = isText(file.text) ? file.text : isText(file.base64) ? file.base64 : null;
      if (body === null) return null;
      total += body.length;
      if (total > MAX_FILES_CHARS) return null;
      kept.push(isText(file.text) ? { path: file.path, text: file.text } : { path: file.path, base64: file.base64 });
    }
    return kept;
  }

  function fromWorker(message) {
    if (!message || typeof message !== "object") return;
    if (message.type === "booted") {
      ready = true;
      bootFailures = 0;
      heapBytes = Number(message.heapBytes) || 0;
      booted = { ms: Number(message.ms) || 0, how: message.how === "snapshot" ? "snapshot" : "fresh" };
      send({ type: "ready", ...booted, heapBytes });
      return;
    }
    if (message.type === "failed") {
      crashed(isText(message.text) ? message.text : "unknown error");
      return;
    }
    if (message.type === "snapshot" && !ready && !snapshotTaken && message.bytes instanceof Uint8Array && isText(message.key)) {
      snapshotTaken = true;
      snapshot = message.bytes;
      snapshotKey = message.key.slice(0, 200);
      send({ type: "snapshot", bytes: snapshot, key: snapshotKey });
      return;
    }
    if (message.type === "prepared") {
      heapBytes = Number(message.heapBytes) || heapBytes;
      const importsMs = message.importsMs && typeof message.importsMs === "object" ? message.importsMs : {};
      const times = { wheelsMs: Number(message.wheelsMs) || 0, importsMs: Object.fromEntries(Object.entries(importsMs).map(([k, v]) => [String(k).slice(0, 40), Number(v) || 0])) };
      send({ type: "prepared", heapBytes, ...times });
      return;
    }
    if (message.type === "fontlist" && isText(message.text) && message.text.length <= FONT_LIST_MAX_CHARS) {
      fontList ||= message.text;
      send({ type: "fontlist", text: message.text });
      return;
    }
    if (!current || message.id !== current.id) return;
    if (message.type === "progress" && isText(message.text)) {
      send({ type: "progress", id: current.id, text: message.text.slice(0, 200) });
    } else if (message.type === "started") {
      current.started = performance.now();
      send({ type: "started", id: current.id });
      current.timer = setTimeout(() => {
        const seconds = Math.round(current.timeoutMs / 1000);
        finish("timeout", { note: `The run was stopped at the time limit (${seconds} s).` });
        restart();
      }, current.timeoutMs);
    } else if ((message.type === "stdout" || message.type === "stderr") && isText(message.text)) {
      send({ type: message.type, id: current.id, text: message.text });
    } else if (message.type === "done" && message.result && typeof message.result === "object") {
      const status = message.result.status === "ok" ? "ok" : "error";
      finish(status, { result: message.result });
      if (message.result.restart === true) restart(); // after a MemoryError: give the memory back
    }
  }

  function refuse(reason) {
    send({ type: "refused", reason });
  }

  function fromPanel(message) {
    if (!message || typeof message !== "object" || message.channel !== CHANNEL) return;
    if (message.v !== VERSION) return refuse("version");
    if (message.type === "run") {
      const { id, code, timeoutMs, limit } = message;
      const files = checkedFiles(message.files);
      if (files === null) return refuse("bad files");
      if (!isText(id) || id.length > 64 || !isText(code) || code.length > MAX_CODE_CHARS) return refuse("bad run");
      if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) return refuse("bad timeout");
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return refuse("bad limit");
      if (current) return send({ type: "done", id, status: "busy", ms: 0 });
      if (broken) return send({ type: "done", id, status: "crashed", ms: 0, noteKey: "panel_run_python_cannot_start_note", detail: broken });
      current = { id, timeoutMs, started: 0, timer: 0 };
      if (!worker) startWorker();
      if (!ready) send({ type: "starting", id });
      worker.postMessage({ type: "run", id, code, limit, files });
      return;
    }
    if (message.type === "stop") {
      if (!current || message.id !== current.id) return;
      finish("stopped", { note: "Stopped." });
      restart();
      return;
    }
    if (message.type === "prepare") {
      if (!isText(message.code) || message.code.length > MAX_PREPARE_CHARS) return refuse("bad prepare");
      if (broken) return;
      if (!worker) startWorker();
      worker.postMessage({ type: "prepare", code: message.code });
      return;
    }
    if (message.type === "boot") {
      if (worker || broken) return;
      if (message.snapshot instanceof Uint8Array && message.snapshot.length <= MAX_SNAPSHOT_BYTES && isText(message.snapshotKey)) {
        snapshot = message.snapshot;
        snapshotKey = message.snapshotKey.slice(0, 200);
      }
      if (isText(message.fontList) && message.fontList.length <= FONT_LIST_MAX_CHARS) fontList ||= message.fontList;
      startWorker();
      return;
    }
    if (message.type === "ping") return send({ type: "pong", ready, ...booted, heapBytes });
    refuse("unknown type");
  }

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent || event.origin !== PANEL_ORIGIN) return;
    fromPanel(event.data);
  });
})();
