// "Attach file": a data file the user chooses (CSV, TSV, JSON, Markdown, plain text) becomes an
// attachment record (py/margin/page/data_files.py), shown as a card like an attached page.
//
// Rules:
// 1. The file is read here, in the panel, and decoded as UTF-8 (fatal): a file over
//    `CONTRACT.limits.dataFileMaxBytes`, of another type (a spreadsheet named apart), binary (a
//    NUL) or not UTF-8 is refused with a sentence that says what to do; nothing is sent then.
// 2. Python checks again and stores it (`file.attach`); the card appears when storage changes
//    (attachments.js), and what is announced is the card's name.
// 3. Dropped or pasted files that are data files come here too (composer.js asks `isDataFile`).

import { CONTRACT } from "../generated/contract.js";
import { call, svg } from "../common/ui_common.js";
import { t, formatNumber } from "../common/i18n.js";
import { $, ui, events, showAlert, clearAlert, announce } from "./state.js";
import { register } from "./registry.js";

const MAX_BYTES = CONTRACT.limits.dataFileMaxBytes;
const MAX_MB = Math.floor(MAX_BYTES / (1024 * 1024));
const EXTENSIONS = ["csv", "tsv", "json", "md", "txt"];
const SPREADSHEETS = ["xlsx", "xlsm", "xls", "ods", "numbers"];

const button = $("attach-file");
const input = $("data-file-input");

const extensionOf = (name) => (/\.([^.]+)$/.exec(name || "")?.[1] || "").toLowerCase();

export function isDataFile(file) {
  const ext = extensionOf(file.name);
  return EXTENSIONS.includes(ext) || SPREADSHEETS.includes(ext);
}

export function init() {
  button.append(svg("dataFile"));
  paintTitle();
  events.addEventListener("language-changed", paintTitle);
  button.addEventListener("click", () => input.click());
  input.addEventListener("change", async () => {
    const files = [...input.files];
    input.value = "";
    await attachDataFiles(files);
    ui.message.focus();
  });
}

function paintTitle() {
  button.title = t("panel_attach_file_hint", formatNumber(MAX_MB));
}

// Rule 1: the text of `file`, or a refusal: the function that says it (again, when the language changes).
async function readText(file) {
  const name = file.name;
  const ext = extensionOf(name);
  if (SPREADSHEETS.includes(ext)) return { refusal: () => t("panel_file_spreadsheet", name) };
  if (!EXTENSIONS.includes(ext)) return { refusal: () => t("panel_file_unsupported", name) };
  if (file.size > MAX_BYTES) return { refusal: () => t("panel_file_too_large", name, formatNumber(MAX_MB)) };
  let bytes;
  try {
    bytes = new Uint8Array(await file.arrayBuffer());
  } catch {
    return { refusal: () => t("panel_file_unreadable", name) };
  }
  if (bytes.includes(0)) return { refusal: () => t("panel_file_not_text", name) };
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { refusal: () => t("panel_file_not_text", name) };
  }
}

// The button is busy while files are read and stored (a 5 MB file takes about 2 s).
export async function attachDataFiles(files) {
  clearAlert();
  button.disabled = true;
  button.classList.add("busy");
  button.setAttribute("aria-busy", "true");
  try {
    for (const file of files) await attachOne(file);
  } finally {
    button.disabled = false;
    button.classList.remove("busy");
    button.removeAttribute("aria-busy");
  }
}

async function attachOne(file) {
  const { text, refusal } = await readText(file);
  if (refusal) {
    showAlert(refusal);
    return;
  }
  try {
    const result = await call("file.attach", { name: file.name, text });
    announce(result.duplicate ? t("panel_already_attached") : t("panel_card_name", t("panel_kind_file"), result.attachment.name));
  } catch (error) {
    showAlert(error.message);
  }
}

register({ name: "data-files", init });
