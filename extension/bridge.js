// The one thin module between Python and the browser APIs it needs (the Python half is
// py/margin/platform.py). Every function takes and returns JSON strings, and none throws:
// a reply is {ok: true, value} or {ok: false, error: {kind, message}}.
// Modelled on uBlock Origin Lite's ext.js: one small module over browser APIs, no throwing.

import { CONTRACT } from './generated/contract.js';
import { afterDigestWrite, beforeDigestWrite, digestIdsOf } from './digest_copy.js';

const reply = (value) => JSON.stringify({ ok: true, value: value === undefined ? null : value });
const failed = (kind, error) =>
  JSON.stringify({ ok: false, error: { kind, message: String(error?.message ?? error) } });

// Bulk text crosses the Python boundary as UTF-8 bytes: Pyodide turns a str argument into a JS
// string at ~5 MB/s and a JS string into a str at ~11 MB/s (Pyodide 0.27.7, measured: 0.8 s for
// 4 MB), while bytes and TextEncoder/TextDecoder take ~50 ms. A bytes argument arrives as a
// PyProxy that lives only until the call returns: `fromPython` must run before the first await.
const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();
export function fromPython(value) {
  if (typeof value === 'string') return value;
  return utf8Decoder.decode(value.toJs());
}

// Bulk values cross in pieces (py/margin/wire.py, rule 6): the JSON text with each string of at
// least LONG_STRING characters replaced by a marker {"\u0000margin.piece": i}, and that string as
// the i-th UTF-8 piece after it, so neither side writes or scans images and digests as JSON.
const LONG_STRING = 64 * 1024;
const PIECE = '\u0000margin.piece';

function withoutLongStrings(value, pieces) {
  if (typeof value === 'string') {
    if (value.length < LONG_STRING) return value;
    pieces.push(value);
    return { [PIECE]: pieces.length - 1 };
  }
  if (Array.isArray(value)) return value.map((item) => withoutLongStrings(item, pieces));
  if (value && typeof value === 'object') {
    const light = {};
    for (const [key, item] of Object.entries(value)) light[key] = withoutLongStrings(item, pieces);
    return light;
  }
  return value;
}

function withLongStrings(value, pieces) {
  if (Array.isArray(value)) return value.map((item) => withLongStrings(item, pieces));
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === PIECE) {
      const index = value[PIECE];
      if (!Number.isInteger(index) || index < 0 || index >= pieces.length) {
        throw new Error(`a bulk value refers to piece ${index} of ${pieces.length}`);
      }
      return pieces[index];
    }
    for (const key of keys) value[key] = withLongStrings(value[key], pieces);
  }
  return value;
}

// A reply with a bulk value: [the JSON text, ...the long strings], each as UTF-8.
function replyPieces(value) {
  const pieces = [];
  const text = reply(withoutLongStrings(value, pieces));
  return [utf8(text), ...pieces.map(utf8)];
}

// UTF-8 of bulk text, mostly ASCII (JSON around data URLs): encodeInto a buffer of one byte per
// code unit took 41-60 ms for 21 MB where encode() took 100-180 ms (the 20 MB history the bound
// reads, in the worker, README.md "Measured"). Where the text is not all ASCII, the rest goes into
// a buffer sized for the worst case (3 bytes per UTF-16 code unit); encodeInto stops only between
// characters, so the rest starts on one.
function utf8(text) {
  const bytes = new Uint8Array(text.length);
  const { read, written } = utf8Encoder.encodeInto(text, bytes);
  if (read === text.length) return bytes.subarray(0, written);
  const rest = text.slice(read);
  const whole = new Uint8Array(written + rest.length * 3);
  whole.set(bytes.subarray(0, written));
  return whole.subarray(0, written + utf8Encoder.encodeInto(rest, whole.subarray(written)).written);
}

function area(name) {
  if (name !== 'local' && name !== 'session') throw new Error(`unknown storage area ${name}`);
  return chrome.storage[name];
}

