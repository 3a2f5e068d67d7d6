// The side panel's search worker (a dedicated module Worker of the panel): it reads the digests
// from the search copy in IndexedDB (extension/common/copy_store.js), folds and filters them,
// and answers the panel's searches by message, so the panel's main thread only sends the query
// and paints the rows. The search itself is extension/panel/sessions/search_engine.js.
//
// Messages in (from extension/panel/sessions/preload.js):
//   {type: "entries", entries, epoch}   the readable index, and chrome.storage's searchCopyEpoch
//   {type: "digests", digests}          {id: text | null}: new values, or what the copy lacked
//   {type: "search", seq, query, pageSize, untitledName}, {type: "rows", seq, query, ids, untitledName}
//                                       (untitledName: the word an untitled session is searched as,
//                                       in the panel's language; search_engine.js rule 5)
// Messages out:
//   {type: "missing", ids}                 the copy lacks these: the panel reads them from storage
//   {type: "progress", pending, unprepared}
//   {type: "result", seq, ids, rows, pending, workerMs, sentAt}, {type: "rows", seq, rows}
//   (workerMs: the search's own time; sentAt: when it was posted, on the shared clock)
// Rules:
// 1. Every search is answered at once, in the task of its message (waiting a task to merge
//    searches cost a thread wake-up per keystroke; the worker's search takes a few ms): the latest
//    query wins on the panel's side, which drops any answer older than its latest query.
// 2. Messages are handled in their order: a search sees every entry and digest sent before it.
// 3. Folding runs in slices of PREPARE_MS between messages; a search before it is done folds what
//    it needs itself (slower, never wrong).

import { openCopy, readCopy } from "../../common/copy_store.js";
import { createEngine } from "./search_engine.js";

const PREPARE_MS = 12;

let database = null;
const copyReader = async (ids) => {
  database ??= openCopy(() => { database = null; }).catch((error) => { database = null; throw error; });
  return readCopy(await database, ids);
};

const engine = createEngine({
  readCopy: copyReader,
  onMissing: (ids) => postMessage({ type: "missing", ids }),
});

const progress = () => postMessage({ type: "progress", pending: engine.pending(), unprepared: engine.unprepared() });

let preparing = false;
function prepareLater() {
  if (preparing) return;
  preparing = true;
  setTimeout(function slice() {
    const more = engine.prepare(PREPARE_MS);
    if (more) { setTimeout(slice, 0); return; }
    preparing = false;
    progress();
  }, 0);
}

function answer({ seq, query, pageSize, untitledName }) {
  const started = performance.now();
  const found = engine.search(query, pageSize, untitledName);
  const now = performance.now();
  postMessage({ type: "result", seq, ...found, workerMs: now - started, sentAt: performance.timeOrigin + now });
}

self.addEventListener("message", (event) => {
  const message = event.data;
  if (!message || typeof message !== "object") return;
  if (message.type === "entries") {
    engine.setEntries(message.entries, message.epoch).then(() => { progress(); prepareLater(); });
    progress();
  } else if (message.type === "digests") {
    engine.setDigests(message.digests ?? {});
    progress();
    prepareLater();
  } else if (message.type === "search") {
    answer(message);
  } else if (message.type === "rows") {
    postMessage({ type: "rows", seq: message.seq, rows: engine.rows(message.query, message.ids ?? [], message.untitledName) });
  }
});
