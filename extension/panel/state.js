// What every part of the side panel shares: the panel's state, its element refs, its event bus,
// the turn's lifecycle, and the small things each feature uses (reading a record, alerts, the
// announcer, scrolling).
//
// Rules:
// 1. `state` is the one mutable object of the panel; the features read and change it, nothing keeps
//    a copy. `ui` holds the elements of sidepanel.html, looked up once.
// 2. This module imports no other part of the panel (but the registry, which imports nothing), so
//    every part can import it. The panel's
//    modules import one way (sidepanel.js rule 5); what has to go back up is an event on `events`.
// 3. A turn's lifecycle is ONE value, `state.turnState`: "idle" (no turn), "starting" (the port is
//    open, the question not stored yet), "streaming" (stored, the answer arriving), "stopping"
//    (Stop pressed, waiting for the end). Only `setTurnState` changes it: it mirrors the value in
//    `body[data-turn-state]` (tests wait for it) and dispatches "turn-state".
// 4. Nothing here registers a listener at import time; `init()` does (started by the registry,
//    panel/registry.js, first of all).
//
// Events on `events` (CustomEvent, `detail` as listed):
//   "turn-state"   {state, previous}  the lifecycle changed (composer paints Send/Stop)
//   "turn-unsent"  {restore}          a turn ended before anything was stored: give the words back
//   "live-changed" {}                 the streaming bubble came or went (the empty state follows)
//   "answer-unsaved" {unsaved}        a turn's answer could not be stored: keep it "Not saved" (unsaved.js)
//   "unsaved-changed" {}              `state.unsaved` changed (conversation.js repaints)
//   "tool-done"    {callId, call}     a call of the user's MCP tools has its result (mcp_calls.js paints it)

import { CONTRACT } from "../generated/contract.js";
import { svg } from "../common/ui_common.js";
import { register } from "./registry.js";

export const KEYS = CONTRACT.storage.keys;
// When the panel's own code started running (after its libraries loaded): see __marginPaintBreakdown.
export const moduleStartedAt = performance.now();

export const $ = (id) => document.getElementById(id);
export const ui = {
  conversation: $("conversation"),
  history: $("history"),
  welcome: $("welcome"),
  welcomeSetup: $("welcome-setup"),
  model: $("model-name"),
  modelCurrent: $("model-current"),
  message: $("message"),
  send: $("send"),
  composer: $("composer"),
  chips: $("chips"),
  editBar: $("edit-bar"),
  alertBox: $("alert-box"),
  alertText: $("alert-text"),
  pythonStatus: $("python-status"),
  pythonStatusText: $("python-status-text"),
  fileInput: $("file-input"),
  dropOverlay: $("drop-overlay"),
  viewer: $("viewer"),
  viewerImg: $("viewer-img"),
  sessionsRoot: $("sessions-root"),
  sessionsButton: $("sessions"),
  announcer: $("announcer"),
};

export const state = {
  history: [],
  bubbles: [], // [{sig, node}] by history index
  historyChanges: 0,
  providers: [],
  activeProviderId: null,
  attachments: [], // [{dataUrl, name, alt?, source, capturedAt?}]
  editing: null, // {index, draftText, draftAttachments}
  turn: null, // the running turn (turn.js), while turnState is not "idle"
  turnState: "idle",
  lastTurn: null, // the turn that ended, until its stored answer is on screen
  unsaved: [], // answers whose final save failed, shown "Not saved" (unsaved.js)
  pinned: true, // the user is at the bottom of the conversation (see conversation.js)
};

export const events = new EventTarget();

export const TURN_STATES = ["idle", "starting", "streaming", "stopping"];

export function emit(name, detail = {}) {
  events.dispatchEvent(new CustomEvent(name, { detail }));
}

export function setTurnState(next) {
  if (!TURN_STATES.includes(next)) throw new Error(`unknown turn state: ${next}`);
  const previous = state.turnState;
  if (next === previous) return;
  state.turnState = next;
  document.body.dataset.turnState = next;
  emit("turn-state", { state: next, previous });
}

// --- Records --------------------------------------------------------------------------------------

export function recordText(record) {
  const content = record?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((p) => p?.type === "text").map((p) => p.text ?? "").join("\n");
}

export function recordImages(record) {
  const content = record?.content;
  if (!Array.isArray(content)) return [];
  return content.filter((p) => p?.type === "image_url" && typeof p.image_url?.url === "string");
}

// Cheap identity of a record's look: images by length and ends (data URLs are megabytes).
export function recordSignature(record) {
  if (!record) return "";
  const images = recordImages(record)
    .map((p) => {
      const url = p.image_url.url;
      return `${url.length}:${url.slice(0, 48)}:${url.slice(-48)}:${p.meta?.alt ?? ""}`;
    })
    .join(",");
  return `${record.role}|${record.stopped ? 1 : 0}|${images}|${recordText(record)}`;
}

// --- Scrolling, announcer -------------------------------------------------------------

export function scrollToBottom() {
  ui.conversation.scrollTop = ui.conversation.scrollHeight;
}

export function announce(text) {
  ui.announcer.textContent = "";
  requestAnimationFrame(() => (ui.announcer.textContent = text));
}


// --- Alerts (role=alert above the composer) --------------------------------------------------------

// `words`: the panel's own sentence as a function, said again in the new language when the
// setting changes; or text already said (the worker's error, in the language it was said in).
let sayAlert = null;

export function showAlert(words) {
  sayAlert = typeof words === "function" ? words : null;
  ui.alertText.textContent = sayAlert ? sayAlert() : words;
  ui.alertBox.hidden = false;
}

export function clearAlert() {
  sayAlert = null;
  ui.alertBox.hidden = true;
  ui.alertText.textContent = "";
}

export function init() {
  document.body.dataset.turnState = state.turnState;
  events.addEventListener("language-changed", () => {
    if (sayAlert && !ui.alertBox.hidden) ui.alertText.textContent = sayAlert();
  });
  $("alert-dismiss").append(svg("close"));
  $("alert-dismiss").addEventListener("click", () => {
    clearAlert();
    ui.message.focus();
  });
}

// The panel's own wiring (the turn state on <body>, the alert's Dismiss) before any feature's.
register({ name: "state", phase: "base", init });
