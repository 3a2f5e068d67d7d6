// What the extension's pages share: one way to call the service worker, and small DOM helpers.
//
// Rules:
// 1. Every request goes through `call(name, payload)`: it sends `{type, payload}` and unwraps the
//    envelope of docs/protocol.md. A failure is always thrown as an Error with `.code` and a
//    `.message` that is a plain sentence a user can read.
// 2. Pages read storage directly only to paint; every write goes through the service worker.

import { t } from "./i18n.js";

class CallError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "CallError";
    this.code = code;
  }
}

export async function call(name, payload = {}) {
  let reply;
  try {
    reply = await chrome.runtime.sendMessage({ type: name, payload });
  } catch (error) {
    throw new CallError("no_worker", t("common_no_worker") + ` (${error?.message || error})`);
  }
  if (!reply || typeof reply !== "object") throw new CallError("no_reply", t("common_no_worker"));
  if (reply.ok) return reply.value;
  const code = reply.error?.code || "unknown";
  const message = reply.error?.message || t("common_failed");
  throw new CallError(code, message);
}

// A tiny element builder: el("button", {class: "btn", "aria-label": "Copy"}, child, "text").
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child);
  }
  return node;
}

// Inline icons (24px viewBox, stroke style). No remote resources.
const ICONS = {
  plus: '<path d="M12 5v14M5 12h14"/>',
  sessions: '<path d="M4 6h16M4 12h16M4 18h10"/>',
  settings:
    '<circle cx="12" cy="12" r="3"/><path d="M19.4 15a1.7 1.7 0 0 0 .3 1.8l.1.1a2 2 0 1 1-2.8 2.8l-.1-.1a1.7 1.7 0 0 0-1.8-.3 1.7 1.7 0 0 0-1 1.5V21a2 2 0 1 1-4 0v-.1a1.7 1.7 0 0 0-1.1-1.5 1.7 1.7 0 0 0-1.8.3l-.1.1a2 2 0 1 1-2.8-2.8l.1-.1a1.7 1.7 0 0 0 .3-1.8 1.7 1.7 0 0 0-1.5-1H3a2 2 0 1 1 0-4h.1a1.7 1.7 0 0 0 1.5-1.1 1.7 1.7 0 0 0-.3-1.8l-.1-.1a2 2 0 1 1 2.8-2.8l.1.1a1.7 1.7 0 0 0 1.8.3H9a1.7 1.7 0 0 0 1-1.5V3a2 2 0 1 1 4 0v.1a1.7 1.7 0 0 0 1 1.5 1.7 1.7 0 0 0 1.8-.3l.1-.1a2 2 0 1 1 2.8 2.8l-.1.1a1.7 1.7 0 0 0-.3 1.8V9a1.7 1.7 0 0 0 1.5 1H21a2 2 0 1 1 0 4h-.1a1.7 1.7 0 0 0-1.5 1z"/>',
  copy: '<rect x="9" y="9" width="11" height="11" rx="2"/><path d="M5 15V5a2 2 0 0 1 2-2h8"/>',
  check: '<path d="M5 12l5 5L20 7"/>',
  edit: '<path d="M4 20h4L18.5 9.5a2.1 2.1 0 0 0-4-4L4 16v4z"/><path d="M13.5 6.5l4 4"/>',
  regenerate: '<path d="M20 11a8 8 0 1 0-2.3 5.7"/><path d="M20 4v7h-7"/>',
  send: '<path d="M12 19V5M5 12l7-7 7 7"/>',
  stop: '<rect x="7" y="7" width="10" height="10" rx="1.5" fill="currentColor"/>',
  image: '<rect x="3" y="4" width="18" height="16" rx="2"/><circle cx="9" cy="10" r="2"/><path d="M21 16l-5-5-9 9"/>',
  screenshot: '<path d="M4 8V6a2 2 0 0 1 2-2h2M16 4h2a2 2 0 0 1 2 2v2M20 16v2a2 2 0 0 1-2 2h-2M8 20H6a2 2 0 0 1-2-2v-2"/><circle cx="12" cy="12" r="3"/>',
  close: '<path d="M6 6l12 12M18 6L6 18"/>',
  back: '<path d="M15 18l-6-6 6-6"/>',
  eye: '<path d="M2 12s3.5-7 10-7 10 7 10 7-3.5 7-10 7S2 12 2 12z"/><circle cx="12" cy="12" r="3"/>',
  eyeOff: '<path d="M3 3l18 18"/><path d="M10.6 5.1A10 10 0 0 1 12 5c6.5 0 10 7 10 7a17 17 0 0 1-3.2 4.1M6.6 6.6A17 17 0 0 0 2 12s3.5 7 10 7a9.7 9.7 0 0 0 5.4-1.6"/><path d="M9.9 9.9a3 3 0 0 0 4.2 4.2"/>',
  trash: '<path d="M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3"/>',
  pin: '<path d="M9 3h6M10 3v6l-3 4h10l-3-4V3M12 13v8"/>',
  download: '<path d="M12 4v11M7 10l5 5 5-5M5 20h14"/>',
  plug: '<path d="M9 2v6M15 2v6M6 8h12v3a6 6 0 0 1-12 0V8zM12 17v5"/>',
  page: '<path d="M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z"/><path d="M14 3v5h5M9 13h6M9 17h6"/>',
  dataFile: '<path d="M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z"/><path d="M14 3v5h5M8 12h8M8 16h8M12 12v6"/>',
  attachPage: '<path d="M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h4"/><path d="M14 3v5h5v3"/><path d="M17 15v6M14 18h6"/>',
  attachTabs: '<path d="M3 9V6a2 2 0 0 1 2-2h4l2 2h8a2 2 0 0 1 2 2v3"/><rect x="3" y="9" width="18" height="11" rx="2"/><path d="M12 12v5M9.5 14.5h5"/>',
  video: '<rect x="3" y="5" width="18" height="14" rx="2"/><path d="M10 9.5v5l4.5-2.5z"/>',
  quote: '<path d="M7 7h4v4H8a1 1 0 0 0-1 1v3M14 7h4v4h-3a1 1 0 0 0-1 1v3"/>',
  play: '<path d="M8 5.5v13l10.5-6.5z"/>',
  speaker: '<path d="M4 9.5h3.5L12 6v12l-4.5-3.5H4z"/><path d="M15.5 9a4 4 0 0 1 0 6M18 6.5a7.5 7.5 0 0 1 0 11"/>',
  "speaker-stop": '<path d="M4 9.5h3.5L12 6v12l-4.5-3.5H4z"/><rect x="15" y="9.5" width="5" height="5" rx="1"/>',
  mic: '<rect x="9" y="3.5" width="6" height="11" rx="3"/><path d="M5.5 11.5a6.5 6.5 0 0 0 13 0M12 18v3"/>',
};

