// The sessions panel: list, search as you type, open, rename, pin, delete (with undo), export,
// and the whole-backup export/import.
//
// API: preloadSessions({storage, readIndex}) -> Promise
//        reads the index in idle time and keeps it in step with storage.onChanged (the change's
//        newValue, never a re-read), then prepares the search data in idle slices. The side panel
//        calls it once after its first paint, so "Sessions" opens as a paint from memory.
//      mountSessionsPanel(root, {call, onOpened, onClose, readIndex, storage}) -> controller
//   call(name, payload)  sends a request of docs/protocol.md and returns its `value`, or throws an
//                        Error carrying `.code` and `.message`.
//   onOpened(id)         called after "Open" made a session the current conversation.
//   onClose()            called by the panel's "Close" button (default: hide the root).
//   readIndex()          resolves to the raw `savedSessions` value; defaults to reading
//                        chrome.storage.local directly (pages may read storage, never write it).
//   storage              the chrome.storage-like object whose onChanged keeps the list fresh.
// controller = {show(), hide(), refresh(), search(query), destroy()}; `search` runs what typing in
// "Search sessions" runs, synchronously, and returns the number of matches (the bench times it).
// After a change request the list follows storage.onChanged; it never re-reads the index itself.
// Each show() also sends `session.list` in the background: Python checks that every body key
// exists (key names only) and marks a lost one damaged in the index, which onChanged then paints.
//
// Where search runs: here, in the page, over the index read once from storage. Python
// (margin.sessions) owns every write and the migration; asking it per keystroke would move the
// whole index (up to 1,000 x 100K characters) through the worker each time. The fold below is
// the same function as margin.sessions.fold (a pytest compares them over every code point), so
// both sides find the same sessions. Per keystroke the cost is bounded by a per-session bigram
// filter built once, in idle slices, after the list is painted.

import { CONTRACT } from "./generated/contract.js";

const SAVED_SESSIONS = CONTRACT.storage.keys.savedSessions;
const PREVIEW_LENGTH = 140;
const UNDO_TOAST_MS = 8000;
const UNDO_WINDOW_MS = 10_000;  // margin.sessions.UNDO_MS
const PAGE_SIZE = 20;  // rows built per page: a side panel shows ~8; more follow as the list scrolls
const VERIFY_EVERY_MS = 60_000;

// ---- search (pure; also imported by tests under node) -------------------------------------------

const MARKS = /\p{M}/gu;
const EXTRA_FOLD_CHARS = /[\u00df\u03c2\u0345]/g;
const EXTRA_FOLDS = { "\u00df": "ss", "\u03c2": "\u03c3", "\u0345": "\u03b9" };
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
        seen.has(e.id) || typeof e.name !== "string" || typeof e.textDigest !== "string" ||
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

// Per-session search data: the folded name + digest and a 4096-bit bigram filter over it.
const FILTER_BITS = 4096;
function bigram(a, b) { return ((a * 31) ^ b) & (FILTER_BITS - 1); }

export function searchData(entry) {
  const haystack = fold(entry.name) + "\n" + fold(entry.textDigest);
  const filter = new Uint32Array(FILTER_BITS / 32);
  for (let i = 1; i < haystack.length; i++) {
    const h = bigram(haystack.charCodeAt(i - 1), haystack.charCodeAt(i));
    filter[h >>> 5] |= 1 << (h & 31);
  }
  return { haystack, filter };
}

function mayContain(filter, word) {
  for (let i = 1; i < word.length; i++) {
    const h = bigram(word.charCodeAt(i - 1), word.charCodeAt(i));
    if (!(filter[h >>> 5] & (1 << (h & 31)))) return false;
  }
  return true;
}

