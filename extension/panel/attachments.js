// Attachments: "Attach page" (its button and keyboard command), and the cards that show
// page-context records in the conversation (View text, Remove, and what the model gets for them).
//
// Rules:
// 1. A page-context record (py/margin/page/context.py) is a card, never a bubble: it is not an
//    `article[data-role]`, it has no Edit or Regenerate, and a run of cards is answered by the
//    next question.
// 2. Attaching never writes here: the worker appends the record and storage.onChanged paints it.
//    A refusal (a chrome:// page, an unreadable PDF, a page with no text) is the worker's sentence,
//    in the alert. A PDF tab is read by the panel's PDF worker first (panel/pdf_attach.js).
// 3. Only cards that no question has used yet ("waiting") can be removed.
// 4. A card says what the model gets for it (`data-slimming`, docs/interface.md): "summarizing"
//    (a pass runs: progress and "Cancel summary"), "aged" (a short note: "Attach again"),
//    "summarized" (its summary: "View summary"), or "" (the page itself). Aging is decided by
//    slimming.js, the same rule as Python's; a reply that stored a record and says `summarize`
//    starts a pass (summaries.js).
// 5. `init()` wires the button, the keyboard command, the text viewer and the cards' repaint when a
//    summary pass changes.

import { CONTRACT } from "../generated/contract.js";
import { call, el, svg } from "../common/ui_common.js";
import { t, tPlural, formatNumber, formatSize } from "../common/i18n.js";
import { $, ui, state, events, recordText, showAlert, clearAlert, announce } from "./state.js";
import { agedIndices, summaryOf } from "./slimming.js";
import { summaryKey, summaryProgress, startSummary, cancelSummary } from "./summaries.js";
import { register } from "./registry.js";
import { attachTab } from "./pdf_attach.js";

const PREFIX = CONTRACT.pageContextPrefix;
// The card's kind, as its accessible name begins ("Attached page: <title>").
const KIND_KEYS = { page: "panel_kind_page", video: "panel_kind_video", selection: "panel_kind_selection", file: "panel_kind_file", pdf: "panel_kind_pdf" };
const ICONS = { video: "video", selection: "quote", file: "dataFile" };
const kindName = (kind) => t(KIND_KEYS[kind] || KIND_KEYS.page);

const attachButton = $("attach-page");
const viewer = $("text-viewer");
const viewerTitle = $("text-viewer-title");
const viewerBody = $("text-viewer-body");

export function init() {
  events.addEventListener("summary-changed", (event) => repaintCards(event.detail.key));
  events.addEventListener("language-changed", () => {
    paintAttachTitle();
    updateComposerHint(state.history);
  });
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
    attachShortcut = commands.find((c) => c.name === "attach-page")?.shortcut || "";
    paintAttachTitle();
  }, () => {});
}

