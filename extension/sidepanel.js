// The side panel: paints the conversation from storage, composes a message, runs a turn.
//
// Rules:
// 1. The conversation on screen is `history` from chrome.storage.local, read directly on load
//    (before Python is up) and kept in step with storage.onChanged. The panel never writes storage:
//    every change goes through the service worker (docs/protocol.md).
// 2. A turn is one port (`CONTRACT.turnPort`); its deltas paint only the answer that is streaming.
//    The streaming bubble leaves as soon as the stored answer is on screen, so one answer is never
//    shown twice.
// 3. First paint is fast: the last bubbles are rendered fully at once; older assistant bubbles show
//    their text and become Markdown in idle time. Every bubble is in the DOM from the first paint.
// 4. Accessible names are the contract of product.md ("Message", "Send"/"Stop", "Copy", "Edit",
//    "Regenerate", "Attach image", "Screenshot", "New session", "Sessions", role=alert for errors).

import { CONTRACT } from "./generated/contract.js";
import { call, el, svg, copyText, openOptions } from "./ui_common.js";
import { renderMarkdown } from "./markdown.js";

const KEYS = CONTRACT.storage.keys;
const moduleStartedAt = performance.now();
const EAGER_BUBBLES = 12;
const EAGER_IMAGE_BUBBLES = 12;
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const PING_GRACE_MS = 250;
const LOST_CONNECTION =
  "The connection to Margin's background worker was lost. Your message is saved; press Regenerate to try again.";

const $ = (id) => document.getElementById(id);
const ui = {
  conversation: $("conversation"),
  history: $("history"),
  live: $("live"),
  welcome: $("welcome"),
  welcomeSetup: $("welcome-setup"),
  model: $("model-name"),
  message: $("message"),
  send: $("send"),
  composer: $("composer"),
  chips: $("chips"),
  editBar: $("edit-bar"),
  alertBox: $("alert-box"),
  alertText: $("alert-text"),
  pythonStatus: $("python-status"),
  pythonStatusText: $("python-status-text"),
  fileInput: $("file-input"),
  dropOverlay: $("drop-overlay"),
  viewer: $("viewer"),
  viewerImg: $("viewer-img"),
  sessionsRoot: $("sessions-root"),
  sessionsButton: $("sessions"),
  announcer: $("announcer"),
};

const state = {
  history: [],
  bubbles: [], // [{sig, node}] by history index
  historyChanges: 0,
  providers: [],
  activeProviderId: null,
  attachments: [], // [{dataUrl, name, alt?, source, capturedAt?}]
  editing: null, // {index, draftText, draftAttachments}
  turn: null,
};

// --- Small helpers --------------------------------------------------------------------------------

function recordText(record) {
  const content = record?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((p) => p?.type === "text").map((p) => p.text ?? "").join("\n");
}

function recordImages(record) {
  const content = record?.content;
  if (!Array.isArray(content)) return [];
  return content.filter((p) => p?.type === "image_url" && typeof p.image_url?.url === "string");
}

// Cheap identity of a record's look: images by length and ends (data URLs are megabytes).
function signature(record) {
  const images = recordImages(record)
    .map((p) => {
      const url = p.image_url.url;
      return `${url.length}:${url.slice(0, 48)}:${url.slice(-48)}:${p.meta?.alt ?? ""}`;
    })
    .join(",");
  return `${record.role}|${record.stopped ? 1 : 0}|${images}|${recordText(record)}`;
}

function isAtBottom() {
  const c = ui.conversation;
  return c.scrollHeight - c.scrollTop - c.clientHeight < 48;
}

// "Pinned" = the user is at the bottom: growing content (a streaming answer, bubbles sized late by
// content-visibility, images decoding) keeps the bottom in view. Scrolling up unpins.
state.pinned = true;
ui.conversation.addEventListener("scroll", () => (state.pinned = isAtBottom()), { passive: true });
const keepPinned = new ResizeObserver(() => {
  if (state.pinned) scrollToBottom();
});
keepPinned.observe(ui.history);
keepPinned.observe(ui.live);

function scrollToBottom() {
  ui.conversation.scrollTop = ui.conversation.scrollHeight;
}

