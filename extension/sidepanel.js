// The side panel's entry point: imports the panel's features, starts them, paints the conversation
// from storage, then follows storage and wakes the worker. The features live in panel/ (one file
// each); importing one wires nothing: it registers itself with panel/registry.js, and the
// registry starts the features, phase by phase, in the order their registrations state.
//
// Rules:
// 1. The conversation on screen is `history` from chrome.storage.local, read directly on load
//    (before Python is up) and kept in step with storage.onChanged. The panel never writes storage:
//    every change goes through the service worker (docs/protocol.md).
// 2. First paint comes first. When the panel kept a frame of the conversation as it last looked
//    (panel/kept_frame.js), panel/first_frame.js shows it before this module has loaded, and the
//    first paint builds the real one in the task that takes it down. Python is woken and the
//    "painted" phase started (Explain, the sessions index read ahead) only after it. Only what the
//    first paint needs is imported statically (the sessions drawer is a dynamic import); the
//    Markdown and highlighting libraries load after the first frame (panel/markdown_lite.js).
// 3. Accessible names are the contract of docs/interface.md ("Message", "Send"/"Stop", "Copy", "Edit",
//    "Regenerate", "Attach image", "Screenshot", "New session", "Sessions", role=alert for errors).
// 4. `window.__marginFirstPaint` (when the first frame showing the stored conversation was drawn:
//    the kept frame's, when it showed this conversation), `window.__marginPaintBreakdown` (its
//    `keptFrame` is "current", "stale" or "none"), `window.__marginFirstFrameKept` (how many times
//    the frame was kept), `body[data-ready]` and
//    `body[data-turn-state]` (idle | starting | streaming | stopping, panel/state.js) are read by
//    the benchmark and the end-to-end tests. `body[data-ready]` is set once the whole stored
//    conversation is in the DOM: after the first frame (the newest bubbles) and the older bubbles
//    put in above them (conversation.js rule 10).
// 5. The panel's modules import one way (tests/unit/test_js_imports.py fails on a cycle): header
//    uses conversation, composer and turn; conversation uses composer, turn and attachments;
//    attachments uses slimming and summaries; composer and explain use turn; everything uses state
//    and the registry. What goes back up is an event on `events` (state.js) or a function a
//    feature `provides` through the registry (panel/registry.js rule 4).
// 6. The phases (panel/registry.js rule 2): "base" and "wire" start before the storage is followed
//    and read; "painted" once the first frame is drawn and the worker is being woken.
//
// panel/registry.js      the features' registrations and the order they start in (phases, `after`)
// panel/state.js         shared state, the event bus, the turn state, element refs, records, alerts
// panel/words.js         the panel's words: static HTML translated, the language followed live
// panel/conversation.js  bubbles painted from history, their actions, the image viewer
// panel/composer.js      message box, Send/Stop, attachments, edit mode
// panel/turn.js          a turn: the port, streaming, Stop, keepalive
// panel/header.js        model name (panel/model_menu.js), New session, Sessions, Settings, Esc
// panel/attachments.js   Attach page (button, keyboard command), attachment cards, Attach again
// panel/attach_tabs.js   "Attach tabs": a dialog of the window's web tabs, each ticked one attached as its own card
// panel/data_files.js    "Attach file": a data file as an attachment record
// panel/slimming.js      which cards the model gets as a short note (Python's aging rule, pure)
// panel/summaries.js     summary passes of long pages: the port, progress, Cancel summary
// panel/capsules.js      "Seek to 12:34" capsules in answers that follow a video (timecodes.js)
// panel/explain.js       runs the turn the context menu's "Explain with Margin" queued
// panel/unsaved.js       answers whose save failed: "Not saved", Copy, Retry save
// panel/code_runs.js     "Run" on an answer's Python blocks, in the code sandbox; their output
// panel/tool_calls.js    the model's run_python calls: shown, run in the sandbox, answered
// panel/usage.js         an answer's usage line (pure)
// panel/prompt_picker.js "/" in the message box: the saved prompts' listbox, a pick filled by Python
// panel/read_aloud.js    "Read aloud" on each answer (panel/speech_text.js: the words said, pure)
// panel/voice_input.js   "Voice input" beside Send: dictation, the microphone page, the refusal
// panel/markdown*.js     Markdown: the lazy loader, the libraries' renderer, the sanitizer's policy
// panel/stream_render.js a streaming answer's Markdown in linear time (pure)
// panel/render_cache.js  the kept render: the newest answers' sanitized HTML, for the next first paint
// panel/kept_frame.js    the kept first frame: the settled panel's HTML, shown on the next open
// panel/first_frame.js   shows the kept frame before this module loads, then starts it (classic script)
// panel/early_read.js    the first paint's storage reads (history, the language), started before the other modules run
// panel/sessions/        the sessions drawer (drawer.js), its search worker and the backup's port

// panel/early_read.js first: in the bundle (buildsteps/bundle.py) its reads start before the rest runs.
import { FIRST_PAINT_KEYS } from "./panel/early_read.js";
import { call } from "./common/ui_common.js";
import * as i18n from "./common/i18n.js";
import { start } from "./panel/registry.js";
import { KEYS, moduleStartedAt, ui, state, showAlert } from "./panel/state.js";
import * as composer from "./panel/composer.js";
import * as conversation from "./panel/conversation.js";
import * as header from "./panel/header.js";
import { keptFrame, takeOver } from "./panel/kept_frame.js";
import * as words from "./panel/words.js";
// The features that register themselves and are used by nothing above (their import is their registration).
import "./panel/turn.js";
import "./panel/attachments.js";
import "./panel/attach_tabs.js";
import "./panel/data_files.js";
import "./panel/unsaved.js";
import "./panel/versions.js";
import "./panel/explain.js";
import "./panel/code_runs.js";
import "./panel/tool_calls.js";
import "./panel/prompt_picker.js";
import "./panel/read_aloud.js";
import "./panel/voice_input.js";

