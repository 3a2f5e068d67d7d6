// The kept first frame: shows the panel as it last looked, before the panel's module has loaded,
// then starts that module. A classic script at the end of <body> (sidepanel.html): it runs as soon
// as the page is parsed, and what it puts on screen is drawn in the page's first frame.
//
// Rules:
// 1. The frame is the HTML of the panel's `.app` (the newest bubbles only), kept by the panel in
//    `localStorage` under `margin.firstFrame` once it is settled (panel/kept_frame.js;
//    docs/storage-model.md). This script only reads it; a value it cannot use is ignored, never an error.
// 2. It is untrusted on read (any code of the extension's origin can write localStorage): it is
//    parsed inert (DOMParser: a document without scripting), must be one `div.app`, and loses every
//    element that can run or load anything, every `on*` attribute, every id, and every URL but an
//    http(s) or mailto link and a small raster image `data:` URL, before it enters the page. The
//    page's CSP (no inline script) stands behind this.
// 3. It is shown as an overlay, never as the panel: fixed over the real `.app`, `inert` and
//    `aria-hidden` (no focus, no clicks, nothing for assistive technology), ids stripped (the
//    page's ids stay unique). The panel removes it in the same task in which it builds its own
//    first frame (panel/kept_frame.js `takeOver`), so the two never show at once.
// 4. A frame kept by another version of the extension is not shown (its DOM may differ).
// 5. `window.__marginKeptFrame` = {node, stamp, lang, startedAt, shownAt, drawnAt, drawn}: `drawn` resolves
//    once the frame holding the overlay is drawn (drawnAt). Whether the frame was current is decided
//    by the panel, which compares `stamp` with the history it read.
// 6. The panel's module (and the build's modulepreloads) wait in `<template id="panel-module">`
//    and are started here, after the frame is mounted, whatever happened to the frame. Left to the
//    parser, their fetch ran alongside this script's and their compile took the main thread before
//    the frame's first draw (README.md "Measured").
(() => {
  function showKeptFrame() {
    const startedAt = performance.now();
    const KEY = "margin.firstFrame";
    const DROPPED = "script, iframe, frame, frameset, object, embed, link, meta, base, style, noscript, template, portal";
    const URL_ATTRIBUTES = ["href", "src", "srcset", "action", "formaction", "xlink:href", "poster", "background", "ping"];
    const MAX_IMAGE_URL_CHARS = 32 * 1024;

    function safeUrl(element, name, value) {
      const url = value.trim().toLowerCase();
      if (name === "src" && element.localName === "img" && url.startsWith("data:image/")) {
        return value.length <= MAX_IMAGE_URL_CHARS && !url.startsWith("data:image/svg");
      }
      if (name !== "href" || element.localName !== "a") return false;
      return url.startsWith("https:") || url.startsWith("http:") || url.startsWith("mailto:");
    }

    // Rule 2: what is left can show text, icons and small images, and nothing else.
    function sanitize(app) {
      for (const element of app.querySelectorAll(DROPPED)) element.remove();
      for (const element of [app, ...app.querySelectorAll("*")]) {
        for (const { name, value } of [...element.attributes]) {
          const lower = name.toLowerCase();
          if (lower.startsWith("on") || lower === "id" || lower === "srcdoc" || lower === "autofocus") {
            element.removeAttribute(name);
          } else if (URL_ATTRIBUTES.includes(lower) && !safeUrl(element, lower, value)) {
            element.removeAttribute(name);
          }
        }
      }
      return app;
    }

    function read() {
      try {
        const value = JSON.parse(localStorage.getItem(KEY) || "null");
        if (value?.v !== 1 || typeof value.html !== "string" || typeof value.stamp !== "string") return null;
        if (value.version !== chrome.runtime.getManifest().version) return null; // rule 4
        // Handlers out before the parse: parsing one is a CSP violation report (event_handlers.js).
        const html = globalThis.marginWithoutEventHandlers?.(value.html) ?? value.html;
        const doc = new DOMParser().parseFromString(`<!doctype html><body>${html}`, "text/html");
        const app = doc.body.firstElementChild;
        if (doc.body.childElementCount !== 1 || !app.matches("div.app")) return null;
        return { app: sanitize(app), stamp: value.stamp, lang: typeof value.lang === "string" ? value.lang : "" };
      } catch {
        return null; // rule 1
      }
    }

    const frame = read();
    const real = document.querySelector(".app");
    if (!frame || !real) return;
    const node = document.adoptNode(frame.app);
    node.classList.add("first-frame");
    node.inert = true;
    node.setAttribute("aria-hidden", "true");
    real.after(node);
    const conversation = node.querySelector(".conversation");
    if (conversation) conversation.scrollTop = conversation.scrollHeight;
    const kept = { node, stamp: frame.stamp, lang: frame.lang, startedAt, shownAt: performance.now(), drawnAt: null, drawn: null };
    // Drawn = a message posted from a requestAnimationFrame callback is handled (as sidepanel.js measures).
    kept.drawn = new Promise((drawn) =>
      requestAnimationFrame(() => {
        const channel = new MessageChannel();
        channel.port1.onmessage = () => {
          kept.drawnAt = performance.now();
          drawn();
        };
        channel.port2.postMessage(null);
      }),
    );
    window.__marginKeptFrame = kept;
  }

  // Rule 6.
  function startPanel() {
    const template = document.getElementById("panel-module");
    if (template) document.body.append(template.content.cloneNode(true));
  }

  try {
    showKeptFrame();
  } finally {
    startPanel();
  }
})();
