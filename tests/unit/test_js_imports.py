"""Convention tests for the extension's JS modules: a one-way import graph, side-panel modules
that wire nothing when they are imported, the panel's features registering themselves, and the
panel's preload list.

Rules checked:
1. No cycle among `extension/**/*.js` imports: static `import … from "…"`, `export … from "…"`,
   bare `import "…"` and dynamic `import("…")`, relative specifiers resolved against the importing
   file. A cycle is named file by file.
2. Importing a module under `extension/panel/` registers no listener (`addEventListener`, or a
   chrome event's `addListener`): its `init()` does, started by the panel's registry
   (panel/registry.js). This is checked by running the modules in node against a stub DOM that
   records every registration with its stack, so a registration inside an `if` or a loop at top
   level is caught as well as a bare one. The page's start scripts (START_SCRIPTS) act when loaded,
   by design, and are left out.
3. sidepanel.html loads sidepanel.js as its one module (the build bundles its static graph,
   buildsteps/bundle.py), and panel/early_read.js is its first import.
4. Every feature of the panel registers itself (panel/registry.js) and sidepanel.js calls no
   `init()`: the registry starts them, in the phases and order the registrations state.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from margin.app import contract

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"
PANEL = EXTENSION / "panel"
# Run when the page loads them, which is their job: the kept first frame (a classic script) and
# the first paint's early storage reads.
START_SCRIPTS = {"first_frame.js", "early_read.js"}
# Under panel/ but not one of its parts: the registry (it imports nothing) and the Markdown loader.
NOT_PARTS = {"panel/registry.js", "panel/markdown_lite.js"}

_COMMENTS = re.compile(r"/\*.*?\*/|(?<![:\\\"'])//[^\n]*", re.S)
_STATIC = re.compile(r"""(?<![\w$.])(?:import|export)\b[\w\s{},*$]*?\bfrom\s*(['"])([^'"]+)\1""")
_BARE = re.compile(r"""(?:^|[;\n])\s*import\s*(['"])([^'"]+)\1""")
_DYNAMIC = re.compile(r"""(?<![\w$.])import\s*\(\s*(['"])([^'"]+)\1\s*\)""")


def _without_comments(source: str) -> str:
    return _COMMENTS.sub(" ", source)


def import_specifiers(source: str, *, dynamic: bool = True) -> list[str]:
    """Every module specifier `source` imports, statically or (with `dynamic`) dynamically, in order
    of appearance."""
    code = _without_comments(source)
    found: list[tuple[int, str]] = []
    for pattern in (_STATIC, _BARE, _DYNAMIC) if dynamic else (_STATIC, _BARE):
        found += [(match.start(2), match.group(2)) for match in pattern.finditer(code)]
    return [specifier for _, specifier in sorted(found)]


def import_graph(root: Path, *, dynamic: bool = True) -> dict[str, list[str]]:
    """{module: [modules it imports]}, paths relative to `root`; only relative specifiers count."""
    graph: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.js")):
        edges = []
        for specifier in import_specifiers(path.read_text(encoding="utf-8"), dynamic=dynamic):
            if not specifier.startswith(("./", "../")):
                continue
            target = (path.parent / specifier).resolve()
            edges.append(target.relative_to(root.resolve()).as_posix())
        graph[path.relative_to(root).as_posix()] = edges
    return graph


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One cycle per strongly connected component that has one, as [a, b, …, a] (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, []):
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_through(sorted(component)[0], set(component), graph) for component in components]


