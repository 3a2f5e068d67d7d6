// The options page: the saved providers, the active one, the provider form, the UI language, and
// which attached pages get a summary ("Summarize long pages"), and "Running code" (the model's run_python
// tool: off / ask / auto; the time limit of one run).
//
// Rules:
// 1. Everything is read with `options.get` and written with `options.save` (docs/protocol.md);
//    the page never writes storage itself (it only follows `activeProviderId`, which the panel's
//    "Switch model" menu may change).
// 2. A provider gets its id (`crypto.randomUUID()`) when it is first saved.
// 3. "Test connection" tests what the form holds, saved or not.
// 4. Confirmations go to role=status, failures to role=alert, each as one plain sentence, said
//    where it was asked for: under the form's buttons, under a setting's list, or at the top for the
//    page and its list of providers (`[data-area]` in options.html). One is shown at a time; it
//    sits in the flow of the page and never covers a field.
// 5. The "Provider type" list and each type's default Base URL come from Python
//    (`CONTRACT.providerTypes`); choosing a type fills the Base URL when it is empty or still holds
//    another type's default. A short hint under the list says what the chosen type is for. An
//    empty field's placeholder is an example and says so ("e.g. https://api.openai.com/v1"), so it
//    is never taken for a value.
// 6. The "Model" field offers the provider's models (`provider.models`, on focus or "Refresh
//    models") and still takes any typed name; a failed list is a sentence under the field and
//    never blocks saving.
// 7. "Send the API key over plain HTTP" shows only when it matters: an API key is typed and the
//    Base URL is http:// to another machine (`keyCouldBeRead`). Python refuses a key sent to
//    another machine over http:// without it (`key_over_http`), and the sentence says so.

import { CONTRACT } from "../generated/contract.js";
import { call, el, svg } from "../common/ui_common.js";
import { fillPrices, formPrices, pricesProblem } from "./prices.js";
import "./prompts.js"; // the "Prompts" section
import "./sync.js"; // the "Sync" section
import "./tools.js"; // the "Tools" section (MCP servers)
import * as i18n from "../common/i18n.js";

const { t } = i18n;
await i18n.start();

const TYPES = CONTRACT.providerTypes;
// Python names the types in English; these are their translations (a type not listed keeps its name).
const TYPE_LABELS = { openai: "options_type_openai", "openai-responses": "options_type_responses" };
const typeLabel = (type) => (TYPE_LABELS[type.type] ? t(TYPE_LABELS[type.type]) : type.label);
// What each type is for, under the list (rule 5); and a model name to show as an example.
const TYPE_HINTS = {
  openai: "options_type_hint_openai",
  anthropic: "options_type_hint_anthropic",
  gemini: "options_type_hint_gemini",
  "openai-responses": "options_type_hint_responses",
};
const MODEL_EXAMPLES = { openai: "gpt-4o-mini", anthropic: "claude-sonnet-4-5", gemini: "gemini-2.5-flash", "openai-responses": "gpt-4o-mini" };
const example = (value) => t("options_example_placeholder", value);
const defaultBaseUrl = (type) => TYPES.find((t) => t.type === type)?.defaultBaseUrl || "";

const PRESETS = [
  { name: "OpenAI", baseUrl: "https://api.openai.com/v1", model: "gpt-4o-mini" },
  { name: "Ollama", baseUrl: "http://localhost:11434/v1", model: "llama3.2" },
  { name: "LM Studio", baseUrl: "http://localhost:1234/v1", model: "local-model" },
  { name: "llama.cpp", baseUrl: "http://localhost:8080/v1", model: "default" },
  { name: "OpenRouter", baseUrl: "https://openrouter.ai/api/v1", model: "openai/gpt-4o-mini" },
  { name: "Groq", baseUrl: "https://api.groq.com/openai/v1", model: "llama-3.1-8b-instant" },
];

