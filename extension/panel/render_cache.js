// The kept render: the sanitized HTML of the last assistant answers, so the next first paint shows
// them as they looked, before the Markdown libraries are loaded (markdown_lite.js).
//
// Rules:
// 1. Stored in the extension page's `localStorage` under `margin.renderCache` (docs/storage-model.md):
//    synchronous to read at first paint, never read by the worker, never part of a backup. The
//    panel still never writes `chrome.storage` (sidepanel.js rule 1): this is a cache only.
// 2. Keyed by the record's identity and a hash of its text (`recordKey`): a changed record gets
//    another key, so it never shows a stale render. Records have no id: the key is
//    `<createdAt>:<text length>:<53-bit hash of the text>`.
// 3. Bounded: at most `MAX_ENTRIES` answers (the newest), each at most `MAX_ENTRY_CHARS`, all together at
//    most `MAX_TOTAL_CHARS`; anything larger is not kept.
// 4. A value is untrusted on read (any code of the extension's origin can write it): it is parsed
//    inert (DOMParser: a document without scripting), shown only if it has the exact shape of the sanitizer's output
//    (`isSanitizedShape`), and replaced by a fresh render from the record once the libraries are
//    loaded (conversation.js), so what stays on screen always came from the sanitizer.
// 5. A storage that throws (full, disabled, corrupt JSON) means no cache, never an error.

import { isSanitizedShape, decorate } from "./markdown_policy.js";
import "./event_handlers.js"; // globalThis.marginWithoutEventHandlers (it is a classic script too)

const KEY = "margin.renderCache";
export const MAX_ENTRIES = 16;
export const MAX_ENTRY_CHARS = 64 * 1024;
const MAX_TOTAL_CHARS = 512 * 1024;

// cyrb53: a fast 53-bit string hash (not cryptographic: rule 4 does not rely on it).
export function hash53(text) {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

export const recordKey = (record, text) => `${Number(record?.createdAt) || 0}:${text.length}:${hash53(text)}`;

let entries = null; // Map key -> html, as read at first use

function read() {
  if (entries) return entries;
  entries = new Map();
  try {
    const value = JSON.parse(localStorage.getItem(KEY) || "null");
    if (value?.v === 1 && Array.isArray(value.entries)) {
      for (const entry of value.entries) {
        if (typeof entry?.k === "string" && typeof entry.html === "string") entries.set(entry.k, entry.html);
      }
    }
  } catch {
    /* rule 5 */
  }
  return entries;
}

// The kept render of `key` as a decorated fragment, or null (none, or not the sanitizer's shape).
export function cachedFragment(key) {
  const html = read().get(key);
  if (html === undefined) return null;
  // A document of its own (no scripting, no loading) until it passes the check; handlers out first,
  // as parsing one is a CSP violation report all the same (event_handlers.js).
  const clean = globalThis.marginWithoutEventHandlers(html);
  const body = new DOMParser().parseFromString(`<!doctype html><body>${clean}`, "text/html").body;
  if (!isSanitizedShape(body)) return null;
  const fragment = document.createDocumentFragment();
  fragment.append(...body.childNodes);
  return decorate(fragment);
}

// Keeps the renders of the newest answers: `kept` is [{key, html}] oldest first (rule 3).
export function keepRenders(kept) {
  const chosen = [];
  let total = 0;
  for (const entry of kept.slice().reverse()) {
    if (chosen.length >= MAX_ENTRIES) break;
    if (entry.html.length > MAX_ENTRY_CHARS || total + entry.html.length > MAX_TOTAL_CHARS) continue;
    chosen.push({ k: entry.key, html: entry.html });
    total += entry.html.length;
  }
  entries = new Map(chosen.map((e) => [e.k, e.html]));
  try {
    localStorage.setItem(KEY, JSON.stringify({ v: 1, entries: chosen }));
  } catch {
    /* rule 5 */
  }
}
