// The kept first frame, the panel's side: keeps what the panel looks like once it is settled, so
// the next open shows it at once (first_frame.js shows it, before the panel's module is loaded),
// and takes over from it in the task that builds the panel's own first frame.
//
// Rules:
// 1. Kept in the extension page's `localStorage` under `margin.firstFrame` (docs/storage-model.md), as
//    `{v: 1, version, stamp, lang, html}`: a cache only, never read by the worker, never in a backup;
//    the panel still never writes `chrome.storage` (sidepanel.js rule 1).
// 2. Kept only when the panel is settled: no turn runs and no bubble waits for its Markdown render
//    (conversation.js rule 2), in idle time after the conversation last changed. `html` is the
//    `.app` with only the newest bubbles (enough to fill the view `VIEWS` times), the transient parts
//    (alerts, menus, the edit bar, attachment chips, the status bar) as a fresh panel has them, no
//    attribute longer than `MAX_ATTRIBUTE_CHARS` (a large image keeps its size, not its pixels), and
//    at most `MAX_FRAME_CHARS` in all (fewer bubbles until it fits, else nothing is kept).
// 3. `stamp` says which conversation the frame shows: the number of records, the first record it
//    shows, and a hash of the signatures of the records from there on. `takeOver` counts the frame
//    as the panel's first paint only when the history it read has the same stamp, the page speaks
//    the same language and the header says the same (the model chip); otherwise the frame was
//    stale, and the first paint is the panel's own.
// 4. A storage that throws (full, disabled) means no frame kept, never an error.

import { idle } from "../common/ui_common.js";
import { hash53 } from "./render_cache.js";
import { recordSignature, state, ui } from "./state.js";
import { usageLine } from "./usage.js";

const KEY = "margin.firstFrame";
export const MAX_FRAME_CHARS = 256 * 1024;
const MAX_ATTRIBUTE_CHARS = 32 * 1024;
const VIEWS = 2;
const KEEP_DELAY_MS = 300;
// Rule 2: what a fresh panel does not show.
const TRANSIENT = ["#alert-box", "#model-menu", "#edit-bar", "#python-status", "#chips"];

export function historyStamp(records, from) {
  const signatures = records.slice(from).map((record) => `${recordSignature(record)}|${record ? usageLine(record) : ""}`);
  return `${records.length}:${from}:${hash53(signatures.join("\u0000"))}`;
}

let timer = 0;

// Called whenever the conversation has settled (conversation.js): keeps the frame a little later, in idle time.
export function keepSoon() {
  clearTimeout(timer);
  timer = setTimeout(() => idle(keep, 2000), KEEP_DELAY_MS);
}

function settled() {
  return state.turnState === "idle" && document.body.dataset.ready && !ui.history.querySelector("[data-pending]");
}

function keep() {
  if (!settled()) return; // the end of the turn or of the upgrades calls keepSoon again
  const children = [...ui.history.children];
  const view = ui.conversation.clientHeight * VIEWS;
  let first = children.length;
  for (let height = 0; first > 0 && height < view; ) height += children[--first].offsetHeight;
  // A bubble's text alone over the bound rules it out before anything is cloned (a 1 MB answer:
  // cloning it, to find its HTML too long, held the panel ~0.7 s).
  let text = 0;
  for (let i = children.length - 1; i >= first; i--) {
    text += children[i].textContent.length;
    if (text > MAX_FRAME_CHARS) {
      first = i + 1;
      break;
    }
  }
  if (children.length && first >= children.length) return forget();
  let frame = frameFrom(children, first);
  while (frame.html.length > MAX_FRAME_CHARS && first < children.length - 1) {
    first += Math.max(1, Math.floor((children.length - first) / 2));
    frame = frameFrom(children, first); // the step leaves at least the newest child
  }
  // A frame without the conversation's bubbles would show another conversation: none is kept.
  if (frame.html.length > MAX_FRAME_CHARS || (children.length && first >= children.length)) return forget();
  store(frame);
}

const forget = () => store(null);

function store(frame) {
  try {
    if (frame) localStorage.setItem(KEY, JSON.stringify(frame));
    else localStorage.removeItem(KEY);
    window.__marginFirstFrameKept = (window.__marginFirstFrameKept ?? 0) + 1; // the benchmark waits for it
  } catch {
    /* rule 4 */
  }
}

// A deep copy of `node` in which `history` (somewhere inside it) holds only its children from
// `first` on: the bubbles left out are never copied.
function cloneKeeping(node, history, first) {
  if (node === history) {
    const copy = node.cloneNode(false);
    for (const child of [...node.children].slice(first)) copy.append(child.cloneNode(true));
    return copy;
  }
  if (!node.contains(history)) return node.cloneNode(true);
  const copy = node.cloneNode(false);
  for (const child of node.childNodes) copy.append(cloneKeeping(child, history, first));
  return copy;
}

// Rule 2: the `.app` holding children[first..] of the conversation, and the stamp of what they show.
function frameFrom(children, first) {
  const app = document.querySelector(".app:not(.first-frame)");
  const clone = cloneKeeping(app, ui.history, first);
  const cloned = [...clone.querySelector("#history").children];
  for (let i = first; i < children.length; i++) keepImageSizes(children[i], cloned[i - first]);
  for (const selector of TRANSIENT) {
    const part = clone.querySelector(selector);
    if (part) part.hidden = true;
  }
  clone.querySelector("#chips")?.replaceChildren();
  clone.querySelector("#message")?.removeAttribute("style"); // sized for a draft the frame does not keep
  for (const element of clone.querySelectorAll("*")) {
    for (const { name, value } of [...element.attributes]) {
      if (value.length > MAX_ATTRIBUTE_CHARS) element.removeAttribute(name);
    }
  }
  const indexes = children.slice(first).map((child) => Number(child.dataset.index)).filter(Number.isInteger);
  const from = indexes.length ? Math.min(...indexes) : state.history.length;
  return {
    v: 1,
    version: chrome.runtime.getManifest().version,
    stamp: historyStamp(state.history, from),
    lang: document.documentElement.lang,
    html: clone.outerHTML,
  };
}

// An image whose URL is too long to keep keeps the size it has on screen, so nothing moves.
function keepImageSizes(live, cloned) {
  const liveImages = live.querySelectorAll("img");
  cloned.querySelectorAll("img").forEach((image, i) => {
    const src = image.getAttribute("src") ?? "";
    if (src.length <= MAX_ATTRIBUTE_CHARS && src.startsWith("data:image/")) return;
    image.removeAttribute("src");
    const box = liveImages[i]?.getBoundingClientRect();
    if (box?.width && box.height) {
      image.style.width = `${box.width}px`;
      image.style.height = `${box.height}px`;
    }
  });
}

// The frame first_frame.js put up, while it is on screen.
export function keptFrame() {
  const kept = window.__marginKeptFrame;
  return kept?.node?.isConnected ? kept : null;
}

// Rule 3: removes the kept frame (call it in the task that builds the panel's first frame) and says
// whether it showed the conversation the panel now shows.
export function takeOver(kept, records) {
  kept.node.remove();
  const from = Number(kept.stamp.split(":")[1]);
  const header = (app) => app?.querySelector(".topbar")?.textContent ?? null;
  return (
    Number.isInteger(from) &&
    from >= 0 &&
    kept.lang === document.documentElement.lang &&
    header(kept.node) === header(document.querySelector(".app:not(.first-frame)")) && // the model chip
    kept.stamp === historyStamp(records, Math.min(from, records.length))
  );
}