let attachShortcut = "";
function paintAttachTitle() {
  attachButton.title = attachShortcut ? t("panel_attach_page_shortcut", attachShortcut) : t("panel_attach_page_hint");
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

// --- What the model gets for a card ------------------------------------------------------------

// agedIndices over the history on screen, computed once per history painted.
let agedCache = { records: null, aged: new Set() };

function agedRecords() {
  if (agedCache.records !== state.history) {
    const aged = new Set(agedIndices(state.history, t).map((i) => state.history[i]));
    agedCache = { records: state.history, aged };
  }
  return agedCache.aged;
}

export function slimmingOf(record) {
  if (summaryProgress(summaryKey(record.attachment)) !== null) return "summarizing";
  if (agedRecords().has(record)) return "aged";
  if (summaryOf(record)) return "summarized";
  return "";
}

export function attachmentSignature(record, waiting) {
  const meta = record.attachment;
  const slimming = `${slimmingOf(record)}:${summaryOf(record) ? 1 : 0}`;
  return `att|${waiting ? 1 : 0}|${meta.kind}|${meta.title}|${meta.url}|${record.content.length}|${slimming}`;
}

// A data file (py/margin/page/data_files.py): its type, its size and, for a table, its rows.
function fileMetaLine(meta) {
  const type = /\.([^.]+)$/.exec(meta.name || "")?.[1]?.toUpperCase() || meta.mediaType || "";
  const parts = [type, formatSize(meta.size)];
  if (Number.isInteger(meta.rows)) parts.push(tPlural("panel_meta_rows", meta.rows));
  return parts.filter(Boolean).join(" · ");
}

function metaLine(meta, record) {
  if (meta.kind === "file") return fileMetaLine(meta);
  const parts = [];
  if (meta.site) parts.push(meta.site);
  if (meta.kind === "video" && record.video?.transcript?.cues) parts.push(t("panel_meta_transcript"));
  if (meta.kind === "pdf" && Number.isInteger(meta.pages)) parts.push(tPlural("panel_meta_pages", meta.pages), formatSize(meta.bytes));
  parts.push(tPlural("panel_meta_characters", meta.chars ?? recordText(record).length));
  if (meta.truncated) parts.push(t("panel_meta_cut", formatNumber(meta.chars), formatNumber(meta.originalChars)));
  return parts.join(" · ");
}

const summarizingText = (chars) => tPlural("panel_summarizing", chars);

const SLIMMING_KEYS = { aged: "panel_slimming_aged", summarized: "panel_slimming_summarized" };

function slimmingLine(record, slimming, title) {
  if (!slimming) return null;
  const key = summaryKey(record.attachment);
  const text = slimming === "summarizing" ? summarizingText(summaryProgress(key)) : t(SLIMMING_KEYS[slimming]);
  const line = el("div", { class: "att-slimming" }, el("span", { class: "att-slimming-text", text }));
  const button = (label, hint, onClick) => {
    const node = el("button", { type: "button", class: "btn ghost small", text: label, title: hint });
    node.addEventListener("click", () => onClick(node));
    line.append(node);
  };
  if (slimming === "summarizing") button(t("panel_cancel_summary"), t("panel_cancel_summary_hint"), () => cancelSummary(key));
  if (slimming === "aged") button(t("panel_attach_again"), t("panel_attach_again_hint"), (node) => attachAgain(record, node));
  if (summaryOf(record)) button(t("panel_view_summary"), t("panel_view_summary_hint"), () => openViewer(t("panel_summary_of", title), summaryOf(record).text));
  return line;
}

const SAFE_LINK = /^(https?|file):/i;

export function buildAttachmentCard(record, index, { waiting }) {
  const meta = record.attachment;
  const kind = KIND_KEYS[meta.kind] ? meta.kind : "page";
  const title = meta.title || meta.site || meta.url || t("panel_untitled_page");
  const slimming = slimmingOf(record);
  const heading = SAFE_LINK.test(meta.url || "")
    ? el("a", { class: "att-title", href: meta.url, target: "_blank", rel: "noopener noreferrer", title: meta.url, text: title })
    : el("span", { class: "att-title", text: title });
  const body = el("div", { class: "att-body" }, heading, el("span", { class: "att-meta", text: metaLine(meta, record) }));
  const line = slimmingLine(record, slimming, title);
  if (line) body.append(line);
  const card = el(
    "div",
    {
      class: `attachment-card${waiting ? " waiting" : ""}`,
      role: "group",
      "aria-label": t("panel_card_name", kindName(kind), title),
      dataset: { index: String(index), kind, slimming, summaryKey: summaryKey(meta) },
    },
    el("span", { class: "att-icon", "aria-hidden": "true" }, svg(ICONS[kind] || "page")),
    body,
  );
  const actions = el("div", { class: "att-actions" });
  // A data file's card shows the whole file (its `file` field), not the head the model reads.
  const wholeFile = kind === "file" && typeof record.file?.text === "string" ? record.file.text : null;
  const hint = wholeFile === null ? t("panel_view_text_hint") : t("panel_view_file_hint");
  const view = el("button", { type: "button", class: "btn ghost icon", "aria-label": t("panel_view_text"), title: hint }, svg("eye"));
  view.addEventListener("click", () => openViewer(title, wholeFile ?? recordText(record)));
  actions.append(view);
  if (waiting) {
    const remove = el("button", { type: "button", class: "btn ghost icon", "aria-label": t("panel_remove_attachment"), title: t("panel_remove_attachment_hint") }, svg("close"));
    remove.addEventListener("click", () => removeAttachment(index, meta.url, remove));
    actions.append(remove);
  }
  card.append(actions);
  return card;
}

// A summary pass changed: its cards show the new progress, or are built again for their new state.
function repaintCards(key) {
  for (const node of ui.history.querySelectorAll(".attachment-card")) {
    if (node.dataset.summaryKey !== key) continue;
    const index = Number(node.dataset.index);
    const record = state.history[index];
    if (!record || state.bubbles[index]?.node !== node) continue;
    const slimming = slimmingOf(record);
    if (slimming === "summarizing" && node.dataset.slimming === "summarizing") {
      const text = node.querySelector(".att-slimming-text");
      if (text) text.textContent = summarizingText(summaryProgress(key));
      continue;
    }
    const waiting = index >= waitingFrom(state.history);
    const fresh = buildAttachmentCard(record, index, { waiting });
    node.replaceWith(fresh);
    state.bubbles[index] = { sig: attachmentSignature(record, waiting), node: fresh };
  }
}

async function removeAttachment(index, url, button) {
  button.disabled = true;
  try {
    await call("attachment.remove", { index, url });
    announce(t("panel_attachment_removed"));
    ui.message.focus();
  } catch (error) {
    button.disabled = false;
    showAlert(error.message);
  }
}

// "Attach again": a fresh copy of an aged page goes to the end of the conversation.
async function attachAgain(record, button) {
  clearAlert();
  button.disabled = true;
  try {
    const result = await call("attachment.reattach", { capturedAt: record.attachment.capturedAt, url: record.attachment.url });
    announce(result.duplicate ? t("panel_already_attached") : t("panel_attached_again", result.attachment.title || result.attachment.site));
    if (result.summarize) startSummary(result.attachment);
    ui.message.focus();
  } catch (error) {
    showAlert(error.message);
  } finally {
    button.disabled = false;
  }
}

// --- The text viewer: a page's stored text, or its summary ----------------------------------------

function openViewer(title, text) {
  viewerTitle.textContent = title;
  viewerBody.textContent = text;
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
  const slow = setTimeout(() => announce(t("panel_reading_page")), 400);
  try {
    const result = await attachTab({});
    if (result.duplicate) announce(t("panel_already_attached"));
    else announce(t("panel_card_name", kindName(result.attachment.kind), result.attachment.title || result.attachment.site));
    if (result.summarize) startSummary(result.attachment);
  } catch (error) {
    if (error.code === "cancelled") announce(error.message);
    else showAlert(error.message);
  } finally {
    clearTimeout(slow);
    attachButton.disabled = false;
    attachButton.classList.remove("busy");
    attachButton.removeAttribute("aria-busy");
    ui.message.focus();
  }
}

// While attachments wait for a question, the box says what they are: "the attached file", "the 2
// attached pages", "the 3 attachments" (of different kinds).
const ASK_ONE = { page: "panel_ask_one_page", video: "panel_ask_one_video", selection: "panel_ask_one_selection", file: "panel_ask_one_file" };
const ASK_MANY = { page: "panel_ask_attached", video: "panel_ask_videos", selection: "panel_ask_selections", file: "panel_ask_files" };
function composerHint(records) {
  const kinds = records.slice(waitingFrom(records)).map((record) => (ASK_ONE[record.attachment.kind] ? record.attachment.kind : "page"));
  if (!kinds.length) return t("panel_ask_anything");
  const kind = kinds.every((k) => k === kinds[0]) ? kinds[0] : null;
  if (kinds.length === 1) return t(ASK_ONE[kind]);
  return tPlural(kind ? ASK_MANY[kind] : "panel_ask_attachments", kinds.length);
}
export function updateComposerHint(records) {
  ui.message.placeholder = composerHint(records);
}

register({ name: "attachments", init });
