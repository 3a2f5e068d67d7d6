// Attach a tab, PDF tabs included: `attachTab(payload)` is `call("tab.attach", payload)` for every
// caller (Attach page, Attach tabs), and it carries the PDF phases of py/margin/page/pdf.py (rule
// 1) through the PDF worker (panel/pdf/worker.js) when the tab shows a PDF.
//
// Rules:
// 1. A reply `{pdf}` means "the panel reads this PDF": a card "Reading PDF: <title>" (a `group`)
//    appears above the composer with its progress ("Downloading…", then "Page 12 of 300") and
//    "Cancel reading"; it goes when the PDF is attached, refused or cancelled.
// 2. The worker downloads the bytes and says their digest; Python answers from its site cache, or
//    asks for the text (`extract`), and the worker reads it page by page. Every phase is the same
//    request, `tab.attach {tabId, pdf}`; the last reply is the ordinary one (the stored card).
// 3. The worker's problem (encrypted, a scan, damaged, too big, not a PDF, unreachable) goes to
//    Python, which says it in one sentence: the error `attachTab` throws. Cancel throws an
//    error with code "cancelled" and stores nothing; callers stay quiet about it.
// 4. Several PDFs may be read at once (Attach tabs): each has its own worker and card.

import { call, el, svg } from "../common/ui_common.js";
import { t } from "../common/i18n.js";
import { $, announce } from "./state.js";

// Thrown like common/ui_common.js's errors: a `.code` and a sentence.
class ReadError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

let tray = null;
// Rule 1: the cards live in their own list above the composer (the conversation repaints itself).
function cardTray() {
  if (tray?.isConnected) return tray;
  tray = el("div", { class: "pdf-reads", id: "pdf-reads" });
  const alert = $("alert-box");
  alert.parentNode.insertBefore(tray, alert);
  return tray;
}

function readingCard(title, onCancel) {
  const status = el("span", { class: "att-slimming-text", text: t("panel_pdf_downloading") });
  const cancel = el("button", { type: "button", class: "btn ghost small", text: t("panel_cancel_pdf"), title: t("panel_cancel_pdf_hint") });
  cancel.addEventListener("click", onCancel);
  const card = el(
    "div",
    { class: "attachment-card waiting pdf-reading", role: "group", "aria-label": t("panel_reading_pdf_card", title) },
    el("span", { class: "att-icon", "aria-hidden": "true" }, svg("page")),
    el("div", { class: "att-body" }, el("span", { class: "att-title", text: title }), el("div", { class: "att-slimming" }, status, cancel)),
  );
  cardTray().append(card);
  return {
    progress: (done, total) => (status.textContent = t("panel_pdf_progress", String(done), String(total))),
    remove: () => card.remove(),
  };
}

// Rule 2: one reading, driven by the worker's messages.
const REPLIES = new Set(["fetched", "text", "problem"]);
function startWorker() {
  const worker = new Worker(new URL("/panel/pdf/worker.js", import.meta.url), { type: "module" });
  let waiter = null;
  let onProgress = () => {};
  const fail = (message) => waiter?.reject(new ReadError("pdf_worker", message));
  worker.onmessage = (event) => {
    const message = event.data || {};
    if (message.type === "progress") onProgress(message.done, message.total);
    else if (REPLIES.has(message.type)) waiter?.resolve(message);
  };
  worker.onerror = (event) => {
    event.preventDefault();
    fail(t("common_failed"));
  };
  return {
    ask(message, progress = () => {}) {
      onProgress = progress;
      return new Promise((resolve, reject) => {
        waiter = { resolve, reject };
        worker.postMessage(message);
      });
    },
    cancel() {
      worker.terminate();
      waiter?.reject(new ReadError("cancelled", t("panel_pdf_cancelled")));
    },
    close: () => worker.terminate(),
  };
}

async function readPdf(info) {
  const base = { tabId: info.tabId };
  const request = (pdf) => call("tab.attach", { ...base, pdf: { url: info.url, title: info.title, ...pdf } });
  const worker = startWorker();
  const card = readingCard(info.title, () => worker.cancel());
  announce(t("panel_reading_pdf_card", info.title));
  try {
    const fetched = await worker.ask({ type: "fetch", url: info.url, maxBytes: info.maxBytes });
    if (fetched.type === "problem") return await request(fetched); // rule 3: Python says it
    const known = { digest: fetched.digest, bytes: fetched.bytes };
    const cached = await request(known);
    if (!cached?.pdf?.extract) return cached;
    const read = await worker.ask({ type: "extract", maxChars: cached.pdf.maxChars }, card.progress);
    if (read.type === "problem") return await request({ ...known, ...read });
    const { pages, pageCount, pagesRead } = read;
    // The document's own title, as Chrome's viewer shows it once loaded; else the tab's.
    return await request({ ...known, title: read.title || info.title, pages, pageCount, pagesRead });
  } finally {
    worker.close();
    card.remove();
  }
}

// What every "attach this tab" goes through.
export async function attachTab(payload = {}) {
  const result = await call("tab.attach", payload);
  return result?.pdf ? readPdf(result.pdf) : result;
}
