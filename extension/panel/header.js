// The header: the active provider and model (a menu to switch, panel/model_menu.js), New session,
// Sessions, Settings; and Esc, which leaves edit mode or closes the sessions panel.
//
// Rules:
// 1. The sessions drawer (panel/sessions/drawer.js) is imported on first use (dynamic import is
//    allowed in extension pages), so the panel paints without it and still works if it fails to
//    load. After the first paint, in idle time, it reads the sessions index ahead (`preloadSessions`),
//    so "Sessions" opens by painting from memory (with a thousand full digests the index is
//    ~100 MB and takes seconds to read).
// 2. The model name is painted from `state.providers` / `state.activeProviderId`, which follow storage.
// 3. A request that switches the conversation (New session, Open) first stops the running turn and
//    waits for it to end, so its answer is stored in the conversation it belongs to (chat.py drops an
//    answer whose conversation changed meanwhile).
// 4. `init()` wires the buttons and Esc; `preloadSessionsIndex()` starts after the first paint.

import { call, idle, svg, openOptions } from "../common/ui_common.js";
import { t } from "../common/i18n.js";
import { $, ui, state, events, scrollToBottom, announce, showAlert } from "./state.js";
import { updateEmptyState } from "./conversation.js";
import { cancelEdit } from "./composer.js";
import { stopTurn } from "./turn.js";
import * as modelMenu from "./model_menu.js";
import { register } from "./registry.js";

export function paintModel() {
  const active = state.providers.find((p) => p?.id === state.activeProviderId) || null;
  if (active) {
    ui.modelCurrent.textContent = [active.name, active.model].filter(Boolean).join(" · ") || t("panel_model_not_set");
    ui.model.title = t("panel_switch_model_of", modelMenu.itemName(active));
    ui.model.classList.remove("unset");
  } else {
    ui.modelCurrent.textContent = state.providers.length ? t("panel_choose_provider") : t("panel_no_provider");
    ui.model.title = state.providers.length ? t("panel_switch_model") : t("panel_set_up_in_settings");
    ui.model.classList.add("unset");
  }
  // Its name holds its visible text (WCAG 2.5.3, label in name) after the words scripts find it by.
  ui.model.setAttribute("aria-label", t("panel_switch_model_current", ui.modelCurrent.textContent));
  updateEmptyState();
}

export function init() {
  modelMenu.init(paintModel);
  events.addEventListener("language-changed", paintModel);
  $("open-options").append(svg("settings"));
  $("open-options").addEventListener("click", openOptions);
  $("setup-provider").addEventListener("click", openOptions);
  $("new-session").append(svg("plus"));
  $("new-session").addEventListener("click", startNewSession);
  ui.sessionsButton.append(svg("sessions"));
  ui.sessionsButton.addEventListener("click", () => {
    if (ui.sessionsRoot.hidden) openSessions();
    else closeSessions();
  });
  document.addEventListener("keydown", onEscape);
}

async function startNewSession(event) {
  const button = event.currentTarget;
  button.disabled = true;
  try {
    await stopTurn();
    await call("session.new", {});
    if (state.editing) cancelEdit({ returnFocus: false });
    closeSessions();
    announce(t("panel_new_session_started"));
    ui.message.focus();
  } catch (error) {
    showAlert(error.message);
  } finally {
    button.disabled = false;
  }
}

function preloadSessionsIndex() {
  idle(() => import("./sessions/drawer.js")
    .then((module) => module.preloadSessions())
    .catch((error) => console.warn("sessions preload failed:", error)));
}

// One mount, even when "Sessions" is pressed again while the module loads; a failed load is retried.
let sessionsPanel = null;

function mountedSessionsPanel() {
  sessionsPanel ??= import("./sessions/drawer.js").then(
    (module) =>
      module.mountSessionsPanel(ui.sessionsRoot, {
        call: (name, payload) =>
          name === "session.open" ? stopTurn().then(() => call(name, payload)) : call(name, payload),
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
        // The open conversation, the list's first row (panel/sessions/current.js).
        currentConversation: () => state.history,
      }),
    (error) => {
      sessionsPanel = null;
      throw error;
    },
  );
  return sessionsPanel;
}

async function openSessions() {
  ui.sessionsButton.setAttribute("aria-expanded", "true");
  try {
    const panel = await mountedSessionsPanel();
    ui.sessionsRoot.hidden = false;
    await panel.show();
  } catch (error) {
    console.error("sessions panel", error);
    closeSessions();
    showAlert(() => t("panel_sessions_load_failed"));
  }
}

function closeSessions() {
  ui.sessionsButton.setAttribute("aria-expanded", "false");
  if (ui.sessionsRoot.hidden) return;
  ui.sessionsRoot.hidden = true;
}

function onEscape(event) {
  if (event.key !== "Escape" || event.defaultPrevented || ui.viewer.open) return;
  if (state.editing) {
    event.preventDefault();
    cancelEdit();
  } else if (!ui.sessionsRoot.hidden) {
    closeSessions();
    ui.sessionsButton.focus();
  }
}

register({ name: "header", init });
// Rule 1, after the explain request (a turn the user asked for) has been picked up.
register({ name: "sessions-preload", phase: "painted", after: ["explain"], init: preloadSessionsIndex });
