// "Attach tabs": several web tabs of the window attached at once, each as its own card, the same
// card "Attach page" makes (py/margin/page/tab_list.py lists them, py/margin/page/attach.py reads
// each one).
//
// Rules:
// 1. The button asks the worker for the window's web tabs (`tabs.list`), then opens the dialog
//    "Attach tabs": one checkbox per tab named by its title (its site, "Current tab", and a note
//    for a tab Chrome put to sleep or cannot read, as its description), the current tab first.
//    Nothing is ticked; "Attach" is enabled once something is. A tab the worker says cannot be
//    read is listed, unticked and disabled, with the reason.
// 2. The dialog is keyboard-complete: focus starts on the first tab; Tab and Shift+Tab stay inside
//    it (they wrap around); Space ticks; Enter on a tab or on "Attach" attaches; Escape or
//    "Cancel" closes it, and the focus goes back to "Attach tabs".
// 3. "Attach" closes the dialog and sends one `tab.attach {tabId}` per ticked tab, in the order
//    shown, one after the other, through panel/pdf_attach.js (a PDF tab is read by the panel's
//    PDF worker, with its own "Reading PDF" card and Cancel): each stores its own record (a page
//    already waiting is not added twice), and a reply that says `summarize` starts that card's
//    summary pass. The cards appear through storage.onChanged (attachments.js rule 2).
// 4. Tabs that could not be read are named in one sentence in the alert, each with a short reason
//    (the worker's error code, said in the panel's words); the others are attached all the same.
//    A PDF reading the user cancelled is not a failure. The outcome is announced once.

import { call, el, svg } from "../common/ui_common.js";
import { t, tPlural, locale, tagOf } from "../common/i18n.js";
import { $, ui, events, showAlert, clearAlert, announce } from "./state.js";
import { startSummary } from "./summaries.js";
import { attachTab } from "./pdf_attach.js";
import { register } from "./registry.js";

const button = $("attach-tabs");
const dialog = $("tabs-dialog");
const list = $("tabs-list");
const empty = $("tabs-empty");
const attachButton = $("tabs-attach");
const cancelButton = $("tabs-cancel");

// Rule 4: a refusal's code, as a short reason in the panel's words.
const REASON_KEYS = {
  page_has_no_text: "panel_tab_reason_no_text",
  tab_gone: "panel_tab_reason_closed",
  tab_not_loaded: "panel_tab_reason_not_loaded",
  file_access_off: "panel_tab_reason_file_access",
  no_web_tab: "panel_tab_reason_not_web",
  pdf_encrypted: "panel_tab_reason_pdf_encrypted",
  pdf_no_text: "panel_tab_reason_pdf_no_text",
  pdf_damaged: "panel_tab_reason_pdf_damaged",
  pdf_too_big: "panel_tab_reason_pdf_too_big",
  pdf_unreachable: "panel_tab_reason_pdf_unreachable",
};

let busy = false;

export function init() {
  button.append(svg("attachTabs"));
  button.addEventListener("click", openDialog);
  cancelButton.addEventListener("click", () => closeDialog());
  attachButton.addEventListener("click", attachTicked);
  list.addEventListener("change", paintAttachButton);
  events.addEventListener("language-changed", paintNotes);
  dialog.addEventListener("keydown", onKeydown);
  // The browser's own cancel (a close request other than the Escape handled below) closes it the
  // same way. Nothing listens to "close": Chrome fires it late (in a background tab, after a reopen).
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    closeDialog();
  });
}

async function openDialog() {
  if (busy || dialog.open) return;
  clearAlert();
  setBusy(true);
  let tabs;
  try {
    tabs = (await call("tabs.list", {})).tabs;
  } catch (error) {
    showAlert(error.message);
    return;
  } finally {
    setBusy(false);
  }
  shown = tabs;
  list.replaceChildren(...tabs.map(row));
  empty.hidden = tabs.length > 0;
  list.hidden = tabs.length === 0;
  paintAttachButton();
  dialog.showModal();
  (focusable()[0] || cancelButton).focus();
}