function announce(text) {
  ui.announcer.textContent = "";
  requestAnimationFrame(() => (ui.announcer.textContent = text));
}

const idle = window.requestIdleCallback
  ? (fn) => window.requestIdleCallback(fn, { timeout: 1000 })
  : (fn) => setTimeout(() => fn({ timeRemaining: () => 8, didTimeout: true }), 16);

// --- Alerts and status ------------------------------------------------------------------------------

function showAlert(sentence) {
  ui.alertText.textContent = sentence;
  ui.alertBox.hidden = false;
}

function clearAlert() {
  ui.alertBox.hidden = true;
  ui.alertText.textContent = "";
}

$("alert-dismiss").append(svg("close"));
$("alert-dismiss").addEventListener("click", () => {
  clearAlert();
  ui.message.focus();
});

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
  const alt = part.meta?.alt || part.meta?.name || `Attached image ${index + 1}`;
  if (!/^data:image\//i.test(url)) {
    return el("span", { class: "thumb missing", text: "Image unavailable" });
  }
  const img = el("img", { alt, decoding: "async" });
  // Parsing a multi-megabyte data URL is not free: old bubbles get theirs when scrolled near.
  if (lazy) {
    img.dataset.lazy = "1";
    lazyImages.observe(img);
  } else {
    img.src = url;
  }
  return el("button", { type: "button", class: "thumb", "aria-label": `Open image: ${alt}`, dataset: { action: "view-image" } }, img);
}

function buildBubble(record, index, { regenerate, lite, deferImages }) {
  const role = record.role === "user" ? "user" : "assistant";
  const article = el("article", { class: `msg ${role}`, dataset: { role, index: String(index) } });
  const body = el("div", { class: "bubble" });
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
    const content = el("div", { class: "md" });
    const text = recordText(record);
    if (lite) {
      content.classList.add("pending");
      content.textContent = text;
      article.dataset.pending = "1";
    } else {
      renderMarkdown(content, text);
    }
    body.append(content);
    if (record.stopped) body.append(el("span", { class: "tag", text: "Stopped" }));
  }
  const actions = el("div", { class: "actions" });
  const copy = actionButton("copy", "Copy", "copy");
  copy.append(el("span", { class: "copied", "aria-hidden": "true", text: "Copied" }));
  actions.append(copy);
  if (role === "user") actions.append(actionButton("edit", "Edit", "edit"));
  if (regenerate) actions.append(actionButton("regenerate", "Regenerate", "regenerate"));
  article.append(body, actions);
  return article;
}

// The one place "Regenerate" is offered: the last assistant bubble when the answer ends the
// conversation; when a question was left unanswered (an error, a lost worker), its user bubble.
function regenerateIndex(records) {
  for (let i = records.length - 1; i >= 0; i--) {
    const role = records[i].role;
    if (role === "assistant" || role === "user") return i;
  }
  return -1;
}

const pendingUpgrades = [];
let upgradeScheduled = false;

function scheduleUpgrades() {
  if (upgradeScheduled || !pendingUpgrades.length) return;
  upgradeScheduled = true;
  idle((deadline) => {
    upgradeScheduled = false;
    while (pendingUpgrades.length && (deadline.timeRemaining() > 3 || deadline.didTimeout)) {
      const { node, index } = pendingUpgrades.shift();
      if (!node.isConnected || !node.dataset.pending) continue;
      const record = state.history[index];
      const content = node.querySelector(".md");
      if (!record || !content) continue;
      const keepBottom = state.pinned;
      const before = ui.conversation.scrollHeight;
      const top = ui.conversation.scrollTop;
      renderMarkdown(content, recordText(record));
      content.classList.remove("pending");
      delete node.dataset.pending;
      // Keep what the user looks at still while older bubbles grow above it.
      if (keepBottom) scrollToBottom();
      else ui.conversation.scrollTop = top + (ui.conversation.scrollHeight - before);
      if (deadline.didTimeout) break;
    }
    scheduleUpgrades();
  });
}