const $ = (id) => document.getElementById(id);
const form = {
  root: $("provider-form"),
  title: $("form-title"),
  type: $("type"),
  name: $("name"),
  baseUrl: $("base-url"),
  apiKey: $("api-key"),
  model: $("model"),
  modelList: $("model-list"),
  modelHint: $("model-hint"),
  refreshModels: $("refresh-models"),
  systemPrompt: $("system-prompt"),
  toggleKey: $("toggle-key"),
  plainHttpField: $("plain-http-field"),
  allowPlainHttpKey: $("allow-plain-http-key"),
  save: $("save"),
  test: $("test"),
};

const state = { providers: [], activeProviderId: null, uiLanguage: "auto", summarizeAboveChars: 50000, runPython: "ask", codeTimeLimitSeconds: 30, editingId: null };

// --- Messages -----------------------------------------------------------------------------------

// Rule 4: `area` names the `[data-area]` block under what was asked ("page", "form", "language",
// "long-pages", "code"). A hidden message keeps no text, so nothing stale can be read or announced
// later; showing one hides every other.
function show(kind, sentence, area) {
  for (const block of document.querySelectorAll(".messages[data-area]")) {
    for (const role of ["status", "alert"]) {
      const on = role === kind && block.dataset.area === area;
      const line = block.querySelector(`[role=${role}]`);
      if (!line) continue; // a block may hold only one of the two
      line.textContent = on ? sentence : "";
      line.parentElement.hidden = !on;
    }
  }
}
const say = (sentence, area = "page") => show("status", sentence, area);
const warn = (sentence, area = "page") => show("alert", sentence, area);
const quiet = () => show(null, "", null);

// --- The list of providers ----------------------------------------------------------------------

function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url || "";
  }
}

function renderList() {
  const list = $("provider-list");
  $("providers-empty").hidden = state.providers.length > 0;
  list.replaceChildren(
    ...state.providers.map((provider) => {
      const radioId = `active-${provider.id}`;
      const radio = el("input", { type: "radio", name: "active-provider", id: radioId, value: provider.id });
      radio.checked = provider.id === state.activeProviderId;
      radio.addEventListener("change", () => setActive(provider.id));
      const label = el(
        "label",
        { for: radioId, class: "provider-label" },
        el("span", { class: "provider-name", text: provider.name || hostOf(provider.baseUrl) || t("options_unnamed") }),
        el("span", { class: "provider-meta", text: [provider.model, hostOf(provider.baseUrl)].filter(Boolean).join(" · ") }),
      );
      const name = provider.name || t("options_provider_word");
      const edit = el("button", { type: "button", class: "btn ghost", text: t("options_edit"), "aria-label": t("options_edit_named", name) });
      edit.addEventListener("click", () => {
        quiet();
        fillForm(provider);
        form.name.focus();
      });
      const remove = el("button", { type: "button", class: "btn ghost danger", text: t("options_delete"), "aria-label": t("options_delete_named", name) });
      remove.addEventListener("click", () => deleteProvider(provider.id));
      const item = el("li", { class: "provider" }, radio, label, el("div", { class: "provider-actions" }, edit, remove));
      item.classList.toggle("editing", provider.id === state.editingId);
      item.classList.toggle("active", provider.id === state.activeProviderId);
      return item;
    }),
  );
}

// --- The form -------------------------------------------------------------------------------------

function fillForm(provider) {
  state.editingId = provider?.id ?? null;
  form.type.value = provider?.type || "openai";
  form.name.value = provider?.name || "";
  form.baseUrl.value = provider?.baseUrl || "";
  form.apiKey.value = provider?.apiKey || "";
  form.model.value = provider?.model || "";
  form.systemPrompt.value = provider?.systemPrompt || "";
  form.allowPlainHttpKey.checked = provider?.allowPlainHttpKey === true;
  fillPrices(provider);
  form.title.textContent = provider ? t("options_form_edit", provider.name || t("options_provider_word")) : t("options_form_new");
  showKey(false);
  showTypeHints();
  forgetModels();
  markPreset();
  showPlainHttp();
  renderList();
}

