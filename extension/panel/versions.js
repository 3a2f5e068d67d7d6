// An answer's versions (py/margin/storage/versions.py): "Previous version", "2 of 3", "Next version"
// under an answer that Regenerate or Edit & resend replaced before.
//
// Rules:
// 1. The bar is made only from what the record holds: `versions` (the other versions) and
//    `versionAt` (where the shown one stands; absent or out of range = last). The shown version is
//    the record's own content, which is what the next question sends: the panel never shows a
//    version the model would not get.
// 2. An unanswered question that holds pending versions (a Regenerate or an edit whose turn stored
//    no answer) gets "Previous version" alone: it puts the newest kept answer back.
// 3. A button asks Python (`answer.choose_version {index, createdAt, count, version}`); the change
//    comes back through `history` and the bubble is painted again from its record. The focus
//    returns to the same button in the new bubble (the other one when it is now disabled), and
//    the new position is announced. While a turn runs, the buttons are disabled.
// 4. "2 of 3" is the catalogue's `panel_version_position` with numbers formatted in the language.
// 5. `versionsKey(record)` goes into the bubble's signature (conversation.js), so a change of the
//    versions alone builds the bubble again.

import { call, el, svg } from "../common/ui_common.js";
import { t, formatNumber } from "../common/i18n.js";
import { ui, state, events, announce, showAlert, clearAlert } from "./state.js";
import { register } from "./registry.js";

const otherVersions = (record) => (Array.isArray(record?.versions) ? record.versions : []);

// Rule 1: {count, shown} (0-based), or null when the record has no versions to step through.
export function versionsOf(record) {
  const others = otherVersions(record);
  if (!others.length) return null;
  if (record.role === "user") return { count: others.length, shown: -1 };
  const at = record.versionAt;
  const shown = Number.isInteger(at) && at >= 0 && at <= others.length ? at : others.length;
  return { count: others.length + 1, shown };
}

export function versionsKey(record) {
  const v = versionsOf(record);
  return v ? `${v.shown}/${v.count}` : "";
}

function stepButton(step, label, disabled) {
  const button = el(
    "button",
    { type: "button", class: `btn ghost icon version-step ${step}`, "aria-label": label, title: label, dataset: { versionStep: step } },
    svg("back"),
  );
  button.disabled = disabled;
  return button;
}

export function positionText(shown, count) {
  return t("panel_version_position", formatNumber(shown + 1), formatNumber(count));
}

// The bar for the record at `index`, or null (rule 1, rule 2).
export function versionBar(record, index) {
  const v = versionsOf(record);
  if (!v) return null;
  const busy = state.turnState !== "idle";
  const bar = el("div", { class: "versions", role: "group", "aria-label": t("panel_versions_group"), dataset: { index: String(index) } });
  if (v.shown < 0) {
    bar.append(stepButton("previous", t("panel_version_previous"), busy));
    return bar;
  }
  bar.append(
    stepButton("previous", t("panel_version_previous"), busy || v.shown === 0),
    el("span", { class: "version-position", text: positionText(v.shown, v.count) }),
    stepButton("next", t("panel_version_next"), busy || v.shown === v.count - 1),
  );
  return bar;
}

async function onClick(event) {
  const button = event.target.closest("button[data-version-step]");
  if (!button || button.disabled || !ui.conversation.contains(button)) return;
  const index = Number(button.closest(".versions")?.dataset.index);
  const record = state.history[index];
  const v = versionsOf(record);
  if (!v || state.turnState !== "idle") return;
  const step = button.dataset.versionStep;
  const version = v.shown < 0 ? v.count - 1 : v.shown + (step === "next" ? 1 : -1);
  if (version < 0 || version >= v.count) return;
  const hadFocus = document.activeElement === button;
  button.disabled = true;
  try {
    await call("answer.choose_version", { index, createdAt: record.createdAt, count: v.count, version });
    clearAlert();
    refocus(button, step, v.shown < 0 ? index + 1 : index, hadFocus);
  } catch (error) {
    button.disabled = false;
    showAlert(error.message);
  }
}

// Rule 3: once the new bubble is painted, the focus goes back to the same step (when it had it).
// `index`: where the answer now stands (an unanswered question's comes right after it).
function refocus(old, step, index, hadFocus, tries = 120) {
  const attempt = (left) => {
    const bar = old.isConnected ? null : ui.history.querySelector(`.versions[data-index="${index}"]`);
    if (!bar) {
      if (left > 0) requestAnimationFrame(() => attempt(left - 1));
      return;
    }
    const position = bar.querySelector(".version-position");
    if (position) announce(position.textContent);
    if (!hadFocus) return;
    const same = bar.querySelector(`[data-version-step="${step}"]`);
    const other = bar.querySelector(`[data-version-step="${step === "next" ? "previous" : "next"}"]`);
    (same && !same.disabled ? same : other && !other.disabled ? other : same)?.focus();
  };
  attempt(tries);
}

// While a turn runs the buttons are disabled (rule 3); they come back when it ends.
function followTurnState() {
  const busy = state.turnState !== "idle";
  for (const bar of ui.history.querySelectorAll(".versions")) {
    const v = versionsOf(state.history[Number(bar.dataset.index)]);
    if (!v) continue;
    for (const button of bar.querySelectorAll("[data-version-step]")) {
      const edge = v.shown >= 0 && (button.dataset.versionStep === "next" ? v.shown === v.count - 1 : v.shown === 0);
      button.disabled = busy || edge;
    }
  }
}

export function init() {
  ui.conversation.addEventListener("click", onClick);
  events.addEventListener("turn-state", followTurnState);
}

register({ name: "versions", after: ["conversation"], init });