function applyHistory(raw, { initial = false } = {}) {
  const records = Array.isArray(raw) ? raw : [];
  const stickToBottom = initial || state.pinned;
  state.history = records;
  const regen = regenerateIndex(records);
  const nodes = [];
  const bubbles = [];
  const eagerFrom = initial ? records.length - EAGER_BUBBLES : 0;
  const eagerImagesFrom = initial ? records.length - EAGER_IMAGE_BUBBLES : 0;
  const lite = [];
  records.forEach((record, index) => {
    if (!record || (record.role !== "user" && record.role !== "assistant")) {
      bubbles.push(null);
      return;
    }
    const sig = `${signature(record)}|${index === regen ? "R" : ""}`;
    const old = state.bubbles[index];
    if (old && old.sig === sig) {
      old.node.dataset.index = String(index);
      bubbles.push(old);
      nodes.push(old.node);
      return;
    }
    const isLite = index < eagerFrom && record.role === "assistant";
    const node = buildBubble(record, index, {
      regenerate: index === regen,
      lite: isLite,
      deferImages: index < eagerImagesFrom,
    });
    if (isLite) lite.push({ node, index });
    bubbles.push({ sig, node });
    nodes.push(node);
  });
  state.bubbles = bubbles;
  // Reconcile in place: unchanged bubbles stay (and keep their highlighting and scroll).
  const container = ui.history;
  let cursor = container.firstChild;
  for (const node of nodes) {
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
  // Newest first: the bubbles nearest to what the user sees become Markdown first.
  pendingUpgrades.unshift(...lite.reverse());
  scheduleUpgrades();

  reconcileStreamingWithHistory();
  updateEmptyState();
  if (stickToBottom) scrollToBottom();
  if (state.editing && state.history[state.editing.index]?.role !== "user") cancelEdit();
}

function updateEmptyState() {
  const empty = !ui.history.firstChild && !ui.live.firstChild;
  ui.welcome.hidden = !empty;
  ui.conversation.classList.toggle("empty", empty);
  ui.welcomeSetup.hidden = state.providers.length > 0;
}

// --- Bubble actions (one delegated listener) -----------------------------------------------------

ui.conversation.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button || !ui.conversation.contains(button)) return;
  const article = button.closest("article");
  const index = Number(article?.dataset.index);
  const record = Number.isInteger(index) ? state.history[index] : null;
  switch (button.dataset.action) {
    case "copy": {
      const text = record ? recordText(record) : state.turn?.text ?? "";
      if (await copyText(text)) flashCopied(button);
      else showAlert("Margin could not reach the clipboard. Select the text and copy it with Ctrl+C.");
      break;
    }
    case "copy-code": {
      const code = button.closest(".code-block")?.querySelector("code");
      if (code && (await copyText(code.textContent))) flashCopied(button);
      break;
    }
    case "edit":
      if (record?.role === "user") startEdit(index, record);
      break;
    case "regenerate":
      if (!state.turn) startTurn({ action: "regenerate" });
      break;
    case "view-image":
      openViewer(button.querySelector("img"));
      break;
  }
});

function flashCopied(button) {
  button.classList.add("is-copied");
  announce("Copied");
  clearTimeout(button._copiedTimer);
  button._copiedTimer = setTimeout(() => button.classList.remove("is-copied"), 1500);
}

// --- Image viewer -----------------------------------------------------------------------------------

function openViewer(img) {
  if (!img) return;
  ui.viewerImg.src = img.src;
  ui.viewerImg.alt = img.alt;
  ui.viewer.showModal();
}
$("viewer-close").append(svg("close"));
$("viewer-close").addEventListener("click", () => ui.viewer.close());
ui.viewer.addEventListener("click", (event) => {
  if (event.target === ui.viewer) ui.viewer.close();
});
ui.viewer.addEventListener("close", () => ui.viewerImg.removeAttribute("src"));

// --- Composer ---------------------------------------------------------------------------------------

function autosize() {
  const box = ui.message;
  box.style.height = "auto";
  box.style.height = `${Math.min(box.scrollHeight, Math.round(window.innerHeight * 0.4))}px`;
}
ui.message.addEventListener("input", autosize);

ui.message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
    event.preventDefault();
    if (!state.turn) submit();
  } else if (event.key === "Escape" && state.editing) {
    event.preventDefault();
    cancelEdit();
  }
});

ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  if (state.turn) stopTurn();
  else submit();
});

