// The browser's tabs for Python (py/margin/platform/browser.py `BrowserTabs`), through the bridge: the
// active web tab, a screenshot, running the page script in a tab, focusing and opening tabs, and
// the site caches' purge listeners (py/margin/page/site_caches.py, rule 3).
//
// Rules:
// 1. The active web tab is the active tab of the last focused normal window: never an extension
//    page, so "Screenshot" and "Attach page" also work when the panel's page is open in a tab.
// 2. The page script (content/extract.js) is injected on demand, into the tab's top frame only; it
//    stays in Margin's isolated world until the page navigates, so it is injected again only then.
// 3. Chromium keeps a wake-up registration for every listener ever added, after the worker stops,
//    until removeListener runs; so the purge listeners are added only while a tab is cached, and
//    removed as soon as none is. Tab events of tabs that are not cached never reach Python: the
//    ones that do go to the handler background.js sets (`setTabEventHandler`).
// 4. "Attach tabs" lists the web tabs of the same window rule 1 reads: chrome.tabs.query gives
//    their URL and title without the "tabs" permission, because Margin has host access to them
//    (<all_urls>); a chrome:// tab's URL stays hidden, so it is not listed.
// 5. A tab Chrome discarded (Memory Saver) has no document to read: `tabsWake` reloads it, as
//    Chrome itself does when the user opens it, and waits (polling, no listener kept: rule 3)
//    until it and a tab still loading have loaded, within the time Python gives.

import { failed, reply } from './wire.js';

const WEB_URL = /^(https?|file):/i;

// Rule 1.
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

const tabJson = (tab) => ({
  id: tab.id,
  windowId: tab.windowId,
  url: tab.url || '',
  title: tab.title || '',
  active: Boolean(tab.active),
  discarded: Boolean(tab.discarded),
  loading: tab.status === 'loading' || tab.status === 'unloaded',
});

// Rule 4: the last focused normal window's web tabs, in the order of its tab strip.
export async function windowWebTabs() {
  try {
    const win = await chrome.windows.getLastFocused({ windowTypes: ['normal'] });
    const tabs = await chrome.tabs.query({ windowId: win.id });
    tabs.sort((a, b) => a.index - b.index);
    return reply(tabs.filter((tab) => WEB_URL.test(tab.url || '')).map(tabJson));
  } catch (error) {
    return failed('tabs', error);
  }
}

const WAKE_POLL_MS = 150;
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Rule 5: a discarded tab reloaded, then (like a loading one) waited for until it has loaded.
export async function tabsWake(tabId, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let tab;
  try {
    tab = await chrome.tabs.get(tabId);
  } catch {
    return reply(null); // "No tab with id": it was closed
  }
  try {
    if (tab.discarded) await chrome.tabs.reload(tabId);
    while (tab.discarded || tab.status !== 'complete') {
      if (Date.now() >= deadline) break;
      await pause(WAKE_POLL_MS);
      tab = await chrome.tabs.get(tabId);
    }
    return reply(tabJson(tab));
  } catch (error) {
    if (/no tab with id/i.test(String(error?.message || error))) return reply(null);
    return failed('tabs', error);
  }
}

export async function tabsGet(tabId) {
  try {
    return reply(tabJson(await chrome.tabs.get(tabId)));
  } catch {
    return reply(null); // "No tab with id": it was closed
  }
}

// Rule 2.
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

// -- rule 3: the site caches' purge listeners ------------------------------------------------

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
