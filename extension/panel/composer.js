// The composer: the message box, Send/Stop, attachments (chips, the file chooser, paste, drop,
// Screenshot) and edit mode (a user bubble's words and images back in the box).
//
// Rules:
// 1. What will be sent is `ui.message` + `state.attachments`; `submit` hands both to a turn and
//    clears the box (the turn gives them back if nothing was stored).
// 2. An attachment keeps the exact bytes the user gave (a data URL, never re-encoded here); data
//    files (CSV, JSON, text) dropped or pasted go to data_files.js and become cards; other files
//    that are not images or are over `CONTRACT.limits.attachmentMaxBytes` (the limit Python
//    enforces) are refused with a sentence saying what to do.
// 3. Edit mode keeps the draft that was in the box and restores it on Cancel / Esc. It remembers the
//    edited record's signature: when that record changes under it, edit mode ends (conversation.js).
//    Cancel and Esc give the focus back to where the edit began (the bubble's "Edit").
// 4. The Send button follows `state.turnState` ("turn-state"): "Send" while idle, "Stop" while a
//    turn runs, disabled while it is stopping. A new turn starts only while idle.
// 5. ArrowUp in an empty box (no attachment, not editing, idle) edits the last question, through
//    its bubble's "Edit", as chat apps do.

import { CONTRACT } from "../generated/contract.js";
import { call, el, svg } from "../common/ui_common.js";
import { t, formatNumber } from "../common/i18n.js";
import { $, ui, state, events, recordText, recordImages, recordSignature, showAlert } from "./state.js";
import { startTurn, stopTurn } from "./turn.js";
import { isDataFile, attachDataFiles } from "./data_files.js";
import { register } from "./registry.js";

const MAX_IMAGE_BYTES = CONTRACT.limits.attachmentMaxBytes;
const MAX_IMAGE_MB = Math.floor(MAX_IMAGE_BYTES / (1024 * 1024));

export function init() {
  ui.message.addEventListener("input", autosize);
  ui.message.addEventListener("keydown", onMessageKeydown);
  ui.message.addEventListener("paste", onPaste);
  ui.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    if (state.turnState === "idle") submit();
    else stopTurn();
  });
  paintSendButton();
  events.addEventListener("turn-state", paintSendButton);
  events.addEventListener("language-changed", () => {
    paintSendButton();
    renderChips();
  });
  events.addEventListener("turn-unsent", (event) => giveBack(event.detail.restore));

  $("attach-image").append(svg("image"));
  $("attach-image").addEventListener("click", () => ui.fileInput.click());
  ui.fileInput.addEventListener("change", async () => {
    await addFiles([...ui.fileInput.files], "file");
    ui.fileInput.value = "";
    ui.message.focus();
  });
  $("screenshot").append(svg("screenshot"));
  $("screenshot").addEventListener("click", takeScreenshot);
  followDrops();
  $("edit-cancel").addEventListener("click", () => cancelEdit());
}

// --- Composer ---------------------------------------------------------------------------------------

export function autosize() {
  const box = ui.message;
  box.style.height = "auto";
  box.style.height = `${Math.min(box.scrollHeight, Math.round(window.innerHeight * 0.4))}px`;
}

function onMessageKeydown(event) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
    event.preventDefault();
    if (state.turnState === "idle") submit();
  } else if (event.key === "Escape" && state.editing) {
    event.preventDefault();
    cancelEdit();
  } else if (event.key === "ArrowUp" && !ui.message.value && !state.attachments.length && !state.editing && state.turnState === "idle" && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey) {
    const edit = [...ui.history.querySelectorAll('button[data-action="edit"]')].at(-1); // rule 5
    if (edit) {
      event.preventDefault();
      edit.click();
    }
  }
}

function paintSendButton() {
  const running = state.turnState !== "idle";
  ui.send.replaceChildren(svg(running ? "stop" : "send"));
  ui.send.setAttribute("aria-label", running ? t("panel_stop") : t("panel_send"));
  ui.send.title = running ? t("panel_stop") : t("panel_send_enter");
  ui.send.classList.toggle("stopping", running);
  ui.send.disabled = state.turnState === "stopping";
}

// A screenshot's stored name is its tab's title (py/margin/images/screenshot.py); one stored before says
// "Screenshot of <title>" in English. Either is shown as the catalogue's "Screenshot of $1" in the
// language of the moment; any other image's name is shown as it is.
const LEGACY_SCREENSHOT = CONTRACT.storedNames.legacyScreenshotPrefix;
export function imageName(meta) {
  const name = typeof meta?.name === "string" ? meta.name : "";
  if (meta?.source !== "screenshot" || !name) return name;
  return t("panel_screenshot_of", name.startsWith(LEGACY_SCREENSHOT) ? name.slice(LEGACY_SCREENSHOT.length) : name);
}