function setSendMode(streaming) {
  ui.send.replaceChildren(svg(streaming ? "stop" : "send"));
  ui.send.setAttribute("aria-label", streaming ? "Stop" : "Send");
  ui.send.title = streaming ? "Stop" : "Send (Enter)";
  ui.send.classList.toggle("stopping", streaming);
}

function renderChips() {
  ui.chips.replaceChildren(
    ...state.attachments.map((attachment, i) => {
      const img = el("img", { alt: attachment.alt || attachment.name || "Attached image" });
      img.src = attachment.dataUrl;
      const remove = el(
        "button",
        { type: "button", class: "chip-remove", "aria-label": "Remove image", title: `Remove ${attachment.name || "image"}` },
        svg("close"),
      );
      remove.addEventListener("click", () => {
        state.attachments.splice(i, 1);
        renderChips();
        ui.message.focus();
      });
      return el("div", { class: "chip", title: attachment.name || "" }, img, remove);
    }),
  );
  ui.chips.hidden = state.attachments.length === 0;
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file); // the exact bytes, never re-encoded
  });
}

async function addFiles(files, source) {
  for (const file of files) {
    const name = file.name || "image";
    if (!file.type.startsWith("image/")) {
      showAlert(`“${name}” is not an image. Attach a picture such as a PNG, JPEG, GIF or WebP file.`);
      continue;
    }
    if (file.size > MAX_IMAGE_BYTES) {
      showAlert(`“${name}” is larger than 20 MB. Attach a smaller image or a screenshot of it.`);
      continue;
    }
    try {
      const dataUrl = await readAsDataUrl(file);
      state.attachments.push({ dataUrl, name, source });
    } catch {
      showAlert(`Margin could not read “${name}”. Try saving it to disk and attaching it again.`);
    }
  }
  renderChips();
}

$("attach-image").append(svg("image"));
$("attach-image").addEventListener("click", () => ui.fileInput.click());
ui.fileInput.addEventListener("change", async () => {
  await addFiles([...ui.fileInput.files], "file");
  ui.fileInput.value = "";
  ui.message.focus();
});

$("screenshot").append(svg("screenshot"));
$("screenshot").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  button.disabled = true;
  try {
    const shot = await call("tab.screenshot", {});
    state.attachments.push({
      dataUrl: shot.dataUrl,
      name: shot.name || "Screenshot",
      alt: shot.title ? `Screenshot of ${shot.title}` : "Screenshot",
      source: "screenshot",
      capturedAt: shot.capturedAt,
    });
    renderChips();
  } catch (error) {
    showAlert(error.message);
  } finally {
    button.disabled = false;
    ui.message.focus();
  }
});

ui.message.addEventListener("paste", (event) => {
  const files = [...(event.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
  if (!files.length) return;
  if (!event.clipboardData.types.includes("text/plain")) event.preventDefault();
  addFiles(files, "paste");
});

// Drag and drop anywhere on the panel, with a visible target.
let dragDepth = 0;
const hasFiles = (event) => [...(event.dataTransfer?.types || [])].includes("Files");
document.addEventListener("dragenter", (event) => {
  if (!hasFiles(event)) return;
  dragDepth++;
  ui.dropOverlay.hidden = false;
});
document.addEventListener("dragover", (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  event.dataTransfer.dropEffect = "copy";
});
document.addEventListener("dragleave", () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) ui.dropOverlay.hidden = true;
});
document.addEventListener("drop", (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  dragDepth = 0;
  ui.dropOverlay.hidden = true;
  addFiles([...event.dataTransfer.files], "drop");
});

// --- Edit mode --------------------------------------------------------------------------------------

function attachmentsOf(record) {
  return recordImages(record).map((part, i) => ({
    dataUrl: part.image_url.url,
    name: part.meta?.name || `Image ${i + 1}`,
    alt: part.meta?.alt,
    source: part.meta?.source || "file",
  }));
}

