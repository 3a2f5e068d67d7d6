// The open conversation as the sessions list shows it: its first row, "Current conversation".
// Pure: no DOM, no chrome.*; the drawer (extension/panel/sessions/drawer.js) hands it the records
// the panel shows (`state.history`) and the id they are linked to (`historySessionId`).
//
// Rules:
// 1. The list is the one global, flat history (docs/storage-model.md): the open conversation is one
//    row, never two. When `history` is linked to a saved session, that session's row is the
//    current one: it is shown first, with the open conversation's text, time and preview (newer
//    than what was saved), under its saved name, and its actions act on the saved session (Rename,
//    Pin, Delete, Export) as before; when it is not linked (never saved), the row has no actions:
//    nothing is stored to rename, pin, delete or export until "New session" (or opening another
//    session) puts the conversation away. Neither has "Open": it is open.
// 2. It is searched like every other row (the same `searchData`, `matchSessions`, `rowFor` of
//    search.js) over its digest, computed here as Python computes a saved session's
//    (margin.sessions.entries `text_digest`: the records' text, an attachment's header only,
//    joined by newlines, at most DIGEST_CAP characters; tests/unit/test_sessions.py compares them).
// 3. Its time is its last message's (`createdAt`), as a saved session's `activeAt` is.
//
// API: currentEntry(records, linked, untitledName) -> entry | null (linked: the index entry of
//      `historySessionId`, or null); textDigest(records), defaultName(records)

import { CONTRACT } from "../../generated/contract.js";

const PAGE_CONTEXT = CONTRACT.pageContextPrefix;
const UNTITLED = CONTRACT.storedNames.untitledSession;
const DIGEST_CAP = 100_000;     // margin.sessions.entries.DIGEST_CAP
const DIGEST_HEAD = CONTRACT.limits.previewLength;  // = DIGEST_HEAD
const NAME_LENGTH = 60;         // margin.sessions.entries.NAME_LENGTH

function textOf(record) {
  const content = record?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((p) => p?.type === "text").map((p) => (typeof p.text === "string" ? p.text : "")).join("\n");
}

const isAttachment = (record) => record?.role === "user" && record.attachment !== null &&
  typeof record.attachment === "object" && !Array.isArray(record.attachment) && textOf(record).startsWith(PAGE_CONTEXT);

export function textDigest(records) {
  const texts = records.map((r) => (isAttachment(r) ? textOf(r).split("\n\n", 1)[0] : textOf(r))).filter(Boolean);
  return texts.join("\n").slice(0, DIGEST_CAP);
}

function shorten(text) {
  const line = text.split(/\s+/).filter(Boolean).join(" ");
  if (line.length <= NAME_LENGTH) return line;
  let cut = line.slice(0, NAME_LENGTH - 1);
  const space = cut.lastIndexOf(" ");
  if (space >= NAME_LENGTH / 2) cut = cut.slice(0, space);
  return `${cut.replace(/[ ,.;:-]+$/, "")}\u2026`;
}

export function defaultName(records) {
  for (const r of records) if (r?.role === "user" && !isAttachment(r) && textOf(r).trim()) return shorten(textOf(r));
  for (const r of records) {
    const title = isAttachment(r) ? r.attachment.title : null;
    if (title) return shorten(String(title));
  }
  return UNTITLED;
}

function lastUsed(records) {
  let last = 0;
  for (const r of records) {
    const at = r?.createdAt;
    if (typeof at === "number" && Number.isFinite(at) && at > last) last = at;
  }
  return last;
}

// Rule 1: the entry the current row is built from (`current: true`, `digest`: its text), or null
// when the conversation is empty.
export function currentEntry(records, linked) {
  if (!Array.isArray(records) || !records.length) return null;
  const digest = textDigest(records);
  const now = Date.now();
  const entry = linked
    ? { ...linked }
    : { id: "", name: defaultName(records), named: false, createdAt: now, pinned: false };
  return { ...entry, digestHead: digest.slice(0, DIGEST_HEAD), activeAt: lastUsed(records) || linked?.activeAt || now,
    current: true, linked: Boolean(linked), digest };
}
