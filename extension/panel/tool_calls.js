// The model's run_python calls (py/margin/sandbox/tool_turn.py): shown in the answer, run in the code
// sandbox (code_runs.js `runForTool`), answered on the turn's port; stored rounds painted again.
//
// Rules:
// 1. A live call ("tool-call" from turn.js) is shown in its slot: the code as text, then, by the
//    setting: "ask" offers "Run" / "Don't run", "auto" runs at once. A call the worker refused
//    (`refusal`: malformed arguments, the bound) shows why and waits for nothing.
// 2. The answer goes back as `{action: "tool_result", callId, outcome: "ran", run}`,
//    `{outcome: "declined"}` or `{outcome: "failed", note}` (the sandbox was busy with a block the
//    user runs, or could not be reached). Nothing is posted once the turn has ended.
// 3. When the turn ends (Stop, an error, the worker lost) while a call waits or runs, its buttons
//    go, the run is stopped and the slot says so; the worker stores the call as stopped.
// 4. A stored answer with `toolRounds` gets them painted before its text: each round's text (as
//    text), each call's code and its output (code_runs.js `paintRun`) or outcome. The articles are
//    found by watching the conversation, as code_runs.js does, so conversation.js needs no hook.
// 5. Code and output are text, always (textContent); nothing the model sent is parsed as HTML.
// 6. A live call's words carry their catalogue keys (data-i18n…): a change of language relabels
//    them where they stand (words.js), as the streaming bubble is not built again.
import { el } from "../common/ui_common.js";
import { t, setWords } from "../common/i18n.js";
import { ui, state, events } from "./state.js";
import { paintRun, runForTool, stopToolRun } from "./code_runs.js";
import { register } from "./registry.js";
import { initMcpCalls, liveMcpCall, storedMcpCall } from "./mcp_calls.js";

const OUTCOME_KEYS = {
  declined: "panel_tool_declined",
  stopped: "panel_tool_stopped",
  refused: "panel_tool_refused",
  failed: "panel_tool_failed",
};

// Rule 6: a node whose text is the catalogue's `key`.
function worded(tag, attrs, key) {
  const node = el(tag, attrs);
  setWords(node, key);
  return node;
}
const outputGroup = () => el("div", { class: "code-run", role: "group", "aria-label": t("panel_tool_output_label"), dataset: { i18nAriaLabel: "panel_tool_output_label" } });

function callBox(code, titleKey) {
  const box = el("section", { class: "tool-call", role: "group", "aria-label": t("panel_tool_call_label"), dataset: { i18nAriaLabel: "panel_tool_call_label" } });
  box.append(worded("p", { class: "tool-call-title" }, titleKey));
  if (code) box.append(el("pre", { class: "tool-call-code" }, el("code", { text: code })));
  return box;
}

function setTitle(box, key) {
  setWords(box.querySelector(".tool-call-title"), key);
}

// A note from the catalogue: `key` alone is relabeled live (rule 6); one with `args` is not.
function note(box, key, ...args) {
  box.append(args.length ? el("p", { class: "tool-call-note", text: t(key, ...args) }) : worded("p", { class: "tool-call-note" }, key));
}

// --- A live call (rules 1-3) ---------------------------------------------------------------------

function onToolCall({ call, files, slot, reply, settled }) {
  if (!call || typeof call !== "object") return;
  if (call.mcp && typeof call.mcp === "object") return liveMcpCall({ call, slot, reply, settled }); // the user's MCP tools
  const code = typeof call.code === "string" ? call.code : "";
  const box = callBox(code, "panel_tool_wants_to_run");
  slot.replaceChildren(box);
  if (typeof call.refusal === "string") {
    note(box, "panel_tool_not_run", call.refusal);
    return;
  }
  let ended = false;
  let answered = false; // the result (or the refusal to run) went back: nothing left to stop
  const actions = el("div", { class: "tool-call-actions" });
  const output = outputGroup();
  const answer = (message) => {
    answered = true;
    reply({ action: "tool_result", callId: call.id, ...message });
  };

  async function run() {
    actions.remove();
    setTitle(box, "panel_tool_running");
    box.append(output);
    const result = await runForTool(output, code, Array.isArray(files) ? files : []);
    if (ended) return;
    if (!result) {
      note(box, "panel_tool_busy");
      answer({ outcome: "failed", note: t("panel_tool_busy") });
      return;
    }
    setTitle(box, "panel_tool_ran");
    answer({ outcome: "ran", run: result });
  }

  settled.then(() => {
    ended = true;
    if (answered) return;
    if (output.isConnected) stopToolRun();
    actions.remove();
    note(box, "panel_tool_stopped");
  });

  if (call.mode === "auto") {
    run();
    return;
  }
  const runButton = worded("button", { type: "button", class: "btn primary" }, "panel_tool_run");
  const skipButton = worded("button", { type: "button", class: "btn ghost" }, "panel_tool_dont_run");
  runButton.addEventListener("click", run);
  skipButton.addEventListener("click", () => {
    actions.remove();
    setTitle(box, "panel_tool_not_run_title");
    note(box, "panel_tool_declined");
    answer({ outcome: "declined" });
  });
  actions.append(runButton, skipButton);
  box.append(actions);
  runButton.focus({ preventScroll: true });
}

// --- Stored rounds (rule 4) ----------------------------------------------------------------------

function storedCall(call) {
  if (call.mcp && typeof call.mcp === "object") return storedMcpCall(call);
  const ran = call.outcome === "ran" && call.run && typeof call.run === "object";
  const box = callBox(typeof call.code === "string" ? call.code : "", ran ? "panel_tool_ran" : "panel_tool_not_run_title");
  if (ran) {
    const output = outputGroup();
    box.append(output);
    paintRun(output, call.run);
  } else {
    const key = OUTCOME_KEYS[call.outcome] || "panel_tool_failed";
    if (call.note && call.outcome !== "declined" && call.outcome !== "stopped") note(box, "panel_tool_not_run", call.note);
    else note(box, key);
  }
  return box;
}

// The rounds of an answer as one node (also used by unsaved.js for an answer not saved yet).
export function roundsNode(rounds) {
  const holder = el("div", { class: "tool-rounds" });
  for (const round of rounds) {
    if (typeof round?.text === "string" && round.text.trim()) holder.append(el("p", { class: "tool-round-text", text: round.text }));
    for (const call of Array.isArray(round?.calls) ? round.calls : []) if (call && typeof call === "object") holder.append(storedCall(call));
  }
  return holder;
}

function paintRounds(article) {
  if (article.dataset.toolRounds) return;
  const record = state.history[Number(article.dataset.index)];
  const rounds = Array.isArray(record?.toolRounds) ? record.toolRounds : null;
  const bubble = article.querySelector(".bubble");
  if (!rounds || !bubble) return;
  article.dataset.toolRounds = "1";
  bubble.prepend(roundsNode(rounds));
}

function scan(node) {
  if (node.nodeType !== Node.ELEMENT_NODE) return;
  if (node.matches("article.msg.assistant[data-index]")) paintRounds(node);
  for (const article of node.querySelectorAll("article.msg.assistant[data-index]")) paintRounds(article);
}

export function init() {
  initMcpCalls();
  events.addEventListener("tool-call", (event) => onToolCall(event.detail));
  new MutationObserver((mutations) => {
    for (const mutation of mutations) for (const node of mutation.addedNodes) scan(node);
  }).observe(ui.conversation, { childList: true, subtree: true });
}

// Its stored rounds are painted by code_runs.js's painter: that observer first.
register({ name: "tool-calls", after: ["code-runs"], init });
