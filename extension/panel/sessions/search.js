// Search over the sessions index, pure: no DOM, no chrome.*, so tests/unit/test_sessions.py runs
// it under node and compares it with Python's.
//
// The fold below is the same function as margin.sessions.search.fold (a pytest compares them over
// every code point), and a row is what `session.list` returns for that session (same preview,
// same highlights; offsets in UTF-16 units here, code points in Python), so both sides find the
// same sessions. Per keystroke the cost is bounded by a per-session bigram filter (`searchData`),
// built once per session by the search worker's engine (extension/panel/sessions/search_engine.js), or
// by extension/panel/sessions/preload.js when search runs on the page's main thread. An entry of the index carries only
// its digest's head (`digestHead`, the preview without a query); the digest itself comes apart
// (`sessionDigest_<id>`) and `dataOf(entry)` hands it over with the search data.
//
// The name searched and highlighted is the one the user reads (margin.sessions.search rule 6): an
// untitled session (stored under the English sentinel, margin.sessions.entries rule 3) is searched
// as `untitledName`, the catalogue's `py_session_untitled` in the language of the moment. This
// module has no i18n: the panel hands the word over with each search (`searchData`'s argument),
// and the search data made with it holds the name it searched (`name`), which `rowFor`
// highlights; a row's `name` stays the stored one.
//
// API: fold, foldWithMap, queryWords, previewFor (the text side); readableIndex, sortEntries,
//      searchedName, searchData, matchSessions, narrows, rowFor, searchSessions (the index side).

import { CONTRACT } from "../../generated/contract.js";

const PREVIEW_LENGTH = CONTRACT.limits.previewLength;  // margin.sessions.search.PREVIEW_LENGTH
const UNTITLED = CONTRACT.storedNames.untitledSession;  // margin.sessions.entries.UNTITLED

const MARKS = /\p{M}/gu;
// An alternation, not a class: U+0345 is a combining mark, which a class would mix up with its base.
const EXTRA_FOLD_CHARS = /\u00df|\u03c2|\u0345/g;
const EXTRA_FOLDS = { "\u00df": "ss", "\u03c2": "\u03c3", "\u0345": "\u03b9" };
// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range starts at NUL on purpose.
const ASCII_ONLY = /^[\x00-\x7f]*$/;

export function fold(text) {
  if (ASCII_ONLY.test(text)) return text.toLowerCase();
  return text.normalize("NFKD").toLowerCase().replace(EXTRA_FOLD_CHARS, (c) => EXTRA_FOLDS[c])
    .normalize("NFKD").replace(MARKS, "");
}

// fold(text) plus, for each folded UTF-16 unit, the index in `text` of the character it came from.
export function foldWithMap(text) {
  let folded = "";
  const origin = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i);
    const width = cp > 0xffff ? 2 : 1;
    const piece = fold(text.slice(i, i + width));
    folded += piece;
    for (let k = 0; k < piece.length; k++) origin.push(i);
    i += width;
  }
  return { folded, origin };
}

export function queryWords(query) {
  return fold(query || "").split(/\s+/).filter(Boolean);
}

function ranges(text, words) {
  const { folded, origin } = foldWithMap(text);
  const spans = [];
  for (const word of words) {
    for (let at = folded.indexOf(word); at >= 0; at = folded.indexOf(word, at + word.length)) {
      const last = origin[at + word.length - 1];
      const lastWidth = text.codePointAt(last) > 0xffff ? 2 : 1;
      spans.push([origin[at], last + lastWidth]);
    }
  }
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged = [];
  for (const [s, e] of spans) {
    if (merged.length && s <= merged[merged.length - 1][1]) {
      merged[merged.length - 1][1] = Math.max(merged[merged.length - 1][1], e);
    } else merged.push([s, e]);
  }
  return merged;
}

const oneLine = (text) => text.replace(/\s/g, " ");

function firstMatchOffset(digest, foldedDigest, words) {
  let target = -1;
  for (const w of words) {
    const at = foldedDigest.indexOf(w);
    if (at >= 0 && (target < 0 || at < target)) target = at;
  }
  if (target < 0) return -1;
  if (foldedDigest.length === digest.length && ASCII_ONLY.test(digest)) return target;
  // fold is character-wise: skip whole chunks by their folded length, then walk characters.
  let position = 0;
  const size = 256;
  for (let start = 0; start < digest.length; ) {
    let end = Math.min(start + size, digest.length);
    if (end < digest.length && /[\ud800-\udbff]/.test(digest[end - 1])) end += 1;  // keep pairs whole
    const foldedLength = fold(digest.slice(start, end)).length;
    if (position + foldedLength > target) {
      for (let i = start; i < end; ) {
        const width = digest.codePointAt(i) > 0xffff ? 2 : 1;
        position += fold(digest.slice(i, i + width)).length;
        if (position > target) return i;
        i += width;
      }
    }
    position += foldedLength;
    start = end;
  }
  return -1;
}

