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
// A query word matches where a word starts (margin.sessions.search rule 6: "paris" finds "Paris"
// and "Paris-Match", not "comparison"), except in scripts written without spaces (CJK, Thai, ...),
// where it matches anywhere: `findWord`, the same function as Python's `find_word`. A preview is
// plain text: the Markdown of the answers (`**`, `#`, `|`, links, fences) is taken out
// (`plainText`, the same as Python's `plain_text`), then the highlights are found in it.
//
// API: fold, foldWithMap, queryWords, findWord, plainText, previewFor (the text side);
//      readableIndex, activeAt, sortEntries, searchedName, searchData, matchSessions, narrows,
//      rowFor, searchSessions (the index side).

import { CONTRACT } from "../../generated/contract.js";

const PREVIEW_LENGTH = CONTRACT.limits.previewLength;  // margin.sessions.search.PREVIEW_LENGTH
const PAGE_CONTEXT = CONTRACT.pageContextPrefix;  // margin.storage.history.PAGE_CONTEXT_PREFIX
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

// -- where a word starts (margin.sessions.search `SPACELESS`, `is_word_char`, `find_word`) --------

// Scripts written without spaces between words (Thai, Lao, Tibetan, Myanmar, Khmer, Hangul jamo and
// syllables, kana, CJK ideographs and their symbols): a query word may start anywhere in them.
const SPACELESS = [
  [0x0e00, 0x0eff], [0x0f00, 0x0fff], [0x1000, 0x109f], [0x1100, 0x11ff], [0x1780, 0x17ff],
  [0x2e80, 0x2fdf], [0x3000, 0x31ff], [0x3400, 0x4dbf], [0x4e00, 0x9fff], [0xa960, 0xa97f],
  [0xac00, 0xd7ff], [0xf900, 0xfaff], [0xff65, 0xffdc], [0x20000, 0x3ffff],
];
const WORD_CHAR = /[\p{L}\p{N}]/u;

export function isSpaceless(cp) {
  for (const [low, high] of SPACELESS) if (cp >= low && cp <= high) return true;
  return false;
}

// A letter or a digit (Unicode categories L and N).
export function isWordChar(cp) {
  if (cp < 0x80) return (cp >= 0x30 && cp <= 0x39) || ((cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a);
  return WORD_CHAR.test(String.fromCodePoint(cp));
}

function codePointBefore(text, at) {
  const unit = text.charCodeAt(at - 1);
  return unit >= 0xdc00 && unit <= 0xdfff && at >= 2 ? text.codePointAt(at - 2) : unit;
}

// Whether a word may start at `at` of `text`: at the start, after a character that is no letter or
// digit, or where either neighbour is of a script without spaces; a query word that does not start
// with a letter or digit ("#tag", ".js") matches anywhere.
function startsWord(text, at) {
  if (at === 0) return true;
  const first = text.codePointAt(at);
  const before = codePointBefore(text, at);
  return !isWordChar(before) || !isWordChar(first) || isSpaceless(before) || isSpaceless(first);
}

// The first index >= `from` where `word` occurs in `text` at a word's start, or -1.
export function findWord(text, word, from = 0) {
  for (let at = text.indexOf(word, from); at >= 0; at = text.indexOf(word, at + 1)) {
    if (startsWord(text, at)) return at;
  }
  return -1;
}

function ranges(text, words) {
  const { folded, origin } = foldWithMap(text);
  const spans = [];
  for (const word of words) {
    for (let at = findWord(folded, word); at >= 0; at = findWord(folded, word, at + word.length)) {
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

// -- plain text: a preview without the Markdown (margin.sessions.search `plain_text`) ---------------

const FENCE_LINE = /^[ \t]*(?:\x60{3,}|~{3,})/;  // \x60: the backtick
const RULE_LINE = /^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$|^[ \t]*(?:\*[ \t]*){3,}$|^[ \t]*(?:_[ \t]*){3,}$/;
const LINE_START = /^[ \t]*(?:>[ \t]?)*[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+(?:\[[ xX]\][ \t]+)?)?/;
const IMAGE = /!\[([^\]\n]*)\]\([^)\n]*\)/g;
const LINK = /\[([^\]\n]+)\]\([^)\n]*\)/g;
const CELL_BAR = /(?<![^ \t|])\|(?![^ \t|])/g;
const EMPHASIS = /[*_]+/g;
const blankAt = (cp) => cp === undefined || cp === 0x20 || cp === 0x09;

