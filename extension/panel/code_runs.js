// "Run" on an answer's Python code blocks: the code runs in the code sandbox (sandbox/sandbox.html,
// a sandboxed page framed here), its output is painted under the block and stored with the answer
// (`code.save_run`, py/margin/sandbox/code_runs.py), so it is painted again after a reload.
//
// Rules:
// 1. Every Python block of a stored answer (`article[data-index]`, not the streaming bubble) gets
//    "Run" next to "Copy code"; the blocks are found by watching the conversation, so the
//    Markdown renderer needs no hook. While a block runs its button is "Stop".
// 2. The sandbox frame is made on the first Run, or ahead of it after the first paint when
//    panel/sandbox_warmup.js rule 1 says so (a Python block on screen, or the model may run Python;
//    never else); a block's imports are then loaded ahead (rule 9). Its worker boots from the memory
//    snapshot and with the matplotlib font list the panel keeps (sandbox_snapshot.js); those it
//    offers are kept. Only its messages count: source = the frame's window, origin "null" (the
//    sandbox's opaque origin), channel "margin-sandbox", version 1, a known type; the rest is
//    ignored.
// 3. One run at a time. The sandbox ends a run at the time limit (CONTRACT.codeRuns.timeoutMs);
//    if the sandbox itself stops answering, the frame is removed and made again (a watchdog).
// 4. Output is text, always: tables are cells set with textContent, figures are <img> of a
//    `data:image/png;base64,` URL checked here; nothing the code printed is parsed as HTML.
// 5. The time limit is the options page's `codeTimeLimitSeconds` (followed live), else the contract's.
// 6. The model's run_python calls run here too (`runForTool`, used by tool_calls.js): the same
//    sandbox, one run at a time, with the conversation's files under /data/; the run is handed
//    back to the caller instead of being saved with a block.
// 7. A change of language relabels a run where it stands: its button and its status from the
//    catalogue carry their keys (data-i18n…, words.js); a bubble built again in the new language
//    takes over the run of its block (its output and "Stop").
// 8. While a run waits, its status says for what ("Starting Python…": the frame or a fresh worker
//    boots; "Loading pandas…"); its final line keeps the wait apart from the run: "Ran in 0.7 s",
//    or "Ran in 0.7 s after 2.1 s of loading" when it waited (`loadMs`: from the click to the
//    sandbox's "started", counted only when the status said it waited; stored with the run). From
//    the first whole second on, the waiting status counts the seconds since the click, each second:
//    "Loading pandas… 3 s".
// 9. Warming (sandbox_warmup.js): the blocks found by rule 1 note their imports; in the idle time
//    after the first paint (the registry's "painted" phase) the frame is made if rule 1 there holds,
//    and every module not sent yet goes to it as a "prepare" (once per frame: a fresh worker after a
//    Stop or a time limit loads what its runs import, as they come). `document.body.dataset.sandbox`
//    says where it stands: "cold" (decided not to warm), "warm" (warming), "prepared" (Python up,
//    every module sent loaded); absent before the decision.
import { CONTRACT } from "../generated/contract.js";
import { call, el } from "../common/ui_common.js";
import { t, setAttributeWords, setWords } from "../common/i18n.js";
import { ui, state } from "./state.js";
import { register } from "./registry.js";
import { importedModules, mayRunPython, prepareCode } from "./sandbox_warmup.js";
import * as snapshots from "./sandbox_snapshot.js";

const CHANNEL = "margin-sandbox";
const VERSION = 1;
const LIMITS = CONTRACT.codeRuns;
const PYTHON = /^(python|py|python3|pycon)$/i;
const FIGURE_PREFIX = "data:image/png;base64,";
// Packages load before the limit starts; past this with no "started", the sandbox is presumed stuck.
const START_GRACE_MS = 240_000;
const END_GRACE_MS = 10_000;

let frame = null;
let frameReady = null;
// Rule 9: the modules of the Python blocks on screen, those sent to the frame's worker, whether a
// Python block was shown at all, and whether the first paint is done.
const shownModules = new Set();
const sentModules = new Set();
let pythonShown = false;
let painted = false;
let warmQueued = false;
let preparing = 0; // "prepare" messages the worker has not answered yet
let runPythonMode = "ask"; // the options page's "Let the model run Python" (storage `runPython`)
let settingsRead = Promise.resolve();
const RUN_PYTHON_KEY = "runPython";
let active = null; // {id, block, wrapper, output, run, resolve, watchdog}
let sequence = 0;