function formProvider() {
  return {
    id: state.editingId,
    type: form.type.value,
    name: form.name.value.trim(),
    baseUrl: form.baseUrl.value.trim().replace(/\/+$/, ""),
    apiKey: form.apiKey.value.trim(),
    model: form.model.value.trim(),
    systemPrompt: form.systemPrompt.value.trim(),
    prices: formPrices(),
    // Python decides whether the host needs it (py/margin/providers/plain_http.py); a hidden box is not ticked.
    allowPlainHttpKey: !form.plainHttpField.hidden && form.allowPlainHttpKey.checked,
  };
}

// Rule 7: the "Send the API key over plain HTTP" box, for a key that would cross the network
// unencrypted. The host is read by the browser's own URL parser, as Python reads it
// (py/margin/providers/plain_http.py rule 1: "127.1" and "0x7f.0.0.1" are 127.0.0.1 here too); what
// is local here is local there, so the box never hides when Python would refuse.
const isPlainHttp = () => /^http:/i.test(form.baseUrl.value.trim());
function isLocalHost(hostname) {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (/^127\.\d+\.\d+\.\d+$/.test(host)) return true;
  return host === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
}
function keyCouldBeRead() {
  if (!isPlainHttp() || !form.apiKey.value.trim()) return false;
  // Python takes a non-ASCII host for another machine (plain_http.py rule 1): so does this.
  if (!/^[\x20-\x7e]*$/.test(form.baseUrl.value.trim())) return true;
  try {
    return !isLocalHost(new URL(form.baseUrl.value.trim()).hostname);
  } catch {
    return true; // not a URL yet: Save names that problem first
  }
}
function showPlainHttp() {
  form.plainHttpField.hidden = !keyCouldBeRead();
}
form.baseUrl.addEventListener("input", showPlainHttp);
form.apiKey.addEventListener("input", showPlainHttp);