export async function storageGet(areaName, keysJson) {
  try {
    const keys = JSON.parse(keysJson);
    // Never get(null): the GET_ALL_KEYS contract (storage-model.md) forbids reading everything.
    if (!Array.isArray(keys)) return failed('bad_request', 'storageGet takes a list of keys');
    return replyPieces(await area(areaName).get(keys));
  } catch (error) {
    return failed('storage', error);
  }
}

// What Python wrote to chrome.storage.local, for the worker's own followers (the language setting:
// background.js). The worker registers no storage.onChanged listener: Chrome would hand it every
// change with its old and new values, and a bound rewriting a 20 MB `history` cost ~150 ms more
// with one (README.md "Measured"). Every write of the worker passes here.
let localWritten = () => {};
export function onLocalWrite(listener) {
  localWritten = listener;
}

export async function storageSet(areaName, itemsJson, ...longStrings) {
  try {
    const pieces = longStrings.map(fromPython); // every PyProxy, before the first await
    const items = withLongStrings(JSON.parse(fromPython(itemsJson)), pieces);
    // The search copy's entries go before the digests change, and come back after
    // (extension/digest_copy.js, rules 4 and 5).
    const extra = areaName === 'local' ? await beforeDigestWrite(digestIdsOf(Object.keys(items))) : {};
    await area(areaName).set({ ...items, ...extra });
    if (areaName === 'local') {
      await afterDigestWrite(items);
      localWritten(items);
    }
    return reply(null);
  } catch (error) {
    return failed('storage', error);
  }
}

export async function storageRemove(areaName, keysJson) {
  try {
    const keys = JSON.parse(keysJson);
    if (areaName === 'local') {
      const extra = await beforeDigestWrite(digestIdsOf(Array.isArray(keys) ? keys : [keys]));
      if (Object.keys(extra).length) await area(areaName).set(extra);
    }
    await area(areaName).remove(keys);
    if (areaName === 'local') localWritten(Object.fromEntries([].concat(keys).map((key) => [key, undefined])));
    return reply(null);
  } catch (error) {
    return failed('storage', error);
  }
}

// The search copy's epoch (extension/digest_copy.js): a new one invalidates the whole copy.
export function writeSearchCopyEpoch(epoch) {
  return chrome.storage.local.set({ [CONTRACT.storage.keys.searchCopyEpoch]: epoch });
}

// The names of the stored keys, no values: chrome.storage.<area>.getKeys() (Chrome 130+, hence
// minimum_chrome_version "130"). Lets Python check that a session body exists without reading it.
export async function storageKeys(areaName) {
  try {
    return reply(await area(areaName).getKeys());
  } catch (error) {
    return failed('storage', error);
  }
}

// What these keys take (chrome.storage.<area>.getBytesInUse: each key's name plus its value as
// JSON), without reading the values: lets Python check that a heavy value is stored whole.
export async function storageBytesInUse(areaName, keysJson) {
  try {
    const keys = JSON.parse(keysJson);
    if (!Array.isArray(keys)) return failed('bad_request', 'storageBytesInUse takes a list of keys');
    return reply(await area(areaName).getBytesInUse(keys));
  } catch (error) {
    return failed('storage', error);
  }
}

// The SHA-256 (hex) of UTF-8 bytes from Python, by the browser's native crypto: the content
// address of a 3 MB data URL in a few ms, against ~15 ms in Pyodide's hashlib.
export async function sha256Hex(bytes) {
  try {
    const data = bytes.toJs(); // a copy, made before the first await (see fromPython)
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', data));
    return reply(Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join(''));
  } catch (error) {
    return failed('digest', error);
  }
}

// -- HTTP: fetch with a streaming body reader and abort --------------------------------------

const responses = new Map(); // handle -> {reader, decoder, controller}; reader null until headers

function transportKind(controller) {
  if (controller.signal.reason === 'timeout') return 'timeout';
  if (controller.signal.aborted) return 'aborted';
  return 'connect';
}

