// Summary passes: one port (`CONTRACT.summaryPort`) per long attachment, from the reply that
// stored it to its one terminal event (py/margin/page/summaries.py, docs/protocol.md "A summary").
//
// Rules:
// 1. A pass starts only when the worker's reply that stored the record says `summarize: true`
//    (`tab.attach`, `attachment.reattach`): Python decides, with the "Summarize long pages"
//    setting, so the panel never reads the options itself.
// 2. A pass is named by the record's `attachment.capturedAt` and `url` (`summaryKey`); one pass
//    per key in this panel (the worker refuses a second one anywhere).
// 3. What the cards show comes from here (`summaryProgress`), and every change is a
//    "summary-changed" event {key} on `events`: attachments.js repaints the card. The stored
//    summary itself arrives like every change, through storage.onChanged.
// 4. Every pass ends once. A failed or cancelled pass says so once, in the alert; a refusal
//    because the page has a summary or is being summarized elsewhere says nothing.
// 5. Cancel posts `{stop: true}`; the port is closed after a grace period if the worker does not
//    confirm. A keepalive message every 20 s keeps the worker awake while the model thinks.
// 6. Nothing here registers a listener at import time: a pass's listeners are its port's.

import { CONTRACT } from "../generated/contract.js";
import { t } from "../common/i18n.js";
import { emit, announce, showAlert } from "./state.js";

const KEEPALIVE_MS = 20_000;
const CANCEL_GRACE_MS = 4000;
const QUIET_CODES = ["already_summarized", "summary_in_progress"];
const lost = () => t("panel_summary_connection_lost");

const passes = new Map(); // key -> {port, chars, title, keepAlive, cancelTimer, cancelled}

export function summaryKey(meta) {
  return `${meta?.capturedAt}|${meta?.url}`;
}

// The summary characters so far while the record's pass runs; null when none runs.
export function summaryProgress(key) {
  return passes.get(key)?.chars ?? null;
}

export function startSummary(card) {
  const key = summaryKey(card);
  if (passes.has(key)) return;
  const title = card.title || card.site || card.url || t("panel_this_page");
  let port;
  try {
    port = chrome.runtime.connect({ name: CONTRACT.summaryPort });
  } catch {
    showAlert(() => couldNotSummarize(title, lost()));
    return;
  }
  const pass = { port, chars: 0, title, keepAlive: 0, cancelTimer: 0, cancelled: false };
  passes.set(key, pass);
  pass.keepAlive = setInterval(() => {
    try {
      port.postMessage({ keepalive: true });
    } catch {
      clearInterval(pass.keepAlive);
    }
  }, KEEPALIVE_MS);
  port.onMessage.addListener((message) => onEvent(key, pass, message));
  port.onDisconnect.addListener(() => {
    void chrome.runtime.lastError;
    end(key, pass, pass.cancelled ? { event: "cancelled" } : { event: "error", error: { message: lost() } });
  });
  port.postMessage({ capturedAt: card.capturedAt, url: card.url });
  announce(t("panel_summarizing_title", title));
  emit("summary-changed", { key });
}

export function cancelSummary(key) {
  const pass = passes.get(key);
  if (!pass || pass.cancelled) return;
  pass.cancelled = true;
  try {
    pass.port.postMessage({ stop: true });
  } catch {
    /* the port is gone; onDisconnect ends the pass */
  }
  pass.cancelTimer = setTimeout(() => end(key, pass, { event: "cancelled" }), CANCEL_GRACE_MS);
}

function onEvent(key, pass, message) {
  if (passes.get(key) !== pass) return;
  if (message?.event === "progress") {
    pass.chars = Number(message.chars) || 0;
    emit("summary-changed", { key });
  } else if (["done", "cancelled", "error"].includes(message?.event)) {
    end(key, pass, message);
  }
}

function end(key, pass, outcome) {
  if (passes.get(key) !== pass) return;
  passes.delete(key);
  clearInterval(pass.keepAlive);
  clearTimeout(pass.cancelTimer);
  try {
    pass.port.disconnect();
  } catch {}
  if (outcome.event === "done") announce(t("panel_summary_ready", pass.title));
  else if (outcome.event === "cancelled") showAlert(() => t("panel_summary_cancelled", pass.title));
  else if (!QUIET_CODES.includes(outcome.error?.code)) {
    showAlert(() => couldNotSummarize(pass.title, outcome.error?.message || t("panel_summary_no_answer")));
  }
  emit("summary-changed", { key });
}

function couldNotSummarize(title, reason) {
  const sentence = /[.!?]$/.test(reason.trim()) ? reason.trim() : `${reason.trim()}.`;
  return t("panel_summary_failed", title, sentence);
}
