"""The search worker's engine (extension/panel/sessions/search_engine.js) under node: it finds what
Python's session.list finds, through the search copy or through what the panel hands it, and a
copy that is stale, missing or from another epoch never gives a wrong result; nor does search
data folded in another language's untitled word."""

import asyncio
from pathlib import Path

import pytest
from helpers import run_js_module
from platform_memory import memory_platform

from margin.app.contract import render_js
from margin.i18n import catalogue
from margin.sessions import actions as sessions
from margin.sessions.index import stored_entries
from margin.storage.keys import HISTORY, UI_LANGUAGE, session_digest_key

SESSIONS_JS = Path(__file__).resolve().parents[2] / "extension" / "panel" / "sessions"
JS_BESIDE = ("search.js", "searcher.js", "index_read.js")  # what the modules tested here import

TEXTS = (
    "Un café à Paris, " + "notes " * 60 + "encore un CAFÉ",
    "Crème brûlée recipe",
    "ПРИВЕТ, как дела",
    "你好世界，今天",
    "Die Straße entlang",
    "nothing here",
    "Ärger im Büro mit dem Kaffee " + "filler " * 2000 + "zanzibar deep inside",
    "**Encore** une fois: a *comparison* of the | two | cafés |",
)
# Words match where words start: "paris" is not found inside "comparison", "rray" not in "array".
QUERIES = [
    "",
    "cafe",
    "creme brulee",
    "привет",
    "世界",
    "界，今",
    "strasse",
    "buro",
    "e",
    "zz",
    "un cafe",
    "zanzibar",
    "paris",
    "arison",
    "compar",
]

# The engine fed as a test says: `copy` is what the IndexedDB copy holds ({epoch, found}),
# `panel` what the panel hands over (after `missing`), `queries` what is typed.
RUN = """
const { createEngine } = search_engine;
const missing = [];
let copyReads = 0;
const engine = createEngine({
  readCopy: async (ids) => {
    copyReads++;
    if (input.copyFails) throw new Error('no IndexedDB');
    const found = {};
    for (const id of ids) if (Object.hasOwn(input.copy.found, id)) found[id] = input.copy.found[id];
    if (input.duringRead) engine.setDigests(input.duringRead);  // the panel's value arrives mid-read
    return { epoch: input.copy.epoch, found };
  },
  onMissing: (ids) => missing.push(...ids),
});
await engine.setEntries(input.index, input.epoch);
const before = { missing: [...missing].sort(), pending: engine.pending() };
engine.setDigests(Object.fromEntries(missing.map((id) => [id, input.panel[id] ?? null])));
if (input.renamed) await engine.setEntries(input.renamed, input.epoch);
while (engine.prepare(50)) { /* fold everything, as the worker does between messages */ }
const rows = input.queries.map((q) => engine.search(q, 1000).rows.map((r) => { delete r.savedAt; return r; }));
const paged = engine.search('e', 2);
const more = engine.rows('e', paged.ids.slice(2)).map((r) => { delete r.savedAt; return r; });
console.log(JSON.stringify({ before, rows, pendingAfter: engine.pending(), copyReads,
  paged: { ids: paged.ids, first: paged.rows.length }, more }));
"""


def seeded():
    platform = memory_platform()
    for text in TEXTS:
        asyncio.run(platform.local.set({HISTORY: [{"role": "user", "content": text}]}))
        asyncio.run(sessions.handle_new(platform, {}))
    stored = platform.local.snapshot()
    index = stored_entries(stored)
    digests = {e["id"]: stored[session_digest_key(e["id"])] for e in index}
    return platform, index, digests


def python_rows(platform, queries):
    expected = [
        asyncio.run(sessions.handle_list(platform, {"query": q} if q else {}))["sessions"] for q in queries
    ]
    for rows in expected:
        for row in rows:
            del row["savedAt"]
    return expected


def run_engine(tmp_path, **data):
    folder = tmp_path / "panel" / "sessions"
    folder.mkdir(parents=True)
    return run_js_module(
        folder,
        SESSIONS_JS / "search_engine.js",
        "search_engine",
        RUN,
        {"queries": QUERIES, "epoch": "E1", "panel": {}, "copy": {"epoch": "E1", "found": {}}, **data},
        extra_files={
            "search.js": (SESSIONS_JS / "search.js").read_text(encoding="utf-8"),
            "../../generated/contract.js": render_js("margin-test.whl"),
        },
    )