// The options page's "Time limit for code" (`codeTimeLimitSeconds`, rule 5); a test may set its own.
let settingMs = LIMITS.timeoutMs;
const timeLimitMs = () => globalThis.__marginCodeRunTimeoutMs || settingMs;
const TIME_LIMIT_KEY = "codeTimeLimitSeconds";

function takeTimeLimit(seconds) {
  settingMs = Number.isInteger(seconds) && seconds >= 5 && seconds <= 600 ? seconds * 1000 : LIMITS.timeoutMs;
}

// From the extension's root: in dist this code is bundled into sidepanel.js (buildsteps/bundle.py).
function addStyles() {
  const link = el("link", { rel: "stylesheet", href: new URL("/panel/code_runs.css", import.meta.url).href });
  document.head.append(link);
}

// --- The sandbox frame (rule 2) ------------------------------------------------------------------

function sandboxFrame() {
  if (frameReady) return frameReady;
  frame = el("iframe", { src: "sandbox/sandbox.html", class: "code-sandbox", title: t("panel_run_sandbox"), "aria-hidden": "true", tabindex: "-1" });
  frameReady = new Promise((resolve) => {
    frame.dataset.waiting = "1";
    frame.readyResolve = resolve;
  });
  // Its worker boots from the kept memory snapshot, if any (read while the frame loads).
  sentModules.clear(); // a new frame's worker has prepared nothing (rule 9)
  preparing = 0;
  const kept = Promise.all([snapshots.read(), snapshots.readFontList()]);
  const framed = frame;
  const boot = ([snapshot, fontList]) => framed === frame && post({ type: "boot", snapshot: snapshot?.bytes, snapshotKey: snapshot?.key, fontList });
  framed.addEventListener("load", () => kept.then(boot), { once: true });
  document.body.append(frame);
  return frameReady;
}

function dropFrame() {
  frame?.remove();
  frame = null;
  frameReady = null;
}

function post(message) {
  frame?.contentWindow?.postMessage({ channel: CHANNEL, v: VERSION, ...message }, "*");
}

function onMessage(event) {
  if (!frame || event.source !== frame.contentWindow || event.origin !== "null") return;
  const message = event.data;
  if (!message || typeof message !== "object" || message.channel !== CHANNEL || message.v !== VERSION) return;
  if (message.type === "ready") {
    if (frame.readyResolve) frame.readyResolve();
    frame.readyResolve = null;
    preparing = 0; // a fresh worker after a Stop: what the last one was preparing is gone
    sendPrepares();
    if (!preparing && document.body.dataset.sandbox) document.body.dataset.sandbox = "prepared";
    return;
  }
  if (message.type === "snapshot" || message.type === "fontlist") {
    if (message.type === "snapshot") snapshots.write(message.bytes, message.key);
    else snapshots.writeFontList(message.text);
    return;
  }
  if (message.type === "prepared") {
    preparing = Math.max(0, preparing - 1);
    if (!preparing) document.body.dataset.sandbox = "prepared";
    return;
  }
  if (!active || message.id !== active.id) return;
  const text = typeof message.text === "string" ? message.text : "";
  if (message.type === "progress") waitFor("panel_run_loading", text);
  else if (message.type === "starting") waitFor("panel_starting_python");
  else if (message.type === "started") {
    stopTicking(active);
    active.ranAt = performance.now();
    if (active.waited) active.run.loadMs = Math.round(active.ranAt - active.clickedAt);
    setStatusKey(active.output, "panel_run_running");
    armWatchdog(timeLimitMs() + END_GRACE_MS);
  } else if (message.type === "stdout" || message.type === "stderr") appendStream(active, message.type, text);
  else if (message.type === "done") finish(message);
}

// --- Warming (rule 9) ---------------------------------------------------------------------------

function blockShown(code) {
  pythonShown = true;
  for (const name of importedModules(code)) shownModules.add(name);
  if (painted) warmSoon();
}

function activeProvider() {
  return state.providers.find((p) => p?.id === state.activeProviderId) || null;
}

