// The sessions panel: list, search as you type, open, rename, pin, delete (with undo), export,
// and the whole-backup export/import. This module is the DOM overlay; the index it shows lives in
// extension/panel/sessions/preload.js, the search it runs in extension/panel/sessions/search.js, the backup's
// port in extension/panel/sessions/backup.js (the status line shows its progress).
//
// API: preloadSessions({storage, readIndex, readDigests}) -> Promise, sessionsIndexTimings(),
//        useSearchWorker(allowed) (from extension/panel/sessions/preload.js, re-exported: the side panel
//        imports this module, and in dist the preload's code is bundled into it, so a test or the
//        bench reaches the panel's own preload through this module, buildsteps/bundle.py)
//      mountSessionsPanel(root, {call, onOpened, onClose, readIndex, readDigests, storage, currentConversation})
//        -> controller
//      activePanel() -> the controller mounted last (the bench drives it)
//   call(name, payload)  sends a request of docs/protocol.md and returns its `value`, or throws an
//                        Error carrying `.code` and `.message`.
//   onOpened(id)         called after "Open" made a session the current conversation.
//   onClose()            called by the panel's "Close" button (default: hide the root).
//   readIndex()          resolves to the index as a list of stored entries (its layout:
//                        extension/panel/sessions/index_read.js); defaults to reading
//                        chrome.storage.local directly (pages may read storage, never write it);
//   readDigests(keys)    resolves to {key: value} for `sessionDigest_<id>` keys (same default).
//   storage              the chrome.storage-like object whose onChanged keeps the list fresh.
//   currentConversation() the records on screen (the panel's `state.history`): the list's first row,
//                        "Current conversation" (extension/panel/sessions/current.js, its rules).
// controller = {show(), hide(), refresh(), search(query), lastSearch(), destroy()}; `search` runs what typing in
// "Search sessions" runs and resolves to the number of matches once their first page is painted
// (the bench times it).
// After a change request the list follows storage.onChanged; it never re-reads the index itself.
// `session.check` does to storage what `session.list` does, without building a list (whose rows
// the panel would not use): each show() sends it in the background (Python checks that every body
// key exists, key names only, once per browser run, and marks a lost one damaged in the index,
// which onChanged then paints); with `repair` it repairs a legacy or damaged index; and after a
// delete it removes the body once the undo window has passed.
//
// Where search runs: in the panel's search worker (extension/panel/sessions/preload.js `findSessions`;
// on the main thread if the worker fails), over the index read once from storage. Python
// (margin.sessions.actions) owns every write and the migration; asking it per keystroke would move the
// whole index (up to 1,000 x 100K characters) through the service worker each time. Searches are
// answered asynchronously: the latest query wins (an answer to an older one is dropped). A search
// matches and highlights the names the list shows: each one hands over the word an untitled
// session is shown as (`untitledWord()`, in the language of the moment; margin.sessions.search
// rule 6), so after a change of language the next search uses the new word.

import { CONTRACT } from "../../generated/contract.js";
import { t, tPlural, formatNumber, formatSize, onLanguageChange } from "../../common/i18n.js";
import { exportBackup as streamExport, importBackup as streamImport } from "./backup.js";
import { dateElement, download, el, marked, refreshDates } from "./dom.js";
import {
  findSessions, followStorage, forgetEntry, indexEntries, onDigests, onIndexChange, readStoredIndex, sessionRows,
  useReadIndex,
} from "./preload.js";
import { matchSessions, queryWords, rowFor, searchData } from "./search.js";
import { currentEntry } from "./current.js";
import { svg } from "../../common/ui_common.js";

export { preloadSessions, sessionsIndexTimings, useSearchWorker } from "./preload.js";

const UNDO_TOAST_MS = 8000;
const UNDO_WINDOW_MS = CONTRACT.limits.undoWindowMs;  // margin.sessions.actions.UNDO_MS
// Rows built with each keystroke: a side panel shows 5 to 8, and building and laying out rows
// is most of a keystroke's main-thread time, so no more than a tall panel shows; the rest follow
// PAGE_SIZE at a time as the list scrolls (or at once, when the first page does not fill it).
const FIRST_PAGE = 10;
const PAGE_SIZE = 20;
const VERIFY_EVERY_MS = 60_000;
// An unnamed session is stored under this English sentinel (margin.sessions.entries, rule 3): it is
// shown as the catalogue's word in the language of the moment, so a change of language relabels it.
const UNTITLED = CONTRACT.storedNames.untitledSession;
const HISTORY_SESSION_ID = CONTRACT.storage.keys.historySessionId;
const HISTORY = CONTRACT.storage.keys.history;
const untitledWord = () => t("py_session_untitled");
const shownName = (row) => (!row.named && row.name === UNTITLED ? untitledWord() : row.name);
// "3 minutes ago" becomes "4 minutes ago" while the drawer stays open; the timer runs only then.
const DATES_TICK_MS = 20_000;

