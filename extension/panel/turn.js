// A turn: one port (`CONTRACT.turnPort`) from Send to the stored answer; streaming, Stop, keepalive.
//
// Rules:
// 1. A turn's deltas paint only the answer that is streaming, in a bubble of its own, last in
//    `ui.history` and quiet for the log (aria-live="off") while it streams.
// 2. One answer is never shown twice: when its stored record is painted, the streaming bubble
//    becomes that record's bubble where it stands (`takeStreamingBubble`), or, when it cannot
//    (a tool call split it), it leaves as soon as the stored bubble is on screen
//    (`reconcileStreamingWithHistory`, called after every history paint).
// 3. A turn that fails before anything was stored gives the user their words and images back
//    (the "turn-unsent" event; the composer puts them in the box).
// 4. One turn at a time: a turn is started only while `state.turnState` is "idle". It is the
//    running turn (`state.turn`) from "starting" until it ends; a turn that is not `state.turn`
//    has ended.
// 5. Every turn ends exactly once (`endTurn`): the keepalive stops, `turn.settled` resolves and
//    the state goes back to "idle".
// 6. An answer the worker could not store comes back in the error event (`unsaved`): it is handed
//    to unsaved.js ("answer-unsaved"), which keeps it on screen as "Not saved".
// 7. This module imports only state.js (and the shared helpers): what the rest of the panel does
//    about a turn, it does by listening to `events` or through what `init` is given.
// 8. The streaming bubble is not built again when the language changes: its words carry their
//    catalogue keys (data-i18n…), which words.js relabels where they stand.
// 9. A `tool_call` event (the model's run_python call, py/margin/sandbox/tool_turn.py) is handed to
//    tool_calls.js as "tool-call" with a slot in the streaming bubble and a `reply` that answers
//    on this turn's port; the answer goes on streaming after the slot. A call of the user's MCP
//    tools comes the same way (its `call.mcp`), and its result later as `tool_done`, handed on
//    as "tool-done" (mcp_calls.js).

import { CONTRACT } from "../generated/contract.js";
import { el } from "../common/ui_common.js";
import { t } from "../common/i18n.js";
import { markdownModule, loadMarkdown } from "./markdown_lite.js";
import { postInPieces } from "../common/port_chunks.js";
import { ui, state, emit, setTurnState, scrollToBottom, showAlert, clearAlert } from "./state.js";
import { register } from "./registry.js";

const KEEPALIVE_MS = 20_000;
const STOP_GRACE_MS = 4000;
const GHOST_MS = 1500;

// Reads `history` again and paints it (conversation.js); given by sidepanel.js.
let refreshHistory = async () => {};

export function init({ refreshFromStorage }) {
  refreshHistory = refreshFromStorage;
}

export function startTurn(start, restore = null, { quietErrors = [] } = {}) {
  clearAlert();
  let port;
  try {
    port = chrome.runtime.connect({ name: CONTRACT.turnPort });
  } catch {
    // Nothing was sent, so nothing was stored: the words go back into the box.
    showAlert(() => t("panel_worker_unreachable"));
    emit("turn-unsent", { restore });
    return;
  }
  const body = el("div", { class: "md" }, typingDots());
  const node = el("article", { class: "msg assistant streaming", "aria-busy": "true", "aria-live": "off", dataset: { role: "assistant", streaming: "1" } }, el("div", { class: "bubble" }, body));
  const turn = {
    port,
    node,
    body,
    text: "",
    questionStored: false, // the worker said "started": from here on, nothing is given back
    sawQuestionLast: false,
    frame: 0,
    renderer: null, // the streaming Markdown painter, made at the first paint
    handedOver: false, // its bubble became the stored answer's (takeStreamingBubble)
    stopTimer: 0,
    keepAlive: 0,
    ghostTimer: 0,
    restore,
    quietErrors,
    settle: null,
  };
  turn.settled = new Promise((resolve) => (turn.settle = resolve));
  if (state.lastTurn) removeStreamingBubble(state.lastTurn);
  state.turn = turn;
  setTurnState("starting");
  ui.history.append(node);
  emit("live-changed");
  state.pinned = true;
  scrollToBottom();

  // Chrome stops a worker that received no event for 30 s, even mid-request: a model that thinks
  // (or a local server that loads the model) before its first token would lose the turn. A message
  // on the port is an event for the worker; it ignores anything after the start but "stop".
  // https://developer.chrome.com/docs/extensions/develop/concepts/service-workers/lifecycle
  // (Our own port.disconnect() fires no onDisconnect here: endTurn clears the interval.)
  turn.keepAlive = setInterval(() => {
    try { port.postMessage({ action: "keepalive" }); } catch { clearInterval(turn.keepAlive); }
  }, KEEPALIVE_MS);
  port.onMessage.addListener((message) => onTurnEvent(turn, message));
  port.onDisconnect.addListener(() => {
    void chrome.runtime.lastError;
    if (state.turn !== turn) return;
    const stopping = state.turnState === "stopping";
    endTurn(turn, { removeNow: true });
    if (!stopping) showAlert(() => t("panel_connection_lost"));
  });
  // Several large images can make the start larger than one port message may be (64 MiB).
  postInPieces(port, start);
}

