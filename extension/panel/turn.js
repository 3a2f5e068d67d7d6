// A turn: one port (`CONTRACT.turnPort`) from Send to the stored answer; streaming, Stop, keepalive.
//
// Rules:
// 1. A turn's deltas paint only the answer that is streaming, in a bubble of its own in `ui.live`.
// 2. The streaming bubble leaves as soon as the stored answer is on screen, so one answer is never
//    shown twice (`reconcileStreamingWithHistory`, called after every history paint).
// 3. A turn that fails before anything was stored gives the user their words and images back.
// 4. Every turn ends exactly once (`endTurn`): the keepalive stops and `turn.settled` resolves.

import { CONTRACT } from "../generated/contract.js";
import { el } from "../ui_common.js";
import { renderMarkdown } from "../markdown.js";
import { ui, state, scrollToBottom, showAlert, clearAlert } from "./state.js";
import { updateEmptyState, refreshFromStorage } from "./conversation.js";
import { setSendMode, giveBack } from "./composer.js";

const LOST_CONNECTION =
  "The connection to Margin's background worker was lost. Your message is saved; press Regenerate to try again.";

const KEEPALIVE_MS = 20_000;

export function startTurn(start, restore = null, { quietErrors = [] } = {}) {
  clearAlert();
  let port;
  try {
    port = chrome.runtime.connect({ name: CONTRACT.turnPort });
  } catch (error) {
    // Nothing was sent, so nothing was stored: the words go back into the box.
    showAlert("Margin's background worker could not be reached. Your message is back in the box; try again, or reload the extension if it keeps happening.");
    giveBack(restore);
    return;
  }
  const body = el("div", { class: "md" }, el("span", { class: "typing", "aria-label": "Margin is writing" }, el("i"), el("i"), el("i")));
  const node = el("article", { class: "msg assistant streaming", "aria-busy": "true", dataset: { role: "assistant", streaming: "1" } }, el("div", { class: "bubble" }, body));
  const turn = {
    port,
    node,
    body,
    text: "",
    started: false,
    ended: false,
    sawQuestionLast: false,
    frame: 0,
    stopTimer: 0,
    keepAlive: 0,
    restore,
    quietErrors,
    settle: null,
  };
  turn.settled = new Promise((resolve) => (turn.settle = resolve));
  state.turn = turn;
  setSendMode(true);
  ui.live.replaceChildren(node);
  updateEmptyState();
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
    if (!turn.ended) {
      endTurn(turn, { removeNow: true });
      if (!turn.stopRequested) showAlert(LOST_CONNECTION);
    }
  });
  port.postMessage(start);
}

function onTurnEvent(turn, message) {
  if (turn !== state.turn && turn.ended) return;
  switch (message?.event) {
    case "started":
      turn.started = true;
      break;
    case "delta":
      turn.text += message.text ?? "";
      scheduleStreamPaint(turn);
      break;
    case "done":
    case "stopped":
      paintStream(turn);
      endTurn(turn, { removeNow: false });
      break;
    case "error": {
      endTurn(turn, { removeNow: true });
      if (!turn.quietErrors.includes(message.error?.code)) {
        showAlert(message.error?.message || "The model did not answer. Please try again.");
      }
      // Nothing was stored: give the user their words back.
      if (!turn.started) giveBack(turn.restore);
      break;
    }
  }
}

function scheduleStreamPaint(turn) {
  if (turn.frame) return;
  turn.frame = requestAnimationFrame(() => {
    turn.frame = 0;
    paintStream(turn);
  });
}

function paintStream(turn) {
  if (!turn.node.isConnected) return;
  const stick = state.pinned;
  renderMarkdown(turn.body, turn.text, { highlight: false });
  if (stick) scrollToBottom();
}

// Stops the running turn; resolves once it has ended (at most ~4 s: the port is closed then).
export function stopTurn() {
  const turn = state.turn;
  if (!turn || turn.ended) return Promise.resolve();
  turn.stopRequested = true;
  try {
    turn.port.postMessage({ action: "stop" });
  } catch {
    /* the port is gone; onDisconnect ends the turn */
  }
  ui.send.disabled = true;
  // Closing the port also stops the turn, should the worker not confirm.
  turn.stopTimer = setTimeout(() => {
    if (turn.ended) return;
    try {
      turn.port.disconnect();
    } catch {}
    endTurn(turn, { removeNow: false });
  }, 4000);
  return turn.settled;
}

function endTurn(turn, { removeNow }) {
  if (turn.ended) return;
  turn.ended = true;
  cancelAnimationFrame(turn.frame);
  clearTimeout(turn.stopTimer);
  clearInterval(turn.keepAlive);
  turn.settle();
  turn.node.removeAttribute("aria-busy");
  if (state.turn === turn) {
    state.turn = null;
    setSendMode(false);
    ui.send.disabled = false;
  }
  try {
    turn.port.disconnect();
  } catch {}
  if (removeNow) removeStreamingBubble(turn);
  else {
    state.lastTurn = turn;
    if (historyHoldsAnswer(turn)) removeStreamingBubble(turn);
    // The stored answer normally arrives with the next storage change; never leave a ghost behind.
    else turn.ghostTimer = setTimeout(() => {
      refreshFromStorage()
        .catch((error) => console.warn("Margin: could not read the conversation again", error))
        .finally(() => removeStreamingBubble(turn));
    }, 1500);
  }
}

function historyHoldsAnswer(turn) {
  const last = state.history[state.history.length - 1];
  return turn.sawQuestionLast && last?.role === "assistant";
}

function removeStreamingBubble(turn) {
  clearTimeout(turn.ghostTimer);
  if (turn.node.isConnected) {
    const stick = state.pinned;
    turn.node.remove();
    updateEmptyState();
    if (stick) scrollToBottom();
  }
  if (state.lastTurn === turn) state.lastTurn = null;
}

// Called after every history render: hand over from the streaming bubble to the stored one.
export function reconcileStreamingWithHistory() {
  const turn = state.turn || state.lastTurn;
  if (!turn) return;
  const last = state.history[state.history.length - 1];
  if (last?.role === "user") turn.sawQuestionLast = true;
  if (last?.role === "assistant" && (turn.sawQuestionLast || turn.ended)) {
    // Stored (before or after "done" arrived): the stored bubble takes over, shown once.
    removeStreamingBubble(turn);
  }
}
