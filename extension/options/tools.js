// The options page's "Tools" section: the user's MCP servers (py/margin/tools/servers.py).
//
// Rules:
// 1. Everything goes through the worker (`tools.list`, `tools.add`, `tools.remove`, `tools.set`,
//    `tools.refresh`, docs/protocol.md); the page never writes storage and never holds a stored
//    Authorization header: it only learns whether a server has one.
// 2. "Add server" sends the URL and the header as typed; Python connects first and stores the
//    server only when it answered as MCP with tools. A refusal is one sentence under the form and
//    the fields keep what was typed; a success empties the header field at once.
// 3. Each server is a group named by the server's name: its address, "Refresh tools", "Remove
//    server", then its tools, each a checkbox named by the tool (ticked = offered to the model)
//    described by the tool's title (a name for people, shown beside it) and description, and
//    "Always allow “<tool>”" (revocable here). Tools Margin left out (a schema that is not an
//    object, py/margin/tools/servers.py rule 4) are named after "Add server" or "Refresh tools".
// 4. Messages follow options.js rule 4: one at a time, in this section's `[data-area="tools"]`.
// 5. Tool names and descriptions come from the server: they are text (textContent), never HTML.
import { call, el } from "../common/ui_common.js";
import * as i18n from "../common/i18n.js";

const { t, setWords } = i18n;
await i18n.start();

const $ = (id) => document.getElementById(id);
let servers = [];

function show(kind, sentence) {
  for (const block of document.querySelectorAll(".messages[data-area]")) {
    for (const role of ["status", "alert"]) {
      const on = role === kind && block.dataset.area === "tools";
      const line = block.querySelector(`[role=${role}]`);
      if (!line) continue; // another section's block of its own shape
      line.textContent = on ? sentence : "";
      line.parentElement.hidden = !on;
    }
  }
}
const say = (sentence) => show("status", sentence);
const warn = (sentence) => show("alert", sentence);

function worded(tag, attrs, key, ...args) {
  const node = el(tag, attrs);
  setWords(node, key, ...args);
  return node;
}

function toolRow(server, tool, index) {
  const id = `mcp-${server.id}-${index}`;
  const row = el("li", { class: "mcp-tool" });
  const title = tool.title && tool.title !== tool.name ? tool.title : "";
  const about = [title && `${id}-title`, tool.description && `${id}-about`].filter(Boolean).join(" ");
  const offered = el("input", { type: "checkbox", id, "aria-describedby": about || undefined });
  offered.checked = tool.enabled === true;
  offered.addEventListener("change", () => setFlag(server, tool, { enabled: offered.checked }, offered));
  row.append(el("label", { class: "check", for: id }, offered, el("span", { class: "mcp-tool-name", text: tool.name })));
  if (title) row.append(el("span", { class: "mcp-tool-title", id: `${id}-title`, text: title }));
  if (tool.description) row.append(el("p", { class: "hint", id: `${id}-about`, text: tool.description }));
  const always = el("input", { type: "checkbox", id: `${id}-always` });
  always.checked = tool.alwaysAllow === true;
  always.addEventListener("change", () => setFlag(server, tool, { alwaysAllow: always.checked }, always));
  row.append(el("label", { class: "check mcp-always", for: `${id}-always` }, always, worded("span", {}, "options_mcp_always", tool.name)));
  return row;
}

function serverGroup(server) {
  const headingId = `mcp-title-${server.id}`;
  const group = el("section", { class: "mcp-server", role: "group", "aria-labelledby": headingId });
  group.append(el("h3", { id: headingId, text: server.name }));
  group.append(el("p", { class: "hint mcp-url", text: server.url }));
  if (server.hasAuthorization) group.append(worded("p", { class: "hint" }, "options_mcp_has_header"));
  const actions = el("div", { class: "form-actions" });
  const refresh = worded("button", { type: "button", class: "btn" }, "options_mcp_refresh");
  const remove = worded("button", { type: "button", class: "btn danger" }, "options_mcp_remove");
  refresh.addEventListener("click", () =>
    act(refresh, "tools.refresh", { id: server.id }, (value) => withLeftOut(t("options_mcp_refreshed", server.name), value)),
  );
  remove.addEventListener("click", () => act(remove, "tools.remove", { id: server.id }, () => t("options_mcp_removed", server.name)));
  actions.append(refresh, remove);
  group.append(actions);
  const list = el("ul", { class: "mcp-tools", "aria-label": t("options_mcp_tools_of", server.name) });
  list.append(...server.tools.map((tool, index) => toolRow(server, tool, index)));
  group.append(list);
  return group;
}

function render() {
  const holder = $("mcp-servers");
  if (!servers.length) {
    holder.replaceChildren(worded("p", { class: "hint" }, "options_mcp_none"));
    return;
  }
  holder.replaceChildren(...servers.map(serverGroup));
}

function take(value) {
  servers = Array.isArray(value?.servers) ? value.servers : [];
  render();
}

// Rule 3: the tools the server listed that Margin cannot offer, named after what was done.
const withLeftOut = (sentence, value) =>
  Array.isArray(value?.leftOut) && value.leftOut.length ? `${sentence} ${t("options_mcp_left_out", value.leftOut.join(", "))}` : sentence;

async function act(button, name, payload, said) {
  button.disabled = true;
  try {
    const value = await call(name, payload);
    take(value);
    say(said(value));
  } catch (error) {
    warn(error.message);
  } finally {
    button.disabled = false;
  }
}

async function setFlag(server, tool, flags, box) {
  try {
    take(await call("tools.set", { id: server.id, tool: tool.name, ...flags }));
    say(t("options_mcp_saved"));
  } catch (error) {
    box.checked = !box.checked;
    warn(error.message);
  }
}

async function add(event) {
  event.preventDefault();
  const button = $("mcp-add");
  button.disabled = true;
  say(t("options_mcp_connecting"));
  try {
    const value = await call("tools.add", { url: $("mcp-url").value, authorization: $("mcp-authorization").value });
    $("mcp-authorization").value = ""; // rule 2: the page keeps no header
    $("mcp-url").value = "";
    take(value);
    say(withLeftOut(t("options_mcp_added", value.added?.name || ""), value));
  } catch (error) {
    warn(error.message);
  } finally {
    button.disabled = false;
  }
}

async function load() {
  try {
    take(await call("tools.list", {}));
  } catch (error) {
    warn(error.message);
  }
}

// An example, said as one (options.js rule 5).
const placeholder = () => ($("mcp-url").placeholder = t("options_example_placeholder", "https://example.com/mcp"));

$("mcp-form").addEventListener("submit", add);
i18n.onLanguageChange(() => {
  placeholder();
  render();
});
placeholder();
load();
