// The sessions search held by the search worker (extension/panel/sessions/search_worker.js): the
// index's entries as the panel sent them, every digest it could get, folded and filtered
// (extension/panel/sessions/search.js `searchData`), and the searches over them. Pure: no DOM, no
// chrome.*, no IndexedDB of its own (the copy is read through `readCopy`), so node tests it
// against Python's session.list.
//
// Rules:
// 1. A search here returns exactly what search.js returns over the same entries and digests
//    (same matchSessions, same rowFor): the worker moves the work, not the semantics.
// 2. A digest comes from one of two places: the search copy (`readCopy`, read for every entry
//    the engine has no digest for, and accepted only when the copy's epoch is the one the panel
//    read from chrome.storage), or the panel (`setDigests`: chrome.storage.onChanged's new
//    values, and what the panel read from chrome.storage for the ids the copy lacked). The
//    panel's is never overwritten by a copy read that began before it arrived: it is newer.
// 3. What the copy lacks is reported (`onMissing(ids)`), for the panel to read from
//    chrome.storage as it did before the copy existed; until it arrives the session is found by
//    its name only and counted in `pending()`.
// 4. Narrowing (a query that extends the previous one searches the previous matches only) is
//    forgotten at every change of the entries, the digests or the untitled word.
// 5. Each search and rows request brings the word an untitled session is searched as (the
//    panel's `py_session_untitled` in its language, search.js `searchedName`); a session's search
//    data is cached under the name it searched, so data folded in another language is never used.
//    `prepare` folds with the word of the latest request.
//
// API: createEngine({readCopy(ids) -> Promise<{epoch, found: {id: text}}>, onMissing(ids)})
//      -> {setEntries(entries, epoch) -> Promise, setDigests({id: text | null}),
//          search(query, pageSize, untitledName), rows(query, ids, untitledName),
//          prepare(budgetMs) -> more?, pending(), unprepared()}

import { matchSessions, narrows, queryWords, rowFor, searchData, searchedName, sortEntries } from "./search.js";

const COPY_BATCH = 50;

export function createEngine({ readCopy, onMissing = () => {} }) {
  let entries = [];
  let sorted = [];                // entries in list order, sorted once per setEntries
  let byId = new Map();
  let epoch = null;
  let last = null;                // {query, matched}: what a longer query may narrow
  let untitledName;               // rule 5: the word of the latest request (undefined: the stored name)
  const digests = new Map();      // id -> text ("" when the stored value is not a string)
  const fed = new Map();          // id -> how many values the panel sent for it (rule 2)
  const generation = new Map();   // id -> bumped at each new digest (the cache key's part)
  const cache = new Map();        // id -> {key, data}
  const requested = new Set();    // ids being read from the copy
  const unprepared = new Set();   // ids whose digest arrived and is not folded yet

  function dataOf(entry) {
    const known = digests.has(entry.id);
    const key = `${searchedName(entry, untitledName)}\u0000${known}\u0000${generation.get(entry.id) ?? 0}`;
    const hit = cache.get(entry.id);
    if (hit && hit.key === key) return hit.data;
    const data = searchData(entry, digests.get(entry.id) ?? "", untitledName);
    cache.set(entry.id, { key, data });
    unprepared.delete(entry.id);
    return data;
  }

  function setDigest(id, text) {
    digests.set(id, typeof text === "string" ? text : "");
    generation.set(id, (generation.get(id) ?? 0) + 1);
    unprepared.add(id);
    last = null;
  }

  function useWord(word) {
    if (word === untitledName) return;
    untitledName = word;
    last = null;
  }

  async function readFromCopy(ids) {
    for (let at = 0; at < ids.length; at += COPY_BATCH) {
      const batch = ids.slice(at, at + COPY_BATCH);
      const before = batch.map((id) => fed.get(id) ?? 0);
      let copy = { epoch: null, found: {} };
      try { copy = await readCopy(batch); } catch { /* no copy: every id is missing */ }
      const valid = copy.epoch !== null && copy.epoch === epoch;
      const missing = [];
      batch.forEach((id, i) => {
        requested.delete(id);
        if (!byId.has(id) || (fed.get(id) ?? 0) !== before[i] || digests.has(id)) return;
        if (valid && Object.hasOwn(copy.found, id)) setDigest(id, copy.found[id]);
        else missing.push(id);
      });
      if (missing.length) onMissing(missing);
    }
  }

  return {
    setEntries(next, nextEpoch) {
      entries = Array.isArray(next) ? next : [];
      sorted = sortEntries(entries);
      byId = new Map(entries.map((e) => [e.id, e]));
      epoch = typeof nextEpoch === "string" ? nextEpoch : null;
      for (const map of [digests, fed, generation, cache]) {
        for (const id of map.keys()) if (!byId.has(id)) map.delete(id);
      }
      for (const id of unprepared) if (!byId.has(id)) unprepared.delete(id);
      last = null;
      const toRead = entries.map((e) => e.id).filter((id) => !digests.has(id) && !requested.has(id));
      for (const id of toRead) requested.add(id);
      return readFromCopy(toRead);
    },
    setDigests(values) {
      for (const [id, text] of Object.entries(values)) {
        fed.set(id, (fed.get(id) ?? 0) + 1);
        setDigest(id, text);
      }
    },
    search(query, pageSize, untitled) {
      useWord(untitled);
      const within = last && narrows(last.query, query) ? last.matched : null;
      // The sorted entries serve as the candidates when nothing narrows: the same order
      // matchSessions would sort them into, without sorting a thousand entries per keystroke.
      const matched = matchSessions(entries, query, dataOf, within ?? sorted);
      const words = queryWords(query).length > 0;
      last = words ? { query, matched } : null;
      return {
        ids: matched.map((e) => e.id),
        rows: matched.slice(0, pageSize).map((e) => rowFor(e, query, dataOf)),
        pending: words ? this.pending() : 0,
      };
    },
    rows(query, ids, untitled) {
      useWord(untitled);
      return ids.filter((id) => byId.has(id)).map((id) => rowFor(byId.get(id), query, dataOf));
    },
    prepare(budgetMs) {
      const started = Date.now();
      for (const id of unprepared) {
        if (byId.has(id)) dataOf(byId.get(id));
        else unprepared.delete(id);
        if (Date.now() - started >= budgetMs) break;
      }
      return unprepared.size > 0;
    },
    pending() { return entries.reduce((n, e) => n + (digests.has(e.id) ? 0 : 1), 0); },
    unprepared() { return unprepared.size; },
  };
}
