// The conversation: bubbles painted from `history`, their actions (Copy, Edit, Regenerate, open an
// image) and the image viewer.
//
// Rules:
// 1. `applyHistory` is the only painter of stored records; it reconciles in place, so a bubble whose
//    record did not change keeps its node (its highlighting, its scroll, its loaded image).
// 2. First paint is fast and needs no library (markdown_lite.js): an assistant bubble shows the
//    kept render of its record (render_cache.js) or its plain text, marked `data-pending`. Once
//    the first frame is drawn, `upgradeAfterPaint` loads the libraries and every pending bubble is
//    rendered from its record in place, newest first, in idle time, the bottom kept in view; the
//    result is the DOM a direct render gives (tests/e2e/test_first_paint_e2e.py). Older images
//    load when scrolled near.
// 3. An image the browser cannot display (a TIFF, say) shows a tile with its name instead of a
//    broken image; the stored record is never touched.
// 4. The one place "Regenerate" is offered is decided here (`regenerateIndex`).
// 5. Page-context records are cards (attachments.js), not bubbles; an answer that follows a video
//    record gets "Seek to" capsules for that video (capsules.js).
// 6. An answer with stored usage gets a quiet text line under its bubble (usage.js), not a control.
// 7. `init()` wires scrolling, the bubble actions and the viewer, and follows "live-changed" (the
//    streaming bubble came or went) for the empty state.
// 8. An answer whose save failed is painted right after its question, in the "Not saved" state
//    (unsaved.js decides which, and builds it).
// 9. A long answer is never rendered in one task, nor moved: just streamed, the streaming bubble
//    becomes the stored bubble where it stands (turn.js `takeStreamingBubble`), and over the kept
//    render's size its painted answer stays, the rest painted a slice per task (a short one is
//    rendered again from its record: its render is kept, and the log announces it once); read
//    from storage (over PROGRESSIVE_FROM_CHARS), it is painted a slice per task, as if it
//    streamed in.
// 10. The first paint puts in only the newest bubbles, enough to fill the view FIRST_FRAME_VIEWS
//    times over; once that frame is drawn, `paintOlder` puts the older ones above them in one
//    task, the bottom kept in view, before `body[data-ready]` is set: the DOM is then the one a
//    one-shot paint gives (tests/e2e/test_first_paint_e2e.py). Building and styling 200 bubbles
//    held the first frame for ~40 + ~30 ms; the ones above the view are not in it anyway.

import { call, el, svg, copyText, idle } from "../common/ui_common.js";
import { t, formatNumber } from "../common/i18n.js";
import { markdownModule, loadMarkdown } from "./markdown_lite.js";
import { cachedFragment, keepRenders, recordKey, MAX_ENTRIES, MAX_ENTRY_CHARS } from "./render_cache.js";
import { keepSoon as keepFirstFrame } from "./kept_frame.js";
import { KEYS, $, ui, state, events, recordText, recordImages, recordSignature, scrollToBottom, announce, showAlert } from "./state.js";
import { startEdit, cancelEdit, imageName } from "./composer.js";
import { startTurn, reconcileStreamingWithHistory, streamingBubble, takeStreamingBubble } from "./turn.js";
import { isAttachment, isVideoRecord, waitingFrom, attachmentSignature, buildAttachmentCard, updateComposerHint } from "./attachments.js";
import { addCapsules } from "./capsules.js";
import { usageLine } from "./usage.js";
import { versionBar, versionsKey } from "./versions.js";
import { unsavedAfter, forgetUnsavedNodes } from "./unsaved.js";
import { register } from "./registry.js";

const EAGER_BUBBLES = 12;
const EAGER_IMAGE_BUBBLES = 12;

export function init() {
  // "Pinned" = the user is at the bottom: growing content (a streaming answer, bubbles sized late
  // by content-visibility, images decoding) keeps the bottom in view. Scrolling up unpins.
  ui.conversation.addEventListener("scroll", () => (state.pinned = isAtBottom()), { passive: true });
  const keepPinned = new ResizeObserver(() => {
    if (state.pinned) scrollToBottom();
  });
  keepPinned.observe(ui.history);
  ui.conversation.addEventListener("click", onAction);
  events.addEventListener("live-changed", updateEmptyState);
  events.addEventListener("unsaved-changed", () => applyHistory(state.history));
  // Another language: every bubble and card is built again in it (their labels are built in).
  events.addEventListener("language-changed", () => {
    forgetUnsavedNodes();
    state.bubbles = [];
    applyHistory(state.history);
  });

  $("viewer-close").append(svg("close"));
  $("viewer-close").addEventListener("click", () => ui.viewer.close());
  ui.viewer.addEventListener("click", (event) => {
    if (event.target === ui.viewer) ui.viewer.close();
  });
  ui.viewer.addEventListener("close", closeViewerImage);
}

