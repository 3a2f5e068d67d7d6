// The sanitizer's policy, shared by markdown.js (which applies it with DOMPurify) and the kept
// render (panel/render_cache.js, which checks a stored value against it). Needs no library.
//
// Rules:
// 1. The allow-list (`ALLOWED_TAGS`, `ALLOWED_ATTR`, `SAFE_LINK`, `SAFE_IMAGE`, the class rule) is
//    defined once, here, so a kept render is checked against the very rules that produced it
//    (`isSanitizedShape`).
// 2. `decorate` adds what the render adds after sanitizing (code block head with "Copy code", the
//    table scroller); it is applied to a fresh render and to a kept one alike, so both look the same.

import { t } from "../common/i18n.js";

export const ALLOWED_TAGS = [
  "a", "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "em", "i", "del", "s",
  "code", "pre", "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
  "img", "input", "span", "sup", "sub",
];
export const ALLOWED_ATTR = ["href", "title", "src", "alt", "align", "start", "checked", "disabled", "type", "class"];
export const SAFE_LINK = /^(https?:|mailto:)/i;
export const SAFE_IMAGE = /^data:image\/(png|jpe?g|gif|webp|avif|bmp);/i;
const SAFE_CLASS = /^(language-[\w+#.-]+|hljs[\w-]*)$/;
const LINK_ATTR = { target: "_blank", rel: "noopener noreferrer" };

// The classes a CODE or SPAN may keep (any other element keeps none).
export const keptClasses = (value) => (value || "").split(/\s+/).filter((c) => SAFE_CLASS.test(c));

// True when every node of `fragment` is one the sanitizer lets through (rule 2): a kept render
// read back from storage is shown only if it has exactly the shape of the sanitizer's output.
export function isSanitizedShape(fragment) {
  const tags = new Set(ALLOWED_TAGS.map((t) => t.toUpperCase()));
  const walker = document.createTreeWalker(fragment, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_COMMENT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType !== Node.ELEMENT_NODE || !tags.has(node.nodeName) || node.namespaceURI !== document.documentElement.namespaceURI) return false;
    for (const { name, value } of node.attributes) {
      if (node.nodeName === "A" && LINK_ATTR[name] === value) continue;
      if (!ALLOWED_ATTR.includes(name)) return false;
      if (name === "href" && (node.nodeName !== "A" || !SAFE_LINK.test(value.trim()))) return false;
      if (name === "src" && (node.nodeName !== "IMG" || !SAFE_IMAGE.test(value))) return false;
      if (name === "class" && ((node.nodeName !== "CODE" && node.nodeName !== "SPAN") || keptClasses(value).join(" ") !== value)) return false;
    }
    if (node.nodeName === "INPUT" && (node.getAttribute("type") !== "checkbox" || !node.hasAttribute("disabled"))) return false;
  }
  return true;
}

// Rule 3: code blocks get a language label and a "Copy code" button; tables scroll sideways.
export function decorate(fragment) {
  for (const pre of fragment.querySelectorAll("pre")) decorateCodeBlock(pre);
  for (const table of fragment.querySelectorAll("table")) {
    const scroller = document.createElement("div");
    scroller.className = "table-scroll";
    table.replaceWith(scroller);
    scroller.append(table);
  }
  return fragment;
}

function decorateCodeBlock(pre) {
  const code = pre.querySelector("code");
  const language = (code?.className.match(/language-([\w+#.-]+)/) || [])[1] || "";
  const wrapper = document.createElement("div");
  wrapper.className = "code-block";
  const head = document.createElement("div");
  head.className = "code-head";
  const label = document.createElement("span");
  label.className = "code-lang";
  label.setAttribute("aria-hidden", "true");
  label.textContent = language || t("panel_code");
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "btn ghost code-copy";
  copy.setAttribute("aria-label", t("panel_copy_code"));
  copy.dataset.action = "copy-code";
  copy.textContent = t("panel_copy");
  head.append(label, copy);
  pre.replaceWith(wrapper);
  wrapper.append(head, pre);
}