const iconCache = new Map();

export function svg(name) {
  let icon = iconCache.get(name);
  if (!icon) {
    icon = buildIcon(name);
    iconCache.set(name, icon);
  }
  return icon.cloneNode(true);
}

function buildIcon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const node = document.createElementNS(ns, "svg");
  node.setAttribute("viewBox", "0 0 24 24");
  node.setAttribute("fill", "none");
  node.setAttribute("stroke", "currentColor");
  node.setAttribute("stroke-width", "1.8");
  node.setAttribute("stroke-linecap", "round");
  node.setAttribute("stroke-linejoin", "round");
  node.setAttribute("aria-hidden", "true");
  node.setAttribute("focusable", "false");
  // Our own constant markup, never user data.
  node.innerHTML = ICONS[name] || "";
  return node;
}

// Clipboard: the async API first; the old execCommand path when the page has no focus permission.
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = el("textarea", { "aria-hidden": "true", style: "position:fixed;left:-9999px;top:0" });
    area.value = text;
    document.body.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}

// Runs `fn(deadline)` in idle time, at the latest after `timeout` ms.
export const idle = window.requestIdleCallback
  ? (fn, timeout = 1000) => window.requestIdleCallback(fn, { timeout })
  : (fn) => setTimeout(() => fn({ timeRemaining: () => 8, didTimeout: true }), 16);

// Opens the options page in a tab (works from the side panel and from a tab).
export function openOptions(event) {
  event?.preventDefault();
  if (chrome.runtime.openOptionsPage) chrome.runtime.openOptionsPage();
  else window.open(chrome.runtime.getURL("options.html"), "_blank", "noopener");
}
