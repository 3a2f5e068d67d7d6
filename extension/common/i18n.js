// Margin's words: one loader for every page and the service worker (docs/i18n.md).
//
// Rules:
// 1. Every user-visible string is a key of _locales/<locale>/messages.json, read with
//    `t(key, ...subs)`; plurals with `tPlural(key, count, ...subs)` (keys `<key>__<category>` of
//    Intl.PluralRules, `__other` always there). Placeholders are Chrome's: `$name$` in the
//    message, `{"content": "$1"}` in its `placeholders`.
// 2. The locale is the `uiLanguage` setting ("auto" = the browser's UI language), resolved to one
//    of LOCALES by `localeOf` (the same rule as py/margin/i18n/catalogue.py). When it is the locale
//    Chrome's own i18n picked, `chrome.i18n.getMessage` answers; otherwise that locale's
//    messages.json is fetched from the extension and substituted here the way Chrome does (Chrome
//    cannot switch its locale at run time).
// 3. A change of the setting (chrome.storage.onChanged in a page; in the service worker, its own
//    writes, `settingWritten`) loads the new locale and calls every `onLanguageChange` listener:
//    a page re-translates itself without a restart.
// 4. Numbers, sizes, dates and "3 minutes ago" are formatted with Intl in the chosen language,
//    each formatter made once per language and options: making one costs far more than using it
//    (the sessions list formats two dates a row, twenty rows per keystroke).
// 5. Static HTML carries keys, not words: `data-i18n` (text), `data-i18n-aria-label`,
//    `data-i18n-title`, `data-i18n-placeholder`; `translatePage()` fills them and sets
//    <html lang>. A text's arguments are kept in `data-i18n-args` (`setWords`); an argument
//    that is itself words is kept as what makes them, so a change of language says it again too:
//    `{key, args?}` a message, `{plural, count, args?}` a plural message, `{number, options?}` a
//    number formatted in the language. An attribute with arguments (an image's alt, a link's
//    aria-label) keeps its message in `data-i18n-attrs` (`setAttributeWords`).

import { CONTRACT } from "../generated/contract.js";

export const LOCALES = ["en", "zh_CN", "ja", "ko", "es", "pt_BR", "ru"];
const SETTING_KEY = CONTRACT.storage.keys.uiLanguage;

// "ja-JP" -> "ja", "zh" / "zh-TW" -> "zh_CN", "pt" -> "pt_BR", anything else -> "en".
export function localeOf(tag) {
  const text = String(tag || "").replace(/-/g, "_").toLowerCase();
  const exact = LOCALES.find((locale) => locale.toLowerCase() === text);
  if (exact) return exact;
  const primary = text.split("_")[0];
  return LOCALES.find((locale) => locale.split("_")[0].toLowerCase() === primary) || "en";
}

// A locale folder name as a BCP 47 tag ("zh_CN" -> "zh-CN"): <html lang>, Intl, the setting.
export const tagOf = (locale) => locale.replace("_", "-");

const catalogueUrl = (locale) => chrome.runtime.getURL(`_locales/${locale}/messages.json`);

export async function fetchCatalogue(locale) {
  const response = await fetch(catalogueUrl(locale));
  if (!response.ok) throw new Error(`Margin's ${locale} messages could not be read (${response.status}).`);
  return response.json();
}

// The locale Chrome's own i18n answers in, by Chrome's fallback: the UI locale's folder, else its
// language's folder ("es_MX" -> "es"), else default_locale ("zh_TW", "pt_PT" -> "en").
function chromeLocale() {
  const ui = String(chrome.i18n.getMessage("@@ui_locale") || chrome.i18n.getUILanguage()).replace(/-/g, "_");
  const primary = ui.split("_")[0];
  return LOCALES.find((l) => l.toLowerCase() === ui.toLowerCase()) || LOCALES.find((l) => l === primary) || "en";
}