def _cycle_through(start: str, members: set[str], graph: dict[str, list[str]]) -> list[str]:
    """The shortest path start -> … -> start inside one strongly connected component."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in graph.get(node, []):
                if target == start:
                    return paths[node] + [start]
                if target in members and target not in paths:
                    paths[target] = paths[node] + [target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in a cycle that was not found again")


# --- 1. the import graph is one-way -------------------------------------------------------------


def test_the_parser_sees_every_kind_of_import():
    source = """
        // import { gone } from "./in_a_comment.js";
        /* import "./in_a_block_comment.js"; */
        import { a, b } from "./a.js";
        import * as c from '../c.js';
        import d, {
          e,
        } from "./d.js";
        import "./side_effect.js";
        export { f } from "./f.js";
        const g = await import("./g.js");
        pyodide.pyimport("not.a.module");
        const url = "https://example.com/x.js"; // import "./after_a_url.js"
    """
    assert import_specifiers(source) == [
        "./a.js",
        "../c.js",
        "./d.js",
        "./side_effect.js",
        "./f.js",
        "./g.js",
    ]


def test_cycles_are_found_and_named():
    graph = {
        "sidepanel.js": ["panel/turn.js"],
        "panel/turn.js": ["panel/composer.js", "panel/state.js"],
        "panel/composer.js": ["panel/turn.js"],
        "panel/state.js": [],
        "self.js": ["self.js"],
    }
    assert sorted(find_cycles(graph)) == [
        ["panel/composer.js", "panel/turn.js", "panel/composer.js"],
        ["self.js", "self.js"],
    ]
    assert find_cycles({"a.js": ["b.js"], "b.js": ["c.js"], "c.js": []}) == []


def test_the_extension_imports_one_way():
    graph = import_graph(EXTENSION)
    assert "panel/turn.js" in graph.get("panel/composer.js", []), "the graph lost the panel's imports"
    cycles = find_cycles(graph)
    assert not cycles, "import cycles in extension/: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_turn_imports_no_other_part_of_the_panel():
    graph = import_graph(EXTENSION)
    panel_imports = [t for t in graph["panel/turn.js"] if t.startswith("panel/") and t not in NOT_PARTS]
    assert panel_imports == ["panel/state.js"]


def test_the_side_panel_loads_one_module_and_reads_storage_first():
    """The build bundles sidepanel.js's static graph into one file (buildsteps/bundle.py): the page
    loads that one module and preloads none of its own (an unbundled copy would run twice), and
    panel/early_read.js is the first import, so its reads start before the other modules run."""
    html = (EXTENSION / "sidepanel.html").read_text(encoding="utf-8")
    assert re.findall(r'<script type="module"(?: async)? src="([^"]+)">', html) == ["sidepanel.js"]
    assert "modulepreload" not in re.sub(r"<!--.*?-->", "", html, flags=re.S)
    graph = import_graph(EXTENSION, dynamic=False)
    assert graph["sidepanel.js"][0] == "panel/early_read.js"
    needed, frontier = set(), ["sidepanel.js"]
    while frontier:
        for target in graph.get(frontier.pop(), []):
            if target not in needed:
                needed.add(target)
                frontier.append(target)
    assert "panel/code_runs.js" in needed, "the graph lost the panel's imports"
    # The Markdown libraries and the sessions panel stay out of the bundle: imported with import().
    assert not needed & {"panel/markdown.js", "panel/sessions/drawer.js"}
    assert not any(target.startswith("vendor/") for target in needed)


# --- 2. importing a panel module wires nothing ----------------------------------------------------

STUB_DOM = r"""
import fs from "fs";
import { pathToFileURL } from "url";

const input = JSON.parse(fs.readFileSync(new URL("./input.json", import.meta.url), "utf8"));
const registrations = [];
let phase = "import";
const record = (kind) => function register(type) {
  // A chrome event's addListener takes only the callback: no type to report.
  registrations.push({ phase, kind, type: kind === "addListener" ? "" : String(type), stack: new Error().stack });
};
// Anything the DOM, window or chrome would give: every property, call and `new` gives it again.
const stub = new Proxy(function stub() {}, {
  get(target, prop) {
    if (prop === Symbol.toPrimitive) return (hint) => (hint === "number" ? 0 : "");
    if (typeof prop === "symbol") return undefined;
    if (prop === "addEventListener" || prop === "addListener") return record(prop);
    return stub;
  },
  apply: () => stub,
  construct: () => stub,
  set: () => true,
});
globalThis.stubDom = stub; // what the stand-ins for the vendored libraries export
const nativeAdd = EventTarget.prototype.addEventListener;
EventTarget.prototype.addEventListener = function (type, ...rest) {
  record("addEventListener")(type);
  return nativeAdd.call(this, type, ...rest);
};
for (const name of ["document", "window", "chrome", "navigator", "IntersectionObserver", "ResizeObserver", "MutationObserver", "Node",
                    "MessageChannel", "NodeFilter", "requestAnimationFrame", "cancelAnimationFrame"]) {
  Object.defineProperty(globalThis, name, { value: stub, configurable: true, writable: true });
}