// "Margin is writing", until the model's words arrive (the painter replaces it).
const typingDots = () =>
  el("span", { class: "typing", role: "img", "aria-label": t("panel_writing"), dataset: { i18nAriaLabel: "panel_writing" } }, el("i"), el("i"), el("i"));

function onTurnEvent(turn, message) {
  if (turn !== state.turn) return;
  switch (message?.event) {
    case "started":
      turn.questionStored = true;
      if (state.turnState === "starting") setTurnState("streaming");
      break;
    case "notice":
      // A one-time word from the backend (e.g. a forgotten agent conversation sent again in full).
      if (message.text) showAlert(message.text);
      break;
    case "delta":
      turn.text += message.text ?? "";
      scheduleStreamPaint(turn);
      break;
    case "tool_call":
      startToolCall(turn, message);
      break;
    case "tool_done":
      // The result of a call of the user's MCP tools (py/margin/tools/turn_tools.py): mcp_calls.js paints it.
      emit("tool-done", { callId: message.callId, call: message.call });
      break;
    case "done":
    case "stopped":
      paintStream(turn, { final: true });
      endTurn(turn, { removeNow: false });
      break;
    case "error": {
      // The answer could not be stored (py/margin/turn/unsaved_answers.py): the event carries it, and
      // it stays on screen as "Not saved" (unsaved.js paints it before the streaming bubble goes).
      if (turn.questionStored && message.unsaved) {
        emit("answer-unsaved", { unsaved: message.unsaved });
        endTurn(turn, { removeNow: true });
        showAlert(message.error?.message || (() => t("panel_answer_not_saved")));
        break;
      }
      // Text that arrived is stored as an incomplete answer (py/margin/turn/chat.py rule 3): the stored
      // bubble takes over from the streaming one, as after a stop; otherwise it goes now.
      const kept = turn.questionStored && turn.text !== "";
      if (kept) paintStream(turn, { final: true });
      endTurn(turn, { removeNow: !kept });
      if (!turn.quietErrors.includes(message.error?.code)) {
        showAlert(message.error?.message || (() => t("panel_no_answer")));
      }
      // Nothing was stored: give the user their words back.
      if (!turn.questionStored) emit("turn-unsent", { restore: turn.restore });
      break;
    }
  }
}

// Rule 9: the text so far is finished where it stands, the call gets a slot of its own under it
// (tool_calls.js fills it, runs the code and answers on the port), and what the model writes
// next streams into a fresh part after it, which shows the typing dots once the model has the
// call's result (not while the call waits for the user or runs).
function startToolCall(turn, message) {
  cancelAnimationFrame(turn.frame);
  turn.frame = 0;
  if (turn.text) paintStream(turn, { final: true });
  else turn.body.replaceChildren();
  const slot = el("div", { class: "tool-call-slot" });
  const next = el("div", { class: "md" });
  turn.body.after(slot, next);
  Object.assign(turn, { body: next, renderer: null, text: "" });
  const reply = (answer) => {
    if (state.turn !== turn) return false;
    try {
      turn.port.postMessage(answer);
    } catch {
      return false;
    }
    if (turn.body === next && !turn.text) next.replaceChildren(typingDots());
    return true;
  };
  emit("tool-call", { call: message.call, files: message.files, slot, reply, settled: turn.settled });
}

function scheduleStreamPaint(turn) {
  if (turn.frame) return;
  turn.frame = requestAnimationFrame(() => {
    turn.frame = 0;
    paintStream(turn);
  });
}

// The answer so far, painted in linear time (markdown.js rule 5: finished blocks are kept).
function paintStream(turn, { final = false } = {}) {
  if (!turn.node.isConnected || turn.handedOver) return;
  const markdown = markdownModule();
  if (!markdown) {
    // The libraries load after the first paint (markdown_lite.js): the text until they are in.
    turn.body.textContent = turn.text;
    loadMarkdown().then(() => paintStream(turn, { final }));
    return;
  }
  turn.renderer ??= markdown.streamingMarkdown(turn.body, {
    around(paint) {
      const stick = state.pinned;
      paint();
      if (stick) scrollToBottom();
    },
  });
  // The last paint may have far to go (deltas came faster than paints): a slice per task.
  if (final) void turn.renderer.complete(turn.text);
  else turn.renderer.update(turn.text);
}