export function previewFor(digest, foldedDigest, words) {
  const offset = words.length ? firstMatchOffset(digest, foldedDigest ?? fold(digest), words) : -1;
  if (offset < 0) return { preview: oneLine(digest.slice(0, PREVIEW_LENGTH)).trim(), highlights: [] };
  let start = Math.max(0, offset - 40);
  if (start > 0) {
    const space = digest.indexOf(" ", start);
    if (space >= 0 && space < offset) start = space + 1;
  }
  const preview = (start > 0 ? "\u2026" : "") + oneLine(digest.slice(start, start + PREVIEW_LENGTH)) +
    (start + PREVIEW_LENGTH < digest.length ? "\u2026" : "");
  return { preview, highlights: ranges(preview, words) };
}

function isNumber(v) { return typeof v === "number" && Number.isFinite(v); }

// The index entries the panel shows, from the raw stored value; null when Python must repair it.
export function readableIndex(raw) {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return null;
  const seen = new Set();
  for (const e of raw) {
    if (!e || typeof e !== "object" || "history" in e || typeof e.id !== "string" || !e.id ||
        seen.has(e.id) || typeof e.name !== "string" || typeof e.digestHead !== "string" || "textDigest" in e ||
        !isNumber(e.createdAt) || typeof e.pinned !== "boolean") return null;
    seen.add(e.id);
  }
  return raw;
}

export function sortEntries(entries) {
  const active = (e) => Math.max(isNumber(e.savedAt) ? e.savedAt : 0, e.createdAt);
  return [...entries].sort((a, b) => (a.pinned === b.pinned ? 0 : a.pinned ? -1 : 1) ||
    active(b) - active(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

// The name search matches and highlights (margin.sessions.search `searched_name`): `untitledName`
// for an untitled session (not `named` by the user, stored under the sentinel), else the stored
// name. Without a word the sentinel is searched as it is (it is the English word).
export function searchedName(entry, untitledName = UNTITLED) {
  return untitledName && entry.named !== true && entry.name === UNTITLED ? untitledName : entry.name;
}

// Per-session search data: the name searched, the digest, the folded name + digest and a
// 4096-bit bigram filter over it. A cache of it is valid while the searched name is the same.
const FILTER_BITS = 4096;
function bigram(a, b) { return ((a * 31) ^ b) & (FILTER_BITS - 1); }

export function searchData(entry, digest = "", untitledName = UNTITLED) {
  const name = searchedName(entry, untitledName);
  const haystack = fold(name) + "\n" + fold(digest);
  const filter = new Uint32Array(FILTER_BITS / 32);
  for (let i = 1; i < haystack.length; i++) {
    const h = bigram(haystack.charCodeAt(i - 1), haystack.charCodeAt(i));
    filter[h >>> 5] |= 1 << (h & 31);
  }
  return { name, digest, haystack, filter };
}

function mayContain(filter, word) {
  for (let i = 1; i < word.length; i++) {
    const h = bigram(word.charCodeAt(i - 1), word.charCodeAt(i));
    if (!(filter[h >>> 5] & (1 << (h & 31)))) return false;
  }
  return true;
}

// The sessions matching `query`, pinned first then newest (no previews yet: that is `rowFor`).
// `within`: a previous result to narrow, valid when every earlier word is inside a new word (and
// the untitled word the same). dataOf(entry) -> searchData(entry, its digest, the untitled word).
export function matchSessions(entries, query, dataOf, within = null) {
  const words = queryWords(query);
  const sorted = within ?? sortEntries(entries);
  if (!words.length) return sorted;
  return sorted.filter((entry) => {
    const data = dataOf(entry);
    return words.every((w) => mayContain(data.filter, w) && data.haystack.includes(w));
  });
}

export function narrows(previousQuery, query) {
  const before = queryWords(previousQuery);
  const now = queryWords(query);
  return before.length > 0 && before.every((w) => now.some((n) => n.includes(w)));
}

// One row of the list: what session.list returns for it (same preview and highlights). Its
// `name` is the stored name; `highlights.name` are ranges of the name searched (`data.name`).
export function rowFor(entry, query, dataOf) {
  const words = queryWords(query);
  let digest = entry.digestHead;
  let foldedDigest = null;
  let nameHighlights = [];
  if (words.length) {
    const data = dataOf(entry);
    digest = data.digest;
    foldedDigest = data.haystack.slice(data.haystack.indexOf("\n") + 1);
    nameHighlights = ranges(data.name, words);
  }
  const { preview, highlights } = previewFor(digest, foldedDigest, words);
  return {
    id: entry.id, name: entry.name, named: entry.named === true, createdAt: entry.createdAt, savedAt: entry.savedAt ?? 0,
    pinned: entry.pinned, preview, damaged: Boolean(entry.damaged),
    damagedReason: entry.damaged ?? null,
    highlights: { name: nameHighlights, preview: highlights },
  };
}

// Every row for `query` (the panel renders them page by page instead).
export function searchSessions(entries, query, dataOf) {
  return matchSessions(entries, query, dataOf).map((entry) => rowFor(entry, query, dataOf));
}