let verifiedAt = -Infinity;  // the last background session.check (bodies checked), once per page

let lastMounted = null;


function downloadBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  // The download holds the Blob once it has started; a minute is ample for that.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
export function activePanel() { return lastMounted; }

export function mountSessionsPanel(root, options) {
  const { call, onOpened = () => {}, onClose = null, currentConversation = () => [] } = options;
  useReadIndex(options.readIndex, options.readDigests);
  const storageArea = options.storage ?? globalThis.chrome?.storage;
  followStorage(storageArea);
  const entriesNow = () => indexEntries() ?? [];
  let query = "";
  let renaming = null;          // id being renamed
  let toastTimer = 0;
  let destroyed = false;
  let repairing = null;         // the session.check call that repairs an unreadable index

  const search = el("input", {
    type: "search", class: "sp-search",
    autocomplete: "off", spellcheck: "false",
    // At once, not at the next frame: the query's trip to the search worker starts with the key.
    oninput: () => { query = search.value; render(); },
    onkeydown: (event) => { if (event.key === "Escape" && search.value) { event.stopPropagation(); search.value = ""; query = ""; scheduleRender(); } },
  });
  const list = el("ul", { class: "sp-list", role: "list" });
  const empty = el("p", { class: "sp-empty", hidden: true });
  const alertBox = el("div", { class: "sp-alert", role: "alert" });
  const toastText = el("span");
  const undoButton = el("button", { type: "button", class: "sp-toast-undo" });
  const toast = el("div", { class: "sp-toast", role: "status", hidden: true }, toastText, undoButton);
  const includeKeys = el("input", { type: "checkbox", class: "sp-check" });
  const fileInput = el("input", { type: "file", accept: ".json,application/json", hidden: true,
    onchange: () => importBackup() });
  const status = el("p", { class: "sp-status", role: "status" });
  // The status line is kept as what says it (a function of the language of the moment), so a change
  // of language says it again; a sentence Python wrote (the import's summary) stays as it was said.
  let statusWords = null;
  function setStatus(words) {
    statusWords = typeof words === "function" ? words : null;
    status.textContent = statusWords ? statusWords() : words || "";
  }

  const title = el("h2", { class: "sp-title" });
  const closeButton = el("button", { type: "button", class: "sp-icon", text: "\u00d7",
    onclick: () => (onClose ? onClose() : controller.hide()) });
  const exportBackupButton = el("button", { type: "button", class: "sp-btn", onclick: () => exportBackup() });
  const includeKeysText = el("span");
  const importBackupButton = el("button", { type: "button", class: "sp-btn", onclick: () => fileInput.click() });
  const panel = el("section", { class: "sp" },
    el("header", { class: "sp-head" }, title, closeButton),
    el("div", { class: "sp-searchbar" }, search),
    alertBox,
    list,
    empty,
    el("footer", { class: "sp-foot" },
      el("div", { class: "sp-backup" },
        exportBackupButton,
        el("label", { class: "sp-check-label" }, includeKeys, " ", includeKeysText)),
      importBackupButton,
      fileInput, status),
    toast);

  // The words of what stays (rows are built with theirs): at mount, and when the language changes.
  function paintWords() {
    search.setAttribute("aria-label", t("sessions_search"));
    search.placeholder = t("sessions_search");
    list.setAttribute("aria-label", t("sessions_list"));
    undoButton.textContent = t("sessions_undo");
    panel.setAttribute("aria-label", t("sessions_title"));
    title.textContent = t("sessions_title");
    closeButton.setAttribute("aria-label", t("sessions_close"));
    exportBackupButton.textContent = t("sessions_export_backup");
    includeKeysText.textContent = t("sessions_include_keys");
    importBackupButton.textContent = t("sessions_import_backup");
    moreButton.textContent = t("sessions_show_more");
    if (statusWords) status.textContent = statusWords();
  }
  root.classList.add("sp-root");
  root.replaceChildren(panel);

  function showError(error) {
    alertBox.textContent = error?.message || t("sessions_failed");
  }
  function clearError() { alertBox.textContent = ""; }

  async function guarded(action) {
    clearError();
    try { return await action(); } catch (error) { showError(error); return undefined; }
  }

  // The index in memory, read (and repaired by Python when it is legacy or damaged) if need be.
  async function ensureLoaded() {
    if (indexEntries() === null) await readStoredIndex();
    if (indexEntries() === null) await repair();
  }

  function repair() {
    // Legacy or damaged index: Python migrates and repairs it; onChanged brings the result.
    repairing ??= call("session.check", { repair: true })
      .then(() => (indexEntries() === null ? readStoredIndex() : undefined))
      .finally(() => { repairing = null; });
    return repairing;
  }

  // Python checks the bodies exist (key names only) and marks lost ones damaged; never blocks.
  // Bodies go missing when Chrome repairs its database (at start-up), so once a minute is plenty.
  function verifyInBackground() {
    if (performance.now() - verifiedAt < VERIFY_EVERY_MS) return;
    verifiedAt = performance.now();
    call("session.check", {}).catch((error) => console.warn("session.check:", error?.code, error?.message));
  }

  const onIndexChanged = () => {
    if (destroyed || root.hidden) return;
    if (indexEntries() === null) { repair().catch(showError); return; }
    if (renaming === null) render();
  };
  const stopFollowing = onIndexChange(onIndexChanged);
  // Digests arrive in slices after the index (extension/panel/sessions/preload.js): a search shown
  // meanwhile is run again with what came in.
  // The open conversation's row follows it: a turn that ends, New session, Open.
  const onConversation = (changes, areaName) => {
    if (areaName === "local" && (HISTORY in changes || HISTORY_SESSION_ID in changes) &&
        !destroyed && !root.hidden && renaming === null) scheduleRender();
  };
  storageArea?.onChanged?.addListener(onConversation);
  const stopDigests = onDigests(() => {
    if (!destroyed && !root.hidden && renaming === null && queryWords(query).length) scheduleRender();
  });

  let frame = 0;
  function scheduleRender() {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; render(); });
  }

  // Rows are built a page at a time: a query matching 1,000 sessions costs one page of
  // previews (FIRST_PAGE), the rest follow as the list scrolls.
  let matched = [];             // the ids matching renderedQuery, in list order
  let shown = 0;
  let renderedQuery = "";
  let renderedWord = "";        // the untitled word renderedQuery was searched with
  let renderToken = 0;          // the latest render: an older answer is dropped
  let lastSearch = null;        // where the last search's time went (the bench reads it)
  let paging = 0;               // the render whose next page is being built
  const moreButton = el("button", { type: "button", class: "sp-btn sp-small", onclick: () => appendPage() });
  const more = el("li", { class: "sp-more", role: "presentation" }, moreButton);
  paintWords();
  const stopLanguage = onLanguageChange(() => {
    paintWords();
    if (!destroyed && !root.hidden && renaming === null) render();
  });
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

  async function render() {
    const token = ++renderToken;
    const asked = query;
    const word = untitledWord();
    const [found, linked] = await Promise.all([findSessions(asked, FIRST_PAGE, word), linkedId()]);
    // Rows searched in another language's words are not painted: the change of language renders again.
    if (token !== renderToken || destroyed || word !== untitledWord()) return found.ids.length;
    const painting = performance.now();
    const focused = focusedAction();
    // The open conversation is the first row, and its saved session (if any) no other row.
    const current = currentRow(asked, word, linked);
    matched = linked ? found.ids.filter((id) => id !== linked) : found.ids;
    renderedQuery = asked;
    renderedWord = word;
    shown = 0;
    list.replaceChildren();
    if (current) list.append(rowElement(current));
    paintRows(linked ? found.rows.filter((row) => row.id !== linked) : found.rows);
    empty.hidden = matched.length > 0 || current !== null;
    empty.textContent = entriesNow().length === 0
      ? t("sessions_none", t("panel_new_session"))
      : found.pending ? tPlural("sessions_no_match_pending", found.pending, asked.trim()) : t("sessions_no_match", asked.trim());
    restoreFocus(focused);
    lastSearch = { workerMs: found.workerMs ?? null, hopMs: found.hopMs ?? null, paintMs: performance.now() - painting };
    return matched.length;
  }

  // The open conversation (current.js): `historySessionId` as stored, and its row when it matches.
  async function linkedId() {
    try {
      const got = await storageArea?.local?.get(HISTORY_SESSION_ID);
      const id = got?.[HISTORY_SESSION_ID];
      return typeof id === "string" && id ? id : null;
    } catch { return null; }
  }

  function currentRow(asked, word, linked) {
    const entry = currentEntry(currentConversation(), (linked && entriesNow().find((e) => e.id === linked)) || null);
    if (!entry) return null;
    let data = null;
    const dataOf = () => (data ??= searchData(entry, entry.digest, word));
    if (!matchSessions([entry], asked, dataOf).length) return null;
    return { ...rowFor(entry, asked, dataOf), current: true, linked: entry.linked };
  }

  function paintRows(rows) {
    more.remove();
    observer?.unobserve(more);
    shown += rows.length;
    list.append(...rows.map(rowElement));
    if (shown < matched.length) {
      list.append(more);
      observer?.observe(more);
    }
  }

  async function appendPage() {
    const token = renderToken;
    if (paging === token || shown >= matched.length) return;
    paging = token;
    try {
      const rows = await sessionRows(renderedQuery, matched.slice(shown, shown + PAGE_SIZE), renderedWord);
      if (token === renderToken && !destroyed && renderedWord === untitledWord()) paintRows(rows);
    } finally {
      if (paging === token) paging = 0;
    }
  }

  function rowElement(row) {
    // Highlights are ranges of the name shown: the search was given the same untitled word.
    const name = row.id === renaming ? renameField(row) : el("span", { class: "sp-name" }, marked(shownName(row), row.highlights.name));
    const exportMenu = el("div", { class: "sp-menu", role: "menu", hidden: true, "aria-label": t("sessions_export_format"),
      onkeydown: (event) => menuKey(event, exportButton, exportMenu) },
      el("button", { type: "button", role: "menuitem", text: "Markdown", onclick: () => exportSession(row, "markdown", exportMenu) }),
      el("button", { type: "button", role: "menuitem", text: "JSON", onclick: () => exportSession(row, "json", exportMenu) }));
    const exportButton = toolButton("download", t("sessions_export"), {
      "aria-haspopup": "menu", "aria-expanded": "false", "data-action": "export",
      onclick: () => toggleMenu(exportButton, exportMenu) });
    return el("li", { class: `sp-item${row.pinned ? " sp-pinned" : ""}${row.damaged ? " sp-damaged" : ""}${row.current ? " sp-current" : ""}`,
      role: "listitem", "data-id": row.id },
      el("div", { class: "sp-line" },
        name,
        row.current ? el("span", { class: "sp-badge sp-badge-current", text: t("sessions_current") }) : null,
        row.pinned ? el("span", { class: "sp-badge", text: t("sessions_pinned") }) : null,
        row.damaged ? el("span", { class: "sp-badge sp-badge-damaged", text: t("sessions_damaged"),
          title: row.damagedReason === "missing" ? t("sessions_damaged_missing") : t("sessions_damaged_unreadable") }) : null),
      dateElement(row),
      row.preview ? el("p", { class: "sp-preview" }, marked(row.preview, row.highlights.preview)) : null,
      el("div", { class: "sp-actions" },
        // The open conversation is not opened again; unsaved, it has nothing stored to act on (current.js).
        row.current ? null : el("button", { type: "button", class: "sp-btn sp-small sp-primary", text: t("sessions_open"), "data-action": "open",
          onclick: () => openSession(row) }),
        row.current && !row.linked ? null : el("span", { class: "sp-tools" },
          toolButton("edit", t("sessions_rename"), { "data-action": "rename",
            onclick: () => { renaming = row.id; render(); } }),
          toolButton("pin", row.pinned ? t("sessions_unpin") : t("sessions_pin"), { "data-action": "pin",
            class: row.pinned ? "sp-tool sp-on" : "sp-tool",
            onclick: () => mutate("session.pin", { id: row.id, pinned: !row.pinned }) }),
          toolButton("trash", t("sessions_delete"), { "data-action": "delete", class: "sp-tool sp-danger",
            onclick: () => deleteSession(row) }),
          el("span", { class: "sp-menu-wrap" }, exportButton, exportMenu))));
  }

  // A row's tools are icons named by their words (aria-label and tooltip): "Open" and four icons fit
  // one line of a narrow side panel in every language (Russian's five words did not).
  function toolButton(icon, words, props) {
    return el("button", { type: "button", class: "sp-tool", "aria-label": words, title: words, ...props }, svg(icon));
  }

  function renameField(row) {
    let done = false;
    const input = el("input", { type: "text", class: "sp-rename", value: shownName(row), "aria-label": t("sessions_name"),
      "data-action": "rename",
      onkeydown: async (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          done = true;
          const name = input.value.trim();
          renaming = null;
          if (name && name !== shownName(row)) await mutate("session.rename", { id: row.id, name });
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
    forgetEntry(row.id);  // onChanged confirms
    render();
    clearTimeout(toastTimer);
    toastText.textContent = t("sessions_deleted", shownName(row));
    toast.hidden = false;
    undoButton.onclick = async () => {
      toast.hidden = true;
      clearTimeout(toastTimer);
      await mutate("session.undelete", { undo: result.undo });
    };
    toastTimer = setTimeout(() => { toast.hidden = true; }, UNDO_TOAST_MS);
    // Once the undo window has passed, session.check removes the body.
    setTimeout(() => { if (!destroyed) call("session.check", {}).catch(() => {}); }, UNDO_WINDOW_MS + 500);
  }

  async function exportSession(row, format, menu) {
    menu.hidden = true;
    const file = await guarded(() => call("session.export", { id: row.id, format }));
    if (file) download(file);
  }

  // The whole backup streams over the worker's backup port (extension/panel/sessions/backup.js): no
  // single message carries the file, so its size is not bound by Chrome's 64 MiB per message.
  let backupRunning = false;
  async function runBackup(action) {
    if (backupRunning) return undefined;
    backupRunning = true;
    try { return await guarded(action); } finally { backupRunning = false; }
  }

  async function exportBackup() {
    setStatus(() => t("sessions_preparing_backup"));
    const file = await runBackup(() => streamExport({
      includeApiKeys: includeKeys.checked,
      onProgress: ({ sessions, total }) => {
        setStatus(() => tPlural("sessions_exporting", total, formatNumber(sessions)));
      },
    }));
    setStatus(file ? () => t("sessions_saved_file", file.filename, formatSize(file.blob.size)) : "");
    if (file) downloadBlob(file.blob, file.filename);
  }

  async function importBackup() {
    const file = fileInput.files?.[0];
    fileInput.value = "";
    if (!file) return;
    setStatus(() => t("sessions_importing"));
    const result = await runBackup(() => streamImport(file, {
      onProgress: ({ bytes, size, sessions }) => {
        const share = () => formatNumber(Math.floor((100 * bytes) / size) / 100, { style: "percent" });
        setStatus(() => (size
          ? tPlural("sessions_importing_read_of", sessions, share(), formatSize(size))
          : tPlural("sessions_importing_read", sessions)));
      },
    }));
    setStatus(result ? result.message : "");
  }

  const onDocumentClick = (event) => {
    if (!event.target.closest?.(".sp-menu-wrap")) {
      for (const menu of list.querySelectorAll(".sp-menu")) menu.hidden = true;
    }
  };
  document.addEventListener("click", onDocumentClick);

  async function showList() {
    if (indexEntries() === null) await ensureLoaded();
    render();  // from memory: the index was preloaded and followed
    verifyInBackground();
    tickDates();
  }

  // The drawer is closed by hiding the root (the panel's header does it too): the next tick sees it and stops.
  let datesTimer = 0;
  function tickDates() {
    datesTimer ||= setInterval(() => {
      if (destroyed || root.hidden) {
        clearInterval(datesTimer);
        datesTimer = 0;
      } else refreshDates(list);
    }, DATES_TICK_MS);
  }

  const controller = {
    show() { root.hidden = false; search.focus(); return showList().catch(showError); },
    hide() { root.hidden = true; },
    refresh: () => readStoredIndex().then(render).catch(showError),
    lastSearch: () => lastSearch,
    search(text) {
      search.value = text;
      query = text;
      return render();
    },
    destroy() {
      destroyed = true;
      clearInterval(datesTimer);
      observer?.disconnect();
      stopFollowing();
      stopDigests();
      storageArea?.onChanged?.removeListener(onConversation);
      stopLanguage();
      document.removeEventListener("click", onDocumentClick);
      root.replaceChildren();
      if (lastMounted === controller) lastMounted = null;
    },
  };
  lastMounted = controller;
  if (!root.hidden) showList().catch(showError);
  return controller;
}
