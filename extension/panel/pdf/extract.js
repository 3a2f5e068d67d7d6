// A PDF's bytes to its text with Mozilla's pdf.js: open the document, read each page's text
// content, lay it out (panel/pdf/text.js). The pdf.js module is passed in, so the PDF worker
// (panel/pdf/worker.js) and the unit tests under node run the same code.
//
// Rules:
// 1. The bytes must start like a PDF ("%PDF-" in the first 1,024 bytes, as readers allow):
//    anything else (an HTML page at an address ending in .pdf, a login page) is `not_pdf`.
// 2. What cannot be read is one of a few kinds, never pdf.js's message: `encrypted` (a password is
//    needed to open it), `damaged` (pdf.js cannot parse it, or a page of it), `no_text` (no page has
//    a text layer: a scan), `cancelled` (the user pressed Cancel).
// 3. `onProgress(done, total)` follows every page; `isCancelled()` is asked between pages.
// 4. Reading stops after the page that brings the text to `maxChars` characters: `pagesRead`
//    says how far it got, `pageCount` how many pages the document has.

import { documentText, pageLines } from "./text.js";

export class PdfProblem extends Error {
  constructor(kind, detail = "") {
    super(kind);
    this.kind = kind;
    this.detail = detail;
  }
}

const MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d]; // "%PDF-"

// Rule 1.
export function looksLikePdf(bytes) {
  const end = Math.min(bytes.length - MAGIC.length, 1024);
  for (let i = 0; i <= end; i++) {
    if (MAGIC.every((b, k) => bytes[i + k] === b)) return true;
  }
  return false;
}

const metaTitle = (info) => (typeof info?.Title === "string" ? info.Title.trim() : "");

// Rules 2 to 4. `options` = {cMapUrl, maxChars, onProgress, isCancelled}.
export async function extractPdf(pdfjs, bytes, options = {}) {
  const { onProgress = () => {}, isCancelled = () => false, maxChars = Number.POSITIVE_INFINITY } = options;
  if (!looksLikePdf(bytes)) throw new PdfProblem("not_pdf");
  const task = pdfjs.getDocument({
    data: bytes,
    cMapUrl: options.cMapUrl,
    cMapPacked: true,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
    verbosity: 0,
  });
  let doc;
  try {
    doc = await task.promise;
  } catch (error) {
    if (error?.name === "PasswordException") throw new PdfProblem("encrypted");
    throw new PdfProblem("damaged", String(error?.message || error));
  }
  try {
    const total = doc.numPages;
    const lines = [];
    let chars = 0;
    onProgress(0, total);
    for (let n = 1; n <= total; n++) {
      if (isCancelled()) throw new PdfProblem("cancelled");
      let page;
      try {
        page = await doc.getPage(n);
        const content = await page.getTextContent();
        const pageLinesOf = pageLines(content.items);
        for (const l of pageLinesOf) chars += l.text.length;
        lines.push(pageLinesOf);
      } catch (error) {
        if (error instanceof PdfProblem) throw error;
        throw new PdfProblem("damaged", String(error?.message || error));
      } finally {
        page?.cleanup();
      }
      onProgress(n, total);
      if (chars >= maxChars) break;
    }
    if (!chars) throw new PdfProblem("no_text", String(total));
    const meta = await doc.getMetadata().catch(() => null);
    return { pages: documentText(lines), pageCount: total, pagesRead: lines.length, title: metaTitle(meta?.info) };
  } finally {
    await doc.destroy().catch(() => {});
  }
}
