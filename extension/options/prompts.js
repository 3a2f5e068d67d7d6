// The options page's "Prompts" section: the saved prompts (py/margin/settings/prompts.py), the
// user's own and the seven built in, in the user's order.
//
// Rules:
// 1. The list is read with `prompts.list` and every change (save, delete, reorder, hide, the
//    menu checkbox) writes the whole list with `prompts.save`; Python validates it and answers
//    with the list as saved, which is painted. The page never writes storage.
// 2. A built-in prompt is sent as its id with `hidden` and `menu` (its words are the catalogue's):
//    it can be hidden and shown again, not edited or deleted.
// 3. Each row names its buttons after the prompt ("Edit Tighten", "Move Tighten up"), so a screen
//    reader's list of buttons says which prompt each acts on; after a move the focus stays on
//    the moved prompt's button.
// 4. A failure is Python's sentence in the section's role=alert; nothing in the form is lost.

import { call, el } from "../common/ui_common.js";
import * as i18n from "../common/i18n.js";

const { t } = i18n;
await i18n.start();

const $ = (id) => document.getElementById(id);
const state = { prompts: [], editingId: null };

function show(kind, sentence) {
  const block = document.querySelector('.messages[data-area="prompts"]');
  for (const role of ["status", "alert"]) {
    const line = block.querySelector(`[role=${role}]`);
    line.textContent = role === kind ? sentence : "";
    line.parentElement.hidden = role !== kind;
  }
}

// What `prompts.save` takes (rule 2).
const stored = (prompt) =>
  prompt.builtin
    ? { id: prompt.id, builtin: true, hidden: prompt.hidden, menu: prompt.menu }
    : { id: prompt.id, name: prompt.name, text: prompt.text, menu: prompt.menu };

// `focusIds`: the first of these controls that exists after the list is painted gets the focus.
async function save(prompts, said, ...focusIds) {
  try {
    const reply = await call("prompts.save", { prompts: prompts.map(stored) });
    state.prompts = reply.prompts;
    render();
    if (said) show("status", said(reply.prompts));
    focusIds.map((id) => document.getElementById(id)).find(Boolean)?.focus();
    return true;
  } catch (error) {
    show("alert", error.message);
    return false;
  }
}

function button(text, label, id, onClick, extra = {}) {
  const node = el("button", { type: "button", class: "btn ghost", text, "aria-label": label, id, ...extra });
  node.addEventListener("click", onClick);
  return node;
}

function move(index, by) {
  const prompts = state.prompts.slice();
  const [moving] = prompts.splice(index, 1);
  prompts.splice(index + by, 0, moving);
  // Rule 3: the same button of the moved prompt, or at the list's end the other way, or its own.
  const ways = by < 0 ? ["up", "down"] : ["down", "up"];
  save(prompts, () => t("options_prompts_saved"), ...ways.map((way) => `prompt-${way}-${moving.id}`), `prompt-edit-${moving.id}`);
}

function row(prompt, index) {
  const name = prompt.name;
  const menuId = `prompt-menu-${prompt.id}`;
  const menu = el("input", { type: "checkbox", id: menuId, "aria-describedby": `prompt-name-${prompt.id}` });
  menu.checked = prompt.menu;
  menu.addEventListener("change", () =>
    save(state.prompts.map((p) => (p.id === prompt.id ? { ...p, menu: menu.checked } : p)), () => t("options_prompts_saved")));
  const tags = [prompt.builtin && t("options_prompt_builtin"), prompt.hidden && t("options_prompt_hidden")].filter(Boolean);
  const label = el(
    "div",
    { class: "provider-label" },
    el("span", { class: "provider-name", id: `prompt-name-${prompt.id}`, text: name }),
    el("span", { class: "provider-meta", text: [tags.join(" · "), prompt.text].filter(Boolean).join(" — ") }),
  );
  const actions = [];
  if (index > 0) actions.push(button(t("options_prompt_up"), t("options_prompt_move_up", name), `prompt-up-${prompt.id}`, () => move(index, -1)));
  if (index < state.prompts.length - 1) {
    actions.push(button(t("options_prompt_down"), t("options_prompt_move_down", name), `prompt-down-${prompt.id}`, () => move(index, 1)));
  }
  if (prompt.builtin) {
    const hide = !prompt.hidden;
    actions.push(
      button(hide ? t("options_prompt_hide_short") : t("options_prompt_show_short"), t(hide ? "options_prompt_hide" : "options_prompt_show", name),
        `prompt-edit-${prompt.id}`, () =>
          save(state.prompts.map((p) => (p.id === prompt.id ? { ...p, hidden: hide } : p)), () => t("options_prompts_saved"), `prompt-edit-${prompt.id}`)),
    );
  } else {
    actions.push(button(t("options_edit"), t("options_edit_named", name), `prompt-edit-${prompt.id}`, () => edit(prompt)));
    actions.push(
      button(t("options_delete"), t("options_delete_named", name), `prompt-delete-${prompt.id}`, () =>
        save(state.prompts.filter((p) => p.id !== prompt.id), () => t("options_prompt_deleted", name)).then((done) => {
          if (done) $("prompt-name").focus();
        }), { class: "btn ghost danger" }),
    );
  }
  const menuLabel = el("label", { for: menuId, class: "prompt-menu" }, menu, document.createTextNode(` ${t("options_prompt_in_menu")}`));
  const item = el("li", { class: "provider" }, label, el("div", { class: "provider-actions" }, menuLabel, ...actions));
  item.classList.toggle("editing", prompt.id === state.editingId);
  return item;
}

function render() {
  $("prompt-list").replaceChildren(...state.prompts.map(row));
}

function edit(prompt) {
  state.editingId = prompt?.id ?? null;
  $("prompt-name").value = prompt?.name ?? "";
  $("prompt-text").value = prompt?.text ?? "";
  $("prompt-form-title").textContent = prompt ? t("options_prompt_editing", prompt.name) : t("options_prompt_new");
  $("prompt-cancel").hidden = !prompt;
  render();
  if (prompt) $("prompt-name").focus();
}

async function submit(event) {
  event.preventDefault();
  const name = $("prompt-name").value;
  const text = $("prompt-text").value;
  const editing = state.prompts.find((p) => p.id === state.editingId);
  const prompts = editing
    ? state.prompts.map((p) => (p === editing ? { ...p, name, text } : p))
    : [...state.prompts, { id: "", name, text, menu: false }];
  const done = await save(prompts, () => t("options_prompt_saved", name.trim()));
  if (done) edit(null);
}

async function load() {
  try {
    state.prompts = (await call("prompts.list")).prompts;
    render();
  } catch (error) {
    show("alert", error.message);
  }
}

$("prompt-form").addEventListener("submit", submit);
$("prompt-cancel").addEventListener("click", () => {
  edit(null);
  $("prompt-name").focus();
});
i18n.onLanguageChange(load); // the built-ins' names are the language's
load();