// Each locale's own name ("日本語"), from its catalogue: what the language setting lists.
const NAME_KEY = "language_name";
let namesPromise = null;
export function names() {
  namesPromise ||= Promise.all(
    LOCALES.map((locale) => fetchCatalogue(locale).then((messages) => [locale, messages[NAME_KEY]?.message || locale])),
  ).then(Object.fromEntries);
  return namesPromise;
}

const state = { locale: "en", tag: "en", messages: null };
const listeners = new Set();

// Chrome's substitution: `$name$` -> the placeholder's content, then `$1`..`$9` -> subs, `$$` -> `$`.
export function render(entry, subs) {
  const contents = {};
  for (const [name, placeholder] of Object.entries(entry.placeholders || {})) contents[name.toLowerCase()] = placeholder.content;
  const expanded = entry.message.replace(/\$([a-z0-9_@]+)\$/gi, (_, name) => contents[name.toLowerCase()] ?? "");
  return expanded.replace(/\$(\d)|\$\$/g, (_, digit) => (digit ? String(subs[Number(digit) - 1] ?? "") : "$"));
}

export function t(key, ...subs) {
  const entry = state.messages?.[key];
  if (entry) return render(entry, subs);
  return chrome.i18n.getMessage(key, subs.map(String));
}

export function has(key) {
  return Boolean(state.messages ? state.messages[key] : chrome.i18n.getMessage(key));
}

// `count` picks the form and is the first substitution, formatted ("20,000", "20 000").
export function tPlural(key, count, ...subs) {
  const category = formatter(Intl.PluralRules).select(count);
  const form = has(`${key}__${category}`) ? `${key}__${category}` : `${key}__other`;
  return t(form, formatNumber(count), ...subs);
}

const formatters = new Map();
function formatter(Kind, options = {}) {
  const key = `${Kind.name}\u0000${state.tag}\u0000${JSON.stringify(options)}`;
  if (!formatters.has(key)) formatters.set(key, new Kind(state.tag, options));
  return formatters.get(key);
}

export const language = () => state.tag;
export const locale = () => state.locale;

export function formatNumber(value, options = {}) {
  return formatter(Intl.NumberFormat, options).format(value);
}

