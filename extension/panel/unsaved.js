// Answers whose final save failed (py/margin/turn/unsaved_answers.py): shown after their question in a
// "Not saved" state with the buttons "Copy" and "Retry save", until Retry save stores them.
//
// Rules:
// 1. An unsaved answer comes from the turn's error event (`unsaved`: turn.js emits
//    "answer-unsaved") and from chrome.storage.session `unsavedAnswers` (the worker's copy, so a
//    panel reload or a stopped worker loses nothing); `state.unsaved` holds both, one per id.
// 2. It is painted right after its question (`unsavedAfter`: the user record with its createdAt,
//    at its index first), unless the record that answers that question is this very answer (it
//    is stored: the stored bubble shows it). With its question not in `history` (another session
//    is open), it is not shown; it comes back with that session.
// 3. "Copy" copies its text. "Retry save" sends it back (`history.save_answer`): saved, the stored
//    bubble takes its place when the history change is painted (the entry leaves `state.unsaved`
//    then, so nothing blinks out); refused, the alert says why and the bubble stays.
// 4. A change of `state.unsaved` is the "unsaved-changed" event: conversation.js repaints.
// 5. `init()` wires the buttons and follows storage.session; nothing is registered at import.
// 6. A turn that runs the model's code keeps its progress as an entry marked `inProgress`
//    (py/margin/turn/unsaved_answers.py rule 6): it is not shown while a turn runs, nor once its question
//    has an answer; it is shown when the turn ended without one (the worker stopped mid-call),
//    its code runs painted (tool_calls.js `roundsNode`) before its text.

import { CONTRACT } from "../generated/contract.js";
import { call, el, copyText } from "../common/ui_common.js";
import { t } from "../common/i18n.js";
import { markdownModule, loadMarkdown } from "./markdown_lite.js";
import { ui, state, events, emit, announce, showAlert, clearAlert, recordText } from "./state.js";
import { isAttachment } from "./attachments.js";
import { roundsNode } from "./tool_calls.js";
import { register } from "./registry.js";

const KEY = CONTRACT.storage.sessionKeys.unsavedAnswers;

const nodes = new Map(); // id -> its article, kept while the entry lives
const saved = new Set(); // ids this panel saved: a late copy of the entry must not bring them back

export function init() {
  events.addEventListener("answer-unsaved", (event) => add([event.detail.unsaved]));
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === "session" && KEY in changes) replaceStored(changes[KEY].newValue);
  });
  chrome.storage.session.get(KEY).then(
    (stored) => replaceStored(stored[KEY]),
    (error) => console.warn("Margin: could not read the unsaved answers", error),
  );
  ui.conversation.addEventListener("click", onClick);
  // Rule 6: a turn's kept progress shows once that turn is over (the streaming bubble went).
  events.addEventListener("live-changed", () => {
    if (state.unsaved.some((e) => e.inProgress)) emit("unsaved-changed");
  });
}

function valid(entry) {
  return typeof entry?.id === "string" && entry.answer?.role === "assistant" && typeof entry.answer.content === "string";
}

function add(entries) {
  let changed = false;
  for (const entry of entries) {
    if (!valid(entry) || saved.has(entry.id) || state.unsaved.some((e) => e.id === entry.id)) continue;
    state.unsaved.push(entry);
    changed = true;
  }
  if (changed) emit("unsaved-changed");
}

// The worker's list is the truth for what it kept; an entry only the event brought (the session
// write failed too) stays until it is saved.
function replaceStored(value) {
  const stored = Array.isArray(value) ? value.filter(valid) : [];
  const ids = new Set(stored.map((e) => e.id));
  const before = state.unsaved.length;
  // A saved one stays until the stored bubble is painted (rule 2), so nothing blinks out.
  state.unsaved = state.unsaved.filter((e) => ids.has(e.id) || !e.kept || saved.has(e.id));
  const had = state.unsaved.length !== before;
  for (const entry of stored) entry.kept = true;
  add(stored);
  if (had) emit("unsaved-changed");
}

function sameAnswer(record, answer) {
  return record?.role === "assistant" && record.createdAt === answer.createdAt && recordText(record) === answer.content;
}