// Stops the running turn; resolves once it has ended (at most ~4 s: the port is closed then).
export function stopTurn() {
  const turn = state.turn;
  if (!turn) return Promise.resolve();
  if (state.turnState === "stopping") return turn.settled;
  setTurnState("stopping");
  try {
    turn.port.postMessage({ action: "stop" });
  } catch {
    /* the port is gone; onDisconnect ends the turn */
  }
  // Closing the port also stops the turn, should the worker not confirm.
  turn.stopTimer = setTimeout(() => {
    if (state.turn !== turn) return;
    try {
      turn.port.disconnect();
    } catch {}
    endTurn(turn, { removeNow: false });
  }, STOP_GRACE_MS);
  return turn.settled;
}

function endTurn(turn, { removeNow }) {
  if (state.turn !== turn) return;
  state.turn = null;
  setTurnState("idle");
  cancelAnimationFrame(turn.frame);
  clearTimeout(turn.stopTimer);
  clearInterval(turn.keepAlive);
  turn.settle();
  turn.node.removeAttribute("aria-busy");
  try {
    turn.port.disconnect();
  } catch {}
  if (removeNow) removeStreamingBubble(turn);
  else {
    state.lastTurn = turn;
    if (historyHoldsAnswer(turn)) removeStreamingBubble(turn);
    // The stored answer normally arrives with the next storage change; never leave a ghost behind.
    else turn.ghostTimer = setTimeout(() => {
      refreshHistory()
        .catch((error) => console.warn("Margin: could not read the conversation again", error))
        .finally(() => removeStreamingBubble(turn));
    }, GHOST_MS);
  }
}

function historyHoldsAnswer(turn) {
  const last = state.history[state.history.length - 1];
  return turn.sawQuestionLast && last?.role === "assistant";
}

function removeStreamingBubble(turn) {
  clearTimeout(turn.ghostTimer);
  if (turn.node.isConnected && !turn.handedOver) {
    const stick = state.pinned;
    turn.node.remove();
    emit("live-changed");
    if (stick) scrollToBottom();
  }
  if (state.lastTurn === turn) state.lastTurn = null;
}

// An answer last in history is this turn's once its question was seen last, or the turn has ended.
const storedAnswerIsThisTurns = (turn) => turn.sawQuestionLast || turn !== state.turn;

// Called after every history render: hand over from the streaming bubble to the stored one.
export function reconcileStreamingWithHistory() {
  const turn = state.turn || state.lastTurn;
  if (!turn) return;
  const last = state.history[state.history.length - 1];
  if (last?.role === "user") turn.sawQuestionLast = true;
  if (last?.role === "assistant" && storedAnswerIsThisTurns(turn)) {
    // Stored (before or after "done" arrived): the stored bubble takes over, shown once.
    removeStreamingBubble(turn);
  }
}

// The streaming bubble, while it streams or waits for its stored answer: applyHistory keeps it last.
export function streamingBubble() {
  const turn = state.turn || state.lastTurn;
  return turn && !turn.handedOver && turn.node.isConnected ? turn.node : null;
}

// The streaming bubble as the stored answer's bubble (conversation.js rule 9), when that answer is
// this turn's and no tool call split it: {article, bubble, content, complete}, or null. The
// article is stamped a stored bubble here; the caller gives it its index. `complete()` paints the
// rest of `text` a slice per task (its last paint equals a whole render, markdown.js rule 5) and
// resolves to true when done; it is null when what was painted is not the start of `text`.
export function takeStreamingBubble(text) {
  const turn = state.turn || state.lastTurn;
  if (!turn || turn.handedOver || !turn.node.isConnected || !storedAnswerIsThisTurns(turn)) return null;
  if (turn.node.querySelector(".tool-call-slot")) return null;
  const painted = turn.renderer && text.startsWith(turn.text) ? turn.renderer : null;
  turn.handedOver = true;
  turn.text = text;
  const article = turn.node;
  article.className = "msg assistant";
  for (const name of ["aria-busy", "aria-live", "data-streaming"]) article.removeAttribute(name);
  return { article, bubble: turn.body.parentElement, content: turn.body, complete: painted && (() => painted.complete(text)) };
}

// Its init takes conversation.js's `refreshFromStorage` (provided through the registry).
register({ name: "turn", init });
