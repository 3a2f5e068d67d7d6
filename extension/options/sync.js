// The options page's "Sync" section (py/margin/sync): the WebDAV folder, the passphrase, and the
// buttons "Turn on sync", "Sync now", "Turn off sync", with one status line.
//
// Rules:
// 1. The page never writes storage: `sync.enable`, `sync.now`, `sync.disable` do, and
//    `sync.status` says what is stored (never the password or the key). It follows `syncStatus`
//    (chrome.storage.local) and `syncProgress` (chrome.storage.session) so a sync started by an
//    alarm or another page shows here too.
// 2. The status element (role=status) says "Synced <time>", the progress of a large sync, or
//    what is wrong in one sentence (Python's, in the user's language).
// 3. The periodic alarm exists exactly while sync is on (extension/worker/sync.js rule 1): made
//    here when "Turn on sync" succeeds, cleared by "Turn off sync".
// 4. The password and the passphrase are cleared from the form once sync is on; the passphrase
//    is never stored anywhere (Python keeps the key derived from it).

import { CONTRACT } from "../generated/contract.js";
import { call } from "../common/ui_common.js";
import * as i18n from "../common/i18n.js";

await i18n.start();

const $ = (id) => document.getElementById(id);
const fields = ["sync-url", "sync-user", "sync-password", "sync-passphrase"].map($);
const [url, user, password, passphrase] = fields;
const statusLine = $("sync-status");
const STATUS_KEY = CONTRACT.storage.keys.syncStatus;
const PROGRESS_KEY = CONTRACT.storage.sessionKeys.syncProgress;
let shown = { on: false };
let busy = false;

function say(key, ...args) {
  i18n.setWords(statusLine, key, ...args);
}

function sayPlain(sentence) {
  statusLine.textContent = sentence;
  delete statusLine.dataset.i18n;
  delete statusLine.dataset.i18nArgs;
}

// Rule 2.
function paintStatus(state) {
  if (state.progress && Number.isInteger(state.progress.total)) {
    say("options_sync_progress", { number: state.progress.done }, { number: state.progress.total });
  } else if (!state.on) {
    say("options_sync_is_off");
  } else if (state.status?.error?.message) {
    sayPlain(state.status.error.message);
  } else if (Number.isFinite(state.status?.at)) {
    say("options_sync_synced", i18n.formatDate(state.status.at));
  } else {
    say("options_sync_never");
  }
}

function paint(state) {
  shown = state;
  $("sync-on").hidden = state.on;
  $("sync-now").hidden = !state.on;
  $("sync-off").hidden = !state.on;
  for (const field of fields) field.disabled = state.on;
  if (state.on) {
    url.value = state.url || "";
    user.value = state.user || "";
    password.value = "";
    passphrase.value = "";
  }
  paintStatus(state);
}

async function refresh() {
  try {
    paint(await call("sync.status", {}));
  } catch (error) {
    sayPlain(error.message);
  }
}

async function act(work) {
  if (busy) return;
  busy = true;
  try {
    await work();
  } catch (error) {
    sayPlain(error.message);
    return;
  } finally {
    busy = false;
  }
  await refresh();
}

async function syncNow() {
  say("options_sync_running");
  await call("sync.now", {});
}

$("sync-form").addEventListener("submit", (event) => {
  event.preventDefault();
  act(async () => {
    say("options_sync_checking");
    await call("sync.enable", {
      url: url.value.trim(),
      user: user.value,
      password: password.value,
      passphrase: passphrase.value,
    });
    passphrase.value = ""; // rule 4
    password.value = "";
    await chrome.alarms.create(CONTRACT.sync.alarm, { periodInMinutes: CONTRACT.sync.periodMinutes }); // rule 3
    paint({ ...shown, on: true, url: url.value.trim(), user: user.value, status: null });
    await syncNow();
  });
});

$("sync-now").addEventListener("click", () => act(syncNow));

$("sync-off").addEventListener("click", () =>
  act(async () => {
    await call("sync.disable", {});
    await chrome.alarms.clear(CONTRACT.sync.alarm);
    await chrome.alarms.clear(CONTRACT.sync.soonAlarm);
  }),
);

// Rule 1: a sync run by an alarm, or by another open options page, shows here as it goes.
chrome.storage.onChanged.addListener((changes, area) => {
  if ((area === "local" && STATUS_KEY in changes) || (area === "session" && PROGRESS_KEY in changes)) {
    if (!busy || area === "session") refresh();
  }
});

function retranslate() {
  i18n.setAttributeWords(url, "placeholder", "options_example_placeholder", "https://cloud.example.com/remote.php/dav/files/me/");
  paintStatus(shown);
}
i18n.onLanguageChange(retranslate);
retranslate();
refresh();