const PING_GRACE_MS = 250;
const KEPT_FRAME_WAIT_MS = 250;

// --- Storage: paint first, then follow ------------------------------------------------------------

function followStorage() {
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area !== "local") return;
    if (KEYS.history in changes) {
      state.historyChanges++;
      conversation.applyHistory(changes[KEYS.history].newValue);
    }
    if (KEYS.providers in changes || KEYS.activeProviderId in changes) {
      if (KEYS.providers in changes) state.providers = providerList(changes[KEYS.providers].newValue);
      if (KEYS.activeProviderId in changes) state.activeProviderId = changes[KEYS.activeProviderId].newValue ?? null;
      header.paintModel();
    }
  });
}

// A damaged value must not break the header: anything but a list counts as no providers.
const providerList = (value) => (Array.isArray(value) ? value : []);

async function firstPaint() {
  const changesBefore = state.historyChanges;
  // The words come before the first paint: the setting read (and its catalogue, if Chrome's differs).
  await languageRead;
  words.relabel();
  let stored = {};
  let storageReadAt = null;
  try {
    // panel/early_read.js asked for these while the modules loaded; usable only if nothing changed since.
    const early = window.__marginEarlyRead;
    const read = early?.read && !early.changed ? await early.read.catch(() => null) : null;
    stored = read && !early.changed ? read : await chrome.storage.local.get(FIRST_PAINT_KEYS);
    storageReadAt = performance.now();
  } catch {
    showAlert(() => i18n.t("panel_read_failed"));
  }
  state.providers = providerList(stored[KEYS.providers]);
  state.activeProviderId = stored[KEYS.activeProviderId] ?? null;
  header.paintModel();
  // The kept frame (panel/first_frame.js) is drawn before this task builds the panel's own, and leaves
  // in it: the two are never on screen together, and nothing shows between them.
  const kept = keptFrame();
  // (A page that is not drawn, a background tab, gets no frame callbacks: it does not wait for one.)
  if (kept) await Promise.race([kept.drawn, new Promise((later) => setTimeout(later, KEPT_FRAME_WAIT_MS))]);
  // A change that arrived while we read is newer than what we read.
  if (state.historyChanges === changesBefore) conversation.applyHistory(stored[KEYS.history], { initial: true });
  const keptFrameCurrent = kept ? takeOver(kept, state.history) : false;
  const domReadyAt = performance.now();
  const firstFrameBubbles = ui.history.childElementCount;
  composer.autosize();
  ui.message.focus();
  await nextFrameDrawn();
  // A kept frame that showed this very conversation was its first paint (kept_frame.js rule 3).
  window.__marginFirstPaint = keptFrameCurrent && kept.drawnAt !== null ? kept.drawnAt : performance.now();
  // htmlParsedAt..moduleStartedAt is the module graph's evaluation; a frame without the
  // conversation (the header, the composer) may be drawn before (firstContentfulPaintAt).
  const htmlParsedAt = performance.getEntriesByType("navigation")[0]?.domInteractive ?? null;
  const firstContentfulPaintAt = performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? null;
  const paintedAt = window.__marginFirstPaint;
  const keptFrameState = kept ? (keptFrameCurrent ? "current" : "stale") : "none";
  window.__marginPaintBreakdown = { htmlParsedAt, moduleStartedAt, storageReadAt, domReadyAt, firstContentfulPaintAt, paintedAt, firstFrameBubbles, keptFrame: keptFrameState, keptFrameStartedAt: kept?.startedAt ?? null, keptFrameShownAt: kept?.shownAt ?? null, keptFrameAt: kept?.drawnAt ?? null };
  // The bubbles above the first frame's (conversation.js rule 10), then the panel is ready.
  conversation.paintOlder();
  window.__marginPaintBreakdown.olderAt = performance.now();
  document.body.dataset.ready = "1";
  conversation.upgradeAfterPaint();
}

// First paint = the frame holding the conversation is drawn: a message posted from a
// requestAnimationFrame callback is handled once that frame's rendering is done.
function nextFrameDrawn() {
  return new Promise((drawn) =>
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => drawn();
      channel.port2.postMessage(null);
    }),
  );
}

async function wakePython() {
  const slow = setTimeout(() => {
    ui.pythonStatusText.textContent = i18n.t("panel_starting_python");
    ui.pythonStatus.hidden = false;
  }, PING_GRACE_MS);
  try {
    await call("app.ping", {});
  } catch (error) {
    showAlert(error.message);
    return;
  } finally {
    clearTimeout(slow);
    ui.pythonStatus.hidden = true;
    ui.pythonStatusText.textContent = "";
  }
  call("images.bound", {}).catch((error) => console.warn("images.bound failed:", error.code, error.message));
}

// The language setting: panel/early_read.js started reading it while the modules loaded; one promise per page.
const languageRead = i18n.start();
start("base");
start("wire");
// Follow storage before reading it: a change that lands while we read must not be missed.
followStorage();
// Paint first, then wake the worker: booting Python competes for the CPU the first frame needs
// (firstPaint resolves once that frame is drawn, not once it is asked for).
firstPaint().finally(() => {
  wakePython();
  start("painted");
});
