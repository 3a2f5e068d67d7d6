// The words' sources for Python (py/margin/i18n/catalogue.py), through the bridge: the browser's UI
// language and one locale's catalogue.
//
// Rules:
// 1. Python's words for requests come from the same files as the pages' (_locales/<locale>/
//    messages.json, read as text; common/i18n.js reads them for the pages).
// 2. `uiLanguage` is synchronous and never throws: "en" when the browser cannot say.

import { failed, reply } from './wire.js';

// The browser's UI language, for "auto" in the options ("en-US", "zh-CN", ...).
export function uiLanguage() {
  try {
    return chrome.i18n.getUILanguage() || 'en';
  } catch {
    return 'en';
  }
}

// Rule 1: one locale's catalogue, as text.
export async function catalogue(locale) {
  try {
    const response = await fetch(chrome.runtime.getURL(`_locales/${locale}/messages.json`));
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return reply(await response.text());
  } catch (error) {
    return failed('catalogue', error);
  }
}
