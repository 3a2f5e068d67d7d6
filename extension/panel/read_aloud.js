// "Read aloud" on each answer: the browser's speechSynthesis says the answer (panel/speech_text.js
// makes the words), in the answer's language; the button becomes "Stop reading" meanwhile.
//
// Rules:
// 1. Every stored answer's actions get the button, added when its bubble is painted (a
//    MutationObserver on the conversation, so conversation.js stays as it is); a browser without
//    speechSynthesis gets no button at all (never a dead one).
// 2. One answer is read at a time: "Read aloud" on another answer, or the same button ("Stop
//    reading"), cancels what is being said. The words are said as a queue of short utterances
//    (speech_text.js rule 2); the last one's end, an error or a cancel puts the button back.
// 3. The words are the stored record's Markdown, in the language its script shows, else Margin's
//    language (speech_text.js rule 3).

import { el, svg } from "../common/ui_common.js";
import { t, language } from "../common/i18n.js";
import { ui, state, events, recordText } from "./state.js";
import { speechChunks, speechLanguage, speechText } from "./speech_text.js";
import { register } from "./registry.js";

const ACTION = "read-aloud";
let reading = null; // {button, cancelled}

function paintButton(button, speaking) {
  const label = speaking ? t("panel_stop_reading") : t("panel_read_aloud");
  button.replaceChildren(svg(speaking ? "speaker-stop" : "speaker"));
  button.setAttribute("aria-label", label);
  button.title = label;
  button.classList.toggle("is-reading", speaking);
}

const ACTIONS = "article.msg.assistant[data-index] > .actions";

function addButtons(root) {
  const found = root.matches?.(ACTIONS) ? [root] : root.querySelectorAll(ACTIONS);
  for (const actions of found) {
    if (actions.querySelector(`[data-action="${ACTION}"]`)) continue;
    const button = el("button", { type: "button", class: "btn ghost icon action", dataset: { action: ACTION } });
    paintButton(button, reading?.button === button);
    actions.append(button);
  }
}

function stop() {
  if (!reading) return;
  const { button } = reading;
  reading.cancelled = true;
  reading = null;
  speechSynthesis.cancel();
  if (button.isConnected) paintButton(button, false);
}

function read(button) {
  const index = Number(button.closest("article")?.dataset.index);
  const record = Number.isInteger(index) ? state.history[index] : null;
  if (!record) return;
  const text = speechText(recordText(record), { codeBlock: t("panel_speech_code"), table: t("panel_speech_table") });
  const chunks = speechChunks(text);
  if (!chunks.length) return;
  const lang = speechLanguage(text, language());
  const mine = { button, cancelled: false };
  reading = mine;
  paintButton(button, true);
  chunks.forEach((chunk, i) => {
    const utterance = new SpeechSynthesisUtterance(chunk);
    utterance.lang = lang;
    if (i === chunks.length - 1) utterance.addEventListener("end", () => reading === mine && stop());
    utterance.addEventListener("error", () => reading === mine && stop());
    speechSynthesis.speak(utterance);
  });
}

function onClick(event) {
  const button = event.target.closest(`button[data-action="${ACTION}"]`);
  if (!button || !ui.conversation.contains(button)) return;
  const same = reading?.button === button;
  stop();
  if (!same) read(button);
}

export function init() {
  if (!("speechSynthesis" in window) || typeof SpeechSynthesisUtterance !== "function") return; // rule 1
  addButtons(ui.history);
  // Only what was added is looked at: a streaming answer's paints add nodes inside one bubble.
  new MutationObserver((mutations) => {
    for (const mutation of mutations) {
      for (const node of mutation.addedNodes) {
        if (node.nodeType !== Node.ELEMENT_NODE) continue;
        const article = node.closest("article") ?? node;
        if (article.isConnected) addButtons(article.matches("article") ? article : node);
      }
    }
  }).observe(ui.history, { childList: true, subtree: true });
  ui.conversation.addEventListener("click", onClick);
  events.addEventListener("language-changed", () => {
    for (const button of ui.history.querySelectorAll(`[data-action="${ACTION}"]`)) paintButton(button, reading?.button === button);
  });
  window.addEventListener("pagehide", stop);
}

register({ name: "read-aloud", phase: "wire", init });