const result = { modules: {}, errors: [] };
for (const [group, files] of Object.entries(input.groups)) {
  phase = group;
  for (const file of files) {
    try {
      result.modules[file] = Object.keys(await import(pathToFileURL(file).href));
    } catch (error) {
      result.errors.push(`${file}: ${error && error.stack}`);
    }
  }
}
const registry = await import(pathToFileURL(input.registry).href);
result.phases = Object.fromEntries(registry.PHASES.map((name) => [name, registry.order(name)]));
phase = "init";
for (const file of input.groups.import) {
  try {
    const module = await import(pathToFileURL(file).href);
    module.init?.({ refreshFromStorage: async () => {} });
  } catch (error) {
    result.errors.push(`${file} init(): ${error && error.stack}`);
  }
}
result.registrations = registrations;
console.log(JSON.stringify(result));
"""

VENDOR_STUB = "export const Marked = globalThis.stubDom;\nexport default globalThis.stubDom;\n"


@pytest.fixture(scope="module")
def imported_panel(tmp_path_factory) -> dict:
    """The panel's modules imported (then their `init()` called) in node against the stub DOM."""
    node = shutil.which("node")
    assert node, "node is not installed: it is part of the test environment (apt-get install nodejs)"
    work = tmp_path_factory.mktemp("panel_imports")
    tree = work / "extension"
    shutil.copytree(EXTENSION, tree)
    (tree / "package.json").write_text('{"type": "module"}')
    (tree / "generated").mkdir(exist_ok=True)
    (tree / "generated" / "contract.js").write_text(contract.render_js("margin-0-py3-none-any.whl"))
    (tree / "vendor").mkdir(exist_ok=True)
    for name in ("marked.esm.js", "purify.es.mjs", "highlight.min.js"):
        (tree / "vendor" / name).write_text(VENDOR_STUB)
    (tree / "probe_top_level.js").write_text('document.addEventListener("probe", () => {});\n')
    modules = sorted(str(p.relative_to(EXTENSION)) for p in PANEL.glob("*.js") if p.name not in START_SCRIPTS)
    groups = {"import": [str(tree / m) for m in modules], "probe": [str(tree / "probe_top_level.js")]}
    (tree / "input.json").write_text(
        json.dumps({"groups": groups, "registry": str(tree / "panel" / "registry.js")})
    )
    (tree / "run.mjs").write_text(STUB_DOM)
    done = subprocess.run([node, str(tree / "run.mjs")], capture_output=True, text=True, timeout=60, cwd=tree)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["errors"], "\n".join(result["errors"])
    result["tree"] = str(tree)
    return result


def test_the_stub_dom_sees_a_top_level_registration(imported_panel):
    probe = [r for r in imported_panel["registrations"] if r["phase"] == "probe"]
    assert [(r["kind"], r["type"]) for r in probe] == [("addEventListener", "probe")]


def test_init_is_where_the_panel_wires_its_controls(imported_panel):
    wired = [r for r in imported_panel["registrations"] if r["phase"] == "init"]
    assert len(wired) >= 20, f"init() registered only {len(wired)} listeners: the stub DOM lost them"
    with_init = sorted(m for m, names in imported_panel["modules"].items() if "init" in names)
    assert {Path(m).name for m in with_init} >= {
        "state.js",
        "turn.js",
        "composer.js",
        "conversation.js",
        "header.js",
        "attachments.js",
        "explain.js",
    }


def test_importing_a_panel_module_registers_no_listener(imported_panel):
    at_import = [r for r in imported_panel["registrations"] if r["phase"] == "import"]
    where = "\n".join(
        f"  {r['kind']}({r['type']!r}) at {_panel_frame(r['stack'], imported_panel['tree'])}"
        for r in at_import
    )
    assert not at_import, f"panel modules register listeners when imported (move them into init()):\n{where}"


