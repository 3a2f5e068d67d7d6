"""Originals of thumbnailed images (margin.images.originals): crash safety of images.bound, garbage
collection, sessions and requests carrying the original, the images.original route, damaged keys."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random

import pytest
from helpers import run
from PIL import Image
from platform_memory import StoreCrashed, memory_platform

from margin.base.errors import MarginError
from margin.images import bound as image_bound
from margin.images import data_urls
from margin.images import originals as image_originals
from margin.storage.history import HISTORY, Record, history_json, read_history

LIMIT = 3_000_000  # data-URL characters: four ~1.4 MB images, so the oldest are shrunk


def noisy_png(seed: int, side: int = 600) -> str:
    image = Image.frombytes("RGB", (side, side), random.Random(seed).randbytes(side * side * 3))
    out = io.BytesIO()
    image.save(out, "PNG")
    return data_urls.build_data_url("image/png", out.getvalue())


def image_part(url: str, name: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url}, "meta": {"name": name, "source": "file"}}


def conversation() -> list[dict]:
    records = []
    for i in range(4):
        records.append(
            Record("user", [{"type": "text", "text": f"look {i}"}, image_part(noisy_png(i), f"{i}.png")])
        )
        records.append(Record("assistant", f"answer {i}"))
    return history_json(records)


def sent_urls(history: list[dict]) -> list[str]:
    return [
        p["image_url"]["url"]
        for r in history
        if isinstance(r["content"], list)
        for p in r["content"]
        if p["type"] == "image_url"
    ]


async def bound_then_collect(platform) -> None:
    await image_bound.bound_unseen_image_bytes(platform, limit_bytes=LIMIT)
    await image_originals.collect_garbage(platform.local)


def bound_platform(**kwargs):
    history = conversation()
    stale = image_originals.originals_items([noisy_png(99, 20)])  # an orphan the collector removes
    return history, memory_platform({HISTORY: history, **stale}, **kwargs)


def test_the_bound_moves_originals_to_their_keys_and_history_keeps_thumbnails():
    history, platform = bound_platform()
    run(bound_then_collect(platform))
    stored = platform.local.snapshot()
    thumbnailed = [
        p
        for r in stored[HISTORY]
        if isinstance(r["content"], list)
        for p in r["content"]
        if image_originals.reference_of(p)
    ]
    assert thumbnailed, "the bound shrank nothing: the test proves nothing"
    for p in thumbnailed:
        key = p["meta"]["originalKey"]
        assert stored[key]["url"] != p["image_url"]["url"]
        assert stored[key]["url"] in sent_urls(history)
    assert sorted(k for k in stored if image_originals.is_original_key(k)) == sorted(
        {p["meta"]["originalKey"] for p in thumbnailed}
    )


def assert_no_original_lost_at_any_crash(action, *, expected_writes: int) -> None:
    """`action` crashes after each of its writes in turn: what the user sent can still be resolved
    byte for byte, after the crash and after `action` runs again, which ends where two runs without
    a crash end (a bound's second run removes the thumbnails its first one made unneeded)."""
    history, probe = bound_platform()
    run(action(probe))
    total = len(probe.local.writes)
    assert total == expected_writes
    run(action(probe))
    for k in range(total + 1):
        _, platform = bound_platform(fail_after_writes=k)
        if k < total:
            with pytest.raises(StoreCrashed):
                run(action(platform))
        else:
            run(action(platform))
        platform.local.revive()
        for attempt in ("after the crash", "after the re-run"):
            stored = platform.local.snapshot()
            resolved = run(image_originals.inline(platform.local, stored[HISTORY]))
            assert sent_urls(resolved) == sent_urls(history), f"crash after {k} writes, {attempt}"
            run(action(platform))
        assert platform.local.snapshot() == probe.local.snapshot()


def test_a_crash_at_every_write_of_the_bound_loses_no_original():
    # three originals (one write each), history, the orphan's removal
    assert_no_original_lost_at_any_crash(bound_then_collect, expected_writes=5)


def test_garbage_collection_keeps_originals_a_history_or_a_parked_copy_refers_to():
    _, platform = bound_platform()
    run(bound_then_collect(platform))
    stored = platform.local.snapshot()
    keys = [k for k in stored if image_originals.is_original_key(k)]
    # "New session": history is replaced, but a parked unreadable copy still refers to one original.
    holder = next(
        r
        for r in stored[HISTORY]
        if isinstance(r["content"], list)
        and any(image_originals.reference_of(p) == keys[0] for p in r["content"])
    )
    run(platform.local.set({HISTORY: [], "historyUnreadable_1": [holder]}))
    removed = run(image_originals.collect_garbage(platform.local))
    assert sorted(removed) == sorted(keys[1:])
    assert platform.local.snapshot()[keys[0]] == stored[keys[0]]
    run(platform.local.remove(["historyUnreadable_1"]))
    assert run(image_originals.collect_garbage(platform.local)) == [keys[0]]


def test_inline_puts_the_exact_original_back_and_the_bound_meta_leaves():
    history, platform = bound_platform()
    run(bound_then_collect(platform))
    stored = platform.local.snapshot()[HISTORY]
    inlined = run(image_originals.inline(platform.local, copy.deepcopy(stored)))
    assert inlined == history  # exactly what the user sent


def test_the_request_carries_the_original_of_an_unseen_thumbnail():
    history, platform = bound_platform()
    run(bound_then_collect(platform))
    records = run(read_history(platform.local)).records
    request = run(image_originals.for_request(platform.local, records))
    assert sent_urls(history_json(request)) == sent_urls(history)
    seen = [
        Record(r.role, r.content, {**r.fields, "imagesSeen": True}) if isinstance(r.content, list) else r
        for r in records
    ]
    assert run(image_originals.for_request(platform.local, seen)) == seen  # seen: the thumbnail is enough


def test_the_route_returns_the_original_and_refuses_a_missing_or_damaged_one():
    history, platform = bound_platform()
    run(bound_then_collect(platform))
    stored = platform.local.snapshot()
    key = next(k for k in stored if image_originals.is_original_key(k))
    reply = run(image_originals.handle_original(platform, {"key": key}))
    assert reply == {"dataUrl": stored[key]["url"]} and reply["dataUrl"] in sent_urls(history)
    with pytest.raises(MarginError) as bad:
        run(image_originals.handle_original(platform, {"key": "history"}))
    assert bad.value.code == "bad_request"
    # Damaged: the bytes under the key are not the picture the key names.
    run(platform.local.set({key: {"url": noisy_png(7, 10), "sha256": stored[key]["sha256"]}}))
    with pytest.raises(MarginError) as damaged:
        run(image_originals.handle_original(platform, {"key": key}))
    assert damaged.value.code == "image_original_missing"
    # ... and a session save or a request falls back to the thumbnail, reference kept.
    inlined = run(image_originals.inline(platform.local, stored[HISTORY]))
    thumb = next(
        p
        for r in inlined
        if isinstance(r["content"], list)
        for p in r["content"]
        if image_originals.reference_of(p) == key
    )
    assert thumb["image_url"]["url"] not in sent_urls(history)


# -- stored ahead (rule 7): after a turn that leaves images unseen ------------------------------------


def turn_never_runs() -> bool:
    return False


async def store_unseen(area, records, *, turn_running) -> list[str]:
    """Rule 7 for every unseen inline image (the product stores only the bound's choice:
    image_bound.store_ahead), one write at a time, stopping when a turn starts."""
    written: list[str] = []
    with contextlib.suppress(image_originals.TurnStarted):
        for url in image_originals.unseen_inline_urls(records):
            await image_originals.store_one_ahead(area, url, turn_running=turn_running, written=written)
    return written


async def store_ahead_then_bound(platform) -> None:
    records = (await read_history(platform.local)).records
    await store_unseen(platform.local, records, turn_running=turn_never_runs)
    await bound_then_collect(platform)


def test_originals_stored_ahead_leave_the_bound_only_history_to_write():
    history, platform = bound_platform()
    records = run(read_history(platform.local)).records
    written = run(store_unseen(platform.local, records, turn_running=turn_never_runs))
    assert len(written) == 4 and all(isinstance(w, dict) and HISTORY not in w for w in platform.local.writes)
    assert platform.local.snapshot()[HISTORY] == history  # the parts are not changed
    # Stored ahead and still inline: the collector keeps them (only the stale orphan goes).
    removed = run(image_originals.collect_garbage(platform.local))
    assert len(removed) == 1 and removed[0] not in written
    before = len(platform.local.writes)
    run(image_bound.bound_unseen_image_bytes(platform, limit_bytes=LIMIT))
    assert [list(w) for w in platform.local.writes[before:]] == [[HISTORY]], "the bound wrote an original"
    # The same result as a bound that stored the originals itself, and nothing read to check them.
    assert not any(image_originals.is_original_key(k) for k in platform.local.reads)
    _, plain = bound_platform()
    run(bound_then_collect(plain))
    run(image_originals.collect_garbage(platform.local))
    shrunk = {k for k in plain.local.snapshot() if image_originals.is_original_key(k)}
    stored = platform.local.snapshot()
    assert stored[HISTORY] == plain.local.snapshot()[HISTORY]
    # The originals of the images left inline (unseen, not shrunk) stay for a later bound.
    assert shrunk < {k for k in stored if image_originals.is_original_key(k)} == set(written)


def test_a_crash_at_every_write_ahead_and_of_the_bound_loses_no_original():
    # four originals ahead, history, the orphan's removal
    assert_no_original_lost_at_any_crash(store_ahead_then_bound, expected_writes=6)


def test_storing_ahead_stops_when_a_turn_starts_and_skips_what_is_stored_or_seen():
    _, platform = bound_platform()
    records = run(read_history(platform.local)).records
    calls = iter([False, False, True])  # a turn starts before the second write
    written = run(store_unseen(platform.local, records, turn_running=lambda: next(calls)))
    assert len(written) == 1
    seen = [r.with_fields(imagesSeen=True) if i < 4 else r for i, r in enumerate(records)]
    again = run(store_unseen(platform.local, seen, turn_running=turn_never_runs))
    assert len(again) == 2 and written[0] not in again  # the two seen images are left out
    # Once its image is seen, an original stored ahead is garbage.
    run(platform.local.set({HISTORY: history_json(seen)}))
    removed = run(image_originals.collect_garbage(platform.local))
    assert written[0] in removed and not set(again) & set(removed)


def test_an_original_stored_ahead_but_damaged_is_written_again_by_the_bound():
    _, platform = bound_platform()
    records = run(read_history(platform.local)).records
    written = run(store_unseen(platform.local, records, turn_running=turn_never_runs))
    damaged = platform.local.snapshot()[written[0]]
    run(platform.local.set({written[0]: {"url": damaged["url"][:-8], "sha256": damaged["sha256"]}}))
    assert not run(image_originals.is_stored(platform.local, damaged["url"], damaged["sha256"]))
    before = len(platform.local.writes)
    run(bound_then_collect(platform))
    written_now = [next(iter(w)) for w in platform.local.writes[before:] if isinstance(w, dict)]
    assert written_now == [written[0], HISTORY]
    assert platform.local.snapshot()[written[0]] == damaged


def test_the_stored_size_is_chromes_count_of_the_compact_json():
    key, value = image_originals.original_item(noisy_png(3, 8), "ab" * 32)
    assert image_originals.stored_size(key, value) == len(key) + len(json.dumps(value, separators=(",", ":")))
    assert (
        image_originals.stored_size(key, {"url": 'data:image/png;name="x";base64,AA', "sha256": ""}) is None
    )


# -- thumbnails made ahead (rule 7) -------------------------------------------------------------------


async def store_ahead_with_thumbnails(platform) -> list[str]:
    records = (await read_history(platform.local)).records
    return await image_bound.store_ahead(platform, records, turn_running=turn_never_runs, limit_bytes=LIMIT)


async def thumbnails_ahead_then_bound(platform) -> None:
    await store_ahead_with_thumbnails(platform)
    await image_bound.bound_unseen_image_bytes(platform, limit_bytes=LIMIT, collect_garbage=True)


def no_pillow_work(monkeypatch):
    """The bound may not load Pillow nor make a thumbnail: those made ahead must do."""
    from margin.images import codec as image_codec

    def refuse(*args, **kwargs):
        raise AssertionError("the bound made a thumbnail that was made ahead")

    monkeypatch.setattr(image_codec, "downscale", refuse)


def test_thumbnails_made_ahead_spare_the_bound_pillow_and_give_the_same_history(monkeypatch):
    _, plain = bound_platform()
    run(image_bound.bound_unseen_image_bytes(plain, limit_bytes=LIMIT, collect_garbage=True))
    shrunk = {k for k in plain.local.snapshot() if image_originals.is_original_key(k)}
    _, platform = bound_platform()
    written = run(store_ahead_with_thumbnails(platform))
    # Exactly the images the bound shrinks: an original and a thumbnail each, nothing more.
    assert {k for k in written if image_originals.is_original_key(k)} == shrunk and len(shrunk) >= 2
    assert len(written) == 2 * len(shrunk)
    loads: list[str] = []

    async def load_package(name: str) -> None:
        loads.append(name)

    monkeypatch.setattr(platform, "load_package", load_package)
    no_pillow_work(monkeypatch)
    before = len(platform.local.writes)
    run(image_bound.bound_unseen_image_bytes(platform, limit_bytes=LIMIT, collect_garbage=True))
    assert loads == []
    stored = platform.local.snapshot()
    assert stored[HISTORY] == plain.local.snapshot()[HISTORY]
    # The collector, before history's write (the key store has not flushed a big write yet): the
    # stale orphan only. The thumbnails used are still inline in the value it replaces.
    removal, history_write = platform.local.writes[before:]
    assert list(history_write) == [HISTORY]
    assert isinstance(removal, tuple) and len(removal[1]) == 1
    thumbnailed = [
        p
        for r in stored[HISTORY]
        if isinstance(r["content"], list)
        for p in r["content"]
        if image_originals.reference_of(p)
    ]
    assert len([k for k in stored if image_originals.is_thumbnail_key(k)]) == len(thumbnailed)
    # The next bound has nothing to shrink: it writes no history and removes those thumbnails.
    before = len(platform.local.writes)
    run(image_bound.bound_unseen_image_bytes(platform, limit_bytes=LIMIT, collect_garbage=True))
    (removal,) = platform.local.writes[before:]
    assert isinstance(removal, tuple) and len(removal[1]) == len(thumbnailed)
    after = platform.local.snapshot()
    assert not any(image_originals.is_thumbnail_key(k) for k in after)  # all were used
    assert after[HISTORY] == stored[HISTORY]


def test_a_crash_at_every_write_ahead_with_thumbnails_and_of_the_bound_loses_no_original():
    # three originals and three thumbnails ahead, history, the collector's removal
    assert_no_original_lost_at_any_crash(thumbnails_ahead_then_bound, expected_writes=8)


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: {**v, "side": 256},
        lambda v: {**v, "url": "not a data url"},
        lambda v: {**v, "from": {**v["from"], "bytes": v["from"]["bytes"] + 1}},
        lambda v: {**v, "url": v["url"] + "A" * 2_000_000},
        lambda v: [v],
    ],
)
def test_a_thumbnail_made_ahead_that_does_not_fit_is_made_again_by_the_bound(damage):
    _, plain = bound_platform()
    run(image_bound.bound_unseen_image_bytes(plain, limit_bytes=LIMIT))
    _, platform = bound_platform()
    written = run(store_ahead_with_thumbnails(platform))
    for key in (k for k in written if image_originals.is_thumbnail_key(k)):
        run(platform.local.set({key: damage(platform.local.snapshot()[key])}))
    run(image_bound.bound_unseen_image_bytes(platform, limit_bytes=LIMIT))
    assert platform.local.snapshot()[HISTORY] == plain.local.snapshot()[HISTORY]


