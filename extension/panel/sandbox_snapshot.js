// What the code sandbox keeps for the next panel's sandbox (the sandbox is an opaque origin without
// storage: the panel keeps it): its memory snapshot (sandbox/runner.js rule 6: the bare Python with
// the sandbox's harness imported, taken by the worker after a boot from scratch, before any code
// ran) and matplotlib's font list (sandbox/runner.py rule 7: built by the first import of
// matplotlib.pyplot, tens of seconds on a busy machine, once per install).
//
// Rules:
// 1. One of each, in IndexedDB "margin-sandbox" (store "snapshots", keys "python" and "fontlist"):
//    a new one replaces the old. The worker checks what it loads (its Pyodide, its runner.py;
//    matplotlib checks the font list's version) and makes a new one when it refuses it, so a
//    stale one costs one slow start, never an error.
// 2. Neither `read` nor `write` ever throws: a store that fails is a boot from scratch (`read`
//    gives null), a write that fails is lost.
// 3. Only a snapshot of at most MAX_BYTES (a Uint8Array, with its key), a text of at most
//    MAX_FONT_LIST_CHARS, is kept or handed over.

import { inStore } from "../common/idb_store.js";

const DB_NAME = "margin-sandbox";
const STORE = "snapshots";
const KEY = "python";
const FONT_LIST_KEY = "fontlist";
export const MAX_BYTES = 256 * 1024 * 1024;
const MAX_FONT_LIST_CHARS = 2_000_000; // runner.py's FONT_LIST_MAX_CHARS

const transaction = (mode, body) => inStore(DB_NAME, STORE, mode, body);

const fits = (bytes) => bytes instanceof Uint8Array && bytes.length > 0 && bytes.length <= MAX_BYTES;

// {bytes, key}: the snapshot and which Pyodide and runner.py made it (sandbox/runner.js rule 6).
export async function read() {
  try {
    const kept = await transaction("readonly", (store) => store.get(KEY));
    return fits(kept?.bytes) && typeof kept.key === "string" ? kept : null;
  } catch {
    return null;
  }
}

export async function write(bytes, key) {
  if (!fits(bytes) || typeof key !== "string") return;
  try {
    await transaction("readwrite", (store) => store.put({ bytes, key }, KEY));
  } catch {
    // rule 2: the next sandbox boots from scratch and offers a snapshot again
  }
}

const isFontList = (text) => typeof text === "string" && text.length > 0 && text.length <= MAX_FONT_LIST_CHARS;

export async function readFontList() {
  try {
    const text = await transaction("readonly", (store) => store.get(FONT_LIST_KEY));
    return isFontList(text) ? text : "";
  } catch {
    return "";
  }
}

export async function writeFontList(text) {
  if (!isFontList(text)) return;
  try {
    await transaction("readwrite", (store) => store.put(text, FONT_LIST_KEY));
  } catch {
    // rule 2: the next sandbox's matplotlib builds its own
  }
}