// An A/B measurement (bench/bench_sandbox.py) turns warming off with `__marginSandboxWarmup = false`.
const wantsWarm = () =>
  globalThis.__marginSandboxWarmup !== false && (pythonShown || mayRunPython(runPythonMode, activeProvider(), LIMITS.toolProviderTypes));

// In idle time, never in the frame being drawn.
function warmSoon() {
  if (warmQueued) return;
  warmQueued = true;
  const warm = () => {
    warmQueued = false;
    if (!wantsWarm()) {
      document.body.dataset.sandbox ||= "cold";
      return;
    }
    if (!frame) document.body.dataset.sandbox = "warm";
    sandboxFrame().then(sendPrepares);
  };
  if (typeof requestIdleCallback === "function") requestIdleCallback(warm, { timeout: 300 });
  else setTimeout(warm, 0);
}

function sendPrepares() {
  if (!frameIsUp()) return;
  const fresh = [...shownModules].filter((name) => !sentModules.has(name));
  if (!fresh.length) return;
  for (const name of fresh) sentModules.add(name);
  preparing += 1;
  document.body.dataset.sandbox = "warm";
  post({ type: "prepare", code: prepareCode(fresh) });
}

function afterFirstPaint() {
  settingsRead.then(() => {
    painted = true;
    warmSoon();
  });
}

function armWatchdog(ms) {
  clearTimeout(active.watchdog);
  active.watchdog = setTimeout(() => {
    dropFrame();
    finish({ status: "crashed", note: t("panel_run_sandbox_restarted_note"), ms: 0 });
  }, ms);
}

// --- One run -------------------------------------------------------------------------------------

function blockIndex(wrapper) {
  const article = wrapper.closest("article");
  return [...article.querySelectorAll(".code-block")].indexOf(wrapper);
}

function outputFor(wrapper) {
  let output = wrapper.nextElementSibling;
  if (!output?.classList.contains("code-run")) {
    output = el("div", { class: "code-run", role: "group", "aria-label": t("panel_run_output") });
    wrapper.after(output);
  }
  output.replaceChildren(el("p", { class: "code-run-status", role: "status" }));
  delete output.dataset.status;
  return output;
}

// Rule 7: a status from the catalogue, with its arguments (the packages being loaded).
function setStatusKey(output, key, ...args) {
  setWords(output.querySelector(".code-run-status"), key, ...args);
}

// Rule 8: a status that says what the run waits for; the wait is then counted as loading, and
// from the first whole second on the status counts it ("Loading pandas… 3 s").
const COUNTING_KEYS = { panel_starting_python: "panel_run_starting_seconds", panel_run_loading: "panel_run_loading_seconds" };
function waitFor(key, ...args) {
  active.waited = true;
  active.waitingFor = { key, args };
  showWait(active);
  if (!active.ticker) {
    const run = active;
    run.ticker = setInterval(() => showWait(run), 1000);
  }
}

function showWait(run) {
  const { key, args } = run.waitingFor;
  const waited = Math.floor((performance.now() - run.clickedAt) / 1000);
  if (waited >= 1 && COUNTING_KEYS[key]) setStatusKey(run.output, COUNTING_KEYS[key], ...args, { number: waited });
  else setStatusKey(run.output, key, ...args);
}

function stopTicking(run) {
  clearInterval(run.ticker);
  run.ticker = 0;
}

// The frame's Python is up (a fresh worker after a Stop says "starting" itself: sandbox.js).
const frameIsUp = () => frame?.readyResolve === null;
function firstStatus() {
  if (frameIsUp()) setStatusKey(active.output, "panel_run_running");
  else waitFor("panel_starting_python");
}

function appendStream(run, stream, text) {
  const kept = run.run[stream];
  if (kept.length >= LIMITS.streamChars) return;
  run.run[stream] = kept + text.slice(0, LIMITS.streamChars - kept.length);
  let pre = run.output.querySelector(`.code-run-${stream}`);
  if (!pre) {
    pre = el("pre", { class: `code-run-${stream}` });
    run.output.append(pre);
  }
  pre.textContent = run.run[stream];
}

