// The PDF worker: a dedicated module worker of the side panel that downloads a PDF and reads its
// text with Mozilla's pdf.js (py/margin/page/pdf.py, rule 1), so neither the panel's main thread
// nor the service worker's Python ever parses a PDF. The panel's side is panel/pdf_attach.js.
//
// Rules:
// 1. Messages in: {type: "fetch", url, maxBytes}, then (when Python has no cached text for those
//    bytes) {type: "extract", maxChars}. Out: {type: "fetched", digest, bytes}, {type: "progress",
//    done, total}, {type: "text", pages, pageCount, pagesRead, title}, or {type: "problem",
//    problem, status?, bytes?} (panel/pdf/extract.js's kinds, plus `unreachable` and `too_big`).
// 2. The bytes are fetched by Margin itself (Chrome's viewer cannot be scripted), from the HTTP
//    cache when it holds them (`cache: "force-cache"`), with the site's cookies as the viewer
//    had them; a file:// PDF through XMLHttpRequest (fetch has no file: scheme), which Chrome
//    allows only when the user turned on file access. More than `maxBytes` is never read: a
//    Content-Length over it is refused before the body, a longer body as soon as it passes it.
// 3. pdf.js parses in this thread (its "fake worker": pdf.worker.min.mjs imported here, so one
//    thread holds the document). Imported into a worker, pdf.worker also answers on this
//    worker's own port (a "ready" message the panel ignores; it ignores ours). Cancel is the panel
//    terminating this worker.
// 4. Reading stops once the pages read hold `maxChars` characters; the rest is counted, not read.

import * as pdfjs from "../../vendor/pdfjs/pdf.min.mjs";
import * as pdfjsWorker from "../../vendor/pdfjs/pdf.worker.min.mjs";
import { extractPdf, PdfProblem } from "./extract.js";

globalThis.pdfjsWorker = pdfjsWorker; // rule 3
const CMAPS = new URL("/vendor/pdfjs/cmaps/", import.meta.url).href;

let bytes = null;

function readFile(url, maxBytes) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("GET", url);
    xhr.responseType = "arraybuffer";
    xhr.onload = () => {
      const data = xhr.response ? new Uint8Array(xhr.response) : null;
      if (!data || (xhr.status !== 0 && xhr.status !== 200)) reject(new PdfProblem("unreachable"));
      else if (data.byteLength > maxBytes) reject(Object.assign(new PdfProblem("too_big"), { bytes: data.byteLength }));
      else resolve(data);
    };
    xhr.onerror = () => reject(new PdfProblem("unreachable"));
    xhr.send();
  });
}

// Rule 2.
async function download(url, maxBytes) {
  if (/^file:/i.test(url)) return readFile(url, maxBytes);
  let response;
  try {
    response = await fetch(url, { cache: "force-cache", credentials: "include", redirect: "follow" });
  } catch {
    throw new PdfProblem("unreachable");
  }
  if (!response.ok) {
    response.body?.cancel().catch(() => {});
    throw Object.assign(new PdfProblem("unreachable"), { status: response.status });
  }
  const declared = Number(response.headers.get("Content-Length"));
  if (declared > maxBytes) {
    response.body?.cancel().catch(() => {});
    throw Object.assign(new PdfProblem("too_big"), { bytes: declared });
  }
  const chunks = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    let step;
    try {
      step = await reader.read();
    } catch {
      throw new PdfProblem("damaged"); // the connection broke mid-file: what arrived is cut short
    }
    if (step.done) break;
    size += step.value.byteLength;
    if (size > maxBytes) {
      reader.cancel().catch(() => {});
      throw new PdfProblem("too_big");
    }
    chunks.push(step.value);
  }
  const data = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    data.set(chunk, at);
    at += chunk.byteLength;
  }
  return data;
}

async function sha256(data) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

function problem(error) {
  const kind = error instanceof PdfProblem ? error.kind : "damaged";
  const message = { type: "problem", problem: kind };
  if (Number.isInteger(error?.status)) message.status = error.status;
  if (Number.isFinite(error?.bytes)) message.bytes = error.bytes;
  postMessage(message);
}

async function onFetch({ url, maxBytes }) {
  bytes = await download(String(url), Number(maxBytes));
  postMessage({ type: "fetched", digest: await sha256(bytes), bytes: bytes.byteLength });
}

async function onExtract({ maxChars }) {
  if (!bytes) throw new PdfProblem("damaged");
  const data = bytes;
  bytes = null; // pdf.js may take the buffer over
  const result = await extractPdf(pdfjs, data, {
    cMapUrl: CMAPS,
    maxChars: Number(maxChars) || Number.POSITIVE_INFINITY,
    onProgress: (done, total) => postMessage({ type: "progress", done, total }),
  });
  postMessage({ type: "text", ...result });
}

self.addEventListener("message", (event) => {
  const message = event.data || {};
  const run = message.type === "fetch" ? onFetch : message.type === "extract" ? onExtract : null;
  if (run) run(message).catch(problem);
});
