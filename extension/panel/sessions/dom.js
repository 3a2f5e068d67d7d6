// The small DOM helpers of the sessions panel (extension/panel/sessions/drawer.js).
//
// API: el(tag, props, ...children) -> element ("class", "text", "on<event>", boolean attributes)
//      marked(text, spans) -> fragment with each [start, end) span in a <mark>
//      dateElement(row) -> <time> of the row's last use (`activeAt`: its last message, else its last
//        save; margin.sessions.entries rule 4): "3 minutes ago" within a week, else
//        the date, in the chosen language (i18n.js); the full date and time as its title
//      refreshDates(root) -> each such <time> under `root` says it again for now ("4 minutes ago")
//      download({filename, mimeType, text}) saves a file through a temporary link

import { t, formatDate, formatRelative } from "../../common/i18n.js";

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

const RECENT_MS = 7 * 24 * 3600 * 1000;
const dateText = (ms, now) => (Math.abs(now - ms) < RECENT_MS ? formatRelative(ms, now) : formatDate(ms, { dateStyle: "medium" }));

export function dateElement(row, now = Date.now()) {
  const ms = row.activeAt || Math.max(row.savedAt || 0, row.createdAt || 0);
  if (!ms) return el("time", { class: "sp-date", text: t("sessions_date_unknown") });
  return el("time", { class: "sp-date", datetime: new Date(ms).toISOString(), title: formatDate(ms), text: dateText(ms, now) });
}

export function refreshDates(root, now = Date.now()) {
  for (const time of root.querySelectorAll("time.sp-date[datetime]")) {
    const text = dateText(Date.parse(time.dateTime), now);
    if (time.textContent !== text) time.textContent = text;
  }
}

export function download({ filename, mimeType, text }) {
  const url = URL.createObjectURL(new Blob([text], { type: mimeType }));
  const link = el("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