// --- Scroll pinning --------------------------------------------------------------------------------

function isAtBottom() {
  const c = ui.conversation;
  return c.scrollHeight - c.scrollTop - c.clientHeight < 48;
}

// --- Bubbles ----------------------------------------------------------------------------------------

function actionButton(action, label, icon) {
  return el(
    "button",
    { type: "button", class: "btn ghost icon action", "aria-label": label, title: label, dataset: { action } },
    svg(icon),
  );
}

const lazyImages = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const img = entry.target;
      lazyImages.unobserve(img);
      const article = img.closest("article");
      const part = recordImages(state.history[Number(article?.dataset.index)])[Number(img.dataset.part)];
      if (part) img.src = part.image_url.url;
      delete img.dataset.lazy;
    }
  },
  { root: ui.conversation, rootMargin: "800px 0px" },
);

function imageThumb(part, index, lazy) {
  const url = part.image_url.url;
  const alt = part.meta?.alt || imageName(part.meta) || t("panel_attached_image_numbered", formatNumber(index + 1));
  if (!/^data:image\//i.test(url)) {
    return el("span", { class: "thumb missing", text: t("panel_image_unavailable") });
  }
  const img = el("img", { alt, decoding: "async" });
  const dataset = { action: "view-image" };
  // A thumbnail made by images.bound: the viewer opens the original stored under this key.
  if (typeof part.meta?.originalKey === "string") dataset.originalKey = part.meta.originalKey;
  const button = el("button", { type: "button", class: "thumb", "aria-label": t("panel_open_image", alt), dataset }, img);
  img.addEventListener("error", () => showNoPreview(button, img, imageName(part.meta) || alt), { once: true });
  // Parsing a multi-megabyte data URL is not free: old bubbles get theirs when scrolled near.
  if (lazy) {
    img.dataset.lazy = "1";
    lazyImages.observe(img);
  } else {
    img.src = url;
  }
  return button;
}

// The browser could not decode the image (Chrome shows no TIFF, for one; the model got a converted
// copy). The tile replaces the <img>, so "view-image" finds nothing to open and does nothing.
function showNoPreview(button, img, name) {
  if (!button.contains(img)) return;
  const tile = el(
    "span",
    { class: "no-preview" },
    svg("image"),
    el("span", { class: "no-preview-name", text: name }),
    el("span", { class: "no-preview-note", text: t("panel_preview_unavailable") }),
  );
  img.replaceWith(tile);
  button.classList.add("unpreviewable");
  button.setAttribute("aria-label", t("panel_named_preview_unavailable", name));
  button.title = t("panel_named_no_preview_hint", name);
}

// The sanitized HTML of the bubbles rendered from a record, for the kept render: node -> {key, html}.
const renders = new WeakMap();

// Renders the record's answer into `content`; returns the element to show, which is the streamed
// one when a long just-streamed answer keeps its paint (rule 9).
function renderAnswer(markdown, node, content, record, { keep, streamed = null }) {
  const text = recordText(record);
  if (streamed?.complete && (!keep || text.length > MAX_ENTRY_CHARS)) {
    streamed.complete().then((done) => done && markdown.highlightWithin(streamed.content));
    return streamed.content;
  }
  if (text.length > PROGRESSIVE_FROM_CHARS) {
    markdown.streamingMarkdown(content).complete(text).then((done) => done && markdown.highlightWithin(content));
    return content;
  }
  const key = keep ? recordKey(record, text) : "";
  markdown.renderMarkdown(content, text, { keep: keep ? (html) => renders.set(node, { key, html }) : null });
  return content;
}

// Rule 9. A long answer from storage (a reload, another session opened) is painted as if it
// streamed in, a slice per task (markdown.js `complete`): rendering 1 MB at once held the panel
// for ~0.7 s, and laying it out as much again.
const PROGRESSIVE_FROM_CHARS = 200_000;
const PLAIN_PIECE_CHARS = 25_000;