// Emphasis markers go; a run of * or _ stays between two letters or digits (snake_case, 2*3; not in
// a script without spaces, where words touch) and between two blanks (2 * 3).
function dropEmphasis(line) {
  return line.replace(EMPHASIS, (run, at) => {
    const before = at > 0 ? codePointBefore(line, at) : undefined;
    const after = line.codePointAt(at + run.length);
    const word = (cp) => cp !== undefined && isWordChar(cp) && !isSpaceless(cp);
    return (word(before) && word(after)) || (blankAt(before) && blankAt(after)) ? run : "";
  });
}

export function plainText(text) {
  const lines = text.split("\n").map((line) => {
    if (FENCE_LINE.test(line) || RULE_LINE.test(line)) return "";
    // An attachment's header reads as what it says ("Page: Title"), without the model's marker.
    if (line.startsWith(`${PAGE_CONTEXT} `)) line = line.slice(PAGE_CONTEXT.length + 1);
    line = line.replace(LINE_START, "").replace(IMAGE, "$1").replace(LINK, "$1").replace(CELL_BAR, " ").replace(/\x60/g, "");
    return dropEmphasis(line);
  });
  return oneLine(lines.join("\n")).replace(/ {2,}/g, " ").replace(/^ +| +$/g, "");
}

function firstMatchOffset(digest, foldedDigest, words) {
  let target = -1;
  for (const w of words) {
    const at = findWord(foldedDigest, w);
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

// The raw text read for a preview around a match: Markdown can take half of it.
const PREVIEW_WINDOW = 2 * PREVIEW_LENGTH;

export function previewFor(digest, foldedDigest, words) {
  const offset = words.length ? firstMatchOffset(digest, foldedDigest ?? fold(digest), words) : -1;
  if (offset < 0) return { preview: plainText(digest.slice(0, PREVIEW_LENGTH)), highlights: [] };
  let start = Math.max(0, offset - 40);
  if (start > 0) {
    const space = digest.indexOf(" ", start);
    if (space >= 0 && space < offset) start = space + 1;
  }
  let text = plainText(digest.slice(start, start + PREVIEW_WINDOW));
  const points = Array.from(text);  // cut by code points, as Python does
  const cut = points.length > PREVIEW_LENGTH;
  if (cut) text = points.slice(0, PREVIEW_LENGTH).join("").replace(/ +$/, "");
  const preview = (start > 0 ? "\u2026" : "") + text +
    (cut || start + PREVIEW_WINDOW < digest.length ? "\u2026" : "");
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

// When the conversation was last used (margin.sessions.entries `IndexEntry.active_at`): the time
// of its last message (`activeAt`); an entry saved before that field had it is taken at its last
// save (or its creation).
export function activeAt(entry) {
  if (isNumber(entry.activeAt) && entry.activeAt > 0) return entry.activeAt;
  return Math.max(isNumber(entry.savedAt) ? entry.savedAt : 0, isNumber(entry.createdAt) ? entry.createdAt : 0);
}

export function sortEntries(entries) {
  return [...entries].sort((a, b) => (a.pinned === b.pinned ? 0 : a.pinned ? -1 : 1) ||
    activeAt(b) - activeAt(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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
    return words.every((w) => mayContain(data.filter, w) && findWord(data.haystack, w) >= 0);
  });
}

// A word found where a word starts is found there by each of its beginnings: a query narrows the
// previous one when each earlier word begins a new one.
export function narrows(previousQuery, query) {
  const before = queryWords(previousQuery);
  const now = queryWords(query);
  return before.length > 0 && before.every((w) => now.some((n) => n.startsWith(w)));
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
    activeAt: activeAt(entry), pinned: entry.pinned, preview, damaged: Boolean(entry.damaged),
    damagedReason: entry.damaged ?? null,
    highlights: { name: nameHighlights, preview: highlights },
  };
}

// Every row for `query` (the panel renders them page by page instead).
export function searchSessions(entries, query, dataOf) {
  return matchSessions(entries, query, dataOf).map((entry) => rowFor(entry, query, dataOf));
}