// A tab's description: its site, "Current tab", and why it is asleep or cannot be read.
function noteOf(tab) {
  const notes = [tab.site || tab.url];
  if (tab.active) notes.push(t("panel_tab_current"));
  if (!tab.readable) notes.push(tab.why);
  else if (tab.asleep) notes.push(t("panel_tab_asleep"));
  return notes.join(" · ");
}

let shown = [];

function paintNotes() {
  for (const tab of shown) {
    const note = document.getElementById(`tab-pick-${tab.id}-note`);
    if (note) note.textContent = noteOf(tab);
  }
}

function row(tab) {
  const id = `tab-pick-${tab.id}`;
  const title = tab.title || tab.url;
  const box = el("input", {
    type: "checkbox",
    id,
    value: String(tab.id),
    "aria-describedby": `${id}-note`,
    disabled: !tab.readable,
    dataset: { title },
  });
  return el(
    "li",
    { class: `tab-row${tab.readable ? "" : " unreadable"}` },
    box,
    el("label", { for: id, class: "tab-title", text: title, title: tab.url }),
    el("span", { class: "tab-note", id: `${id}-note`, text: noteOf(tab) }),
  );
}

const ticked = () => [...list.querySelectorAll("input[type=checkbox]:checked:not(:disabled)")];

function paintAttachButton() {
  attachButton.disabled = ticked().length === 0;
}

function focusable() {
  return [...dialog.querySelectorAll("input:not(:disabled), button:not(:disabled)")];
}

// Rule 2.
function onKeydown(event) {
  if (event.key === "Escape") {
    event.preventDefault(); // header.js's Escape (edit mode, the sessions panel) must not act too
    closeDialog();
  } else if (event.key === "Tab") {
    const nodes = focusable();
    if (!nodes.length) return;
    const first = nodes[0];
    const last = nodes[nodes.length - 1];
    if (event.shiftKey && (document.activeElement === first || !dialog.contains(document.activeElement))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  } else if (event.key === "Enter" && event.target.matches?.("input[type=checkbox]")) {
    event.preventDefault();
    if (!attachButton.disabled) attachTicked();
  }
}

function closeDialog() {
  if (dialog.open) dialog.close();
  button.focus();
}

function setBusy(on) {
  busy = on;
  button.disabled = on;
  button.classList.toggle("busy", on);
  if (on) button.setAttribute("aria-busy", "true");
  else button.removeAttribute("aria-busy");
}

// Rule 3.
async function attachTicked() {
  const chosen = ticked().map((box) => ({ id: Number(box.value), title: box.dataset.title }));
  if (!chosen.length || busy) return;
  setBusy(true);
  dialog.close();
  clearAlert();
  announce(tPlural("panel_tabs_reading", chosen.length));
  let attached = 0;
  const failures = [];
  try {
    for (const tab of chosen) {
      try {
        const result = await attachTab({ tabId: tab.id }); // a PDF tab is read by the panel first
        attached++;
        if (result.summarize) startSummary(result.attachment);
      } catch (error) {
        if (error.code !== "cancelled") failures.push({ title: tab.title, code: error.code });
      }
    }
  } finally {
    setBusy(false);
  }
  if (failures.length) showAlert(() => notRead(failures, attached));
  if (attached) announce(tPlural("panel_tabs_attached", attached));
  if (focusWasLost()) ui.message.focus();
}

// The focus is nowhere the user put it: on the page, on the button (disabled while reading), or
// still on a control of the closed dialog, where it stays until Chrome's next rendering update
// (https://html.spec.whatwg.org/multipage/interaction.html#focus-fixup-rule), which a panel in
// the background does not get.
function focusWasLost() {
  const active = document.activeElement;
  return !active || active === document.body || button.contains(active) || dialog.contains(active);
}

// Rule 4: one sentence naming every tab that could not be read.
export function notRead(failures, attached) {
  const named = failures.map(({ title, code }) => t("panel_tab_with_reason", title, t(REASON_KEYS[code] || "panel_tab_reason_other")));
  const joined = new Intl.ListFormat(tagOf(locale()), { type: "conjunction" }).format(named);
  return t(attached ? "panel_tabs_not_read" : "panel_tabs_none_read", joined);
}

register({ name: "attach-tabs", init });