// The sessions matching `query`, pinned first then newest (no previews yet: that is `rowFor`).
// `within`: a previous result to narrow, valid when every earlier word is inside a new word.
export function matchSessions(entries, query, dataOf = searchData, within = null) {
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

// One row of the list: what session.list returns for it (same preview and highlights).
export function rowFor(entry, query, dataOf = null) {
  const words = queryWords(query);
  let foldedDigest = null;
  if (words.length && dataOf) {
    const haystack = dataOf(entry).haystack;
    foldedDigest = haystack.slice(haystack.indexOf("\n") + 1);
  }
  const { preview, highlights } = previewFor(entry.textDigest, foldedDigest, words);
  return {
    id: entry.id, name: entry.name, createdAt: entry.createdAt, savedAt: entry.savedAt ?? 0,
    pinned: entry.pinned, preview, damaged: Boolean(entry.damaged),
    damagedReason: entry.damaged ?? null,
    highlights: { name: words.length ? ranges(entry.name, words) : [], preview: highlights },
  };
}

// Every row for `query` (the panel renders them page by page instead).
export function searchSessions(entries, query, dataOf = searchData) {
  return matchSessions(entries, query, dataOf).map((entry) => rowFor(entry, query, dataOf));
}

// ---- the panel (DOM) ---------------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else if (value !== false && value != null) node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function marked(text, spans) {
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of spans) {
    if (start > at) fragment.append(text.slice(at, start));
    fragment.append(el("mark", { text: text.slice(start, end) }));
    at = end;
  }
  fragment.append(text.slice(at));
  return fragment;
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
function when(row) {
  const ms = Math.max(row.savedAt || 0, row.createdAt || 0);
  return ms ? dateFormat.format(new Date(ms)) : "Date unknown";
}

