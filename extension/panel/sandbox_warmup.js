// When the side panel warms the code sandbox, and what it loads there ahead of a Run (pure: no
// DOM, no storage; panel/code_runs.js does the warming).
//
// Rules:
// 1. The sandbox's Pyodide starts in the background after the panel's first paint (the registry's
//    "painted" phase, then idle time), and only when a Python block of a stored answer is on screen
//    or the model may run Python (`mayRunPython`: the setting `runPython` is not "off" and the active
//    provider is of a type that is offered the tool and not marked `supportsTools: false`, as
//    margin.sandbox.tool_loop.offers_tools decides). Never otherwise.
// 2. What a block imports is known from its code (`importedModules`: the top-level module of each
//    `import a.b as c` and `from a.b import c` line; relative imports and names that are not
//    identifiers are left out). The sandbox is sent `import <module>` lines (`prepareCode`), once
//    per module, so the wheels load and the packages import before the Run (sandbox/runner.js rule 5).

const IMPORT = /^[ \t]*import[ \t]+([^#\n;]+)/gm;
const FROM = /^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b/gm;
const IDENTIFIER = /^[A-Za-z_]\w*$/;
// At most this many modules from one block (a hostile or generated block cannot flood the sandbox).
const MAX_MODULES = 32;

export function importedModules(code) {
  if (typeof code !== "string") return [];
  const found = new Set();
  for (const [, list] of code.matchAll(IMPORT)) {
    for (const part of list.split(",")) found.add(part.trim().split(/\s+/)[0].split(".")[0]);
  }
  for (const [, name] of code.matchAll(FROM)) found.add(name.split(".")[0]);
  return [...found].filter((name) => IDENTIFIER.test(name)).slice(0, MAX_MODULES);
}

export function mayRunPython(mode, provider, toolProviderTypes) {
  if (mode === "off" || !provider || typeof provider !== "object") return false;
  return toolProviderTypes.includes(provider.type) && provider.supportsTools !== false;
}

export const prepareCode = (modules) => modules.map((name) => `import ${name}`).join("\n");
