// "/" in the message box: the saved prompts (py/margin/settings/prompts.py) in a listbox
// "Prompts", filtered as the user types ("/tig" finds "Tighten"); a pick puts the prompt's text,
// filled by Python (`prompts.fill`), in "Message", ready to edit or send.
//
// Rules:
// 1. The list opens while the box holds only "/" and a filter (one line, at most FILTER_MAX
//    characters), and closes when it holds anything else, on Escape, on a pick, or when the box
//    loses the focus. Hidden prompts are not offered.
// 2. ARIA (the textbox-with-listbox-popup pattern): the box keeps the focus and its name
//    "Message"; it gets aria-autocomplete="list", aria-controls the listbox and
//    aria-activedescendant the active option while the list is open. Arrows move, Enter (or a
//    click) picks, Escape closes; those keys are taken before the composer sees them (a capture
//    listener), so Enter picks instead of sending and Escape does not leave edit mode.
// 3. The filter matches a prompt's name, case and accents aside: names that begin with it first,
//    then names with a word that begins with it, then names that hold it, each in the user's order.
// 4. A pick that needs the page (`{{page}}`) attaches the active tab as "Attach page" does; one
//    whose `{{selection}}` found nothing selected says so; the text is the user's either way.
// 5. What the user types while Python fills the prompt (a cold start takes a moment) is kept: the
//    prompt's text takes the place of the "/filter" it was picked with and the words typed after
//    it follow it; a filter edited meanwhile is replaced; other text goes after the prompt's, a
//    blank line between (`withPicked`). Until it arrives, Enter does not send (the box does not
//    hold the prompt yet); Shift+Enter still starts a new line.

import { call, el } from "../common/ui_common.js";
import { t } from "../common/i18n.js";
import { ui, announce, showAlert } from "./state.js";
import { autosize } from "./composer.js";
import { register } from "./registry.js";

const FILTER_MAX = 40;
const LIST_ID = "prompt-picker";
let list = null;
let empty = null;
let prompts = null; // the visible prompts while the list is open
let shown = []; // the prompts the filter lets through
let active = 0;
let loading = null;
let filling = false; // rule 5: a pick's prompts.fill is on its way

const fold = (text) => text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();

// Rule 3.
export function matching(all, typed) {
  const want = fold(typed.trim());
  if (!want) return all.slice();
  const ranked = [[], [], []];
  for (const prompt of all) {
    const name = fold(prompt.name);
    if (name.startsWith(want)) ranked[0].push(prompt);
    else if (name.split(/[\s\-_/]+/).some((word) => word.startsWith(want))) ranked[1].push(prompt);
    else if (name.includes(want)) ranked[2].push(prompt);
  }
  return ranked.flat();
}

const filterOf = (value) => (/^\/[^\n]*$/.test(value) && value.length <= FILTER_MAX + 1 ? value.slice(1) : null);

function isOpen() {
  return !list.hidden || !empty.hidden;
}

function close() {
  list.hidden = true;
  empty.hidden = true;
  list.replaceChildren();
  prompts = null;
  ui.message.removeAttribute("aria-activedescendant");
  ui.message.removeAttribute("aria-controls");
}

function paint(typed) {
  list.setAttribute("aria-label", t("panel_prompts"));
  shown = matching(prompts, typed);
  active = Math.min(active, Math.max(shown.length - 1, 0));
  list.replaceChildren(
    ...shown.map((prompt, i) => {
      const option = el("div", { role: "option", id: `${LIST_ID}-${i}`, class: "prompt-option", "aria-selected": String(i === active) });
      option.append(el("span", { class: "prompt-option-name", text: prompt.name }), el("span", { class: "prompt-option-text", text: prompt.text }));
      option.addEventListener("mousedown", (event) => event.preventDefault()); // the box keeps the focus
      option.addEventListener("click", () => pick(prompt));
      return option;
    }),
  );
  list.hidden = shown.length === 0;
  empty.hidden = shown.length > 0;
  empty.textContent = shown.length ? "" : t("panel_prompts_none", typed);
  if (shown.length) {
    ui.message.setAttribute("aria-controls", LIST_ID);
    ui.message.setAttribute("aria-activedescendant", `${LIST_ID}-${active}`);
    document.getElementById(`${LIST_ID}-${active}`)?.scrollIntoView({ block: "nearest" });
  } else {
    ui.message.removeAttribute("aria-activedescendant");
  }
}

async function open(typed) {
  if (!prompts) {
    loading ||= call("prompts.list").then(
      (reply) => reply.prompts.filter((prompt) => !prompt.hidden),
      (error) => {
        showAlert(error.message);
        return null;
      },
    );
    const loaded = await loading;
    loading = null;
    if (!loaded || filterOf(ui.message.value) === null) return;
    const wasClosed = !prompts;
    prompts = loaded;
    active = 0;
    paint(filterOf(ui.message.value));
    if (wasClosed && shown.length) announce(t("panel_prompts_count", shown.length));
    return;
  }
  paint(typed);
}

function onInput() {
  const typed = filterOf(ui.message.value);
  if (typed === null) {
    if (isOpen() || prompts) close();
    return;
  }
  active = 0;
  open(typed);
}

function move(by) {
  if (!shown.length) return;
  active = (active + by + shown.length) % shown.length;
  paint(filterOf(ui.message.value) ?? "");
}

// Rule 5: the box's text once `filled` arrives, from what it held at the pick and holds now.
export function withPicked(filled, atPick, now) {
  if (now.startsWith(atPick)) return filled + now.slice(atPick.length);
  if (now.startsWith("/") || !now.trim()) return filled;
  return `${filled}\n\n${now}`;
}

async function pick(prompt) {
  close();
  const atPick = ui.message.value;
  filling = true;
  try {
    const filled = await call("prompts.fill", { id: prompt.id });
    close(); // typing meanwhile may have opened the list again
    ui.message.value = withPicked(filled.text, atPick, ui.message.value);
    autosize();
    ui.message.focus();
    const end = ui.message.value.length; // after the prompt, and after what was typed since
    ui.message.setSelectionRange(end, end);
    if (filled.attachPage) document.getElementById("attach-page")?.click(); // rule 4
    if (filled.selectionMissing) showAlert(() => t("panel_prompt_no_selection", "{{selection}}"));
  } catch (error) {
    showAlert(error.message);
  } finally {
    filling = false;
  }
}

// Rule 2: before the composer's own keydown listener.
function onKeydown(event) {
  if (filling && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault(); // rule 5
    event.stopImmediatePropagation();
    return;
  }
  if (!isOpen() || event.isComposing) return;
  const handled = { ArrowDown: () => move(1), ArrowUp: () => move(-1), Escape: close, Enter: () => shown[active] && pick(shown[active]) }[event.key];
  if (!handled || (event.key === "Enter" && (event.shiftKey || !shown.length))) return;
  event.preventDefault();
  event.stopImmediatePropagation();
  handled();
}

export function init() {
  list = el("div", { role: "listbox", id: LIST_ID, class: "prompt-picker", "aria-label": t("panel_prompts"), hidden: "" });
  empty = el("p", { class: "prompt-picker prompt-picker-empty", role: "status", hidden: "" });
  ui.message.before(list, empty);
  ui.message.setAttribute("aria-autocomplete", "list");
  ui.message.addEventListener("input", onInput);
  ui.message.addEventListener("keydown", onKeydown, true);
  ui.message.addEventListener("blur", () => setTimeout(() => document.activeElement !== ui.message && close(), 0));
}

register({ name: "prompt-picker", phase: "wire", after: ["composer"], init });