function startEdit(index, record) {
  if (state.turn) return;
  if (!state.editing) {
    state.editing = { index, draftText: ui.message.value, draftAttachments: state.attachments };
  } else {
    state.editing.index = index;
  }
  ui.message.value = recordText(record);
  state.attachments = attachmentsOf(record);
  renderChips();
  ui.editBar.hidden = false;
  ui.composer.classList.add("editing");
  for (const node of ui.history.querySelectorAll("article.is-editing")) node.classList.remove("is-editing");
  state.bubbles[index]?.node.classList.add("is-editing");
  autosize();
  ui.message.focus();
  ui.message.setSelectionRange(ui.message.value.length, ui.message.value.length);
}

function cancelEdit() {
  if (!state.editing) return;
  ui.message.value = state.editing.draftText;
  state.attachments = state.editing.draftAttachments;
  leaveEditMode();
  ui.message.focus();
}

function leaveEditMode() {
  state.editing = null;
  renderChips();
  ui.editBar.hidden = true;
  ui.composer.classList.remove("editing");
  for (const node of ui.history.querySelectorAll("article.is-editing")) node.classList.remove("is-editing");
  autosize();
}

$("edit-cancel").addEventListener("click", cancelEdit);

// --- A turn -----------------------------------------------------------------------------------------

function submit() {
  const text = ui.message.value.trim();
  const images = state.attachments.slice();
  if (!text && !images.length) return;
  const start = state.editing
    ? { action: "edit", index: state.editing.index, text, images }
    : { action: "send", text, images };
  const restore = { text: ui.message.value, attachments: images, editing: state.editing };
  ui.message.value = "";
  state.attachments = [];
  if (state.editing) leaveEditMode();
  else renderChips();
  autosize();
  startTurn(start, restore);
}

const KEEPALIVE_MS = 20_000;

function startTurn(start, restore = null) {
  clearAlert();
  let port;
  try {
    port = chrome.runtime.connect({ name: CONTRACT.turnPort });
  } catch (error) {
    showAlert(LOST_CONNECTION);
    return;
  }
  const body = el("div", { class: "md" }, el("span", { class: "typing", "aria-label": "Margin is writing" }, el("i"), el("i"), el("i")));
  const node = el("article", { class: "msg assistant streaming", "aria-busy": "true", dataset: { role: "assistant", streaming: "1" } }, el("div", { class: "bubble" }, body));
  const turn = {
    port,
    node,
    body,
    text: "",
    started: false,
    ended: false,
    sawQuestionLast: false,
    frame: 0,
    stopTimer: 0,
    restore,
  };
  state.turn = turn;
  setSendMode(true);
  ui.live.replaceChildren(node);
  updateEmptyState();
  state.pinned = true;
  scrollToBottom();

  // Chrome stops a worker that received no event for 30 s, even mid-request: a model that thinks
  // (or a local server that loads the model) before its first token would lose the turn. A message
  // on the port is an event for the worker; it ignores anything after the start but "stop".
  // https://developer.chrome.com/docs/extensions/develop/concepts/service-workers/lifecycle
  const keepAlive = setInterval(() => {
    try { port.postMessage({ action: "keepalive" }); } catch { clearInterval(keepAlive); }
  }, KEEPALIVE_MS);
  port.onMessage.addListener((message) => onTurnEvent(turn, message));
  port.onDisconnect.addListener(() => {
    clearInterval(keepAlive);
    void chrome.runtime.lastError;
    if (!turn.ended) {
      endTurn(turn, { removeNow: true });
      if (!turn.stopRequested) showAlert(LOST_CONNECTION);
    }
  });
  port.postMessage(start);
}

function onTurnEvent(turn, message) {
  if (turn !== state.turn && turn.ended) return;
  switch (message?.event) {
    case "started":
      turn.started = true;
      break;
    case "delta":
      turn.text += message.text ?? "";
      scheduleStreamPaint(turn);
      break;
    case "done":
    case "stopped":
      paintStream(turn);
      endTurn(turn, { removeNow: false });
      break;
    case "error": {
      endTurn(turn, { removeNow: true });
      showAlert(message.error?.message || "The model did not answer. Please try again.");
      // Nothing was stored: give the user their words back.
      if (!turn.started && turn.restore && !ui.message.value && !state.attachments.length) {
        ui.message.value = turn.restore.text;
        state.attachments = turn.restore.attachments;
        renderChips();
        autosize();
      }
      break;
    }
  }
}