// Python picks the handle, so it can abort a request whose headers have not arrived yet.
export async function httpOpen(handle, specJson) {
  let spec;
  try {
    spec = JSON.parse(specJson);
  } catch (error) {
    return failed('bad_request', error);
  }
  const controller = new AbortController();
  const entry = { reader: null, decoder: new TextDecoder(), controller };
  responses.set(handle, entry);
  const timer = setTimeout(() => controller.abort('timeout'), spec.timeoutMs || 60000);
  try {
    const response = await fetch(spec.url, {
      method: spec.method,
      headers: spec.headers,
      body: spec.body ?? undefined,
      signal: controller.signal,
      credentials: 'omit',
      cache: 'no-store',
      // Never follow a redirect (but for a page's caption file): it could carry the conversation
      // and its key to an address the user never typed (py/margin/ports.py, rule 4). 'manual'
      // rather than 'error' so the refusal can be told apart from a network failure.
      redirect: spec.followRedirects === true ? 'follow' : 'manual',
    });
    clearTimeout(timer);
    if (response.type === 'opaqueredirect') {
      responses.delete(handle);
      return failed('redirect', '');
    }
    entry.reader = response.body ? response.body.getReader() : null;
    const headers = {};
    response.headers.forEach((value, key) => { headers[key] = value; });
    return reply({ status: response.status, headers });
  } catch (error) {
    clearTimeout(timer);
    responses.delete(handle);
    return failed(transportKind(controller), error);
  }
}

// The next piece of the body as text, or null at its end.
export async function httpRead(handle) {
  const entry = responses.get(handle);
  if (!entry?.reader) {
    responses.delete(handle);
    return reply(null);
  }
  try {
    const { done, value } = await entry.reader.read();
    if (done) {
      responses.delete(handle);
      const tail = entry.decoder.decode();
      return reply(tail || null);
    }
    return reply(entry.decoder.decode(value, { stream: true }));
  } catch (error) {
    responses.delete(handle);
    // After the headers, a failure means the connection died mid-body: a cut stream.
    return failed(entry.controller.signal.aborted ? 'aborted' : 'broken', error);
  }
}

export async function httpAbort(handle) {
  const entry = responses.get(handle);
  responses.delete(handle);
  if (entry) entry.controller.abort('stopped');
  return reply(null);
}

// -- tabs ---------------------------------------------------------------------------------

const WEB_URL = /^(https?|file):/i;

// The active web tab of the last focused normal window: never an extension page, so
// "Screenshot" and "Attach page" also work when the panel's page is open in a tab of its own.
export async function activeWebTab() {
  try {
    const win = await chrome.windows.getLastFocused({ windowTypes: ['normal'] });
    const [tab] = await chrome.tabs.query({ active: true, windowId: win.id });
    if (!tab || !WEB_URL.test(tab.url || '')) return reply(null);
    return reply({ id: tab.id, windowId: tab.windowId, url: tab.url, title: tab.title || '' });
  } catch (error) {
    return failed('tabs', error);
  }
}

export async function captureVisibleTab(windowId) {
  try {
    return reply(await chrome.tabs.captureVisibleTab(windowId, { format: 'png' }));
  } catch (error) {
    return failed('tabs', error);
  }
}

const tabJson = (tab) => ({ id: tab.id, windowId: tab.windowId, url: tab.url || '', title: tab.title || '' });

export async function tabsGet(tabId) {
  try {
    return reply(tabJson(await chrome.tabs.get(tabId)));
  } catch {
    return reply(null); // "No tab with id": it was closed
  }
}

// The page script (content/extract.js) is injected on demand, into the tab's top frame only; it
// stays in Margin's isolated world until the page navigates, so it is injected again only then.
const PAGE_SCRIPT_FILES = ['vendor/Readability.js', 'content/extract.js'];

async function callPageFunction(tabId, name, args) {
  const [injection] = await chrome.scripting.executeScript({
    target: { tabId },
    func: async (fn, fnArgs) => {
      const f = globalThis[fn];
      if (typeof f !== 'function') return { missing: true };
      return { value: await f(...fnArgs) };
    },
    args: [name, args],
  });
  return injection?.result;
}

