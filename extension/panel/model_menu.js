// The model chip's menu: the saved providers as radio items ("<name> — <model>") and "Manage
// providers…"; choosing one makes it the active provider, two clicks from the panel.
//
// Rules:
// 1. The switch is a request, `options.activate {id}` (docs/protocol.md): Python writes storage;
//    the header repaints from the storage change (and at once from the reply).
// 2. A menu button and a role=menu list (WAI-ARIA menu button pattern): Arrow keys, Home and End
//    move between items, Enter or Space chooses, Esc closes and gives focus back to the chip,
//    Tab or a click outside closes it.
// 3. The menu is rebuilt from `state.providers` each time it opens, so it never shows a stale list.
// 4. The menu is as wide as its longest item, up to the panel's width: it opens under the chip and
//    moves left as far as it must to stay inside the panel; an item the panel is too narrow for
//    wraps onto more lines, never cut.

import { call, el, openOptions } from "../common/ui_common.js";
import { t } from "../common/i18n.js";
import { ui, state, announce, showAlert } from "./state.js";

const menu = () => document.getElementById("model-menu");
let repaint = () => {};
export const itemName = (provider) =>
  t("panel_model_item", provider.name || t("panel_provider"), provider.model || t("panel_no_model_set"));

function items() {
  return [...menu().querySelectorAll("[role^=menuitem]")];
}

function focusItem(index) {
  const all = items();
  if (!all.length) return;
  const target = all[(index + all.length) % all.length];
  for (const item of all) item.tabIndex = item === target ? 0 : -1;
  target.focus();
}

export function isOpen() {
  return !menu().hidden;
}

export function openMenu() {
  const root = menu();
  const radios = state.providers.map((provider) => {
    const checked = provider.id === state.activeProviderId;
    const item = el("button", { type: "button", role: "menuitemradio", class: "model-item", "aria-checked": String(checked), tabindex: "-1", text: itemName(provider) });
    item.addEventListener("click", () => choose(provider));
    return item;
  });
  const manage = el("button", { type: "button", role: "menuitem", class: "model-item manage", tabindex: "-1", text: t("panel_manage_providers") });
  manage.addEventListener("click", (event) => {
    closeMenu({ focusChip: false });
    openOptions(event);
  });
  root.replaceChildren(...radios, el("div", { role: "separator", class: "model-separator" }), manage);
  root.hidden = false;
  placeInside(root);
  ui.model.setAttribute("aria-expanded", "true");
  const checked = radios.findIndex((r) => r.getAttribute("aria-checked") === "true");
  focusItem(Math.max(checked, 0));
}

// Rule 4: shifted left by what would pass the panel's right edge, never past its left edge.
const MARGIN_PX = 8;
function placeInside(root) {
  root.style.left = "";
  const box = root.getBoundingClientRect();
  const over = box.right - (document.documentElement.clientWidth - MARGIN_PX);
  if (over > 0) root.style.left = `${-Math.min(over, box.left - MARGIN_PX)}px`;
}

export function closeMenu({ focusChip = true } = {}) {
  if (!isOpen()) return;
  menu().hidden = true;
  ui.model.setAttribute("aria-expanded", "false");
  if (focusChip) ui.model.focus();
}

async function choose(provider) {
  closeMenu();
  if (provider.id === state.activeProviderId) return;
  try {
    const value = await call("options.activate", { id: provider.id });
    state.activeProviderId = value?.activeProviderId ?? provider.id;
    repaint();
    announce(t("panel_now_uses", itemName(provider)));
  } catch (error) {
    showAlert(error.message);
  }
}

function onKeydown(event) {
  const all = items();
  const index = all.indexOf(document.activeElement);
  const moves = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: all.length - 1 };
  if (event.key in moves) {
    event.preventDefault();
    focusItem(moves[event.key]);
  } else if (event.key === "Escape") {
    event.preventDefault(); // header.js's Esc handler leaves a handled Esc alone
    closeMenu();
  } else if (event.key === "Tab") {
    closeMenu({ focusChip: false });
  }
}

// `onChosen` repaints the chip after a switch; `init` wires the chip, the keys and outside clicks.
export function init(onChosen) {
  repaint = onChosen;
  ui.model.setAttribute("aria-haspopup", "menu");
  ui.model.setAttribute("aria-expanded", "false");
  ui.model.setAttribute("aria-controls", "model-menu");
  ui.model.addEventListener("click", (event) => {
    if (!state.providers.length) return openOptions(event);
    if (isOpen()) closeMenu();
    else openMenu();
  });
  ui.model.addEventListener("keydown", (event) => {
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && state.providers.length) {
      event.preventDefault();
      openMenu();
      if (event.key === "ArrowUp") focusItem(-1);
    }
  });
  menu().addEventListener("keydown", onKeydown);
  document.addEventListener("pointerdown", (event) => {
    if (isOpen() && !event.target.closest?.(".model-switch")) closeMenu({ focusChip: false });
  });
}
