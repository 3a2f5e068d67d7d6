// The header: the active model (opens Settings), New session, Sessions, Settings; and Esc, which
// leaves edit mode or closes the sessions panel.
//
// Rules:
// 1. sessions_panel.js is imported on first use (dynamic import is allowed in extension pages), so
//    the panel paints without it and still works if it fails to load.
// 2. The model name is painted from `state.providers` / `state.activeProviderId`, which follow storage.

import { call, svg, openOptions } from "../ui_common.js";
import { $, ui, state, scrollToBottom, announce, showAlert } from "./state.js";
import { updateEmptyState } from "./conversation.js";
import { cancelEdit } from "./composer.js";
import { stopTurn } from "./turn.js";

export function paintModel() {
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
      const module = await import("../sessions_panel.js");
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

export function closeSessions() {
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