def _panel_frame(stack: str, tree: str) -> str:
    """The first frame of `stack` in the copied extension, as `panel/header.js:34`."""
    for match in re.finditer(r"file://" + re.escape(tree) + r"/([^\s:)]+):(\d+)", stack):
        if match.group(1) != "run.mjs":
            return f"{match.group(1)}:{match.group(2)}"
    return stack


# --- 4. the panel's features register themselves ---------------------------------------------------


def test_every_feature_registers_itself_in_a_stated_order(imported_panel):
    phases = imported_panel["phases"]
    assert phases["base"] == ["state", "words"]
    wire = phases["wire"]
    assert sorted(wire) == sorted(
        [
            "turn",
            "composer",
            "attachments",
            "attach-tabs",
            "data-files",
            "conversation",
            "unsaved",
            "versions",
            "header",
            "code-runs",
            "tool-calls",
            "prompt-picker",
            "read-aloud",
            "voice-input",
        ]
    )
    assert wire.index("unsaved") > wire.index("conversation")
    assert wire.index("versions") > wire.index("conversation")
    assert wire.index("tool-calls") > wire.index("code-runs")
    assert phases["painted"] == ["explain", "sessions-preload", "code-runs-warmup"]
    # Every module with an init() is a registered feature (model_menu.js is the header's part).
    with_init = {Path(m).name for m, names in imported_panel["modules"].items() if "init" in names}
    registered = {name.replace("-", "_") + ".js" for names in phases.values() for name in names}
    assert with_init - {"model_menu.js"} <= registered


def test_the_entry_calls_no_features_init():
    source = _without_comments((EXTENSION / "sidepanel.js").read_text(encoding="utf-8"))
    assert not re.search(r"\.init\(|\binit\w*\(", source), (
        "sidepanel.js calls an init(): register the feature"
    )
    assert re.findall(r"""\bstart\(\s*"(\w+)"\s*\)""", source) == ["base", "wire", "painted"]


REGISTRY_CASES = r"""
const registry = await import(process.argv[2] + "?" + Math.random());
const says = (fn) => { try { fn(); return "ok"; } catch (error) { return error.message; } };
const ran = [];
registry.register({ name: "b", after: ["a"], init: () => ran.push("b") });
registry.register({ name: "a", provides: { hello: () => "hi" }, init: (hooks) => ran.push("a:" + hooks.hello()) });
registry.register({ name: "c", init: () => ran.push("c") });
registry.register({ name: "late", phase: "painted", after: ["c"], init: () => ran.push("late") });
registry.register({ name: "early", phase: "base", init: () => ran.push("early") });
const twice = says(() => registry.register({ name: "a", init() {} }));
registry.start("base");
registry.start("wire");
registry.start("painted");
const again = says(() => registry.start("wire"));
const circle = await import(process.argv[2] + "?" + Math.random());
circle.register({ name: "x", after: ["y"], init() {} });
circle.register({ name: "y", after: ["x"], init() {} });
circle.register({ name: "z", after: ["nobody"], phase: "painted", init() {} });
circle.register({ name: "up", after: ["z"], init() {} });
console.log(JSON.stringify({ ran, twice, again, circle: says(() => circle.order("wire")),
  missing: says(() => circle.order("painted")) }));
"""


def test_the_registry_orders_by_after_and_says_what_is_wrong(tmp_path):
    node = shutil.which("node")
    assert node, "node is not installed: it is part of the test environment (apt-get install nodejs)"
    (tmp_path / "cases.mjs").write_text(REGISTRY_CASES)
    module = (PANEL / "registry.js").as_uri()
    done = subprocess.run(
        [node, str(tmp_path / "cases.mjs"), module], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["ran"] == ["early", "a:hi", "b", "c", "late"]
    assert "registered twice" in got["twice"]
    assert "started twice" in got["again"]
    assert "circle" in got["circle"]
    assert "nobody, which is not registered" in got["missing"]
