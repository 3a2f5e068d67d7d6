"""The search copy kept by the service worker (extension/worker/digest_copy.js, through
worker/storage.js's writes), run in node against an in-memory chrome.storage and IndexedDB: every digest
Python writes reaches the copy, the copy's entry is gone before its digest changes, a failed
removal invalidates the whole copy in the same write, the backfill never keeps a value that
changed while it read, and an update of the extension starts the copy again."""

import json
from pathlib import Path

import pytest
from helpers import run_js_module

from margin.app.contract import render_js
from margin.base import wire

EXTENSION = Path(__file__).resolve().parents[2] / "extension"

# chrome.storage.local and IndexedDB in memory, with Chrome's orders: a set's onChanged comes
# after the set; IndexedDB transactions run one after the other, in the order they were created.
FAKES = """
const tick = () => new Promise((r) => setTimeout(r, 0));
const stored = new Map();
const listeners = [];
const log = [];
const hooks = { beforeSet: () => {}, afterRead: async () => {} };
const change = (changes) => setTimeout(() => listeners.forEach((l) => l(changes, 'local')), 0);
globalThis.chrome = { storage: {
  onChanged: { addListener: (l) => listeners.push(l) },
  local: {
    async get(keys) {
      const list = typeof keys === 'string' ? [keys] : keys;
      const out = {};
      for (const k of list) if (stored.has(k)) out[k] = structuredClone(stored.get(k));
      await hooks.afterRead(list);  // what was read is kept: a change now lands after the read
      return out;
    },
    async set(items) {
      hooks.beforeSet(items);
      const changes = {};
      for (const [k, v] of Object.entries(items)) { changes[k] = { oldValue: stored.get(k), newValue: v }; stored.set(k, v); }
      log.push(['set', Object.keys(items)]);
      change(changes);
    },
    async remove(keys) {
      const changes = {};
      for (const k of [].concat(keys)) if (stored.has(k)) { changes[k] = { oldValue: stored.get(k) }; stored.delete(k); }
      change(changes);
    },
    async getKeys() { return [...stored.keys()]; },
  },
} };

const databases = new Map();
const failing = { write: false };
let queue = Promise.resolve();
function transaction(stores, names, mode) {
  const ops = [];
  const tx = { error: null, objectStore(name) {
    const store = stores.get(name);
    const op = (fn) => { const request = {}; ops.push(() => { request.result = fn(); request.onsuccess?.({ target: request }); }); return request; };
    const write = (fn) => op(() => { if (failing.write) throw new Error('QuotaExceededError'); return fn(); });
    return {
      get: (key) => op(() => structuredClone(store.get(key))),
      getAllKeys: () => op(() => [...store.keys()]),
      put: (value, key) => write(() => { store.set(key, value); }),
      delete: (key) => write(() => { store.delete(key); }),
      clear: () => write(() => { store.clear(); }),
    };
  } };
  queue = queue.then(tick).then(() => {
    try { for (const run of ops) run(); } catch (error) { tx.error = error; tx.onabort?.(); return; }
    tx.oncomplete?.();
  });
  return tx;
}
globalThis.indexedDB = { open(name) {
  const request = {};
  setTimeout(() => {
    let stores = databases.get(name);
    const fresh = !stores;
    if (fresh) { stores = new Map(); databases.set(name, stores); }
    request.result = { createObjectStore: (n) => stores.set(n, new Map()),
      transaction: (names, mode) => transaction(stores, names, mode), close() {} };
    if (fresh) request.onupgradeneeded?.();
    request.onsuccess?.();
  }, 0);
  return request;
} };
const copy = () => Object.fromEntries(databases.get('margin-search')?.get('digests') ?? []);
const copyEpoch = () => databases.get('margin-search')?.get('meta').get('epoch');
const settle = async () => { for (let i = 0; i < 5; i++) await tick(); await globalThis.marginSearchCopy.settled(); };
const py = (items) => storage.storageSet('local', JSON.stringify(items)).then(JSON.parse);
const { startDigestCopy } = await import('./digest_copy.js');
startDigestCopy({ writeEpoch: (epoch) => storage.writeSearchCopyEpoch(epoch) });
"""