// Until the libraries are in (rule 2). A long text goes in as pieces of about PLAIN_PIECE_CHARS,
// cut before a blank line, each laid out only near the viewport (sidepanel.css): laying out 1 MB
// as one text node held the first paint for ~0.8 s.
function showPlainText(content, text) {
  if (text.length <= PROGRESSIVE_FROM_CHARS) {
    content.textContent = text;
    return;
  }
  content.classList.add("pieces");
  const pieces = [];
  for (let start = 0; start < text.length; ) {
    const cut = text.indexOf("\n\n", start + PLAIN_PIECE_CHARS);
    const end = cut < 0 ? text.length : cut;
    pieces.push(el("div", { text: text.slice(start, end) }));
    start = end;
  }
  content.replaceChildren(...pieces);
}

// Rule 9: the newest answer, when it is the one that just streamed, is built in its streaming bubble.
function streamedBubbleFor(record, { lite }) {
  if (record.role !== "assistant" || lite || record !== state.history[state.history.length - 1]) return null;
  return takeStreamingBubble(recordText(record));
}

function buildBubble(record, index, { regenerate, lite, deferImages, videoIndex, keep }) {
  const role = record.role === "user" ? "user" : "assistant";
  const streamed = streamedBubbleFor(record, { lite });
  const article = streamed?.article ?? el("article", { class: `msg ${role}`, dataset: { role } });
  article.dataset.index = String(index);
  const body = streamed?.bubble ?? el("div", { class: "bubble" });
  if (role === "user") {
    const images = recordImages(record);
    if (images.length) {
      const thumbs = images.map((part, i) => {
        const thumb = imageThumb(part, i, deferImages);
        thumb.querySelector?.("img")?.setAttribute("data-part", String(i));
        return thumb;
      });
      body.append(el("div", { class: "images" }, ...thumbs));
    }
    const text = recordText(record);
    if (text) body.append(el("div", { class: "text", text }));
  } else {
    let content = el("div", { class: "md" });
    const markdown = markdownModule();
    if (lite || !markdown) {
      const text = recordText(record);
      const kept = keep && !markdown ? cachedFragment(recordKey(record, text)) : null;
      if (kept) {
        content.append(kept);
        if (videoIndex >= 0) addCapsules(content, videoIndex);
      } else {
        content.classList.add("pending");
        showPlainText(content, text);
      }
      article.dataset.pending = "1";
    } else {
      content = renderAnswer(markdown, article, content, record, { keep, streamed });
      if (videoIndex >= 0) addCapsules(content, videoIndex);
    }
    if (videoIndex >= 0) article.dataset.video = String(videoIndex);
    if (!streamed) body.append(content);
    else if (content !== streamed.content) streamed.content.replaceWith(content);
    if (record.stopped) body.append(el("span", { class: "tag", text: t("panel_stopped") }));
    // A turn that failed mid-answer keeps what arrived (py/margin/turn/chat.py rule 3); never let it look whole.
    if (record.incomplete) body.append(el("p", { class: "answer-note", text: t("panel_incomplete") }));
  }
  const actions = el("div", { class: "actions" });
  const copy = actionButton("copy", t("panel_copy"), "copy");
  copy.append(el("span", { class: "copied", "aria-hidden": "true", text: t("panel_copied") }));
  actions.append(copy);
  if (role === "user") actions.append(actionButton("edit", t("panel_edit"), "edit"));
  if (regenerate) actions.append(actionButton("regenerate", t("panel_regenerate"), "regenerate"));
  if (!streamed) article.append(body);
  const versions = versionBar(record, index); // "Previous version", "2 of 3", "Next version" (versions.js)
  if (versions) article.append(versions);
  const usage = role === "assistant" ? usageLine(record) : "";
  if (usage) article.append(el("p", { class: "usage-line", text: usage }));
  article.append(actions);
  return article;
}

// The one place "Regenerate" is offered: the last assistant bubble when the answer ends the
// conversation; when a question was left unanswered (an error, a lost worker), its user bubble.
function regenerateIndex(records) {
  for (let i = records.length - 1; i >= 0; i--) {
    const role = records[i]?.role;
    if (role === "assistant" || (role === "user" && !isAttachment(records[i]))) return i;
  }
  return -1;
}

