"""The panel's side of the search worker (extension/panel/sessions/searcher.js) under node, against a
stand-in Worker: the worker hears the index with the copy's epoch first, what the copy lacks is
read from chrome.storage and handed on (never a value older than a change that came meanwhile),
answers go back to the query that asked, and a failing worker hands its open requests back."""

from pathlib import Path

from helpers import run_js_module

from margin.app.contract import render_js

SESSIONS_JS = Path(__file__).resolve().parents[2] / "extension" / "panel" / "sessions"

# A Worker that records what it is sent; `worker.reply(message)` answers as the real one would.
FAKES = """
const tick = () => new Promise((r) => setTimeout(r, 0));
let worker = null;
globalThis.Worker = class {
  constructor(url, options) { this.url = String(url); this.options = options; this.sent = []; worker = this; }
  postMessage(message) { this.sent.push(structuredClone(message)); }
  terminate() { this.terminated = true; }
  reply(message) { this.onmessage({ data: message }); }
};
const { startSearchWorker } = searcher;
"""


def run_searcher(tmp_path, script):
    folder = tmp_path / "panel" / "sessions"
    folder.mkdir(parents=True)
    return run_js_module(
        folder,
        SESSIONS_JS / "searcher.js",
        "searcher",
        FAKES + script,
        None,
        extra_files={"../../generated/contract.js": render_js("margin-test.whl")},
    )


def test_the_index_goes_first_with_the_epoch_and_answers_go_to_their_query(tmp_path):
    got = run_searcher(
        tmp_path,
        """
let releaseEpoch;
const s = startSearchWorker({ readEpoch: () => new Promise((r) => { releaseEpoch = r; }), readDigests: async () => ({}) });
s.setEntries([{ id: 'a', name: 'A' }]);
const first = s.search('alpha', 20);
const second = s.search('alphab', 20);
await tick();
const beforeEpoch = worker.sent.length;
releaseEpoch('E7');
await tick();
const [a, b] = worker.sent.slice(1).map((m) => m.seq);
worker.reply({ type: 'result', seq: b, ids: ['a'], rows: [], pending: 0 });
worker.reply({ type: 'result', seq: a, ids: [], rows: [], pending: 0 });
console.log(JSON.stringify({ beforeEpoch, sent: worker.sent.map((m) => [m.type, m.epoch ?? m.query]),
  module: worker.options.type, url: worker.url.endsWith('/search_worker.js'),
  answers: [(await first).ids, (await second).ids] }));
""",
    )
    assert got["beforeEpoch"] == 0
    assert got["sent"] == [["entries", "E7"], ["search", "alpha"], ["search", "alphab"]]
    assert got["module"] == "module" and got["url"]
    assert got["answers"] == [[], ["a"]]


def test_the_untitled_word_goes_with_each_search_and_each_next_page(tmp_path):
    """The worker searches an untitled session by the word the panel shows it as (search_engine.js
    rule 5): it comes with every request, so a change of language reaches the next one."""
    got = run_searcher(
        tmp_path,
        """
const s = startSearchWorker({ readEpoch: async () => 'E1', readDigests: async () => ({}) });
s.setEntries([]);
s.search('без', 10, 'Сессия без названия');
s.rows('без', ['a'], 'Сессия без названия');
s.search('無題', 10, '無題のセッション');
await tick();
console.log(JSON.stringify(worker.sent.slice(1).map((m) => [m.type, m.query, m.untitledName])));
""",
    )
    assert got == [
        ["search", "без", "Сессия без названия"],
        ["rows", "без", "Сессия без названия"],
        ["search", "無題", "無題のセッション"],
    ]


def test_what_the_copy_lacks_is_read_here_and_a_change_during_the_read_wins(tmp_path):
    got = run_searcher(
        tmp_path,
        """
const reads = [];
let s;
const s0 = startSearchWorker({
  retryMs: 0,  // no second asking of the copy (next test)
  readEpoch: async () => 'E1',
  readDigests: async (keys) => {
    reads.push(keys);
    s.setDigest('b', 'b as changed while the read ran');  // storage.onChanged, mid-read
    return { sessionDigest_a: 'a as stored', sessionDigest_b: 'b before the change', sessionDigest_c: 7 };
  },
});
s = s0;
s.setEntries([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
await tick();
worker.reply({ type: 'missing', ids: ['a', 'b', 'c'] });
for (let i = 0; i < 5; i++) await tick();
worker.reply({ type: 'progress', pending: 0, unprepared: 0 });
console.log(JSON.stringify({ reads, digests: worker.sent.filter((m) => m.type === 'digests').map((m) => m.digests),
  readHere: s.readHere(), settled: s.settled() }));
""",
    )
    assert got["reads"] == [["sessionDigest_a", "sessionDigest_b", "sessionDigest_c"]]
    assert got["digests"] == [
        {"b": "b as changed while the read ran"},
        {"a": "a as stored", "c": None},  # b's older value is dropped; c is not text: no digest
    ]
    assert got["readHere"] == 3 and got["settled"] is True


def test_a_failing_worker_is_stopped_and_hands_back_what_it_did_not_answer(tmp_path):
    got = run_searcher(
        tmp_path,
        """
const handed = [];
const s = startSearchWorker({ readEpoch: async () => 'E1', readDigests: async () => ({}),
  onFail: (requests) => { for (const { request, resolve } of requests) { handed.push(request.query); resolve({ ids: ['here'] }); } } });
s.setEntries([]);
await tick();
const pending = s.search('lost', 20);
worker.onerror({ preventDefault() {} });
const after = worker.sent.length;
s.search('later', 20);
console.log(JSON.stringify({ handed, answer: (await pending).ids, terminated: worker.terminated,
  sentAfter: worker.sent.length - after }));
""",
    )
    assert got == {"handed": ["lost"], "answer": ["here"], "terminated": True, "sentAfter": 0}


def test_what_the_copy_lacks_at_first_is_asked_of_it_again_before_it_is_read_here(tmp_path):
    # A profile from before the copy: the service worker is filling it as the panel opens.
    got = run_searcher(
        tmp_path,
        """
const epochs = [null, 'E2'];
const reads = [];
const s = startSearchWorker({ retryMs: 30, readEpoch: async () => epochs.shift(),
  readDigests: async (keys) => { reads.push(keys); return {}; } });
s.setEntries([{ id: 'a' }, { id: 'b' }]);
await tick();
worker.reply({ type: 'missing', ids: ['a', 'b'] });
await new Promise((r) => setTimeout(r, 10));
const readEarly = reads.length;
await new Promise((r) => setTimeout(r, 60));
const asked = worker.sent.filter((m) => m.type === 'entries').map((m) => m.epoch);
worker.reply({ type: 'missing', ids: ['b'] });  // the copy had a by then, not b
for (let i = 0; i < 5; i++) await tick();
console.log(JSON.stringify({ readEarly, asked, reads }));
""",
    )
    assert got == {"readEarly": 0, "asked": [None, "E2"], "reads": [["sessionDigest_b"]]}
