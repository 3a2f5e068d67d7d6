// Loading the Markdown libraries after the first paint: until then a bubble shows plain text or
// a kept render (panel/render_cache.js).
//
// Rules:
// 1. This module imports nothing: the first paint must not wait for marked, DOMPurify or
//    highlight.js. markdown.js (which imports them) is loaded by `loadMarkdown`, once.
// 2. `markdownModule()` is markdown.js once loaded, else null: a painter that finds null paints the
//    text and upgrades when `loadMarkdown()` resolves.

let loaded = null;
let loading = null;

export const markdownModule = () => loaded;

export function loadMarkdown() {
  loading ??= import("./markdown.js").then((module) => (loaded = module));
  return loading;
}

