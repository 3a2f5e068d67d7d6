"""Search in the panel's search worker, in the real extension: the digests' IndexedDB copy that the
service worker keeps (extension/worker/digest_copy.js) is what the worker reads, after a cold start,
after a rename and after a digest change; and a copy that is stale, from another epoch or missing
never gives a wrong result (the panel then reads what it lacks from chrome.storage).

Driven by the accessible names of docs/interface.md ("Sessions", "Search sessions", one listitem
per session); checked against chrome.storage and the copy itself.
"""

from __future__ import annotations

from harness import Margin, poll

COLD_S = 45
DEEP_WORD = "quetzalcoatl"
# ~84K characters before the word: far past the head the index keeps (140) and any preview.
LONG = "filler words about nothing in particular " * 2000


def user(text):
    return {"role": "user", "content": text}


def answer(text):
    return {"role": "assistant", "content": text}


def save(margin: Margin, records) -> str:
    """A conversation saved the way the user saves it ("New session": Python writes its digest)."""
    margin.storage_set({"history": records, "historySessionId": None})
    reply = margin.send_message({"type": "session.new", "payload": {}})
    assert reply["ok"], reply
    return reply["value"]["savedId"]


def settle(margin: Margin) -> None:
    margin.worker().evaluate("() => globalThis.marginSearchCopy.settled()")


COPY_JS = """(ids) => new Promise((resolve, reject) => {
  const open = indexedDB.open('margin-search', 1);
  open.onerror = () => reject(open.error);
  open.onsuccess = () => {
    const db = open.result, tx = db.transaction(['digests', 'meta']), found = {};
    let epoch = null;
    tx.objectStore('meta').get('epoch').onsuccess = (e) => { epoch = e.target.result ?? null; };
    for (const id of ids) tx.objectStore('digests').get(id).onsuccess = (e) => {
      if (e.target.result !== undefined) found[id] = e.target.result; };
    tx.oncomplete = () => { db.close(); resolve({epoch, found}); };
  };
})"""

# The copy changed behind the service worker's back: what a lost write or an old copy leaves.
TAMPER_JS = """({id, text, epoch}) => new Promise((resolve, reject) => {
  const open = indexedDB.open('margin-search', 1);
  open.onerror = () => reject(open.error);
  open.onsuccess = () => {
    const db = open.result, tx = db.transaction(['digests', 'meta'], 'readwrite');
    tx.objectStore('digests').put(text, id);
    if (epoch) tx.objectStore('meta').put(epoch, 'epoch');
    tx.oncomplete = () => { db.close(); resolve(true); };
    tx.onerror = () => reject(tx.error);
  };
})"""

DELETE_COPY_JS = """() => new Promise((resolve, reject) => {
  const request = indexedDB.deleteDatabase('margin-search');
  request.onsuccess = () => resolve(true);
  request.onerror = () => reject(request.error);
  request.onblocked = () => reject(new Error('blocked'));
})"""

TIMINGS_JS = "async () => (await import('./panel/sessions/drawer.js')).sessionsIndexTimings()"


def copy_of(margin: Margin, ids):
    return margin._extension_page().evaluate(COPY_JS, ids)


def open_sessions(page):
    page.get_by_role("button", name="Sessions", exact=True).click()
    page.get_by_role("searchbox", name="Search sessions").wait_for(state="visible", timeout=15_000)
    return page.get_by_role("region", name="Sessions")


def names(page) -> list[str]:
    return (
        page.get_by_role("region", name="Sessions")
        .get_by_role("listitem")
        .locator(".sp-name")
        .all_inner_texts()
    )


def search(page, query: str, expected: list[str]) -> None:
    page.get_by_role("searchbox", name="Search sessions").fill(query)
    poll(
        lambda: sorted(names(page)) == sorted(expected),
        timeout=COLD_S,
        message=lambda: f"searching {query!r} listed {names(page)}, expected {expected}",
    )


def seed_two(margin: Margin) -> tuple[str, str]:
    deep = save(margin, [user("Aztec gods " + LONG + DEEP_WORD + " at the end"), answer("Noted.")])
    other = save(margin, [user("A short chat about tea"), answer("Green tea, then.")])
    settle(margin)
    return deep, other