function download({ filename, mimeType, text }) {
  const url = URL.createObjectURL(new Blob([text], { type: mimeType }));
  const link = el("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function defaultReadIndex() {
  return chrome.storage.local.get(SAVED_SESSIONS).then((got) => got[SAVED_SESSIONS]);
}

// ---- the index in memory (one per page, shared by every mounted panel) ---------------------------

const index = {
  entries: null,          // the readable index; null until read, or while Python must repair it
  version: 0,             // bumped at every new value
  loading: null,          // the read in flight
  readIndex: defaultReadIndex,
  following: false,
  listeners: new Set(),   // called after each new value
  cache: new Map(),       // id -> {key, data}: folded text + bigram filter
  warmHandle: 0,
  verifiedAt: -Infinity,  // the last background session.list (bodies checked)
  // For the bench and for honest figures: the cold read and the idle preparation.
  timings: { readMs: null, prepareMs: null, prepareBusyMs: null, prepared: 0 },
};

function dataOf(entry) {
  const key = `${entry.name}\u0000${entry.savedAt ?? 0}\u0000${entry.textDigest.length}`;
  const hit = index.cache.get(entry.id);
  if (hit && hit.key === key) return hit.data;
  const data = searchData(entry);
  index.cache.set(entry.id, { key, data });
  return data;
}

function setIndex(raw) {
  index.entries = readableIndex(raw);
  index.version++;
  warmIndex();
  for (const listener of index.listeners) listener();
}

function readStoredIndex() {
  if (!index.loading) {
    const version = index.version;
    const started = performance.now();
    index.loading = Promise.resolve(index.readIndex()).then((raw) => {
      index.timings.readMs = performance.now() - started;
      if (index.version === version) setIndex(raw);  // a change that arrived meanwhile is newer
    }).finally(() => { index.loading = null; });
  }
  return index.loading;
}

function follow(storage) {
  if (index.following || !storage?.onChanged) return;
  index.following = true;
  storage.onChanged.addListener((changes, areaName) => {
    if (areaName === "local" && SAVED_SESSIONS in changes) setIndex(changes[SAVED_SESSIONS].newValue);
  });
}

// Build the search data in idle slices, so the first keystroke is as fast as the others.
function warmIndex() {
  cancelIdle(index.warmHandle);
  const entries = index.entries ?? [];
  const live = new Set(entries.map((e) => e.id));
  for (const id of index.cache.keys()) if (!live.has(id)) index.cache.delete(id);
  let i = 0;
  const started = performance.now();
  let busy = 0;
  const step = (deadline) => {
    const sliceStart = performance.now();
    let count = 0;  // without requestIdleCallback: 20 sessions per task
    const more = () => (deadline ? deadline.timeRemaining() > 2 : count++ < 20);
    while (i < entries.length && more()) dataOf(entries[i++]);
    busy += performance.now() - sliceStart;
    index.timings.prepared = i;
    if (i < entries.length) index.warmHandle = requestIdle(step);
    else Object.assign(index.timings, { prepareMs: performance.now() - started, prepareBusyMs: busy });
  };
  index.warmHandle = requestIdle(step);
}

export function preloadSessions({ storage = globalThis.chrome?.storage, readIndex = null } = {}) {
  if (readIndex) index.readIndex = readIndex;
  follow(storage);
  if (index.entries !== null) return Promise.resolve();
  if (index.loading) return index.loading;
  return new Promise((resolve) => requestIdle(() => readStoredIndex().then(resolve, resolve)));
}

export function sessionsIndexTimings() {
  return { ...index.timings, sessions: index.entries?.length ?? null, version: index.version };
}

let lastMounted = null;
export function activePanel() { return lastMounted; }

export function mountSessionsPanel(root, options) {
  const { call, onOpened = () => {}, onClose = null } = options;
  const storage = options.storage ?? globalThis.chrome?.storage;
  if (options.readIndex) index.readIndex = options.readIndex;
  follow(storage);
  const entriesNow = () => index.entries ?? [];
  let query = "";
  let renaming = null;          // id being renamed
  let toastTimer = 0;
  let destroyed = false;
  let repairing = null;         // the session.list call that repairs an unreadable index

  const search = el("input", {
    type: "search", class: "sp-search", "aria-label": "Search sessions", placeholder: "Search sessions",
    autocomplete: "off", spellcheck: "false",
    oninput: () => { query = search.value; scheduleRender(); },
    onkeydown: (event) => { if (event.key === "Escape" && search.value) { event.stopPropagation(); search.value = ""; query = ""; scheduleRender(); } },
  });
  const list = el("ul", { class: "sp-list", role: "list", "aria-label": "Saved sessions" });
  const empty = el("p", { class: "sp-empty", hidden: true });
  const alertBox = el("div", { class: "sp-alert", role: "alert" });
  const toastText = el("span");
  const undoButton = el("button", { type: "button", class: "sp-toast-undo", text: "Undo" });
  const toast = el("div", { class: "sp-toast", role: "status", hidden: true }, toastText, undoButton);
  const includeKeys = el("input", { type: "checkbox", class: "sp-check" });
  const fileInput = el("input", { type: "file", accept: ".json,application/json", hidden: true,
    onchange: () => importBackup() });
  const status = el("p", { class: "sp-status", role: "status" });

  const panel = el("section", { class: "sp", "aria-label": "Sessions" },
    el("header", { class: "sp-head" },
      el("h2", { class: "sp-title", text: "Sessions" }),
      el("button", { type: "button", class: "sp-icon", "aria-label": "Close sessions", text: "\u00d7",
        onclick: () => (onClose ? onClose() : controller.hide()) })),
    el("div", { class: "sp-searchbar" }, search),
    alertBox,
    list,
    empty,
    el("footer", { class: "sp-foot" },
      el("div", { class: "sp-backup" },
        el("button", { type: "button", class: "sp-btn", text: "Export backup", onclick: () => exportBackup() }),
        el("label", { class: "sp-check-label" }, includeKeys, " Include API keys")),
      el("button", { type: "button", class: "sp-btn", text: "Import backup", onclick: () => fileInput.click() }),
      fileInput, status),
    toast);
  root.classList.add("sp-root");
  root.replaceChildren(panel);

  function showError(error) {
    alertBox.textContent = error?.message || "Something went wrong. Try again.";
  }
  function clearError() { alertBox.textContent = ""; }

  async function guarded(action) {
    clearError();
    try { return await action(); } catch (error) { showError(error); return undefined; }
  }

  // The index in memory, read (and repaired by Python when it is legacy or damaged) if need be.
  async function ensureLoaded() {
    if (index.entries === null) await readStoredIndex();
    if (index.entries === null) await repair();
  }

  function repair() {
    // Legacy or damaged index: Python migrates and repairs it; onChanged brings the result.
    repairing ??= call("session.list", {})
      .then(() => (index.entries === null ? readStoredIndex() : undefined))
      .finally(() => { repairing = null; });
    return repairing;
  }

  // Python checks the bodies exist (key names only) and marks lost ones damaged; never blocks.
  // Bodies go missing when Chrome repairs its database (at start-up), so once a minute is plenty.
  function verifyInBackground() {
    if (performance.now() - index.verifiedAt < VERIFY_EVERY_MS) return;
    index.verifiedAt = performance.now();
    call("session.list", {}).catch((error) => console.warn("session.list:", error?.code, error?.message));
  }

  const onIndexChanged = () => {
    lastMatched = null;  // the entries changed: narrowing restarts
    if (destroyed || root.hidden) return;
    if (index.entries === null) { repair().catch(showError); return; }
    if (renaming === null) render();
  };
  index.listeners.add(onIndexChanged);

  let frame = 0;
  function scheduleRender() {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; render(); });
  }

  // Rows are built a page at a time: a query matching 1,000 sessions costs one page of
  // previews, the rest follow as the list scrolls.
  let matched = [];
  let shown = 0;
  let lastQuery = "";
  let lastMatched = null;
  const more = el("li", { class: "sp-more", role: "presentation" },
    el("button", { type: "button", class: "sp-btn sp-small", text: "Show more sessions", onclick: () => appendPage() }));
  const observer = globalThis.IntersectionObserver
    ? new IntersectionObserver((seen) => { if (seen.some((s) => s.isIntersecting)) appendPage(); }, { root: null })
    : null;

  // A re-render replaces the rows: the keyboard focus goes back to the same action of the same
  // session ("Pin" becomes "Unpin" in place), or to the search box when that session is gone.
  function focusedAction() {
    const active = document.activeElement;
    if (!active || !list.contains(active)) return null;
    return { id: active.closest("[data-id]")?.dataset.id, action: active.dataset.action };
  }

  function restoreFocus(was) {
    if (!was || list.contains(document.activeElement)) return;
    const row = [...list.querySelectorAll("[data-id]")].find((li) => li.dataset.id === was.id);
    const target = row && (row.querySelector(`[data-action="${was.action}"]`) || row.querySelector("button"));
    (target || search).focus();
  }

  function render() {
    const focused = focusedAction();
    const within = lastMatched && narrows(lastQuery, query) ? lastMatched : null;
    const entries = entriesNow();
    matched = matchSessions(entries, query, dataOf, within);
    lastQuery = query;
    lastMatched = queryWords(query).length ? matched : null;
    shown = 0;
    list.replaceChildren();
    appendPage();
    empty.hidden = matched.length > 0;
    empty.textContent = entries.length === 0
      ? "No saved sessions yet. \u201cNew session\u201d keeps the current conversation here."
      : `No session matches \u201c${query.trim()}\u201d.`;
    restoreFocus(focused);
  }

  function appendPage() {
    more.remove();
    observer?.unobserve(more);
    const page = matched.slice(shown, shown + PAGE_SIZE);
    shown += page.length;
    list.append(...page.map((entry) => rowElement(rowFor(entry, query, dataOf))));
    if (shown < matched.length) {
      list.append(more);
      observer?.observe(more);
    }
  }

  function rowElement(row) {
    const name = row.id === renaming ? renameField(row) : el("span", { class: "sp-name" }, marked(row.name, row.highlights.name));
    const exportMenu = el("div", { class: "sp-menu", role: "menu", hidden: true, "aria-label": "Export format",
      onkeydown: (event) => menuKey(event, exportButton, exportMenu) },
      el("button", { type: "button", role: "menuitem", text: "Markdown", onclick: () => exportSession(row, "markdown", exportMenu) }),
      el("button", { type: "button", role: "menuitem", text: "JSON", onclick: () => exportSession(row, "json", exportMenu) }));
    const exportButton = el("button", { type: "button", class: "sp-btn sp-small", text: "Export",
      "aria-haspopup": "menu", "aria-expanded": "false", "data-action": "export",
      onclick: () => toggleMenu(exportButton, exportMenu) });
    return el("li", { class: `sp-item${row.pinned ? " sp-pinned" : ""}${row.damaged ? " sp-damaged" : ""}`,
      role: "listitem", "data-id": row.id },
      el("div", { class: "sp-line" },
        name,
        row.pinned ? el("span", { class: "sp-badge", text: "Pinned" }) : null,
        row.damaged ? el("span", { class: "sp-badge sp-badge-damaged", text: "damaged",
          title: row.damagedReason === "missing"
            ? "Its saved text is missing; it cannot be opened."
            : "Its saved text cannot be read; it is kept as it is." }) : null),
      el("time", { class: "sp-date", text: when(row) }),
      row.preview ? el("p", { class: "sp-preview" }, marked(row.preview, row.highlights.preview)) : null,
      el("div", { class: "sp-actions" },
        el("button", { type: "button", class: "sp-btn sp-small sp-primary", text: "Open", "data-action": "open",
          onclick: () => openSession(row) }),
        el("button", { type: "button", class: "sp-btn sp-small", text: "Rename", "data-action": "rename",
          onclick: () => { renaming = row.id; render(); } }),
        el("button", { type: "button", class: "sp-btn sp-small", text: row.pinned ? "Unpin" : "Pin", "data-action": "pin",
          onclick: () => mutate("session.pin", { id: row.id, pinned: !row.pinned }) }),
        el("button", { type: "button", class: "sp-btn sp-small sp-danger", text: "Delete", "data-action": "delete",
          onclick: () => deleteSession(row) }),
        el("span", { class: "sp-menu-wrap" }, exportButton, exportMenu)));
  }

  function renameField(row) {
    let done = false;
    const input = el("input", { type: "text", class: "sp-rename", value: row.name, "aria-label": "Session name",
      "data-action": "rename",
      onkeydown: async (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          done = true;
          const name = input.value.trim();
          renaming = null;
          if (name && name !== row.name) await mutate("session.rename", { id: row.id, name });
          else render();
        } else if (event.key === "Escape") {
          event.preventDefault();
          event.stopPropagation();
          done = true;
          renaming = null;
          render();
        }
      },
      onblur: () => { if (!done) { renaming = null; scheduleRender(); } } });
    queueMicrotask(() => { input.focus(); input.select(); });
    return input;
  }

  // A role=menu promises the arrow keys, and Escape back to its button.
  function menuKey(event, button, menu) {
    const items = [...menu.querySelectorAll("[role=menuitem]")];
    const at = items.indexOf(document.activeElement);
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      items[(at + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length].focus();
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      menu.hidden = true;
      button.setAttribute("aria-expanded", "false");
      button.focus();
    }
  }

  function toggleMenu(button, menu) {
    const open = menu.hidden;
    for (const other of list.querySelectorAll(".sp-menu")) other.hidden = true;
    for (const b of list.querySelectorAll("[aria-haspopup=menu]")) b.setAttribute("aria-expanded", "false");
    menu.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (open) menu.querySelector("button").focus();
  }

  // The list follows storage.onChanged: a change request needs no re-read of the index.
  async function mutate(name, payload) {
    clearError();
    try {
      await call(name, payload);
    } catch (error) {
      showError(error);
      render();  // e.g. a rename that did not happen: show the list as stored
    }
  }

  async function openSession(row) {
    await guarded(async () => {
      await call("session.open", { id: row.id });
      onOpened(row.id);
    });
  }

  async function deleteSession(row) {
    const result = await guarded(() => call("session.delete", { id: row.id }));
    if (!result) return;
    if (index.entries) index.entries = index.entries.filter((e) => e.id !== row.id);  // onChanged confirms
    render();
    clearTimeout(toastTimer);
    toastText.textContent = `Deleted \u201c${row.name}\u201d.`;
    toast.hidden = false;
    undoButton.onclick = async () => {
      toast.hidden = true;
      clearTimeout(toastTimer);
      await mutate("session.undelete", { undo: result.undo });
    };
    toastTimer = setTimeout(() => { toast.hidden = true; }, UNDO_TOAST_MS);
    // Once the undo window has passed, a session call removes the body (session.list purges it).
    setTimeout(() => { if (!destroyed) call("session.list", {}).catch(() => {}); }, UNDO_WINDOW_MS + 500);
  }

  async function exportSession(row, format, menu) {
    menu.hidden = true;
    const file = await guarded(() => call("session.export", { id: row.id, format }));
    if (file) download(file);
  }

  async function exportBackup() {
    status.textContent = "Preparing the backup\u2026";
    const file = await guarded(() => call("backup.export", { includeApiKeys: includeKeys.checked }));
    status.textContent = file ? `Saved ${file.filename}.` : "";
    if (file) download(file);
  }

  async function importBackup() {
    const file = fileInput.files?.[0];
    fileInput.value = "";
    if (!file) return;
    status.textContent = "Importing\u2026";
    const result = await guarded(async () => call("backup.import", { text: await file.text() }));
    status.textContent = result ? result.message : "";
  }

  const onDocumentClick = (event) => {
    if (!event.target.closest?.(".sp-menu-wrap")) {
      for (const menu of list.querySelectorAll(".sp-menu")) menu.hidden = true;
    }
  };
  document.addEventListener("click", onDocumentClick);

  async function showList() {
    if (index.entries === null) await ensureLoaded();
    render();  // from memory: the index was preloaded and followed
    verifyInBackground();
  }

  const controller = {
    show() { root.hidden = false; search.focus(); return showList().catch(showError); },
    hide() { root.hidden = true; },
    refresh: () => readStoredIndex().then(render).catch(showError),
    search(text) {
      search.value = text;
      query = text;
      render();
      return matched.length;
    },
    destroy() {
      destroyed = true;
      observer?.disconnect();
      index.listeners.delete(onIndexChanged);
      document.removeEventListener("click", onDocumentClick);
      root.replaceChildren();
      if (lastMounted === controller) lastMounted = null;
    },
  };
  lastMounted = controller;
  if (!root.hidden) showList().catch(showError);
  return controller;
}

const requestIdle = (fn) => (globalThis.requestIdleCallback ? requestIdleCallback(fn) : setTimeout(() => fn(null), 0));
const cancelIdle = (handle) => (globalThis.cancelIdleCallback ? cancelIdleCallback(handle) : clearTimeout(handle));