function questionIndex(records, question) {
  const at = question?.index;
  const isIt = (r) => r?.role === "user" && r.createdAt === question?.createdAt && !isAttachment(r);
  if (Number.isInteger(at) && isIt(records[at])) return at;
  for (let i = records.length - 1; i >= 0; i--) if (isIt(records[i])) return i;
  return -1;
}

// Rule 2: {question index: [article]} for the unsaved answers to paint, in the order they came.
export function unsavedAfter(records) {
  const after = new Map();
  const stored = []; // saved (by this panel or another): the stored bubble shows them now
  for (const entry of state.unsaved) {
    const at = questionIndex(records, entry.question);
    if (at < 0) continue;
    const answered = records.slice(at + 1).find((r) => r?.role === "assistant" || (r?.role === "user" && !isAttachment(r)));
    if (entry.inProgress && (state.turn || answered)) continue; // rule 6: the turn still runs, or it stored its answer
    if (answered && sameAnswer(answered, entry.answer)) {
      stored.push(entry.id);
      continue;
    }
    if (!after.has(at)) after.set(at, []);
    after.get(at).push(nodeFor(entry));
  }
  if (stored.length) state.unsaved = state.unsaved.filter((e) => !stored.includes(e.id));
  for (const [id, node] of nodes) {
    if (state.unsaved.some((e) => e.id === id)) continue;
    nodes.delete(id);
    node.remove();
  }
  return after;
}

// Another language: the next paint builds every unsaved answer again (conversation.js).
export function forgetUnsavedNodes() {
  nodes.clear();
}

function nodeFor(entry) {
  const old = nodes.get(entry.id);
  if (old) return old;
  const content = el("div", { class: "md" });
  const markdown = markdownModule();
  if (markdown) markdown.renderMarkdown(content, entry.answer.content);
  else {
    // Before the libraries are in (markdown_lite.js): the text, then the Markdown.
    content.classList.add("pending");
    content.textContent = entry.answer.content;
    loadMarkdown().then((module) => {
      module.renderMarkdown(content, entry.answer.content);
      content.classList.remove("pending");
    });
  }
  const bubble = el("div", { class: "bubble" }, content);
  if (Array.isArray(entry.answer.toolRounds)) bubble.prepend(roundsNode(entry.answer.toolRounds));
  if (entry.answer.stopped) bubble.append(el("span", { class: "tag", text: t("panel_stopped") }));
  if (entry.answer.incomplete) bubble.append(el("p", { class: "answer-note", text: t("panel_incomplete") }));
  const bar = el(
    "div",
    { class: "unsaved-bar" },
    el("span", { class: "unsaved-note", text: t("panel_not_saved") }),
    el("button", { type: "button", class: "btn", dataset: { unsavedAction: "copy" }, text: t("panel_copy") }),
    el("button", { type: "button", class: "btn primary", dataset: { unsavedAction: "retry" }, text: t("panel_retry_save") }),
  );
  const node = el("article", { class: "msg assistant unsaved", dataset: { role: "assistant", unsaved: entry.id } }, bubble, bar);
  nodes.set(entry.id, node);
  return node;
}

async function onClick(event) {
  const button = event.target.closest("button[data-unsaved-action]");
  const id = button?.closest("article[data-unsaved]")?.dataset.unsaved;
  const entry = state.unsaved.find((e) => e.id === id);
  if (!entry) return;
  if (button.dataset.unsavedAction === "copy") {
    if (await copyText(entry.answer.content)) announce(t("panel_copied"));
    else showAlert(() => t("panel_clipboard_failed"));
    return;
  }
  button.disabled = true;
  try {
    const { kept, ...unsaved } = entry;
    await call("history.save_answer", { unsaved });
    // The stored answer arrives with the history change and takes the bubble's place (rule 2).
    saved.add(id);
    clearAlert();
    announce(t("panel_answer_saved"));
  } catch (error) {
    showAlert(error.message);
  } finally {
    button.disabled = false;
  }
}

// After conversation.js: its click handler and its "live-changed" follow the conversation's.
register({ name: "unsaved", after: ["conversation"], init });