async function start(wrapper, button) {
  if (active) {
    if (active.wrapper === wrapper) stop();
    else setStatusKey(outputFor(wrapper), "panel_run_another");
    return;
  }
  const article = wrapper.closest("article");
  const index = Number(article.dataset.index);
  const record = state.history[index];
  const code = wrapper.querySelector("pre")?.textContent || "";
  const output = outputFor(wrapper);
  const id = `run-${Date.now()}-${++sequence}`;
  const run = { block: blockIndex(wrapper), code, status: "ok", stdout: "", stderr: "", value: null, tables: [], figures: [], error: "", note: "", startedAt: Date.now(), ms: 0, loadMs: 0 };
  active = { id, index, wrapper, output, run, button, watchdog: 0, clickedAt: performance.now(), waited: false, ranAt: 0 };
  setButton(button, true);
  firstStatus();
  armWatchdog(START_GRACE_MS);
  await sandboxFrame();
  if (active?.id !== id) return;
  armWatchdog(START_GRACE_MS);
  active.save = { index, createdAt: record?.createdAt };
  active.posted = true;
  post({ type: "run", id, code, timeoutMs: timeLimitMs(), limit: LIMITS.streamChars });
}

export function runForTool(output, code, files) {
  if (active) return Promise.resolve(null);
  const id = `tool-${Date.now()}-${++sequence}`;
  const run = { block: 0, code, status: "ok", stdout: "", stderr: "", value: null, tables: [], figures: [], error: "", note: "", startedAt: Date.now(), ms: 0, loadMs: 0 };
  return new Promise((resolve) => {
    active = { id, wrapper: null, output, run, button: null, watchdog: 0, resolve, clickedAt: performance.now(), waited: false, ranAt: 0 };
    output.replaceChildren(el("p", { class: "code-run-status", role: "status" }));
    firstStatus();
    armWatchdog(START_GRACE_MS);
    sandboxFrame().then(() => {
      if (active?.id !== id) return;
      armWatchdog(START_GRACE_MS);
      active.posted = true;
      post({ type: "run", id, code, timeoutMs: timeLimitMs(), limit: LIMITS.streamChars, files });
    });
  });
}

// Stops the model's run, if it is the one running (the turn was stopped).
export function stopToolRun() {
  if (active?.resolve) stop();
}

function stop() {
  if (!active) return;
  if (!active.posted) return finish({ status: "stopped", note: t("panel_run_stopped_note"), ms: 0 });
  post({ type: "stop", id: active.id });
  armWatchdog(END_GRACE_MS);
}

// The sandbox's notes come as catalogue keys (it has no chrome.i18n), only these, said here.
const SANDBOX_NOTES = new Set(["panel_run_out_of_memory_note", "panel_run_python_stopped_note", "panel_run_python_cannot_start_note"]);
function sandboxNote(message) {
  if (!SANDBOX_NOTES.has(message.noteKey)) return "";
  return t(message.noteKey, typeof message.detail === "string" ? message.detail.slice(0, 300) : "");
}

function finish(message) {
  const current = active;
  if (!current) return;
  clearTimeout(current.watchdog);
  stopTicking(current);
  active = null;
  setButton(current.button, false);
  const { run } = current;
  run.status = ["ok", "error", "timeout", "stopped", "crashed"].includes(message.status) ? message.status : "crashed";
  // The sandbox times the code; a run it could not time (the watchdog) is timed here.
  const ranFor = current.ranAt ? performance.now() - current.ranAt : 0;
  run.ms = Math.round(Number.isFinite(message.ms) && message.ms > 0 ? message.ms : ranFor);
  // Rule 8: a run that never started waited until now.
  if (current.waited && !current.ranAt) run.loadMs = Math.round(performance.now() - current.clickedAt);
  run.note = typeof message.note === "string" ? message.note : sandboxNote(message);
  const result = message.result && typeof message.result === "object" ? message.result : null;
  if (result) {
    for (const key of ["stdout", "stderr", "error"]) if (typeof result[key] === "string") run[key] = result[key];
    run.value = typeof result.value === "string" ? result.value : null;
    run.tables = Array.isArray(result.tables) ? result.tables : [];
    run.figures = Array.isArray(result.figures) ? result.figures.filter((f) => typeof f?.dataUrl === "string" && f.dataUrl.startsWith(FIGURE_PREFIX)) : [];
  }
  paintRun(current.output, run);
  if (current.resolve) return current.resolve(run);
  if (current.save?.createdAt === undefined) return;
  call("code.save_run", { ...current.save, run }).catch((error) => {
    current.output.append(el("p", { class: "code-run-note", text: t("panel_run_not_saved", error.message) }));
  });
}