function scheduleStreamPaint(turn) {
  if (turn.frame) return;
  turn.frame = requestAnimationFrame(() => {
    turn.frame = 0;
    paintStream(turn);
  });
}

function paintStream(turn) {
  if (!turn.node.isConnected) return;
  const stick = state.pinned;
  renderMarkdown(turn.body, turn.text, { highlight: false });
  if (stick) scrollToBottom();
}

function stopTurn() {
  const turn = state.turn;
  if (!turn || turn.ended) return;
  turn.stopRequested = true;
  try {
    turn.port.postMessage({ action: "stop" });
  } catch {
    /* the port is gone; onDisconnect ends the turn */
  }
  ui.send.disabled = true;
  // Closing the port also stops the turn, should the worker not confirm.
  turn.stopTimer = setTimeout(() => {
    if (turn.ended) return;
    try {
      turn.port.disconnect();
    } catch {}
    endTurn(turn, { removeNow: false });
  }, 4000);
}

function endTurn(turn, { removeNow }) {
  turn.ended = true;
  cancelAnimationFrame(turn.frame);
  clearTimeout(turn.stopTimer);
  turn.node.removeAttribute("aria-busy");
  if (state.turn === turn) {
    state.turn = null;
    setSendMode(false);
    ui.send.disabled = false;
  }
  try {
    turn.port.disconnect();
  } catch {}
  if (removeNow) removeStreamingBubble(turn);
  else {
    state.lastTurn = turn;
    if (historyHoldsAnswer(turn)) removeStreamingBubble(turn);
    // The stored answer normally arrives with the next storage change; never leave a ghost behind.
    else turn.ghostTimer = setTimeout(() => refreshFromStorage().finally(() => removeStreamingBubble(turn)), 1500);
  }
}

function historyHoldsAnswer(turn) {
  const last = state.history[state.history.length - 1];
  return turn.sawQuestionLast && last?.role === "assistant";
}

function removeStreamingBubble(turn) {
  clearTimeout(turn.ghostTimer);
  if (turn.node.isConnected) {
    const stick = state.pinned;
    turn.node.remove();
    updateEmptyState();
    if (stick) scrollToBottom();
  }
  if (state.lastTurn === turn) state.lastTurn = null;
}

// Called after every history render: hand over from the streaming bubble to the stored one.
function reconcileStreamingWithHistory() {
  const turn = state.turn || state.lastTurn;
  if (!turn) return;
  const last = state.history[state.history.length - 1];
  if (last?.role === "user") turn.sawQuestionLast = true;
  if (last?.role === "assistant" && (turn.sawQuestionLast || turn.ended)) {
    // Stored (before or after "done" arrived): the stored bubble takes over, shown once.
    removeStreamingBubble(turn);
  }
}

async function refreshFromStorage() {
  const stored = await chrome.storage.local.get([KEYS.history]);
  applyHistory(stored[KEYS.history]);
}

// --- Header: the active model, sessions, options ------------------------------------------------

function paintModel() {
  const active = state.providers.find((p) => p?.id === state.activeProviderId) || null;
  if (active) {
    ui.model.textContent = active.model || active.name || "Model not set";
    ui.model.title = `${active.name || "Provider"} · ${active.model || "no model set"} — change in Settings`;
    ui.model.classList.remove("unset");
  } else {
    ui.model.textContent = state.providers.length ? "Choose a provider" : "No provider";
    ui.model.title = "Set up a provider in Settings";
    ui.model.classList.add("unset");
  }
  updateEmptyState();
}

ui.model.addEventListener("click", openOptions);
$("open-options").append(svg("settings"));
$("open-options").addEventListener("click", openOptions);
$("setup-provider").addEventListener("click", openOptions);

$("new-session").append(svg("plus"));
$("new-session").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  if (state.turn) stopTurn();
  button.disabled = true;
  try {
    await call("session.new", {});
    if (state.editing) cancelEdit();
    closeSessions();
    announce("New session started");
    ui.message.focus();
  } catch (error) {
    showAlert(error.message);
  } finally {
    button.disabled = false;
  }
});

ui.sessionsButton.append(svg("sessions"));
ui.sessionsButton.addEventListener("click", () => {
  if (ui.sessionsRoot.hidden) openSessions();
  else closeSessions();
});

