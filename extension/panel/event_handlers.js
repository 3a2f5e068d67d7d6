// Event-handler attributes (`onerror=`, `onload=` …) taken out of HTML text before anything parses
// it. Needs nothing else; a classic script and a module alike (no import or export): the kept
// first frame (first_frame.js, a classic script that runs before any module) loads it with a
// <script> before its own (one file in dist: buildsteps/bundle.py rule 6), Markdown (markdown.js)
// imports it; both call `globalThis.marginWithoutEventHandlers(html)`.
//
// Why: Chromium reports a `script-src-attr` CSP violation for every inline handler it parses, even
// in an inert document (DOMParser, a <template>, createHTMLDocument: measured in Chromium 156), and
// DOMPurify parses the model's HTML with DOMParser before it removes them. The handlers never ran
// (the extension's CSP blocks them and DOMPurify drops them), but a panel that logs violations
// hides a real one among them. DOMPurify stays the sanitizer; this pass only keeps the parse quiet.
//
// Rules:
// 1. Start tags are read as the HTML tokenizer reads them (https://html.spec.whatwg.org/#tag-open-state):
//    `<` and an ASCII letter open a tag; attributes are separated by white space or `/`; a value is
//    double-quoted, single-quoted or unquoted; a `>` inside a quoted value does not end the tag.
// 2. An attribute whose name starts with `on` is removed with its value; everything else is kept
//    byte for byte, so text, comments and end tags are unchanged.

(() => {
const SPACE = /[\t\n\f\r ]/;
const LETTER = /[A-Za-z]/;

function withoutEventHandlers(html) {
  const text = String(html ?? "");
  if (!/on/i.test(text)) return text;
  let out = "";
  let copied = 0;
  for (let i = text.indexOf("<"); i !== -1; i = text.indexOf("<", i)) {
    if (!LETTER.test(text[i + 1] ?? "")) {
      i += 1;
      continue;
    }
    i += 2;
    while (i < text.length && !SPACE.test(text[i]) && text[i] !== "/" && text[i] !== ">") i++; // tag name
    for (;;) {
      while (i < text.length && (SPACE.test(text[i]) || text[i] === "/")) i++;
      if (i >= text.length || text[i] === ">") break;
      const nameStart = i;
      i++; // a first `=` belongs to the name (tokenizer: "unexpected equals sign before attribute name")
      while (i < text.length && !SPACE.test(text[i]) && !"/>=".includes(text[i])) i++;
      const name = text.slice(nameStart, i);
      let j = i;
      while (j < text.length && SPACE.test(text[j])) j++;
      if (text[j] === "=") {
        j++;
        while (j < text.length && SPACE.test(text[j])) j++;
        const quote = text[j];
        if (quote === '"' || quote === "'") {
          const close = text.indexOf(quote, j + 1);
          j = close === -1 ? text.length : close + 1;
        } else {
          while (j < text.length && !SPACE.test(text[j]) && text[j] !== ">") j++;
        }
        i = j;
      }
      if (/^on/i.test(name)) {
        out += text.slice(copied, nameStart);
        copied = i;
      }
    }
  }
  return out + text.slice(copied);
}

globalThis.marginWithoutEventHandlers = withoutEventHandlers;
})();