const pendingUpgrades = [];
let upgradeScheduled = false;

function scheduleUpgrades() {
  const markdown = markdownModule();
  if (upgradeScheduled || !markdown) return;
  if (!pendingUpgrades.length) {
    markPaint("upgradedAt");
    keepNewestRenders();
    keepFirstFrame();
    return;
  }
  upgradeScheduled = true;
  idle((deadline) => {
    upgradeScheduled = false;
    while (pendingUpgrades.length && (deadline.timeRemaining() > 3 || deadline.didTimeout)) {
      const { node } = pendingUpgrades.shift();
      if (!node.isConnected || !node.dataset.pending) continue;
      // A kept node may have moved since it was queued (applyHistory renumbers what it keeps).
      const index = Number(node.dataset.index);
      const record = state.history[index];
      const content = node.querySelector(".md");
      if (!record || !content) continue;
      const keepBottom = state.pinned;
      const before = ui.conversation.scrollHeight;
      const top = ui.conversation.scrollTop;
      const shown = renderAnswer(markdown, node, content, record, { keep: index >= keepFrom });
      if (shown !== content) content.replaceWith(shown);
      if (node.dataset.video) addCapsules(shown, Number(node.dataset.video));
      shown.classList.remove("pending");
      delete node.dataset.pending;
      // Keep what the user looks at still while older bubbles grow above it.
      if (keepBottom) scrollToBottom();
      else ui.conversation.scrollTop = top + (ui.conversation.scrollHeight - before);
      if (deadline.didTimeout) break;
    }
    scheduleUpgrades();
  });
}

// Rule 2: called once the first frame is drawn.
export function upgradeAfterPaint() {
  loadMarkdown()
    .then(() => {
      markPaint("librariesAt");
      scheduleUpgrades();
    })
    .catch((error) => console.warn("the Markdown libraries did not load; answers stay plain text:", error));
}

// The benchmark's marks (sidepanel.js rule 4): when the libraries were in, when no bubble was pending.
function markPaint(name) {
  const marks = window.__marginPaintBreakdown;
  if (marks && marks[name] === undefined) marks[name] = performance.now();
}

// The kept render (render_cache.js) follows the newest answers on screen; written only when they change.
let keptKeys = "";
function keepNewestRenders() {
  const kept = [];
  for (const entry of state.bubbles.slice(keepFrom)) {
    const render = entry && renders.get(entry.node);
    if (render && !entry.node.dataset.pending) kept.push(render);
  }
  const keys = kept.map((k) => k.key).join(",");
  if (keys === keptKeys) return;
  keptKeys = keys;
  idle(() => keepRenders(kept), 2000);
}

// The index from which answers are among the newest MAX_ENTRIES: their renders are kept.
let keepFrom = 0;
function newestAnswersFrom(records) {
  let count = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    if (records[i]?.role === "assistant" && ++count === MAX_ENTRIES) return i;
  }
  return 0;
}

// Rule 10: the first frame's bubbles are built a batch at a time, newest first, until they fill
// the view FIRST_FRAME_VIEWS times; the records before `olderFrom` wait for `paintOlder`. Before
// the first frame a bubble is measured at the size guessed for it (90 px, sidepanel.css), and the
// smallest real one (a one-line question) is ~70 px: the margin keeps the view filled.
const FIRST_FRAME_BATCH = 12;
const FIRST_FRAME_VIEWS = 1.5;
let olderFrom = 0;

export function applyHistory(raw, { initial = false } = {}) {
  const records = Array.isArray(raw) ? raw : [];
  olderFrom = 0;
  if (!initial) {
    paint(records, { from: 0, firstPaint: false, stickToBottom: state.pinned });
    return;
  }
  let from = records.length;
  do {
    from = Math.max(0, from - FIRST_FRAME_BATCH);
    paint(records, { from, firstPaint: true, stickToBottom: true });
  } while (from > 0 && ui.history.scrollHeight < ui.conversation.clientHeight * FIRST_FRAME_VIEWS);
  olderFrom = from;
}

// Rule 10: called once the first frame is drawn; the bubbles it adds are those a one-shot first
// paint would have built, and their upgrades come after those of the bubbles in view.
export function paintOlder() {
  if (!olderFrom) return;
  olderFrom = 0;
  paint(state.history, { from: 0, firstPaint: true, stickToBottom: state.pinned, older: true });
}