// --- Painting (rule 4) ---------------------------------------------------------------------------

const STATUS_KEYS = { error: "panel_run_error", timeout: "panel_run_timeout", stopped: "panel_stopped", crashed: "panel_run_crashed" };

function tableNode(table) {
  const head = el("tr", {}, el("th", { text: "" }), ...table.columns.map((c) => el("th", { text: String(c) })));
  const rows = table.rows.map((row, i) => el("tr", {}, el("th", { text: String(table.index?.[i] ?? "") }), ...row.map((v) => el("td", { text: String(v) }))));
  const [count, width] = table.shape;
  // Rule 7: the caption and the figure's words keep their keys, relabeled where they stand.
  const size = { key: "panel_run_table_size", args: [{ plural: "panel_run_rows", count }, { plural: "panel_run_columns", count: width }] };
  const caption = el("caption");
  if (count > rows.length) setWords(caption, "panel_run_first_shown", size, { number: rows.length });
  else setWords(caption, size.key, ...size.args);
  return el("div", { class: "table-scroll" }, el("table", { class: "code-run-table" }, caption, el("thead", {}, head), el("tbody", {}, ...rows)));
}

function figureNode(figure, i) {
  const img = el("img", { src: figure.dataUrl, width: figure.width, height: figure.height });
  setAttributeWords(img, "alt", "panel_run_figure", { number: i + 1 }, `${figure.width}×${figure.height}`);
  const link = el("a", { href: figure.dataUrl, download: `figure-${i + 1}.png` });
  setAttributeWords(link, "aria-label", "panel_run_download_figure", { number: i + 1 });
  setWords(link, "panel_run_download_png");
  return el("figure", { class: "code-run-figure" }, img, el("figcaption", {}, link));
}

// Rules 7 and 8: the status keeps its words' keys ("Ran in 0.7 s after 2.1 s of loading": the
// message's key, the status's key, the seconds as numbers), so a run painted in a bubble that still
// streams is relabeled where it stands too.
const SECONDS = { minimumFractionDigits: 1, maximumFractionDigits: 1 };
const seconds = (ms) => ({ number: ms / 1000, options: SECONDS });
function statusLine(run) {
  const line = el("p", { class: "code-run-status", role: "status" });
  const ran = Number.isFinite(run.ms) ? seconds(run.ms) : seconds(0);
  const loading = Number.isFinite(run.loadMs) && run.loadMs > 0 ? seconds(run.loadMs) : null;
  if (run.status === "ok") {
    if (loading) setWords(line, "panel_run_ran_after_loading", ran, loading);
    else setWords(line, "panel_run_ran_in", ran);
    return line;
  }
  const status = STATUS_KEYS[run.status] ? { key: STATUS_KEYS[run.status] } : null;
  if (!status) line.textContent = String(run.status);
  else if (run.ms && loading) setWords(line, "panel_run_status_after_loading", status, ran, loading);
  else if (run.ms) setWords(line, "panel_run_status_after", status, ran);
  else if (loading) setWords(line, "panel_run_status_while_loading", status, loading);
  else setWords(line, status.key);
  return line;
}

export function paintRun(output, run) {
  output.replaceChildren(statusLine(run));
  output.dataset.status = run.status;
  if (run.stdout) output.append(el("pre", { class: "code-run-stdout", text: run.stdout }));
  if (run.stderr) output.append(el("pre", { class: "code-run-stderr", text: run.stderr }));
  if (run.value) output.append(el("pre", { class: "code-run-value", text: run.value }));
  for (const table of run.tables || []) if (Array.isArray(table?.rows) && Array.isArray(table?.columns)) output.append(tableNode(table));
  (run.figures || []).forEach((figure, i) => {
    if (typeof figure?.dataUrl === "string" && figure.dataUrl.startsWith(FIGURE_PREFIX)) output.append(figureNode(figure, i));
  });
  if (run.error) output.append(el("pre", { class: "code-run-error", text: run.error }));
  if (run.note) output.append(el("p", { class: "code-run-note", text: run.note }));
}