def run_copy(tmp_path, script, data=None):
    files = {
        "../generated/contract.js": render_js("margin-test.whl"),
        "wire.js": (EXTENSION / "worker" / "wire.js").read_text(encoding="utf-8"),
        "digest_copy.js": (EXTENSION / "worker" / "digest_copy.js").read_text(encoding="utf-8"),
        "../common/copy_store.js": (EXTENSION / "common" / "copy_store.js").read_text(encoding="utf-8"),
    }
    (tmp_path / "worker").mkdir()
    storage = EXTENSION / "worker" / "storage.js"
    return run_js_module(tmp_path / "worker", storage, "storage", FAKES + script, data, extra_files=files)


def test_a_profile_from_before_is_backfilled_and_pythons_writes_follow(tmp_path):
    got = run_copy(
        tmp_path,
        """
stored.set('savedSessions', []);
stored.set('sessionDigest_a', 'alpha text');
stored.set('sessionDigest_b', 'beta text');
stored.set('sessionDigest_n', 42);  // not a string: no digest
await settle();
const backfilled = copy();
const epochs = [copyEpoch(), stored.get('searchCopyEpoch')];
await py({ sessionDigest_c: 'gamma text', session_c: { history: [] } });
await py({ sessionDigest_a: 'alpha, edited' });
await storage.storageRemove('local', JSON.stringify(['sessionDigest_b', 'session_b']));
await settle();
console.log(JSON.stringify({ backfilled, epochs, after: copy() }));
""",
    )
    assert got["backfilled"] == {"a": "alpha text", "b": "beta text"}
    assert got["epochs"][0] and got["epochs"][0] == got["epochs"][1]
    assert got["after"] == {"a": "alpha, edited", "c": "gamma text"}


def test_the_copys_entry_is_gone_before_its_digest_changes_in_storage(tmp_path):
    got = run_copy(
        tmp_path,
        """
stored.set('sessionDigest_a', 'old text');
await settle();
const seenAtSet = [];
hooks.beforeSet = (items) => { if ('sessionDigest_a' in items) seenAtSet.push(Object.hasOwn(copy(), 'a')); };
await py({ sessionDigest_a: 'new text' });
hooks.beforeSet = () => {};
await settle();
console.log(JSON.stringify({ seenAtSet, after: copy() }));
""",
    )
    assert got == {"seenAtSet": [False], "after": {"a": "new text"}}


def test_a_removal_that_fails_invalidates_the_whole_copy_in_the_same_write(tmp_path):
    got = run_copy(
        tmp_path,
        """
stored.set('sessionDigest_a', 'old text');
await settle();
const before = stored.get('searchCopyEpoch');
failing.write = true;
const reply = await py({ sessionDigest_a: 'new text' });
const [, keys] = log.at(-1);
const staleDuring = copy().a;
const invalid = stored.get('searchCopyEpoch') !== before && copyEpoch() !== stored.get('searchCopyEpoch');
failing.write = false;
await settle();  // the epoch's change starts the backfill: the copy is rebuilt under it
console.log(JSON.stringify({ reply, keys, invalid, staleDuring, after: copy(),
  rebuilt: copyEpoch() === stored.get('searchCopyEpoch') }));
""",
    )
    assert got["reply"]["ok"] and stored_in_one_write(got["keys"])
    assert got["invalid"] and got["staleDuring"] == "old text"  # held, but under a dead epoch
    assert got["after"] == {"a": "new text"} and got["rebuilt"]


def stored_in_one_write(keys):
    return set(keys) == {"sessionDigest_a", "searchCopyEpoch"}


def test_the_backfill_keeps_no_value_that_changed_while_it_read(tmp_path):
    got = run_copy(
        tmp_path,
        """
await settle();
stored.set('sessionDigest_a', 'read by the backfill, then replaced');
let raced = 0;
hooks.afterRead = async (keys) => {
  if (!keys.includes('sessionDigest_a') || raced++) return;
  await py({ sessionDigest_a: 'the newer text' });  // all of it, before the backfill's read returns
};
await globalThis.marginSearchCopy.settled();
hooks.afterRead = async () => {};
await settle();
console.log(JSON.stringify({ after: copy(), raced }));
""",
    )
    assert got == {"after": {"a": "the newer text"}, "raced": 1}


