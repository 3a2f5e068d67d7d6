// The model's calls of the user's MCP tools (py/margin/tools/turn_tools.py): the card in the answer
// with the server, the tool and its arguments, "Allow" / "Deny" / "Always allow", then the result.
// tool_calls.js hands a call here when it carries `mcp`, live or stored.
//
// Rules:
// 1. A live call in "ask" mode shows the three buttons; the answer goes back on the turn's port as
//    `{action: "tool_result", callId, outcome: "allow" | "deny" | "always"}` and the buttons go.
//    In "auto" mode (the user always allows the tool) it says so and asks nothing. Python calls
//    the server, never the panel.
// 2. The result arrives as a "tool-done" event ({callId, call}: the stored call) and is painted
//    into the call's card; a stored call (a saved answer) is painted the same way.
// 3. Tool output is untrusted: text parts go through the Markdown renderer and its sanitizer
//    (markdown.js, DOMPurify: the same path as the model's words); JSON and arguments are text
//    (textContent); an image is shown only as a data URL of a picture type (markdown_policy.js
//    SAFE_IMAGE). Nothing in a result can press a button or start a call.
// 4. When the turn ends while a call waits, its buttons go and the card says it stopped.
import { el } from "../common/ui_common.js";
import { t, setWords, formatNumber } from "../common/i18n.js";
import { events } from "./state.js";
import { markdownModule, loadMarkdown } from "./markdown_lite.js";
import { SAFE_IMAGE } from "./markdown_policy.js";

const waiting = new Map(); // callId -> card of a live call whose result has not come

function worded(tag, attrs, key, ...args) {
  const node = el(tag, attrs);
  setWords(node, key, ...args);
  return node;
}

function card(mcp, titleKey) {
  const box = el("section", { class: "tool-call mcp-call", role: "group", "aria-label": t("panel_mcp_call_label"), dataset: { i18nAriaLabel: "panel_mcp_call_label" } });
  const server = String(mcp?.serverName ?? "");
  const tool = String(mcp?.tool ?? "");
  box.append(worded("p", { class: "tool-call-title" }, titleKey, tool, server));
  box.dataset.tool = tool;
  box.dataset.server = server;
  return box;
}

function setTitle(box, key) {
  setWords(box.querySelector(".tool-call-title"), key, box.dataset.tool, box.dataset.server);
}

function argumentsNode(text) {
  const group = el("div", { role: "group", "aria-label": t("panel_mcp_arguments"), dataset: { i18nAriaLabel: "panel_mcp_arguments" } });
  group.append(el("pre", { class: "tool-call-code" }, el("code", { text })));
  return group;
}

const note = (key, ...args) => worded("p", { class: "tool-call-note" }, key, ...args);

// Rule 3: a text part, through the same renderer and sanitizer as the model's answer.
function textPart(text) {
  const node = el("div", { class: "mcp-text" }); // not ".md": that is the answer's own text (conversation.js)
  const paint = (markdown) => markdown.renderMarkdown(node, text, { highlight: false });
  const loaded = markdownModule();
  if (loaded) paint(loaded);
  else {
    node.textContent = text;
    loadMarkdown().then((markdown) => node.isConnected && paint(markdown));
  }
  return node;
}

function resultNode(result) {
  const group = el("div", { class: "mcp-result", role: "group", "aria-label": t("panel_mcp_result_label"), dataset: { i18nAriaLabel: "panel_mcp_result_label" } });
  if (result.isError) group.append(note("panel_mcp_tool_error"));
  const parts = Array.isArray(result.content) ? result.content : [];
  for (const part of parts) {
    if (part?.type === "text" && typeof part.text === "string") group.append(textPart(part.text));
    else if (part?.type === "json" && typeof part.text === "string") group.append(el("pre", { class: "tool-call-code" }, el("code", { text: part.text })));
    else if (part?.type === "image" && typeof part.data === "string") {
      const src = `data:${part.mimeType};base64,${part.data}`;
      if (SAFE_IMAGE.test(src)) group.append(el("img", { class: "mcp-image", src, alt: t("panel_mcp_image") }));
    }
  }
  if (!parts.length) group.append(note("panel_mcp_empty"));
  if (Number.isInteger(result.cut) && result.cut > 0) group.append(note("panel_mcp_cut", formatNumber(result.cut)));
  return group;
}

// Rule 2: what a stored call says under its title.
function paintOutcome(box, call) {
  const result = call?.mcp?.result;
  if (call.outcome === "ran" && result && typeof result === "object") {
    setTitle(box, "panel_mcp_called");
    box.append(resultNode(result));
    return;
  }
  setTitle(box, "panel_mcp_not_called");
  if (call.outcome === "declined") box.append(note("panel_mcp_declined"));
  else if (call.outcome === "stopped") box.append(note("panel_tool_stopped"));
  else box.append(note("panel_mcp_failed", typeof call.note === "string" && call.note ? call.note : t("panel_tool_refused")));
}

// --- A live call (rules 1, 2, 4) ------------------------------------------------------------------

export function liveMcpCall({ call, slot, reply, settled }) {
  const box = card(call.mcp, call.mode === "auto" ? "panel_mcp_calling" : "panel_mcp_wants");
  box.append(argumentsNode(typeof call.mcp.arguments === "string" ? call.mcp.arguments : "{}"));
  slot.replaceChildren(box);
  waiting.set(call.id, box);
  let answered = false;
  settled.then(() => {
    if (!waiting.has(call.id)) return;
    waiting.delete(call.id);
    box.querySelector(".tool-call-actions")?.remove();
    box.append(note("panel_tool_stopped"));
  });
  if (call.mode === "auto") {
    box.append(note("panel_mcp_always_allowed"));
    return;
  }
  const actions = el("div", { class: "tool-call-actions" });
  const answer = (outcome) => {
    if (answered) return;
    answered = true;
    actions.remove();
    if (outcome !== "deny") setTitle(box, "panel_mcp_calling");
    reply({ action: "tool_result", callId: call.id, outcome });
  };
  const buttons = [
    ["panel_mcp_allow", "btn primary", "allow"],
    ["panel_mcp_deny", "btn ghost", "deny"],
    ["panel_mcp_always", "btn ghost", "always"],
  ].map(([key, cls, outcome]) => {
    const button = worded("button", { type: "button", class: cls }, key);
    button.addEventListener("click", () => answer(outcome));
    return button;
  });
  actions.append(...buttons);
  box.append(actions);
  buttons[0].focus({ preventScroll: true });
}

function onToolDone({ callId, call }) {
  const box = waiting.get(callId);
  if (!box || !call || typeof call !== "object") return;
  waiting.delete(callId);
  paintOutcome(box, call);
}

// A stored call (tool_calls.js `roundsNode`).
export function storedMcpCall(call) {
  const box = card(call.mcp, "panel_mcp_called");
  box.append(argumentsNode(prettyArguments(call.arguments)));
  paintOutcome(box, call);
  return box;
}

function prettyArguments(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return typeof text === "string" ? text : "";
  }
}

// From the extension's root: in dist this code is bundled into sidepanel.js (buildsteps/bundle.py).
function addStyles() {
  document.head.append(el("link", { rel: "stylesheet", href: new URL("/panel/mcp_calls.css", import.meta.url).href }));
}

// Called by tool_calls.js's init (nothing listens at import time: state.js rule 4).
export function initMcpCalls() {
  addStyles();
  events.addEventListener("tool-done", (event) => onToolDone(event.detail));
}