def test_the_worker_finds_a_word_deep_in_a_digest_from_the_copy_after_a_cold_start_a_rename_and_a_change(
    margin: Margin,
):
    deep, other = seed_two(margin)
    epoch = margin.storage_get(["searchCopyEpoch"])["searchCopyEpoch"]
    copy = copy_of(margin, [deep, other])
    stored = margin.storage_get([f"sessionDigest_{deep}", f"sessionDigest_{other}"])
    assert copy == {
        "epoch": epoch,
        "found": {deep: stored[f"sessionDigest_{deep}"], other: stored[f"sessionDigest_{other}"]},
    }

    margin.stop_service_worker()
    page = margin.open_panel()
    open_sessions(page)
    search(page, DEEP_WORD, ["Aztec gods filler words about nothing in particular filler…"])
    marks = page.get_by_role("region", name="Sessions").locator("mark").all_inner_texts()
    assert DEEP_WORD in [m.lower() for m in marks]
    timings = page.evaluate(TIMINGS_JS)
    assert timings["searchIn"] == "worker" and timings["digestsReadHere"] == 0, timings

    # Typed fast, key by key: every answer to an earlier prefix ("a" matches both) is dropped.
    box = page.get_by_role("searchbox", name="Search sessions")
    box.fill("")
    box.press_sequentially("a short", delay=0)
    poll(
        lambda: names(page) == ["A short chat about tea"],
        timeout=COLD_S,
        message=lambda: f"listed {names(page)}",
    )
    page.wait_for_timeout(500)
    assert names(page) == ["A short chat about tea"]

    renamed = margin.send_message({"type": "session.rename", "payload": {"id": deep, "name": "Mesoamerica"}})
    assert renamed["ok"]
    search(page, "mesoamerica", ["Mesoamerica"])
    search(page, DEEP_WORD, ["Mesoamerica"])

    # The digest changes (the session opened, continued and saved again): the old text goes.
    assert margin.send_message({"type": "session.open", "payload": {"id": deep}})["ok"]
    margin.storage_set({"history": [user("Now only axolotls"), answer("They regrow limbs.")]})
    assert margin.send_message({"type": "session.new", "payload": {}})["value"]["savedId"] == deep
    search(page, "axolotl", ["Mesoamerica"])
    search(page, DEEP_WORD, [])
    search(page, "tea", ["A short chat about tea"])
    assert page.evaluate(TIMINGS_JS)["digestsReadHere"] == 0
    settle(margin)
    assert (
        copy_of(margin, [deep])["found"][deep]
        == margin.storage_get([f"sessionDigest_{deep}"])[f"sessionDigest_{deep}"]
    )


def test_a_stale_or_missing_copy_never_gives_a_wrong_result(margin: Margin):
    deep, other = seed_two(margin)
    found = ["Aztec gods filler words about nothing in particular filler…"]
    ext = margin._extension_page()

    # A copy left under another epoch, lying about the other session: not used.
    ext.evaluate(TAMPER_JS, {"id": other, "text": f"tea and {DEEP_WORD}", "epoch": "an older epoch"})
    page = margin.open_panel()
    open_sessions(page)
    search(page, DEEP_WORD, found)
    search(page, "tea", ["A short chat about tea"])
    assert page.evaluate(TIMINGS_JS)["digestsReadHere"] >= 2  # both read from chrome.storage
    page.close()

    # The service worker rebuilds it; then an entry goes stale the way a failed removal leaves it,
    # and the bridge's answer to that failure, a new epoch in chrome.storage, is what saves it.
    settle(margin)
    epoch = margin.storage_get(["searchCopyEpoch"])["searchCopyEpoch"]
    assert copy_of(margin, [other])["epoch"] == epoch
    ext.evaluate(TAMPER_JS, {"id": other, "text": f"tea and {DEEP_WORD}", "epoch": None})
    margin.storage_set({"searchCopyEpoch": "after a failed removal"})
    page = margin.open_panel()
    open_sessions(page)
    search(page, DEEP_WORD, found)
    page.close()

    # A profile from before the copy: no database at all. The panel reads what it needs, and the
    # service worker's next start fills the copy again.
    margin.stop_service_worker()
    ext.evaluate(DELETE_COPY_JS)
    page = margin.open_panel()
    open_sessions(page)
    search(page, DEEP_WORD, found)
    page.close()
    settle(margin)
    stored = margin.storage_get([f"sessionDigest_{deep}", f"sessionDigest_{other}"])
    assert copy_of(margin, [deep, other])["found"] == {
        deep: stored[f"sessionDigest_{deep}"],
        other: stored[f"sessionDigest_{other}"],
    }