// Bytes as "64 bytes", "46.2 kB", "3.1 MB". Under 1 kB the words are the catalogue's plural forms
// (`common_size_bytes`): Intl's short byte unit is not plural ("64 byte" in English, "1 bytes" in
// Portuguese).
const SIZE_UNITS = ["byte", "kilobyte", "megabyte", "gigabyte"];
export function formatSize(bytes) {
  let value = Math.max(0, Number(bytes) || 0);
  if (value < 1000) return tPlural("common_size_bytes", Math.round(value));
  let unit = 0;
  while (value >= 1000 && unit < SIZE_UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  const style = { style: "unit", unit: SIZE_UNITS[unit], unitDisplay: "short", maximumFractionDigits: unit ? 1 : 0 };
  return formatter(Intl.NumberFormat, style).format(value);
}

export function formatDate(ms, options = { dateStyle: "medium", timeStyle: "short" }) {
  return formatter(Intl.DateTimeFormat, options).format(new Date(ms));
}

const RELATIVE_STEPS = [
  ["second", 60],
  ["minute", 60],
  ["hour", 24],
  ["day", 7],
  ["week", 4.35],
  ["month", 12],
  ["year", Number.POSITIVE_INFINITY],
];
// "3 minutes ago", "vor 3 Minuten", "3 分前": the largest unit that gives a whole number.
export function formatRelative(ms, now = Date.now()) {
  let value = (ms - now) / 1000;
  for (const [unit, size] of RELATIVE_STEPS) {
    if (Math.abs(value) < size) return formatter(Intl.RelativeTimeFormat, { numeric: "auto" }).format(Math.round(value), unit);
    value /= size;
  }
  return "";
}

// Rule 5: an argument as said in the current language: a message `{key, args?}`, a plural message
// `{plural, count, args?}`, a number `{number, options?}`, anything else as it is.
function said(arg) {
  if (arg && typeof arg === "object") {
    if (typeof arg.key === "string") return t(arg.key, ...(arg.args || []).map(said));
    if (typeof arg.plural === "string") return tPlural(arg.plural, arg.count, ...(arg.args || []).map(said));
    if (typeof arg.number === "number") return formatNumber(arg.number, arg.options);
  }
  return arg;
}

// Rule 5: `node` says the message `key` (with `args`) and keeps them, so `translatePage` says it
// again in the next language (data-i18n, data-i18n-args).
export function setWords(node, key, ...args) {
  node.textContent = t(key, ...args.map(said));
  node.dataset.i18n = key;
  if (args.length) node.dataset.i18nArgs = JSON.stringify(args);
  else delete node.dataset.i18nArgs;
}

// Rule 5: `node`'s `attribute` says the message `key` (with `args`), kept so `translatePage` says
// it again (data-i18n-attrs: {attribute: [key, ...args]}).
export function setAttributeWords(node, attribute, key, ...args) {
  node.setAttribute(attribute, t(key, ...args.map(said)));
  const kept = node.dataset.i18nAttrs ? JSON.parse(node.dataset.i18nAttrs) : {};
  node.dataset.i18nAttrs = JSON.stringify({ ...kept, [attribute]: [key, ...args] });
}

// Rule 5: fill the keys of static HTML under `root`.
const ATTRIBUTES = { "aria-label": "i18nAriaLabel", title: "i18nTitle", placeholder: "i18nPlaceholder" };
export function translatePage(root = document) {
  if (typeof document === "undefined") return;
  document.documentElement.lang = state.tag;
  for (const node of root.querySelectorAll("[data-i18n]")) {
    // data-i18n-args: the message's arguments as a JSON array, where a text has any.
    const args = node.dataset.i18nArgs ? JSON.parse(node.dataset.i18nArgs) : [];
    node.textContent = t(node.dataset.i18n, ...args.map(said));
  }
  for (const [attribute, data] of Object.entries(ATTRIBUTES)) {
    for (const node of root.querySelectorAll(`[data-i18n-${attribute}]`)) node.setAttribute(attribute, t(node.dataset[data]));
  }
  for (const node of root.querySelectorAll("[data-i18n-attrs]")) {
    for (const [attribute, [key, ...args]] of Object.entries(JSON.parse(node.dataset.i18nAttrs))) {
      node.setAttribute(attribute, t(key, ...args.map(said)));
    }
  }
}

export function onLanguageChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

async function use(setting) {
  const chosen = localeOf(!setting || setting === "auto" ? chrome.i18n.getUILanguage() : setting);
  const messages = chosen === chromeLocale() ? null : await fetchCatalogue(chosen);
  Object.assign(state, { locale: chosen, tag: tagOf(chosen), messages });
}

let started = null;
// Rule 2 and 3: read the setting, load its locale, follow its changes. Resolves when `t` answers
// in the chosen language; on any failure Chrome's own locale stays in use. `follow: false` (the
// service worker) adds no storage.onChanged listener: the caller passes each write of the
// setting to `settingWritten` instead (background.js, from worker/storage.js `onLocalWrite`).
export function start({ follow = true } = {}) {
  started ||= (async () => {
    try {
      const stored = await chrome.storage.local.get(SETTING_KEY);
      await use(stored[SETTING_KEY]);
    } catch (error) {
      console.warn("Margin: the language setting could not be applied", error);
    }
    if (!follow) return;
    chrome.storage.onChanged.addListener((changes, area) => {
      if (area === "local" && SETTING_KEY in changes) applySetting(changes[SETTING_KEY].newValue);
    });
  })();
  return started;
}

// `items` as written to chrome.storage.local (a removed key: undefined): a change of the setting
// among them is applied as rule 3 says.
export function settingWritten(items) {
  if (SETTING_KEY in items) applySetting(items[SETTING_KEY]);
}

function applySetting(setting) {
  use(setting).then(
    () => {
      for (const listener of listeners) listener(state.locale);
    },
    (error) => console.warn("Margin: the language setting could not be applied", error),
  );
}