def test_through_a_full_copy_the_worker_finds_what_session_list_finds(tmp_path):
    platform, index, digests = seeded()
    got = run_engine(tmp_path, index=index, copy={"epoch": "E1", "found": digests})
    assert got["before"] == {"missing": [], "pending": 0}
    assert got["rows"] == python_rows(platform, QUERIES)
    # A word deep in a long digest is found, and the next page's rows are the same rows.
    [deep] = got["rows"][QUERIES.index("zanzibar")]
    assert deep["name"].startswith("Ärger im Büro") and "zanzibar" in deep["preview"]
    # Where words start only, and previews without the Markdown.
    assert [r["name"].startswith("Un café à Paris") for r in got["rows"][QUERIES.index("paris")]] == [True]
    assert got["rows"][QUERIES.index("arison")] == []
    [compared] = got["rows"][QUERIES.index("compar")]
    assert compared["preview"] == "Encore une fois: a comparison of the two cafés"
    assert [compared["preview"][a:b] for a, b in compared["highlights"]["preview"]] == ["compar"]
    assert len(got["rows"][QUERIES.index("界，今")]) == 1  # CJK: a substring still matches
    every_e = got["rows"][QUERIES.index("e")]
    assert len(every_e) > 2 and got["paged"]["first"] == 2 and got["more"] == every_e[2:]


def test_a_copy_of_another_epoch_is_not_used_and_the_panels_digests_give_the_right_rows(tmp_path):
    platform, index, digests = seeded()
    wrong = {sid: "zanzibar cafe strasse" for sid in digests}  # what an old copy might say
    got = run_engine(tmp_path, index=index, copy={"epoch": "E0", "found": wrong}, panel=digests)
    assert got["before"]["missing"] == sorted(digests) and got["before"]["pending"] == len(digests)
    assert got["rows"] == python_rows(platform, QUERIES)
    assert got["pendingAfter"] == 0


@pytest.mark.parametrize("copy_fails", [False, True])
def test_what_the_copy_lacks_is_asked_of_the_panel_and_nothing_else(tmp_path, copy_fails):
    platform, index, digests = seeded()
    present = dict(list(digests.items())[:3])
    got = run_engine(
        tmp_path, index=index, copy={"epoch": "E1", "found": present}, panel=digests, copyFails=copy_fails
    )
    lacking = sorted(digests) if copy_fails else sorted(set(digests) - set(present))
    assert got["before"]["missing"] == lacking
    assert got["rows"] == python_rows(platform, QUERIES)


def test_a_digest_the_panel_sent_during_a_copy_read_is_not_overwritten_by_the_copy(tmp_path):
    platform, index, digests = seeded()
    target = next(e["id"] for e in index if e["name"] == "nothing here")
    stale = {**digests, target: "nothing here, but an old copy says zanzibar"}
    got = run_engine(
        tmp_path,
        index=index,
        copy={"epoch": "E1", "found": stale},
        duringRead={target: digests[target]},
        queries=["", "zanzibar"],
    )
    assert got["rows"] == python_rows(platform, ["", "zanzibar"])
    assert "nothing here" not in [r["name"] for r in got["rows"][1]]


def test_a_rename_is_searched_at_once_and_a_digest_that_is_not_text_reads_as_none(tmp_path):
    platform, index, digests = seeded()
    target = next(e for e in index if e["name"] == "nothing here")
    asyncio.run(sessions.handle_rename(platform, {"id": target["id"], "name": "Quokka notes"}))
    renamed = stored_entries(platform.local.snapshot())
    found = {sid: text for sid, text in digests.items() if sid != target["id"]}
    got = run_engine(
        tmp_path,
        index=index,
        renamed=renamed,
        copy={"epoch": "E1", "found": found},
        panel={target["id"]: 12345},  # a value that is not a string: no digest
        queries=["", "quokka", "nothing"],
    )
    asyncio.run(platform.local.set({session_digest_key(target["id"]): 12345}))
    assert got["rows"] == python_rows(platform, ["", "quokka", "nothing"])
    assert [r["name"] for r in got["rows"][1]] == ["Quokka notes"]


# -- an untitled session is searched by the word it is shown as (search_engine.js rule 5) ------------

