// Attachments: "Attach page" (its button and keyboard command), and the cards that show
// page-context records in the conversation (View text, Remove).
//
// Rules:
// 1. A page-context record (py/margin/page_context.py) is a card, never a bubble: it is not an
//    `article[data-role]`, it has no Edit or Regenerate, and a run of cards is answered by the
//    next question.
// 2. Attaching never writes here: the worker appends the record and storage.onChanged paints it.
//    A refusal (a chrome:// page, a PDF, a page with no text) is the worker's sentence, in the alert.
// 3. Only cards that no question has used yet ("waiting") can be removed.
// 4. `init()` wires the button, the keyboard command and the text viewer.

import { CONTRACT } from "../generated/contract.js";
import { call, el, svg } from "../ui_common.js";
import { $, ui, recordText, showAlert, clearAlert, announce } from "./state.js";

const PREFIX = CONTRACT.pageContextPrefix;
const KIND_NAMES = { page: "Attached page", video: "Attached video", selection: "Selected text" };
const numberFormat = new Intl.NumberFormat();

const attachButton = $("attach-page");
const viewer = $("text-viewer");
const viewerTitle = $("text-viewer-title");
const viewerBody = $("text-viewer-body");

export function init() {
  $("text-viewer-close").append(svg("close"));
  $("text-viewer-close").addEventListener("click", () => viewer.close());
  viewer.addEventListener("close", () => (viewerBody.textContent = ""));

  attachButton.append(svg("attachPage"));
  attachButton.addEventListener("click", attachPage);
  // The manifest's "attach-page" command reaches every open extension page; the panel is the one
  // that acts on it (the worker keeps no listener for it: only the context menu's click wakes it).
  chrome.commands?.onCommand.addListener((command) => {
    if (command === "attach-page") attachPage();
  });
  chrome.commands?.getAll?.().then((commands) => {
    const shortcut = commands.find((c) => c.name === "attach-page")?.shortcut;
    attachButton.title = shortcut ? `Attach page (${shortcut})` : "Attach page: the text of the page you are looking at";
  }, () => {});
}

export function isAttachment(record) {
  return record?.role === "user" && record.attachment && typeof record.attachment === "object"
    && typeof record.content === "string" && record.content.startsWith(PREFIX);
}

export function isVideoRecord(record) {
  return isAttachment(record) && record.attachment.kind === "video" && record.video && typeof record.video === "object";
}

// The index from which every record is an attachment (records.length when the last is not one).
export function waitingFrom(records) {
  let index = records.length;
  while (index > 0 && isAttachment(records[index - 1])) index--;
  return index;
}

export function attachmentSignature(record, waiting) {
  const meta = record.attachment;
  return `att|${waiting ? 1 : 0}|${meta.kind}|${meta.title}|${meta.url}|${record.content.length}`;
}

function metaLine(meta, record) {
  const parts = [];
  if (meta.site) parts.push(meta.site);
  if (meta.kind === "video" && record.video?.transcript?.cues) parts.push("transcript");
  parts.push(`${numberFormat.format(meta.chars ?? recordText(record).length)} characters`);
  if (meta.truncated) parts.push(`cut at ${numberFormat.format(meta.chars)} of ${numberFormat.format(meta.originalChars)}`);
  return parts.join(" · ");
}

const SAFE_LINK = /^(https?|file):/i;

export function buildAttachmentCard(record, index, { waiting }) {
  const meta = record.attachment;
  const kind = KIND_NAMES[meta.kind] ? meta.kind : "page";
  const title = meta.title || meta.site || meta.url || "Untitled page";
  const heading = SAFE_LINK.test(meta.url || "")
    ? el("a", { class: "att-title", href: meta.url, target: "_blank", rel: "noopener noreferrer", title: meta.url, text: title })
    : el("span", { class: "att-title", text: title });
  const card = el(
    "div",
    { class: `attachment-card${waiting ? " waiting" : ""}`, role: "group", "aria-label": `${KIND_NAMES[kind]}: ${title}`, dataset: { index: String(index), kind } },
    el("span", { class: "att-icon", "aria-hidden": "true" }, svg(kind === "video" ? "video" : kind === "selection" ? "quote" : "page")),
    el("div", { class: "att-body" }, heading, el("span", { class: "att-meta", text: metaLine(meta, record) })),
  );
  const actions = el("div", { class: "att-actions" });
  const view = el("button", { type: "button", class: "btn ghost icon", "aria-label": "View text", title: "View the text the model gets" }, svg("eye"));
  view.addEventListener("click", () => openTextViewer(record, title));
  actions.append(view);
  if (waiting) {
    const remove = el("button", { type: "button", class: "btn ghost icon", "aria-label": "Remove attachment", title: "Remove it before you ask" }, svg("close"));
    remove.addEventListener("click", () => removeAttachment(index, meta.url, remove));
    actions.append(remove);
  }
  card.append(actions);
  return card;
}

async function removeAttachment(index, url, button) {
  button.disabled = true;
  try {
    await call("attachment.remove", { index, url });
    announce("Attachment removed");
    ui.message.focus();
  } catch (error) {
    button.disabled = false;
    showAlert(error.message);
  }
}

// --- "View text": the exact text the model gets -----------------------------------------------

function openTextViewer(record, title) {
  viewerTitle.textContent = title;
  viewerBody.textContent = recordText(record);
  viewer.showModal();
  viewerBody.scrollTop = 0;
}

// --- "Attach page": the button and the keyboard command ----------------------------------------

async function attachPage() {
  if (attachButton.disabled) return;
  clearAlert();
  attachButton.disabled = true;
  attachButton.classList.add("busy");
  attachButton.setAttribute("aria-busy", "true");
  const slow = setTimeout(() => announce("Reading the page…"), 400);
  try {
    const result = await call("tab.attach", {});
    if (result.duplicate) announce("This page is already attached");
    else announce(`${KIND_NAMES[result.attachment.kind] || "Attached"}: ${result.attachment.title || result.attachment.site}`);
  } catch (error) {
    showAlert(error.message);
  } finally {
    clearTimeout(slow);
    attachButton.disabled = false;
    attachButton.classList.remove("busy");
    attachButton.removeAttribute("aria-busy");
    ui.message.focus();
  }
}

// While pages wait for a question, the box says so.
export function updateComposerHint(records) {
  const waiting = records.length - waitingFrom(records);
  ui.message.placeholder = waiting
    ? waiting === 1 ? "Ask about the attached page…" : `Ask about the ${waiting} attached pages…`
    : "Ask anything…";
}