function renderChips() {
  ui.chips.replaceChildren(
    ...state.attachments.map((attachment, i) => {
      const name = imageName(attachment);
      const img = el("img", { alt: attachment.alt || name || t("panel_attached_image") });
      // Chrome cannot show some formats the model can still get (converted): TIFF, HEIC, ...
      img.addEventListener("error", () => img.replaceWith(chipWithoutPreview(attachment)), { once: true });
      img.src = attachment.dataUrl;
      const remove = el(
        "button",
        { type: "button", class: "chip-remove", "aria-label": t("panel_remove_image"), title: t("panel_remove_named", name || t("panel_image_word")) },
        svg("close"),
      );
      remove.addEventListener("click", () => {
        state.attachments.splice(i, 1);
        renderChips();
        ui.message.focus();
      });
      return el("div", { class: "chip", title: name }, img, remove);
    }),
  );
  ui.chips.hidden = state.attachments.length === 0;
}

function chipWithoutPreview(attachment) {
  const type = /^data:image\/([\w.+-]+)/i.exec(attachment.dataUrl || "")?.[1] || "image";
  return el(
    "span",
    { class: "chip-no-preview", title: t("panel_chip_no_preview", imageName(attachment) || t("panel_image")) },
    svg("image"),
    el("span", { text: type.replace(/^x-/, "").toUpperCase().slice(0, 5) }),
  );
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file); // the exact bytes, never re-encoded
  });
}

// Data files (CSV, JSON, text: data_files.js) dropped or pasted here become cards, not chips;
// the image picker takes images only ("Attach file" has its own picker).
async function addFiles(files, source) {
  const dataFiles = source === "file" ? [] : files.filter((file) => !file.type.startsWith("image/") && isDataFile(file));
  if (dataFiles.length) await attachDataFiles(dataFiles);
  for (const file of files.filter((f) => !dataFiles.includes(f))) {
    const name = file.name || t("panel_image_word");
    if (!file.type.startsWith("image/")) {
      showAlert(() => t("panel_not_an_image", name));
      continue;
    }
    if (file.size > MAX_IMAGE_BYTES) {
      showAlert(() => t("panel_image_too_large", name, formatNumber(MAX_IMAGE_MB)));
      continue;
    }
    try {
      const dataUrl = await readAsDataUrl(file);
      state.attachments.push({ dataUrl, name, source });
    } catch {
      showAlert(() => t("panel_image_unreadable", name));
    }
  }
  renderChips();
}

async function takeScreenshot(event) {
  const button = event.currentTarget;
  button.disabled = true;
  try {
    const shot = await call("tab.screenshot", {});
    state.attachments.push({
      dataUrl: shot.dataUrl,
      name: shot.name,  // the tab's title: shown by imageName, stored without words
      alt: shot.title ? t("panel_screenshot_of", shot.title) : t("panel_screenshot"),
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
}

function onPaste(event) {
  const files = [...(event.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/") || isDataFile(f));
  if (!files.length) return;
  if (!event.clipboardData.types.includes("text/plain")) event.preventDefault();
  addFiles(files, "paste");
}

// Drag and drop anywhere on the panel, with a visible target.
function followDrops() {
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
}

// --- Edit mode --------------------------------------------------------------------------------------

function attachmentsOf(record) {
  return recordImages(record).map((part, i) => ({
    dataUrl: part.image_url.url,
    name: part.meta?.name || t("panel_image_numbered", formatNumber(i + 1)),
    alt: part.meta?.alt,
    source: part.meta?.source || "file",
  }));
}

export function startEdit(index, record) {
  if (state.turnState !== "idle") return;
  state.editing ??= { draftText: ui.message.value, draftAttachments: state.attachments };
  const from = document.activeElement;
  state.editing.returnTo = from && ui.history.contains(from) ? from : null;
  state.editing.index = index;
  state.editing.sig = recordSignature(record);
  ui.message.value = recordText(record);
  state.attachments = attachmentsOf(record);
  showEditMode();
  ui.message.focus();
  ui.message.setSelectionRange(ui.message.value.length, ui.message.value.length);
}

function showEditMode() {
  renderChips();
  ui.editBar.hidden = false;
  ui.composer.classList.add("editing");
  for (const node of ui.history.querySelectorAll("article.is-editing")) node.classList.remove("is-editing");
  state.bubbles[state.editing.index]?.node.classList.add("is-editing");
  autosize();
}

// A turn that stored nothing gives back what `submit` took: the words, the images, and edit mode
// while the edited message is still there. What the user typed or attached meanwhile wins.
function giveBack(restore) {
  if (!restore || ui.message.value || state.attachments.length || state.editing) return;
  ui.message.value = restore.text;
  state.attachments = restore.attachments;
  const editing = restore.editing;
  if (editing && recordSignature(state.history[editing.index]) === editing.sig) {
    state.editing = editing;
    showEditMode();
  } else {
    renderChips();
    autosize();
  }
}

// `returnFocus`: back to where the edit began (Cancel, Esc); otherwise the box keeps it.
export function cancelEdit({ returnFocus = true } = {}) {
  if (!state.editing) return;
  const returnTo = returnFocus ? state.editing.returnTo : null;
  ui.message.value = state.editing.draftText;
  state.attachments = state.editing.draftAttachments;
  leaveEditMode();
  if (returnTo?.isConnected) returnTo.focus();
  else ui.message.focus();
}

function leaveEditMode() {
  state.editing = null;
  renderChips();
  ui.editBar.hidden = true;
  ui.composer.classList.remove("editing");
  for (const node of ui.history.querySelectorAll("article.is-editing")) node.classList.remove("is-editing");
  autosize();
}

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

register({ name: "composer", init });
