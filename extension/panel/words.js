// The side panel's words: its static HTML translated (i18n.js), the welcome's tips, and the
// language setting followed live.
//
// Rules:
// 1. Every word of the panel is a catalogue message (docs/i18n.md, keys `panel_…`). Static HTML
//    carries keys (`data-i18n…`); what code builds takes `t(…)` when it is built.
// 2. `relabel()` paints every word again: the static HTML, the tips, then the "language-changed"
//    event, on which each part repaints what it built (the header, Send/Stop, the chips, the
//    bubbles, the cards). sidepanel.js calls it once the setting is read (`i18n.start()`), and
//    it runs again on every change of the setting, with no reload.
// 3. A tip names the controls it speaks of with their own messages (`<strong>` Attach page, …),
//    so the tip and the button always agree; `$1`, `$2`, … in the tip's message mark where.

import * as i18n from "../common/i18n.js";
import { el } from "../common/ui_common.js";
import { $, emit } from "./state.js";
import { register } from "./registry.js";

// The message with `$1`… replaced by `parts` (nodes), the rest as text. The marks are private-use
// characters, which no message holds.
export function richText(node, key, ...parts) {
  const marks = parts.map((_, i) => `\ue000${i}\ue001`);
  const text = i18n.t(key, ...marks);
  const pieces = text.split(/\ue000(\d+)\ue001/);
  node.replaceChildren(...pieces.map((piece, i) => (i % 2 ? parts[Number(piece)].cloneNode(true) : piece)));
}

const strong = (key) => el("strong", { text: i18n.t(key) });
const kbd = (key) => el("kbd", { text: i18n.t(key) });

function paintTips() {
  richText($("tip-attach"), "panel_tip_attach", strong("panel_attach_page"), strong("bg_explain"));
  richText($("tip-screenshot"), "panel_tip_screenshot", strong("panel_screenshot"));
  richText($("tip-keys"), "panel_tip_keys", kbd("panel_key_enter"), kbd("panel_key_shift"), kbd("panel_key_enter"));
  richText($("tip-sessions"), "panel_tip_sessions", strong("panel_new_session"), strong("panel_sessions"));
}

export function relabel() {
  i18n.translatePage();
  paintTips();
  emit("language-changed");
}

export function init() {
  i18n.onLanguageChange(relabel);
}

// The language followed live (rule 2) before the features listen for "language-changed".
register({ name: "words", phase: "base", after: ["state"], init });
