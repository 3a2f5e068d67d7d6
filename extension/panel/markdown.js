// Model output -> safe DOM. The model's text is untrusted input: it may carry hostile HTML.
//
// Rules:
// 1. marked's output (raw HTML in the Markdown included) goes through DOMPurify with a small
//    allow-list of Markdown's own elements and attributes: no script, iframe, form, svg, style,
//    event handler, id or data- attribute reaches the page. Unknown elements are dropped with their
//    text kept (script and style lose their text too). Event-handler attributes are taken out of
//    the HTML text before DOMPurify parses it (panel/event_handlers.js): parsing one, even inertly,
//    is a CSP violation report, and the panel runs with none.
// 2. Links keep only http:, https: and mailto: targets (any other link loses its href and becomes
//    plain text) and open in a new tab with rel="noopener noreferrer".
// 3. Images only from data:image/ URLs (raster types): a remote image would be a tracking pixel.
// 4. Code blocks get a language label and a "Copy code" button; highlighting is lazy (when a block
//    scrolls into view, in idle time) so painting a long conversation stays fast. highlight.js is
//    imported on first need.
// 5. A streaming answer (`streamingMarkdown`) is painted in linear time: its finished blocks are
//    rendered once and kept (panel/stream_render.js), only the rest is rendered again, and paints
//    are spaced by their own cost (at most about a fifth of the main thread), each painting at most
//    a slice more than the last (text that arrives faster than it is painted waits its turn, rather
//    than being painted in one long task). Each piece goes
//    through the same sanitizing as a whole answer (rules 1-3): pieces are joined as DOM nodes,
//    never as HTML text. The last paint equals `renderMarkdown` of the whole answer.
// 6. An answer over LONG_ANSWER_CHARS is marked `.long` (streamed or rendered whole) and its blocks
//    go into `div.blocks` groups of GROUP_ELEMENTS elements each (filled in order, a new group at an
//    element once the last is full: the same groups whether it was streamed or rendered at once).
//    A group is laid out and painted only near the viewport (sidepanel.css, content-visibility),
//    so each slice appended to a 1 MB answer costs the slice, not the whole answer's layout; one
//    content-visibility box per block instead cost ~250 ms a frame in intersection checks
//    (docs/performance.md, "A 1 MB answer").

import { Marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.es.mjs";
import { idle } from "../common/ui_common.js";
import { ALLOWED_TAGS, ALLOWED_ATTR, SAFE_LINK, SAFE_IMAGE, keptClasses, decorate } from "./markdown_policy.js";
import { createStreamSplit } from "./stream_render.js";
import "./event_handlers.js"; // globalThis.marginWithoutEventHandlers (it is a classic script too)

const escapeHtml = (text) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

const marked = new Marked({ gfm: true, breaks: false });

// highlight.js's colours come with the libraries, after the first paint (markdown_lite.js rule 1).
for (const [file, scheme] of [["hljs-light.css", "light"], ["hljs-dark.css", "dark"]]) {
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = new URL(`../vendor/${file}`, import.meta.url).href;
  link.media = `(prefers-color-scheme: ${scheme})`;
  document.head.append(link);
}

const purifier = DOMPurify(window);
purifier.addHook("afterSanitizeAttributes", (node) => {
  const tag = node.nodeName;
  if (tag === "A") {
    const href = (node.getAttribute("href") || "").trim();
    if (!SAFE_LINK.test(href)) {
      node.removeAttribute("href");
    } else {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  } else if (tag === "IMG") {
    if (!SAFE_IMAGE.test(node.getAttribute("src") || "")) node.setAttribute("data-drop", "1");
  } else if (tag === "INPUT") {
    // GFM task lists only: a disabled checkbox, nothing that can submit or take input.
    if (node.getAttribute("type") !== "checkbox") node.setAttribute("data-drop", "1");
    node.setAttribute("disabled", "");
  }
  if (tag === "CODE" || tag === "SPAN") {
    const cls = keptClasses(node.getAttribute("class"));
    if (cls.length) node.setAttribute("class", cls.join(" "));
    else node.removeAttribute("class");
  } else {
    node.removeAttribute("class");
  }
});

const PURIFY_CONFIG = {
  ALLOWED_TAGS,
  ALLOWED_ATTR,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  ALLOW_UNKNOWN_PROTOCOLS: false,
  FORBID_CONTENTS: ["script", "style", "template", "noscript", "iframe", "object", "embed", "svg", "math", "textarea", "select", "title"],
  RETURN_DOM_FRAGMENT: true,
};

// Turns Markdown into a sanitized DocumentFragment (no event handlers, no scripts, safe links).
// `keep(html)`, when given, receives the sanitized HTML before decoration (the kept render of
// panel/render_cache.js).
function markdownFragment(text, keep = null) {
  let html;
  try {
    html = marked.parse(String(text ?? ""), { async: false });
  } catch {
    html = `<p>${escapeHtml(String(text ?? ""))}</p>`;
  }
  return htmlFragment(html, keep);
}

// marked's HTML -> a sanitized, decorated DocumentFragment (rules 1-4).
function htmlFragment(dirty, keep = null) {
  const html = globalThis.marginWithoutEventHandlers(dirty);
  let fragment;
  if (keep) {
    const clean = purifier.sanitize(html, { ...PURIFY_CONFIG, RETURN_DOM_FRAGMENT: false });
    const template = document.createElement("template");
    template.innerHTML = clean;
    fragment = template.content;
    for (const node of fragment.querySelectorAll("[data-drop]")) node.remove();
    keep(template.innerHTML);
  } else {
    fragment = purifier.sanitize(html, PURIFY_CONFIG);
    for (const node of fragment.querySelectorAll("[data-drop]")) node.remove();
  }
  return decorate(fragment);
}

// Renders Markdown into `target`, replacing its children. `highlight: false` skips highlighting
// (used while an answer streams: it is re-rendered every frame). `keep` as for markdownFragment.
export function renderMarkdown(target, text, { highlight = true, keep = null } = {}) {
  const fragment = markdownFragment(text, keep);
  target.replaceChildren();
  markLong(target, String(text ?? "").length);
  appendBlocks(target, [...fragment.childNodes]);
  if (highlight) highlightWithin(target);
}

// Highlights the code blocks under `target` when they come into view (rule 4).
export function highlightWithin(target) {
  for (const code of target.querySelectorAll("pre > code")) highlightLater(code);
}

// Rule 6: the text length from which an answer's blocks are grouped and laid out only near the
// viewport, and how many elements a group holds.
export const LONG_ANSWER_CHARS = 25_000;
const GROUP_ELEMENTS = 100;

function markLong(target, length) {
  const long = length > LONG_ANSWER_CHARS;
  if (long === target.classList.contains("long")) return;
  const nodes = [...target.childNodes].flatMap((node) => (node.classList?.contains("blocks") ? [...node.childNodes] : [node]));
  target.classList.toggle("long", long);
  target.replaceChildren();
  appendBlocks(target, nodes);
}

// Appends `nodes` to `target`, in groups when it is `.long` (rule 6).
function appendBlocks(target, nodes) {
  if (!target.classList.contains("long")) {
    target.append(...nodes);
    return;
  }
  let group = target.lastElementChild?.classList.contains("blocks") ? target.lastElementChild : null;
  for (const node of nodes) {
    if (!group || (node.nodeType === Node.ELEMENT_NODE && group.childElementCount >= GROUP_ELEMENTS)) {
      group = document.createElement("div");
      group.className = "blocks";
      target.append(group);
    }
    group.append(node);
  }
}

// Takes `nodes` (the last paint's tail) out of `target`, and the groups they leave empty.
function removeBlocks(target, nodes) {
  for (const node of nodes) node.remove();
  while (target.lastElementChild?.classList.contains("blocks") && !target.lastElementChild.hasChildNodes()) {
    target.lastElementChild.remove();
  }
}

// Rule 5. `around(paint)` runs each paint (the caller keeps the view pinned to the bottom).
// `update(text)` may paint later (the paint's cost spaces them; what is left after a slice is
// painted next); `finish(text)` paints now and stops; `complete(text)` paints what is left a slice
// per task (COMPLETE_SLICE_CHARS), then as `finish`, and resolves to true once that last paint is
// done (false when the target left the page first). All take the whole answer so far.
const PAINT_SHARE = 5; // wait at least 4x a paint's own duration before the next one
const COMPLETE_SLICE_CHARS = 25_000;

export function streamingMarkdown(target, { around = (paint) => paint() } = {}) {
  const split = createStreamSplit({
    lex: (text) => marked.lexer(text),
    render: (tokens) => marked.parser(tokens),
  });
  let live = []; // the tail's nodes, replaced at every paint
  let started = false;
  let notBefore = 0;
  let timer = 0;
  let latest = "";
  let painted = 0; // characters of the answer the last paint showed
  let completing = null;
  let failed = false; // marked threw: the answer is painted whole, as renderMarkdown would

  function show({ frozen, tail }) {
    if (!started) {
      started = true;
      target.replaceChildren();
    }
    removeBlocks(target, live);
    if (frozen) appendBlocks(target, [...htmlFragment(frozen).childNodes]);
    live = [...htmlFragment(tail).childNodes];
    appendBlocks(target, live);
  }

  // Paints `text` (the answer so far, or a prefix of it while completing).
  function paint(final, text = latest) {
    clearTimeout(timer);
    timer = 0;
    if (!target.isConnected && !final) return;
    const began = performance.now();
    markLong(target, text.length);
    around(() => {
      if (!failed) {
        try {
          const step = final ? split.finish(text) : split.update(text);
          if (!step.whole) {
            show(step);
            return;
          }
        } catch {
          failed = true;
        }
      }
      started = true;
      live = [];
      target.replaceChildren();
      appendBlocks(target, [...markdownFragment(text).childNodes]);
    });
    painted = text.length;
    notBefore = performance.now() + (performance.now() - began) * (PAINT_SHARE - 1);
  }

  // The next slice of what arrived (rule 5); the rest is painted after it, spaced as any paint.
  function paintSlice() {
    const behind = !failed && latest.length - painted > COMPLETE_SLICE_CHARS;
    paint(false, behind ? latest.slice(0, painted + COMPLETE_SLICE_CHARS) : latest);
    if (latest.length > painted && target.isConnected) timer = setTimeout(paintSlice, Math.max(0, notBefore - performance.now()));
  }

  function complete(text) {
    latest = text;
    completing ??= new Promise((resolve) => {
      let steps = 0;
      const step = () => {
        // The first slice may be painted before the target is in the page (a bubble being built).
        if (steps++ > 0 && !target.isConnected) return resolve(false);
        if (!failed && latest.length - painted > COMPLETE_SLICE_CHARS) {
          paint(false, latest.slice(0, painted + COMPLETE_SLICE_CHARS));
          setTimeout(step, 0);
          return;
        }
        paint(true);
        resolve(true);
      };
      step();
    });
    return completing;
  }

  return {
    update(text) {
      latest = text;
      if (completing) return;
      const wait = notBefore - performance.now();
      if (wait <= 0) paintSlice();
      else timer ||= setTimeout(paintSlice, Math.max(0, wait));
    },
    finish(text) {
      latest = text;
      paint(true);
    },
    complete,
  };
}

// --- Lazy highlighting -------------------------------------------------------------------------

let hljsPromise = null;
function loadHighlighter() {
  hljsPromise ??= import("../vendor/highlight.min.js").then((module) => {
    const hljs = module.default;
    hljs.configure({ ignoreUnescapedHTML: true });
    return hljs;
  });
  return hljsPromise;
}

const MAX_AUTO_DETECT_CHARS = 4000;
const MAX_HIGHLIGHT_CHARS = 60000;

async function highlightNow(code) {
  if (!code.isConnected || code.dataset.highlighted) return;
  const source = code.textContent;
  if (source.length > MAX_HIGHLIGHT_CHARS) return;
  const hljs = await loadHighlighter();
  const language = (code.className.match(/language-([\w+#.-]+)/) || [])[1];
  const known = language && hljs.getLanguage(language);
  if (!known && source.length > MAX_AUTO_DETECT_CHARS) return;
  // highlightElement rebuilds the element from its text: safe, it never parses markup.
  if (!known) code.classList.remove(...[...code.classList].filter((c) => c.startsWith("language-")));
  hljs.highlightElement(code);
}

const observer = "IntersectionObserver" in window
  ? new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        observer.unobserve(entry.target);
        idle(() => highlightNow(entry.target), 500);
      }
    }, { rootMargin: "300px 0px" })
  : null;

function highlightLater(code) {
  if (observer) observer.observe(code);
  else idle(() => highlightNow(code), 500);
}