// Builds (or keeps) the bubbles of records[from..]; those before `from` are left out.
function paint(records, { from, firstPaint, stickToBottom, older = false }) {
  keepFrom = newestAnswersFrom(records);
  state.history = records;
  const regen = regenerateIndex(records);
  const nodes = [];
  const bubbles = [];
  const eagerFrom = firstPaint ? records.length - EAGER_BUBBLES : 0;
  const eagerImagesFrom = firstPaint ? records.length - EAGER_IMAGE_BUBBLES : 0;
  const lite = [];
  const waiting = waitingFrom(records);
  const unsaved = unsavedAfter(records); // answers not saved, painted after their question (rule 8)
  let videoIndex = -1;
  records.forEach((record, index) => {
    if (!record || (record.role !== "user" && record.role !== "assistant")) {
      bubbles.push(null);
      return;
    }
    if (isAttachment(record) && isVideoRecord(record)) videoIndex = index;
    if (index < from) {
      bubbles.push(null); // not built yet (rule 10): a later paint builds it
      return;
    }
    if (isAttachment(record)) {
      const sig = attachmentSignature(record, index >= waiting);
      const old = state.bubbles[index];
      const entry = old && old.sig === sig ? old : { sig, node: buildAttachmentCard(record, index, { waiting: index >= waiting }) };
      entry.node.dataset.index = String(index);
      bubbles.push(entry);
      nodes.push(entry.node);
      return;
    }
    const capsulesFor = record.role === "assistant" ? videoIndex : -1;
    const sig = `${recordSignature(record)}|${index === regen ? "R" : ""}|v${capsulesFor}|${usageLine(record)}|${versionsKey(record)}`;
    const old = state.bubbles[index];
    if (old && old.sig === sig) {
      old.node.dataset.index = String(index);
      bubbles.push(old);
      nodes.push(old.node, ...(unsaved.get(index) ?? []));
      return;
    }
    const isLite = record.role === "assistant" && (index < eagerFrom || !markdownModule());
    const node = buildBubble(record, index, {
      regenerate: index === regen,
      lite: isLite,
      deferImages: index < eagerImagesFrom,
      videoIndex: capsulesFor,
      keep: index >= keepFrom,
    });
    if (isLite) lite.push({ node });
    bubbles.push({ sig, node });
    nodes.push(node, ...(unsaved.get(index) ?? []));
  });
  const streaming = streamingBubble();
  if (streaming) nodes.push(streaming);
  // A whole conversation arriving at once (first paint, another session opened) is not news for a
  // screen reader: hold the log's announcements while it is put in (aria-busy), so only what a
  // turn adds later is read out.
  const reused = bubbles.filter((b, i) => b && b === state.bubbles[i]).length;
  const unsavedCount = [...unsaved.values()].reduce((n, list) => n + list.length, 0);
  if (nodes.length - unsavedCount - reused > 2) {
    ui.conversation.setAttribute("aria-busy", "true");
    requestAnimationFrame(() => ui.conversation.removeAttribute("aria-busy"));
  }
  state.bubbles = bubbles;
  // Reconcile in place: unchanged bubbles stay (and keep their highlighting and scroll). A node
  // that goes is removed before the next one is placed, so the nodes that stay never move (a
  // moved node is laid out again whole, and the log announces it again).
  const container = ui.history;
  const staying = new Set(nodes);
  let cursor = container.firstChild;
  for (const node of nodes) {
    while (cursor && cursor !== node && !staying.has(cursor)) {
      const next = cursor.nextSibling;
      cursor.remove();
      cursor = next;
    }
    if (cursor === node) {
      cursor = cursor.nextSibling;
    } else {
      container.insertBefore(node, cursor);
    }
  }
  while (cursor) {
    const next = cursor.nextSibling;
    cursor.remove();
    cursor = next;
  }
  // Newest first: the bubbles nearest to what the user sees become Markdown first (older ones,
  // put in above the first frame's, after those).
  if (older) pendingUpgrades.push(...lite.reverse());
  else pendingUpgrades.unshift(...lite.reverse());
  scheduleUpgrades();

  reconcileStreamingWithHistory();
  updateComposerHint(records);
  updateEmptyState();
  if (stickToBottom) scrollToBottom();
  // The message being edited changed or went away (another session was opened, say): "Send" must
  // not replace whatever now sits at that index.
  if (state.editing && recordSignature(state.history[state.editing.index]) !== state.editing.sig) cancelEdit({ returnFocus: false });
}