# [language, query] as typed in turn, while the language changes.
LANGUAGE_STEPS = [
    ["ja", "untitled"],
    ["en", "untitled session"],  # narrows the search above, made in other words: not narrowed
    ["ru", "без"],
    ["ja", "без"],  # the search data folded in Russian is not used in Japanese
    ["ja", "無題"],
    ["ru", "untitled"],
]
# Names found at each step: by the word the user reads, never by the stored English sentinel.
LANGUAGE_FOUND = [
    ["untitled thoughts"],
    ["Untitled session"],
    ["Untitled session"],
    [],
    ["Untitled session"],
    ["untitled thoughts"],
]

# Everything folded before the first search (in no request's word), then the steps, then the
# last step's rows asked again as a next page would be.
IN_THE_WORKER = """
const { createEngine } = tested;
const engine = createEngine({ readCopy: async () => ({ epoch: input.epoch, found: input.digests }) });
await engine.setEntries(input.index, input.epoch);
while (engine.prepare(50)) { /* fold everything */ }
const search = async (query, word) => engine.search(query, 1000, word);
const rowsOf = async (query, ids, word) => engine.rows(query, ids, word);
"""
ON_THE_PAGE = """
const p = tested;
p.useSearchWorker(false);
await p.preloadSessions({ storage: null, readIndex: async () => input.index,
  readDigests: async (keys) => Object.fromEntries(keys.map((k) => [k, input.digests[k.slice(input.prefix.length)]])) });
while (p.digestsPending() > 0) await new Promise((r) => setTimeout(r, 5));  // read and folded
const search = async (query, word) => p.findSessions(query, 1000, word);
const rowsOf = async (query, ids, word) => p.sessionRows(query, ids, word);
"""
STEPS = """
const strip = (rows) => rows.map((r) => { delete r.savedAt; return r; });
const rows = [];
for (const [language, query] of input.steps) rows.push(strip((await search(query, input.words[language])).rows));
const [language, query] = input.steps[input.steps.length - 1];
const again = strip(await rowsOf(query, rows[rows.length - 1].map((r) => r.id), input.words[language]));
console.log(JSON.stringify({ rows, again }));
"""


@pytest.mark.parametrize("where", ["worker", "page"])
def test_an_untitled_session_is_searched_by_the_word_of_each_request_and_no_other(tmp_path, where):
    """The word an untitled session is shown as comes with each search, in the worker's engine
    and in the page's own search (preload.js, when the worker failed): after a change of language
    the search data folded in the old word is not used, nor a narrowing of a search in it."""
    platform = memory_platform()
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    for records in ([{"role": "user", "content": image}], [{"role": "user", "content": "untitled thoughts"}]):
        asyncio.run(platform.local.set({HISTORY: records}))
        asyncio.run(sessions.handle_new(platform, {}))
    stored = platform.local.snapshot()
    index = stored_entries(stored)
    assert sorted(e["name"] for e in index) == ["Untitled session", "untitled thoughts"]
    digests = {e["id"]: stored[session_digest_key(e["id"])] for e in index}
    expected = []
    for language, query in LANGUAGE_STEPS:
        asyncio.run(platform.local.set({UI_LANGUAGE: language}))
        expected.append(python_rows(platform, [query])[0])
    words = {lang: catalogue.words(lang).text("py_session_untitled") for lang in ("en", "ja", "ru")}
    module = "search_engine.js" if where == "worker" else "preload.js"
    folder = tmp_path / "panel" / "sessions"
    folder.mkdir(parents=True)
    got = run_js_module(
        folder,
        SESSIONS_JS / module,
        "tested",
        (IN_THE_WORKER if where == "worker" else ON_THE_PAGE) + STEPS,
        {
            "index": index,
            "digests": digests,
            "epoch": "E1",
            "steps": LANGUAGE_STEPS,
            "words": words,
            "prefix": session_digest_key(""),
        },
        extra_files={
            **{name: (SESSIONS_JS / name).read_text(encoding="utf-8") for name in JS_BESIDE},
            "../../generated/contract.js": render_js("margin-test.whl"),
        },
    )
    assert got["rows"] == expected
    assert [sorted(r["name"] for r in rows) for rows in got["rows"]] == LANGUAGE_FOUND
    [[start, end]] = got["rows"][4][0]["highlights"]["name"]
    assert words["ja"][start:end] == "無題"
    assert got["again"] == got["rows"][5]
