// What the model gets for each attachment card, by the rules of py/margin/turn/slimming.py: its summary
// (once it has one), or a one-line stub once it is cold ("aged"). Pure: no DOM, no listeners;
// tests/unit/test_slimming_js.py runs it in node against the Python module on many conversations.
//
// Rules (mirroring Python exactly):
// 1. Records are read as Python reads them (margin.storage.history.Record.from_json): a record that is not
//    `{role: user|assistant|system, content: string | [{type: string, ...}]}` is left out (it is
//    neither a question nor an attachment), but indices are those of the raw list the panel paints.
// 2. An attachment is a user record whose text starts with `CONTRACT.pageContextPrefix` and that has
//    an `attachment` object; a question is any other user record.
// 3. `sentText` is the stored text, or, with a usable summary, the header, a Note line and the
//    summary (Python's `sent_text`, byte for byte). Lengths count code points, as Python's len().
//    The note's words are the catalogue's (`py_summary_*`), through `say(key, ...subs)`: the
//    panel passes i18n.js `t`, so they are in Margin's language, as Python's are.
// 4. `agedIndices`: the attachments that are not the newest, have at least
//    `CONTRACT.limits.agingMinUserTurns` questions after them, and whose sent text is at least
//    `CONTRACT.limits.agingMinChars` long.

import { CONTRACT } from "../generated/contract.js";

const PREFIX = CONTRACT.pageContextPrefix;
const ROLES = new Set(["user", "assistant", "system"]);
// Python's str.strip() whitespace (str.isspace), which is not quite JS's trim().
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

export function pyStrip(text) {
  return text.replace(PY_STRIP, "");
}

// Python's len(): code points, a surrogate pair counting once.
export function pyLength(text) {
  let length = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--;
        i++;
      }
    }
  }
  return length;
}

// Python's catalogue.Words.number: f"{n:,}" for an int, with the locale's `py_number_group`.
const grouped = (n, say) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, say("py_number_group"));

function isReadable(record) {
  if (!isObject(record) || !ROLES.has(record.role)) return false;
  const content = record.content;
  if (typeof content === "string") return true;
  return Array.isArray(content) && content.every((part) => isObject(part) && typeof part.type === "string");
}

function textOf(record) {
  const content = record.content;
  if (typeof content === "string") return content;
  return content.filter((part) => part.type === "text").map((part) => part.text ?? "").join("\n");
}

export function isSlimmable(record) {
  return isReadable(record) && record.role === "user" && isObject(record.attachment) && textOf(record).startsWith(PREFIX);
}

function isQuestion(record) {
  return isReadable(record) && record.role === "user" && !isSlimmable(record);
}

// The attachment's usable summary, or null (Python's `summary_of`).
export function summaryOf(record) {
  const summary = isObject(record?.attachment) ? record.attachment.summary : undefined;
  return isObject(summary) && typeof summary.text === "string" && pyStrip(summary.text) ? summary : null;
}

// Python's int check: an integer number (a bool is an int there, and formats as 1 or 0).
function pyInt(value) {
  if (typeof value === "boolean") return value ? 1 : 0;
  return typeof value === "number" && Number.isInteger(value) ? value : null;
}

export function sentText(record, say) {
  const text = textOf(record);
  const summary = summaryOf(record);
  if (summary === null) return text;
  const original = pyInt(record.attachment.chars);
  const size = original === null ? "" : say("py_summary_size", grouped(original, say));
  const model = typeof summary.model === "string" && summary.model ? summary.model : say("py_summary_the_model");
  return `${text.split("\n\n", 1)[0]}\n${say("py_summary_note", size, model)}\n\n${pyStrip(summary.text)}`;
}

export function agedIndices(records, say) {
  const list = Array.isArray(records) ? records : [];
  const attachments = [];
  list.forEach((record, index) => {
    if (isSlimmable(record)) attachments.push(index);
  });
  if (!attachments.length) return [];
  const newest = attachments[attachments.length - 1];
  const questionsAfter = new Array(list.length).fill(0);
  let count = 0;
  for (let i = list.length - 1; i >= 0; i--) {
    questionsAfter[i] = count;
    if (isQuestion(list[i])) count++;
  }
  return attachments.filter(
    (i) =>
      i !== newest &&
      questionsAfter[i] >= CONTRACT.limits.agingMinUserTurns &&
      pyLength(sentText(list[i], say)) >= CONTRACT.limits.agingMinChars,
  );
}