def test_the_bound_keeps_an_original_only_the_records_it_parks_refer_to():
    """The bound lists key names while it works only when its write parks nothing: a record it
    cannot read is parked by its own write, and that parked copy's references must be seen."""
    _, platform = bound_platform()
    run(bound_then_collect(platform))
    stored = platform.local.snapshot()[HISTORY]
    index = next(
        i
        for i, r in enumerate(stored)
        if isinstance(r["content"], list) and any(image_originals.reference_of(p) for p in r["content"])
    )
    key = next(
        image_originals.reference_of(p) for p in stored[index]["content"] if image_originals.reference_of(p)
    )
    damaged = {**stored[index], "content": [{"type": "text", "text": 5}, *stored[index]["content"]]}
    more = [Record("user", [image_part(noisy_png(50 + i), f"more{i}.png")]) for i in range(2)]
    history = [*stored[:index], damaged, *stored[index + 1 :], *history_json(more)]
    run(platform.local.set({HISTORY: history}))
    result = run(image_bound.bound_unseen_image_bytes(platform, limit_bytes=LIMIT, collect_garbage=True))
    assert result["changed"] >= 1
    after = platform.local.snapshot()
    parked = [k for k in after if k.startswith("historyUnreadable")]
    assert parked and any(damaged in after[k] for k in parked)
    assert after[key]["url"] in sent_urls(conversation())  # kept: the parked copy refers to it


def test_the_platforms_sha256_is_the_content_address():
    url = noisy_png(4, 16)
    assert run(memory_platform().sha256_hex(url)) == image_originals.url_digest(url)
