// The small DOM helpers of the sessions panel (extension/sessions_panel.js).
//
// API: el(tag, props, ...children) -> element ("class", "text", "on<event>", boolean attributes)
//      marked(text, spans) -> fragment with each [start, end) span in a <mark>
//      when(row) -> the row's last-active date, formatted for the reader
//      download({filename, mimeType, text}) saves a file through a temporary link

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else if (value !== false && value != null) node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

export function marked(text, spans) {
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of spans) {
    if (start > at) fragment.append(text.slice(at, start));
    fragment.append(el("mark", { text: text.slice(start, end) }));
    at = end;
  }
  fragment.append(text.slice(at));
  return fragment;
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
export function when(row) {
  const ms = Math.max(row.savedAt || 0, row.createdAt || 0);
  return ms ? dateFormat.format(new Date(ms)) : "Date unknown";
}

export function download({ filename, mimeType, text }) {
  const url = URL.createObjectURL(new Blob([text], { type: mimeType }));
  const link = el("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