export async function tabsRun(tabId, name, argsJson) {
  try {
    const args = JSON.parse(argsJson);
    let result = await callPageFunction(tabId, name, args);
    if (result?.missing) {
      await chrome.scripting.executeScript({ target: { tabId }, files: PAGE_SCRIPT_FILES });
      result = await callPageFunction(tabId, name, args);
    }
    if (!result || result.missing) return failed('script', 'Margin\'s page script did not run in this tab.');
    return reply(result.value);
  } catch (error) {
    return failed('script', error);
  }
}

export async function tabsFocus(tabId, windowId) {
  try {
    await chrome.tabs.update(tabId, { active: true });
    await chrome.windows.update(windowId, { focused: true });
    return reply(null);
  } catch (error) {
    return failed('tabs', error);
  }
}

export async function tabsOpen(url) {
  try {
    const win = await chrome.windows.getLastFocused({ windowTypes: ['normal'] }).catch(() => null);
    return reply(tabJson(await chrome.tabs.create({ url, active: true, ...(win ? { windowId: win.id } : {}) })));
  } catch (error) {
    return failed('tabs', error);
  }
}

// -- the site caches' purge listeners (py/margin/site_caches.py, rule 3) ----------------------
//
// Chromium keeps a wake-up registration for every listener ever added, after the worker stops,
// until removeListener runs; so these are added only while a tab is cached, and removed as soon
// as none is. Tab events of tabs that are not cached never reach Python.

let tabEventHandler = () => {};
let watched = new Map(); // tabId -> cached URL
let listening = false;

export function setTabEventHandler(handler) { tabEventHandler = handler; }

function onTabRemoved(tabId) {
  if (watched.has(tabId)) tabEventHandler('removed', tabId, null);
}

function onTabUpdated(tabId, changeInfo) {
  if (changeInfo.url && watched.has(tabId)) tabEventHandler('updated', tabId, changeInfo.url);
}

function listen(on) {
  if (on === listening) return;
  if (on) {
    chrome.tabs.onRemoved.addListener(onTabRemoved);
    chrome.tabs.onUpdated.addListener(onTabUpdated);
  } else {
    chrome.tabs.onRemoved.removeListener(onTabRemoved);
    chrome.tabs.onUpdated.removeListener(onTabUpdated);
  }
  listening = on;
}

export async function tabsWatch(tabUrlsJson, clearStale) {
  try {
    watched = new Map(Object.entries(JSON.parse(tabUrlsJson)).map(([id, url]) => [Number(id), url]));
    if (!watched.size && clearStale && !listening) listen(true);
    listen(watched.size > 0);
    return reply(null);
  } catch (error) {
    return failed('tabs', error);
  }
}

// The browser's UI language, for "auto" in the options ("en-US", "zh-CN", ...).
export function uiLanguage() {
  try {
    return chrome.i18n.getUILanguage() || 'en';
  } catch {
    return 'en';
  }
}

// One locale's catalogue, _locales/<locale>/messages.json as text: Python's words for requests
// come from the same files as the pages' (py/margin/catalogue.py).
export async function catalogue(locale) {
  try {
    const response = await fetch(chrome.runtime.getURL(`_locales/${locale}/messages.json`));
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return reply(await response.text());
  } catch (error) {
    return failed('catalogue', error);
  }
}

// -- Pyodide packages and turn ports (set up by background.js) -------------------------------

let pyodideInstance = null;
export function attachPyodide(pyodide) { pyodideInstance = pyodide; }

export async function loadPackage(name) {
  try {
    await pyodideInstance.loadPackage(name, { messageCallback: () => {} });
    return reply(null);
  } catch (error) {
    return failed('package', error);
  }
}

export const turnPorts = new Map(); // turnId -> chrome.runtime.Port

// Returns false when the panel's port is gone (the turn then stops).
export function postTurnEvent(turnId, eventJson) {
  const port = turnPorts.get(turnId);
  if (!port) return false;
  try {
    port.postMessage(JSON.parse(fromPython(eventJson)));
    return true;
  } catch {
    turnPorts.delete(turnId);
    return false;
  }
}