export function updateEmptyState() {
  const empty = !ui.history.firstChild;
  ui.welcome.hidden = !empty;
  ui.conversation.classList.toggle("empty", empty);
  ui.welcomeSetup.hidden = state.providers.length > 0;
}

// Reads `history` again and paints it (a turn that ended without a storage change calls this).
export async function refreshFromStorage() {
  const stored = await chrome.storage.local.get([KEYS.history]);
  applyHistory(stored[KEYS.history]);
}

// --- Bubble actions (one delegated listener) -----------------------------------------------------

async function onAction(event) {
  const button = event.target.closest("button[data-action]");
  if (!button || !ui.conversation.contains(button)) return;
  const article = button.closest("article");
  const index = Number(article?.dataset.index);
  const record = Number.isInteger(index) ? state.history[index] : null;
  switch (button.dataset.action) {
    case "copy": {
      const text = record ? recordText(record) : state.turn?.text ?? "";
      if (await copyText(text)) flashCopied(button);
      else showAlert(() => t("panel_clipboard_failed"));
      break;
    }
    case "copy-code": {
      const code = button.closest(".code-block")?.querySelector("code");
      if (code && (await copyText(code.textContent))) flashCopied(button);
      break;
    }
    case "edit":
      if (record?.role === "user" && !isAttachment(record)) startEdit(index, record);
      break;
    case "seek":
      seek(button);
      break;
    case "regenerate":
      if (state.turnState === "idle") startTurn({ action: "regenerate" });
      break;
    case "view-image":
      openViewer(button);
      break;
  }
}

async function seek(button) {
  button.disabled = true;
  try {
    const result = await call("video.seek", { index: Number(button.dataset.video), seconds: Number(button.dataset.seconds) });
    if (result.how === "reopened") announce(t("panel_video_reopened"));
  } catch (error) {
    showAlert(error.message);
  } finally {
    button.disabled = false;
  }
}

function flashCopied(button) {
  button.classList.add("is-copied");
  announce(t("panel_copied"));
  clearTimeout(button._copiedTimer);
  button._copiedTimer = setTimeout(() => button.classList.remove("is-copied"), 1500);
}

// --- Image viewer -----------------------------------------------------------------------------------

// The bubble shows what `history` holds; a thumbnail's original (images.original) is shown through a
// blob URL (the CSP allows blob: images; a blob is not a second multi-megabyte string in the DOM),
// revoked when the viewer closes. The thumbnail stays shown while the original loads, and stays
// with a quiet note when the original is gone.
let viewerBlobUrl = null;
let viewerOpening = 0;

async function openViewer(button) {
  const img = button.querySelector("img");
  if (!img) return;
  closeViewerImage();
  const opening = ++viewerOpening;
  ui.viewerImg.src = img.src;
  ui.viewerImg.alt = img.alt;
  ui.viewer.showModal();
  const key = button.dataset.originalKey;
  if (!key) return;
  let blob;
  try {
    blob = dataUrlBlob((await call("images.original", { key })).dataUrl);
  } catch {
    if (opening === viewerOpening) announce(t("panel_original_gone"));
    return;
  }
  if (opening !== viewerOpening || !ui.viewer.open) return; // closed or reopened meanwhile
  viewerBlobUrl = URL.createObjectURL(blob);
  ui.viewerImg.src = viewerBlobUrl;
}

function closeViewerImage() {
  viewerOpening++;
  ui.viewerImg.removeAttribute("src");
  if (viewerBlobUrl) URL.revokeObjectURL(viewerBlobUrl);
  viewerBlobUrl = null;
}

function dataUrlBlob(url) {
  const match = /^data:([^;,]+)((?:;[^;,]*)*),(.*)$/s.exec(url);
  if (!match) throw new Error("not a data URL");
  const isBase64 = /;base64/i.test(match[2]);
  const text = isBase64 ? atob(match[3]) : decodeURIComponent(match[3]);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return new Blob([bytes], { type: match[1] });
}

register({ name: "conversation", provides: { refreshFromStorage }, init });