def test_an_update_starts_the_copy_again(tmp_path):
    # A version without the copy may have run and written digests the copy never saw.
    got = run_copy(
        tmp_path,
        """
stored.set('sessionDigest_a', 'as the copy saw it');
await settle();
stored.set('sessionDigest_a', 'written by a version that kept no copy');
const { restartDigestCopy } = await import('./digest_copy.js');
await restartDigestCopy();
await settle();
console.log(JSON.stringify({ after: copy(), valid: copyEpoch() === stored.get('searchCopyEpoch') }));
""",
    )
    assert got == {"after": {"a": "written by a version that kept no copy"}, "valid": True}


LONG = 64 * 1024  # wire.LONG_STRING: from this length a string crosses as a piece of its own


def test_bulk_values_cross_in_utf8_pieces_both_ways_ascii_or_not(tmp_path):
    # storage.js's (and wire.js's) half of margin.base.wire rule 6, against wire.py's half: a read is the JSON text with
    # markers and then each long string as UTF-8 (an ASCII start, then whatever follows); a write
    # from Python comes the same way; a marker without its piece is refused, nothing written.
    values = {
        "ascii": "data:image/png;base64," + "A" * LONG,
        "late": "x" * LONG + "é€😀 — " + "y" * 100,
        "early": "😀" + "z" * LONG,
        "short": "é" * 300,
        "mixed": ["ünïcödé", {"k": "日本語", "deep": ["q" * (LONG + 1)]}, 1.5, None, True],
        "empty": "",
    }
    pieces: list[str] = []
    light = wire.split_long_strings({"again": values}, pieces)
    got = run_copy(
        tmp_path,
        """
for (const [k, v] of Object.entries(input.values)) stored.set(k, v);
const [head, ...rest] = await storage.storageGet('local', JSON.stringify(Object.keys(input.values)));
const strict = new TextDecoder('utf-8', { fatal: true });
const read = { head: JSON.parse(strict.decode(head)), pieces: rest.map((b) => strict.decode(b)) };
const wrote = JSON.parse(await storage.storageSet('local', JSON.stringify(input.light), ...input.pieces));
const refused = JSON.parse(await storage.storageSet('local', JSON.stringify({ bad: { '\\u0000margin.piece': 9 } })));
console.log(JSON.stringify({ read, wrote, again: stored.get('again'), refused, bad: stored.has('bad') }));
""",
        {"values": values, "light": light, "pieces": pieces},
    )
    read = got["read"]
    assert len(read["pieces"]) == 4  # ascii, late, early, mixed's deep one
    assert "margin.piece" in json.dumps(read["head"])
    assert wire.join_long_strings(read["head"], read["pieces"]) == {"ok": True, "value": values}
    assert got["wrote"] == {"ok": True, "value": None}
    assert got["again"] == values
    assert got["refused"]["ok"] is False and "piece 9 of 0" in got["refused"]["error"]["message"]
    assert got["bad"] is False


def test_wire_splits_only_long_strings_and_refuses_a_marker_without_its_piece():
    value = {"a": "s", "b": ["x" * LONG, {"c": "y" * (LONG - 1)}], "n": 1}
    pieces: list[str] = []
    light = wire.split_long_strings(value, pieces)
    assert pieces == ["x" * LONG]
    assert light == {"a": "s", "b": [{wire.PIECE: 0}, {"c": "y" * (LONG - 1)}], "n": 1}
    assert wire.join_long_strings(light, pieces) == value
    for bad in ({wire.PIECE: 1}, {wire.PIECE: "0"}, {wire.PIECE: True}, {wire.PIECE: -1}):
        with pytest.raises(ValueError, match="refers to piece"):
            wire.join_long_strings({"k": [bad]}, pieces)