// sessions_panel.js is imported on first use (dynamic import is allowed in extension pages), so
// the panel paints without it and still works if it fails to load.
let sessionsPanel = null;

async function openSessions() {
  ui.sessionsButton.setAttribute("aria-expanded", "true");
  try {
    if (!sessionsPanel) {
      const module = await import("./sessions_panel.js");
      sessionsPanel = module.mountSessionsPanel(ui.sessionsRoot, {
        call,
        onOpened: () => {
          closeSessions();
          state.pinned = true;
          scrollToBottom();
          ui.message.focus();
        },
        onClose: () => {
          closeSessions();
          ui.sessionsButton.focus();
        },
      });
    }
    ui.sessionsRoot.hidden = false;
    await sessionsPanel.show?.();
  } catch (error) {
    console.error("sessions panel", error);
    closeSessions();
    showAlert("The sessions panel could not be loaded. Reload the extension and try again.");
  }
}

function closeSessions() {
  ui.sessionsButton.setAttribute("aria-expanded", "false");
  if (ui.sessionsRoot.hidden) return;
  if (sessionsPanel?.hide) sessionsPanel.hide();
  ui.sessionsRoot.hidden = true;
}

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || event.defaultPrevented || ui.viewer.open) return;
  if (state.editing) {
    event.preventDefault();
    cancelEdit();
  } else if (!ui.sessionsRoot.hidden) {
    closeSessions();
    ui.sessionsButton.focus();
  }
});

// --- Storage: paint first, then follow ------------------------------------------------------------

chrome.storage.onChanged.addListener((changes, area) => {
  if (area !== "local") return;
  if (KEYS.history in changes) {
    state.historyChanges++;
    applyHistory(changes[KEYS.history].newValue);
  }
  if (KEYS.providers in changes || KEYS.activeProviderId in changes) {
    if (KEYS.providers in changes) state.providers = changes[KEYS.providers].newValue || [];
    if (KEYS.activeProviderId in changes) state.activeProviderId = changes[KEYS.activeProviderId].newValue ?? null;
    paintModel();
  }
});

async function firstPaint() {
  setSendMode(false);
  const changesBefore = state.historyChanges;
  let stored = {};
  let storageReadAt = null;
  try {
    stored = await chrome.storage.local.get([KEYS.history, KEYS.providers, KEYS.activeProviderId]);
    storageReadAt = performance.now();
  } catch (error) {
    showAlert("Margin could not read its saved conversation. Reload the panel; your data is not changed.");
  }
  state.providers = Array.isArray(stored[KEYS.providers]) ? stored[KEYS.providers] : [];
  state.activeProviderId = stored[KEYS.activeProviderId] ?? null;
  paintModel();
  // A change that arrived while we read is newer than what we read.
  if (state.historyChanges === changesBefore) applyHistory(stored[KEYS.history], { initial: true });
  window.__marginFirstPaint = performance.now();
  window.__marginPaintBreakdown = { moduleStartedAt, storageReadAt, paintedAt: window.__marginFirstPaint };
  document.body.dataset.ready = "1";
  autosize();
  ui.message.focus();
}

async function wakePython() {
  const slow = setTimeout(() => {
    ui.pythonStatusText.textContent = "Starting Python…";
    ui.pythonStatus.hidden = false;
  }, PING_GRACE_MS);
  try {
    await call("app.ping", {});
  } catch (error) {
    showAlert(error.message);
    return;
  } finally {
    clearTimeout(slow);
    ui.pythonStatus.hidden = true;
    ui.pythonStatusText.textContent = "";
  }
  call("images.bound", {}).catch((error) => console.warn("images.bound failed:", error.code, error.message));
}

// Read the sessions index in idle time after the first paint, so "Sessions" opens by painting
// from memory (with a thousand full digests the index is ~100 MB and takes seconds to read).
function preloadSessionsIndex() {
  idle(() => import("./sessions_panel.js")
    .then((module) => module.preloadSessions())
    .catch((error) => console.warn("sessions preload failed:", error)));
}

// Paint first, then wake the worker: booting Python competes for the CPU the first paint needs.
firstPaint().finally(() => {
  wakePython();
  preloadSessionsIndex();
});
