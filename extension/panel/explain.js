// "Explain with Margin": the worker queues the click in chrome.storage.session and opens the
// panel; the panel (already open, or just opened) runs the turn (py/margin/turn/explain.py).
//
// Rules:
// 1. A request is started at most once per panel, and only while it is fresh; the worker takes
//    it once, so a second open panel gets "explain_gone" and stays quiet.
// 2. A running turn is not interrupted: the explain turn starts when it has ended.
// 3. `init()` follows the requests; it starts after the first paint (the registry's "painted" phase).

import { CONTRACT } from "../generated/contract.js";
import { state } from "./state.js";
import { startTurn } from "./turn.js";
import { register } from "./registry.js";

const KEY = CONTRACT.storage.sessionKeys.explainRequest;
const FRESH_MS = 2 * 60 * 1000;
const started = new Set();

async function explain(request) {
  if (!request || typeof request.id !== "string" || started.has(request.id)) return;
  if (Date.now() - Number(request.at || 0) > FRESH_MS) return;
  started.add(request.id);
  while (state.turn) await state.turn.settled;
  startTurn({ action: "explain", requestId: request.id }, null, { quietErrors: ["explain_gone"] });
}

export function init() {
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === "session" && KEY in changes) explain(changes[KEY].newValue);
  });
  chrome.storage.session.get(KEY).then((stored) => explain(stored[KEY]), (error) =>
    console.warn("Margin: could not read the Explain request", error));
}

// Rule 3: after the first paint.
register({ name: "explain", phase: "painted", init });