// --- Buttons on the blocks (rule 1) --------------------------------------------------------------

function setButton(button, running) {
  if (!button?.isConnected) return;
  const key = running ? "panel_stop" : "panel_run";
  button.textContent = t(key);
  button.setAttribute("aria-label", t(key));
  Object.assign(button.dataset, { i18n: key, i18nAriaLabel: key });
  button.classList.toggle("is-running", running);
}

// Rule 7: the block that runs, in a bubble built again (its answer's index, its code, its place).
function takesOverRun(article, wrapper) {
  if (!active?.wrapper || active.wrapper === wrapper || active.index !== Number(article.dataset.index)) return false;
  return wrapper.querySelector("pre")?.textContent === active.run.code && blockIndex(wrapper) === active.run.block;
}

function decorate(wrapper) {
  if (wrapper.dataset.runnable) return;
  const article = wrapper.closest("article.msg.assistant[data-index]");
  if (!article || article.dataset.streaming) return;
  // One selector, no combinator: Chrome answered `pre code` in time growing with the block's place
  // in the page (16 ms for the last of a 1 MB answer's 2,700 blocks: seconds per long answer).
  const code = wrapper.querySelector("code");
  const language = (code?.className.match(/language-([\w+#.-]+)/) || [])[1] || "";
  if (!PYTHON.test(language)) return;
  wrapper.dataset.runnable = "1";
  blockShown(code.textContent);
  const button = el("button", { type: "button", class: "btn ghost code-run-button", "aria-label": t("panel_run"), text: t("panel_run") });
  button.addEventListener("click", () => start(wrapper, button));
  wrapper.querySelector(".code-head")?.append(button);
  if (takesOverRun(article, wrapper)) {
    Object.assign(active, { wrapper, button });
    wrapper.after(active.output);
    setButton(button, true);
    return;
  }
  const record = state.history[Number(article.dataset.index)];
  // Most answers have no runs; a block's position is a walk over its answer's blocks (done for
  // each of a long answer's thousands of blocks, that walk made painting it quadratic).
  if (!Array.isArray(record?.runs) || !record.runs.length) return;
  const block = [...article.querySelectorAll(".code-block")].indexOf(wrapper);
  const stored = record.runs.find((r) => r?.block === block);
  if (stored && typeof stored === "object") paintRun(outputFor(wrapper), stored);
}

function scan(root) {
  if (root.nodeType !== Node.ELEMENT_NODE) return;
  if (root.matches(".code-block")) decorate(root);
  for (const wrapper of root.querySelectorAll(".code-block")) decorate(wrapper);
}

export function init() {
  addStyles();
  settingsRead = chrome.storage.local.get([TIME_LIMIT_KEY, RUN_PYTHON_KEY]).then((stored) => {
    takeTimeLimit(stored[TIME_LIMIT_KEY]);
    if (typeof stored[RUN_PYTHON_KEY] === "string") runPythonMode = stored[RUN_PYTHON_KEY];
  }, () => {});
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area !== "local") return;
    if (TIME_LIMIT_KEY in changes) takeTimeLimit(changes[TIME_LIMIT_KEY].newValue);
    if (RUN_PYTHON_KEY in changes) runPythonMode = changes[RUN_PYTHON_KEY].newValue ?? "ask";
    // The model may run Python from now on (rule 9): warm, as after the first paint.
    if (painted && (RUN_PYTHON_KEY in changes || "providers" in changes || "activeProviderId" in changes)) warmSoon();
  });
  window.addEventListener("message", onMessage);
  // A streaming bubble that becomes the stored one (turn.js takeStreamingBubble) loses data-streaming:
  // its blocks were added before, so they are looked at then.
  new MutationObserver((mutations) => {
    for (const mutation of mutations) {
      if (mutation.type === "attributes") scan(mutation.target);
      else for (const node of mutation.addedNodes) scan(node);
    }
  }).observe(ui.conversation, { childList: true, subtree: true, attributeFilter: ["data-streaming"] }); // before the first paint (sidepanel.js)
}

// Wired before the first paint: its MutationObserver must see the first paint's blocks.
register({ name: "code-runs", init });
register({ name: "code-runs-warmup", phase: "painted", after: ["code-runs", "sessions-preload"], init: afterFirstPaint });
