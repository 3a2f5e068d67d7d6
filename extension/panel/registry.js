// The side panel's features and the order they start in (Refined GitHub style): each feature
// module of panel/ ends by registering itself here; sidepanel.js imports the features and starts
// each phase. Nothing else calls a feature's `init()`.
//
// Rules:
// 1. `register({name, phase, after, provides, init})` is a plain record, made when the module is
//    imported: registering wires nothing (tests/unit/test_js_imports.py rule 2); `init()` does.
// 2. Phases, started by sidepanel.js in this order:
//      "base"     what every feature relies on: the shared state's own wiring, the words;
//      "wire"     every control and listener, before the first paint (a MutationObserver on the
//                 conversation must see the first paint's bubbles);
//      "painted"  after the first frame is drawn (and the worker woken): what may wait.
// 3. In a phase, a feature starts after every feature its `after` names (each of which must be
//    registered, in that phase or an earlier one: a missing or circular name stops the start, named).
//    Features with no `after` between them start in the order they registered (the order the
//    modules were evaluated); nothing may depend on that order: state it with `after`.
// 4. What a feature gives others that cannot import it (the panel's modules import one way,
//    sidepanel.js rule 5) is in its `provides`; every `init` gets all of them, as one object, once
//    every feature has registered (e.g. conversation.js provides `refreshFromStorage` to turn.js).
// 5. A phase starts once; each init runs once, synchronously, in the order of rule 3.

export const PHASES = ["base", "wire", "painted"];

const features = [];
const provided = {};
const started = new Set();

export function register({ name, phase = "wire", after = [], provides = {}, init }) {
  if (!PHASES.includes(phase)) throw new Error(`panel feature ${name}: unknown phase ${phase}`);
  if (features.some((f) => f.name === name)) throw new Error(`panel feature ${name} is registered twice`);
  if (typeof init !== "function") throw new Error(`panel feature ${name} has no init()`);
  features.push({ name, phase, after, init });
  Object.assign(provided, provides);
}

// Rule 3: the features of `phase`, in the order they start.
export function order(phase) {
  const rank = PHASES.indexOf(phase);
  const byName = new Map(features.map((f) => [f.name, f]));
  const done = [];
  const placed = new Set();
  const visiting = new Set();
  const visit = (feature, path) => {
    if (placed.has(feature.name)) return;
    if (visiting.has(feature.name)) throw new Error(`panel features start in a circle: ${[...path, feature.name].join(" -> ")}`);
    visiting.add(feature.name);
    for (const name of feature.after) {
      const before = byName.get(name);
      if (!before) throw new Error(`panel feature ${feature.name} starts after ${name}, which is not registered`);
      const beforeRank = PHASES.indexOf(before.phase);
      if (beforeRank > rank) throw new Error(`panel feature ${feature.name} (${phase}) starts after ${name} (${before.phase}), a later phase`);
      if (beforeRank === rank) visit(before, [...path, feature.name]);
    }
    visiting.delete(feature.name);
    placed.add(feature.name);
    done.push(feature);
  };
  for (const feature of features) if (feature.phase === phase) visit(feature, []);
  return done.map((f) => f.name);
}

// Rules 4 and 5.
export function start(phase) {
  if (started.has(phase)) throw new Error(`panel phase ${phase} started twice`);
  const names = order(phase);
  started.add(phase);
  const byName = new Map(features.map((f) => [f.name, f]));
  for (const name of names) byName.get(name).init(provided);
}