// The sentence for the first problem in the form, or null when it can be saved.
function problemWith(provider) {
  if (!provider.baseUrl) return t("options_problem_base_url_missing");
  let url;
  try {
    url = new URL(provider.baseUrl);
  } catch {
    return t("options_problem_base_url_bad");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return t("options_problem_base_url_scheme");
  if (!provider.model) return t("options_problem_model_missing");
  const limit = CONTRACT.limits.systemPromptMaxChars;
  if (provider.systemPrompt.length > limit) return t("options_problem_prompt_long", i18n.formatNumber(limit));
  return pricesProblem(provider.prices);
}

// --- Provider types -------------------------------------------------------------------------------

function fillTypes() {
  const chosen = form.type.value;
  form.type.replaceChildren(...TYPES.map((type) => el("option", { value: type.type, text: typeLabel(type) })));
  if (chosen) form.type.value = chosen;
}
fillTypes();

// Presets are OpenAI-compatible servers; other types have one address, filled in for the user.
function showTypeHints() {
  const type = form.type.value;
  form.baseUrl.placeholder = example(defaultBaseUrl(type) || "https://…");
  form.model.placeholder = example(MODEL_EXAMPLES[type] || "gpt-4o-mini");
  const hint = $("type-hint");
  hint.textContent = TYPE_HINTS[type] ? t(TYPE_HINTS[type]) : "";
  hint.hidden = !TYPE_HINTS[type];
  $("presets-field").hidden = type !== "openai";
}

form.type.addEventListener("change", () => {
  const url = form.baseUrl.value.trim().replace(/\/+$/, "");
  if (!url || TYPES.some((t) => t.defaultBaseUrl === url)) form.baseUrl.value = defaultBaseUrl(form.type.value);
  showTypeHints();
  forgetModels();
  markPreset();
  showPlainHttp();
});

// --- The model list -------------------------------------------------------------------------------

let modelsFor = null; // the (type, Base URL, key) the datalist was filled for

function forgetModels() {
  modelsFor = null;
  form.modelList.replaceChildren();
  modelHint(t("options_model_hint"));
}

function modelHint(sentence, problem = false) {
  form.modelHint.textContent = sentence;
  form.modelHint.classList.toggle("problem", problem);
}

async function loadModels({ force = false } = {}) {
  const provider = formProvider();
  if (!provider.baseUrl) {
    if (force) modelHint(t("options_models_need_url"), true);
    return;
  }
  const key = JSON.stringify([provider.type, provider.baseUrl, provider.apiKey]);
  if (!force && modelsFor === key) return;
  modelsFor = key;
  form.refreshModels.setAttribute("aria-busy", "true");
  try {
    const result = await call("provider.models", { provider: { ...provider, id: provider.id || "unsaved" } });
    if (modelsFor !== key) return; // the form changed meanwhile
    const models = Array.isArray(result?.models) ? result.models : [];
    form.modelList.replaceChildren(...models.map((id) => el("option", { value: id })));
    if (models.length) modelHint(i18n.tPlural("options_models_offered", models.length));
    else modelHint(result?.message || t("options_models_none"), true);
  } catch (error) {
    if (modelsFor === key) modelHint(t("options_models_failed", error.message), true);
  } finally {
    form.refreshModels.removeAttribute("aria-busy");
  }
}

form.model.addEventListener("focus", () => loadModels());
form.refreshModels.addEventListener("click", () => loadModels({ force: true }));
for (const field of [form.baseUrl, form.apiKey]) field.addEventListener("change", forgetModels);

function markPreset() {
  const url = form.baseUrl.value.trim().replace(/\/+$/, "");
  for (const button of $("presets").children) button.setAttribute("aria-pressed", String(button.dataset.url === url));
}

for (const preset of PRESETS) {
  const button = el("button", { type: "button", class: "btn preset", text: preset.name, "aria-pressed": "false", dataset: { url: preset.baseUrl } });
  button.addEventListener("click", () => {
    form.type.value = "openai";
    showTypeHints();
    forgetModels();
    const previousPreset = PRESETS.find((p) => p.name === form.name.value.trim());
    if (!form.name.value.trim() || previousPreset) form.name.value = preset.name;
    form.baseUrl.value = preset.baseUrl;
    form.model.placeholder = example(preset.model);
    markPreset();
    showPlainHttp();
    form.model.focus();
  });
  $("presets").append(button);
}
form.baseUrl.addEventListener("input", markPreset);

function showKey(visible) {
  form.apiKey.type = visible ? "text" : "password";
  form.toggleKey.setAttribute("aria-pressed", String(visible));
  form.toggleKey.title = t(visible ? "options_hide_key" : "options_show_key");
  form.toggleKey.replaceChildren(svg(visible ? "eyeOff" : "eye"));
}
form.toggleKey.addEventListener("click", () => showKey(form.apiKey.type === "password"));

// --- Saving -------------------------------------------------------------------------------------

// `changes` = the settings other than providers that change with this save ({uiLanguage}, ...).
async function save(providers, activeProviderId, changes = {}) {
  const settings = { uiLanguage: state.uiLanguage, summarizeAboveChars: state.summarizeAboveChars, runPython: state.runPython, codeTimeLimitSeconds: state.codeTimeLimitSeconds, ...changes };
  const value = await call("options.save", { providers, activeProviderId, ...settings });
  state.providers = Array.isArray(value?.providers) ? value.providers : providers;
  state.activeProviderId = value && "activeProviderId" in value ? value.activeProviderId : activeProviderId;
  state.uiLanguage = value?.uiLanguage || settings.uiLanguage;
  state.summarizeAboveChars = Number.isInteger(value?.summarizeAboveChars) ? value.summarizeAboveChars : settings.summarizeAboveChars;
  takeCodeSettings(value, settings);
  renderList();
}

form.root.addEventListener("submit", async (event) => {
  event.preventDefault();
  const provider = formProvider();
  const problem = problemWith(provider);
  if (problem) return warn(problem, "form");
  if (!provider.name) provider.name = PRESETS.find((p) => p.baseUrl === provider.baseUrl)?.name || hostOf(provider.baseUrl);
  const isNew = !provider.id;
  if (isNew) provider.id = crypto.randomUUID();
  const providers = isNew
    ? [...state.providers, provider]
    : state.providers.map((p) => (p.id === provider.id ? { ...p, ...provider } : p));
  const activeExists = state.providers.some((p) => p.id === state.activeProviderId);
  const active = activeExists ? state.activeProviderId : provider.id;
  form.save.disabled = true;
  try {
    await save(providers, active);
    fillForm(state.providers.find((p) => p.id === provider.id) || provider);
    say(
      active === provider.id ? t("options_saved_active", provider.name) : t("options_saved_other", provider.name),
      "form",
    );
  } catch (error) {
    if (isNew) provider.id = null;
    if (error.code === "key_over_http") form.plainHttpField.hidden = false; // the box the sentence names
    warn(error.message, "form");
  } finally {
    form.save.disabled = false;
  }
});

async function setActive(id) {
  const provider = state.providers.find((p) => p.id === id);
  try {
    await save(state.providers, id);
    say(t("options_now_uses", provider?.name || t("options_this_provider")));
  } catch (error) {
    warn(error.message);
    renderList();
  }
}

async function deleteProvider(id) {
  const provider = state.providers.find((p) => p.id === id);
  const providers = state.providers.filter((p) => p.id !== id);
  const active = state.activeProviderId === id ? providers.find((p) => p.fromBackup !== true)?.id ?? null : state.activeProviderId;
  try {
    await save(providers, active);
    if (state.editingId === id) fillForm(null);
    say(t("options_deleted", provider?.name || t("options_the_provider")));
  } catch (error) {
    warn(error.message);
  }
}

$("add-provider").addEventListener("click", () => {
  quiet();
  fillForm(null);
  form.name.focus();
});

form.test.addEventListener("click", async () => {
  const provider = formProvider();
  const problem = problemWith(provider);
  if (problem) return warn(problem, "form");
  quiet();
  form.test.disabled = true;
  form.test.classList.add("busy");
  form.test.setAttribute("aria-busy", "true");
  try {
    const result = await call("provider.test", { provider: { ...provider, id: provider.id || "unsaved" } });
    if (result?.ok) say(result.message || t("options_test_ok"), "form");
    else warn(result?.message || t("options_test_failed"), "form");
  } catch (error) {
    warn(error.message, "form");
  } finally {
    form.test.disabled = false;
    form.test.classList.remove("busy");
    form.test.removeAttribute("aria-busy");
  }
});

$("ui-language").addEventListener("change", async (event) => {
  const language = event.target.value;
  // The page follows the stored setting (i18n rule 3); the confirmation waits for it, so it is
  // said in the language just chosen.
  const followed = new Promise((resolve) => {
    const off = i18n.onLanguageChange(() => resolve(off()));
    setTimeout(() => resolve(off()), 3000);
  });
  try {
    await save(state.providers, state.activeProviderId, { uiLanguage: language });
    // The side panel's kept first frame speaks the old language (panel/kept_frame.js): not shown again.
    try {
      localStorage.removeItem("margin.firstFrame");
    } catch {
      /* no storage, no frame */
    }
    await followed;
    say(t("options_language_saved"), "language");
  } catch (error) {
    warn(error.message, "language");
  }
});

// The language setting: "auto" and the seven locales, each named in its own language; stored as a
// BCP 47 tag ("ja", "zh-CN"). An older value ("zh") shows as the locale it resolves to.
const languagesListed = i18n.names().then((names) => {
  $("ui-language").append(
    ...i18n.LOCALES.map((locale) => el("option", { value: i18n.tagOf(locale), lang: i18n.tagOf(locale), text: names[locale] })),
  );
  showLanguage();
});
function showLanguage() {
  const value = state.uiLanguage;
  $("ui-language").value = value === "auto" ? "auto" : i18n.tagOf(i18n.localeOf(value));
}

// "Summarize long pages": a stored value the list does not offer gets its own option.
function showSummarizeAbove() {
  const select = $("summarize-above");
  const value = String(state.summarizeAboveChars);
  if (![...select.options].some((option) => option.value === value)) select.append(el("option", { value }));
  for (const option of select.options) {
    if (option.value !== "0") option.textContent = i18n.tPlural("options_summarize_over", Number(option.value));
  }
  select.value = value;
}

$("summarize-above").addEventListener("change", async (event) => {
  const threshold = Number(event.target.value);
  try {
    await save(state.providers, state.activeProviderId, { summarizeAboveChars: threshold });
    say(t(threshold ? "options_summarize_saved_on" : "options_summarize_saved_off"), "long-pages");
  } catch (error) {
    warn(error.message, "long-pages");
    showSummarizeAbove();
  }
});

// "Running code": the model's run_python tool (off / ask / auto) and the time limit of one run.
function takeCodeSettings(value, fallback) {
  state.runPython = ["off", "ask", "auto"].includes(value?.runPython) ? value.runPython : fallback.runPython;
  state.codeTimeLimitSeconds = Number.isInteger(value?.codeTimeLimitSeconds) ? value.codeTimeLimitSeconds : fallback.codeTimeLimitSeconds;
}

function showCodeSettings() {
  $("run-python").value = state.runPython;
  const select = $("code-time-limit");
  const value = String(state.codeTimeLimitSeconds);
  if (![...select.options].some((option) => option.value === value)) select.append(el("option", { value }));
  for (const option of select.options) option.textContent = t("options_time_limit_option", i18n.formatNumber(Number(option.value)));
  select.value = value;
}

async function saveCodeSetting(changes, savedKey) {
  try {
    await save(state.providers, state.activeProviderId, changes);
    say(t(savedKey), "code");
  } catch (error) {
    warn(error.message, "code");
  }
  showCodeSettings();
}

$("run-python").addEventListener("change", (event) => saveCodeSetting({ runPython: event.target.value }, "options_run_python_saved"));
$("code-time-limit").addEventListener("change", (event) =>
  saveCodeSetting({ codeTimeLimitSeconds: Number(event.target.value) }, "options_time_limit_saved"),
);

// --- Load ---------------------------------------------------------------------------------------

// Everything the page wrote in words, again in the language now chosen (i18n rule 3).
function retranslate() {
  i18n.translatePage();
  fillTypes();
  showTypeHints();
  const preset = PRESETS.find((p) => p.baseUrl === form.baseUrl.value.trim().replace(/\/+$/, ""));
  if (preset) form.model.placeholder = example(preset.model);
  showKey(form.apiKey.type === "text");
  showSummarizeAbove();
  showCodeSettings();
  form.title.textContent = state.editingId
    ? t("options_form_edit", state.providers.find((p) => p.id === state.editingId)?.name || t("options_provider_word"))
    : t("options_form_new");
  if (!form.modelHint.classList.contains("problem")) modelHint(t("options_model_hint"));
  renderList();
}
i18n.onLanguageChange(retranslate);
i18n.translatePage();

async function load() {
  showKey(false);
  try {
    const value = await call("options.get", {});
    state.providers = Array.isArray(value?.providers) ? value.providers : [];
    state.activeProviderId = value?.activeProviderId ?? null;
    state.uiLanguage = value?.uiLanguage || "auto";
    if (Number.isInteger(value?.summarizeAboveChars)) state.summarizeAboveChars = value.summarizeAboveChars;
    takeCodeSettings(value, state);
  } catch (error) {
    warn(error.message);
  }
  showLanguage();
  showSummarizeAbove();
  showCodeSettings();
  fillForm(state.providers.find((p) => p.id === state.activeProviderId) || null);
  await languagesListed.catch((error) => console.warn("Margin: the language names could not be read", error));
  document.body.dataset.ready = "1";
}

// The panel's "Switch model" menu may change the active provider while this page is open: follow
// it, so a later save here does not switch it back.
chrome.storage.onChanged.addListener((changes, area) => {
  if (area !== "local" || !(CONTRACT.storage.keys.activeProviderId in changes)) return;
  state.activeProviderId = changes[CONTRACT.storage.keys.activeProviderId].newValue ?? null;
  renderList();
});

load();
