"""Sync as the user meets it (margin.sync): what reaches the server (nothing readable), what the
other machine gets (sessions, renames, images, the open conversation), how few requests a sync
with nothing to do makes, and one sentence for each way a server or its files can be wrong."""

from __future__ import annotations

import json
import re

import pytest
from fake_webdav import FakeDav
from platform_memory import memory_platform
from sync_devices import (
    PASSPHRASE,
    add_question,
    base_of,
    credentials,
    device,
    device_with_sessions,
    failure,
    quick_keys,
    rename,
    run,
    save,
    sessions,
    shared_session,
    sync,
    two_devices,
)

from margin.base.errors import MarginError
from margin.sessions import actions
from margin.storage.keys import HISTORY, HISTORY_SESSION_ID, MCP_SERVERS, SYNC_CONFIG, SYNC_STATUS
from margin.sync import crypto, engine, setup, webdav
from margin.sync.crypto import SyncKey

PIXELS = "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUg" * 300


@pytest.fixture(autouse=True)
def quick_derivation(monkeypatch):
    quick_keys(monkeypatch)


# -- the envelope -------------------------------------------------------------------------------

KEY = SyncKey("k1", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")


def test_an_envelope_opens_only_with_its_key_its_name_and_every_byte():
    platform = memory_platform()
    first = run(crypto.seal(platform, KEY, "abc", "the secret text"))
    second = run(crypto.seal(platform, KEY, "abc", "the secret text"))
    assert first != second  # a fresh nonce per object
    assert first.startswith("MS1.k1.") and "secret" not in first
    assert run(crypto.unseal(platform, KEY, "abc", first)) == "the secret text"
    middle = len(first) - 20  # inside the ciphertext, where every base64 bit is data
    flipped = first[:middle] + ("A" if first[middle] != "A" else "g") + first[middle + 1 :]
    for bad, name in (
        (flipped, "abc"),
        (first, "another"),
        (first[: len(first) // 2], "abc"),
        ("junk", "abc"),
    ):
        with pytest.raises(MarginError) as raised:
            run(crypto.unseal(platform, KEY, name, bad))
        assert raised.value.code == "sync_damaged"
    other = SyncKey("k2", KEY.key)
    with pytest.raises(MarginError) as raised:
        run(crypto.unseal(platform, other, "abc", first))
    assert raised.value.code == "sync_other_passphrase"


def test_turning_on_stores_the_derived_key_never_the_passphrase_and_the_check_asks_600000_rounds(monkeypatch):
    monkeypatch.setattr(crypto, "ITERATIONS", 600_000)
    monkeypatch.setattr(crypto, "MIN_ITERATIONS", 100_000)
    dav = FakeDav()
    platform = device(dav)
    stored = json.dumps(platform.local.snapshot())
    assert PASSPHRASE not in stored
    check = json.loads(dav.object_files()["keycheck"])
    assert check["iterations"] == 600_000 and check["kdf"] == "PBKDF2-SHA256"
    assert platform.local.snapshot()[SYNC_CONFIG]["keyId"] == check["keyId"]
    status = run(setup.handle_status(platform, {}))
    assert status["on"] and "password" not in json.dumps(status) and "key" not in status


# -- what the server sees, what the other machine gets ------------------------------------------


def test_a_session_made_on_a_reaches_b_and_the_server_holds_nothing_readable():
    dav = FakeDav()
    a = device(dav)
    sid = save(a, "Zanzibar holiday budget")
    rename(a, sid, "Quokka plan")
    sync(a)
    b = device(dav)
    sync(b)
    assert sessions(b) == {
        sid: {"name": "Quokka plan", "pinned": False, "questions": ["Zanzibar holiday budget"]}
    }
    for name, text in dav.object_files().items():
        assert name in ("keycheck", "manifest") or re.fullmatch(r"[0-9a-f]{32}", name)
        assert "Zanzibar" not in text and "Quokka" not in text and sid not in text


def test_a_rename_on_b_reaches_a_without_uploading_the_session_again():
    dav, a, b, sid = shared_session("a question")
    rename(b, sid, "Better name")
    before = len(dav.requests)
    sync(b)
    assert [m for m, _ in dav.requests[before:]] == ["GET", "PUT"]  # the manifest, read and written
    sync(a)
    assert sessions(a)[sid]["name"] == "Better name"


def test_a_sync_with_nothing_to_do_makes_one_request():
    dav, a = device_with_sessions(30)
    sync(a)
    before = len(dav.requests)
    sync(a)
    assert dav.requests[before:] == [("GET", "/dav/margin-sync/manifest")]


def test_images_travel_with_their_session_and_large_objects_go_in_pieces(monkeypatch):
    monkeypatch.setattr(engine, "PIECE_CHARS", 2000)
    dav = FakeDav()
    a = device(dav)
    run(
        a.local.set(
            {
                HISTORY: [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "look"},
                            {"type": "image_url", "image_url": {"url": PIXELS}},
                        ],
                    }
                ]
            }
        )
    )
    sid = run(actions.handle_new(a, {}))["savedId"]
    sync(a)
    assert all(len(t) <= 2000 for t in dav.object_files().values())
    b = device(dav)
    sync(b)
    body = b.local.snapshot()[f"session_{sid}"]["history"]
    assert body[0]["content"][1]["image_url"]["url"] == PIXELS


def test_the_open_conversation_travels_and_follows_an_edit_made_on_the_other_machine():
    dav = FakeDav()
    a = device(dav)
    run(a.local.set({HISTORY: [{"role": "user", "content": "still open on A"}]}))
    sync(a)
    sid = a.local.snapshot()[HISTORY_SESSION_ID]
    b = device(dav)
    sync(b)
    assert sessions(b)[sid]["questions"] == ["still open on A"]
    add_question(b, sid, "continued on B")
    sync(b)
    sync(a)
    assert [r["content"] for r in a.local.snapshot()[HISTORY]] == ["still open on A", "continued on B"]


def test_progress_is_shown_while_a_large_first_sync_runs():
    _, a = device_with_sessions(25)
    sync(a)
    shown = [w["syncProgress"] for w in a.session.writes if isinstance(w, dict) and "syncProgress" in w]
    assert shown and shown[0] == {"done": 10, "total": 25}
    assert "syncProgress" not in a.session.snapshot()


# -- a server or its files that are wrong: one sentence, nothing changed ------------------------


def test_a_refused_password_is_one_sentence_and_is_the_status():
    dav = FakeDav()
    a = device(dav)
    dav.password = "changed on the server"
    error = failure(engine.handle_now(a, {}))
    assert error.code == "sync_unauthorized"
    assert (
        a.local.snapshot()[SYNC_STATUS]["error"]["message"]
        == "The WebDAV server refused the user name or password."
    )


def test_a_full_server_stops_the_sync_and_changes_nothing_here():
    dav, a, b, _ = shared_session("one")
    save(b, "two")
    before_b = b.local.snapshot()
    before_b.pop(SYNC_STATUS)
    manifest_before = dav.files["/dav/margin-sync/manifest"]
    original_put = dav._put

    def full(path, request):
        return webdav_full()

    dav._put = full  # type: ignore[method-assign]
    error = failure(engine.handle_now(b, {}))
    dav._put = original_put  # type: ignore[method-assign]
    assert error.code == "sync_full" and "out of space" in error.message
    assert dav.files["/dav/margin-sync/manifest"] == manifest_before
    after_b = b.local.snapshot()
    after_b.pop(SYNC_STATUS)
    assert after_b == before_b
    sync(b)
    sync(a)
    assert sorted(s["name"] for s in sessions(a).values()) == ["one", "two"]


def webdav_full():
    from platform_memory import ScriptedResponse

    return ScriptedResponse(507, ["<d:error xmlns:d='DAV:'/>"], {"content-type": "application/xml"})


def test_an_html_page_instead_of_webdav_is_named_as_such():
    dav = FakeDav()
    dav.answer_next = [(200, "<!DOCTYPE html><html><body>Log in</body></html>", "text/html")]
    error = failure(setup.handle_enable(memory_platform(transport=dav), credentials()))
    assert error.code == "sync_not_webdav"
    dav.answer_next = [(207, "<html>not xml at all", "application/xml")]
    assert (
        failure(setup.handle_enable(memory_platform(transport=dav), credentials())).code == "sync_not_webdav"
    )


def test_a_race_with_another_machine_412_is_read_again_and_both_changes_kept():
    dav, a, b, _ = shared_session("shared")
    save(a, "from A")
    save(b, "from B")
    before = dict(dav.files)
    sync(b)
    after_b = dict(dav.files)
    dav.files = before

    def b_commits_first(path):
        if path.endswith("/manifest") and dav.before_write is not None:
            dav.before_write = None
            dav.files = dict(after_b)

    dav.before_write = b_commits_first
    sync(a)
    assert ("PUT", "/dav/margin-sync/manifest") in dav.requests
    sync(b)
    names = ["from A", "from B", "shared"]
    assert sorted(s["name"] for s in sessions(a).values()) == names
    assert sorted(s["name"] for s in sessions(b).values()) == names
    manifest = json.loads(run(_manifest_text(dav, a)))
    named = {f for r in [*manifest["sessions"].values(), manifest["settings"]] for f in r["files"]}
    assert set(dav.object_files()) - {"keycheck", "manifest"} == named  # the lost attempt's uploads removed


async def _manifest_text(dav, platform):
    config = engine.read_config
    key = (await config(platform)).key
    return await crypto.unseal(platform, key, "manifest", dav.object_files()["manifest"])


def test_a_truncated_object_is_damaged_and_changes_nothing_here():
    dav = FakeDav()
    a = device(dav)
    sid = save(a, "will be cut")
    sync(a)
    b = device(dav)
    for path, text in dav.files.items():
        if re.fullmatch(r"/dav/margin-sync/[0-9a-f]{32}", path):
            dav.files[path] = text[: len(text) // 2]
    before = b.local.snapshot()
    assert failure(engine.handle_now(b, {})).code == "sync_damaged"
    after = b.local.snapshot()
    after.pop(SYNC_STATUS)
    assert after == before and sid not in sessions(b)


def test_an_object_sealed_with_another_passphrase_is_named_and_nothing_changes():
    dav = FakeDav()
    a = device(dav)
    save(a, "mine")
    sync(a)
    b = device(dav)
    stranger = SyncKey("otherkey", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    for path in list(dav.files):
        if re.fullmatch(r"/dav/margin-sync/[0-9a-f]{32}", path):
            dav.files[path] = run(crypto.seal(b, stranger, path.rsplit("/", 1)[1], '{"format": 1}'))
    manifest = dav.files["/dav/margin-sync/manifest"]
    records = json.loads(run(_manifest_text(dav, a)))
    for record in records["sessions"].values():
        record["length"] = len(dav.files["/dav/margin-sync/" + record["files"][0]])
    key = run(engine.read_config(a)).key
    dav.files["/dav/margin-sync/manifest"] = run(crypto.seal(a, key, "manifest", json.dumps(records)))
    assert manifest != dav.files["/dav/margin-sync/manifest"]
    error = failure(engine.handle_now(b, {}))
    assert error.code == "sync_other_passphrase" and "another passphrase" in error.message
    assert sessions(b) == {}


def test_sync_now_when_off_says_so_and_turning_off_forgets_the_key():
    dav = FakeDav()
    a = device(dav)
    run(setup.handle_disable(a, {}))
    assert SYNC_CONFIG not in a.local.snapshot() and base_of(a) is None
    assert failure(engine.handle_now(a, {})).code == "sync_off"


def test_bad_settings_are_refused_before_any_request():
    dav = FakeDav()
    platform = memory_platform(transport=dav)
    assert failure(setup.handle_enable(platform, credentials(url="ftp://x"))).code == "sync_bad_url"
    assert (
        failure(setup.handle_enable(platform, credentials(passphrase="short"))).code
        == "sync_short_passphrase"
    )
    assert dav.requests == []


def test_the_multistatus_of_a_folder_is_read_with_etags_sizes_and_times():
    text = """<?xml version="1.0"?>
    <d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
      <d:response><d:href>/remote.php/dav/files/me/margin-sync/</d:href>
        <d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop>
        <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
      <d:response><d:href>/remote.php/dav/files/me/margin-sync/ab%20c</d:href>
        <d:propstat><d:prop><d:getetag>"5f1"</d:getetag><d:getcontentlength>42</d:getcontentlength>
        <d:getlastmodified>Sun, 06 Dec 2026 04:00:00 GMT</d:getlastmodified><d:resourcetype/></d:prop>
        <d:status>HTTP/1.1 200 OK</d:status></d:propstat>
        <d:propstat><d:prop><oc:size/></d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat></d:response>
    </d:multistatus>"""
    folder, item = webdav.parse_multistatus(text)
    assert folder.collection and not item.collection
    assert (item.name, item.etag, item.size) == ("ab c", '"5f1"', 42)
    assert item.modified_ms == 1796529600000


def test_pieces_a_crash_left_behind_are_swept_once_a_day_when_old_enough(monkeypatch):
    from margin.base import clock

    now = [clock.now_ms()]
    monkeypatch.setattr(clock, "now_ms", lambda: now[0])
    dav = FakeDav(now_ms=lambda: now[0])
    a = device(dav)
    save(a, "kept")
    sync(a)
    in_use = set(dav.object_files())
    stale, fresh = "/dav/margin-sync/" + "a" * 32, "/dav/margin-sync/" + "b" * 32
    dav.files[stale] = dav.files[fresh] = "MS1.x.y.z"  # uploads no manifest ever named
    dav.modified[stale] = now[0] - engine.SWEEP_AGE_MS - 1
    dav.modified[fresh] = now[0] - 60_000  # maybe another machine's upload, not committed yet
    sync(a)
    assert stale in dav.files  # not a day since the last sweep: no listing
    now[0] += engine.SWEEP_EVERY_MS
    dav.modified[fresh] = now[0] - 60_000
    sync(a)
    assert stale not in dav.files and fresh in dav.files
    assert in_use <= set(dav.object_files())


def test_a_change_made_here_while_a_sync_runs_is_not_overwritten_by_it(monkeypatch):
    from margin.sync import local

    _, a, b, sid = shared_session("shared question")
    add_question(b, sid, "asked on B")
    sync(b)
    real_write = local.write_session

    async def user_acts_first(area, entry, body, digest, seen):
        # The user, on A, opens the session and asks more while the sync downloads B's version.
        await actions.handle_open(a, {"id": sid})
        history = (await a.local.get([HISTORY]))[HISTORY]
        await a.local.set({HISTORY: [*history, {"role": "user", "content": "asked on A meanwhile"}]})
        await actions.handle_new(a, {})
        monkeypatch.setattr(local, "write_session", real_write)
        return await real_write(area, entry, body, digest, seen)

    monkeypatch.setattr(local, "write_session", user_acts_first)
    sync(a)  # B's version is not written over A's newer question: that session keeps its old base
    sync(a)  # so this run sees both changed: A's (saved later) stays, B's becomes the conflict copy
    sync(b)
    questions = sorted(tuple(s["questions"]) for s in sessions(a).values())
    assert questions == [
        ("shared question", "asked on A meanwhile"),
        ("shared question", "asked on B"),
    ]
    assert sorted(map(str, sessions(a).values())) == sorted(map(str, sessions(b).values()))


# -- settings -------------------------------------------------------------------------------------


def provider(pid, name, key):
    return {
        "id": pid,
        "type": "openai",
        "name": name,
        "baseUrl": "https://api.example.com/v1",
        "model": "m-1",
        "apiKey": key,
    }


def save_options(platform, providers, **more):
    from margin.settings import options

    run(
        options.handle_save(
            platform, {"providers": providers, "activeProviderId": providers[0]["id"], **more}
        )
    )


def stored_options(platform):
    from margin.settings import options

    return run(options.read_options(platform))


def test_settings_travel_without_api_keys_and_no_machine_loses_its_own_providers():
    dav = FakeDav()
    a = device(dav)
    save_options(a, [provider("pa", "Work model", "sk-work-secret")], summarizeAboveChars=20000)
    header = "Bearer mcp-header-secret"
    server = {"id": "mcp-1", "url": "https://tools.example/mcp", "authorization": header, "name": "T"}
    run(a.local.set({MCP_SERVERS: [{**server, "protocolVersion": "", "tools": []}]}))
    sync(a)
    b = memory_platform(transport=dav)
    save_options(b, [provider("pb", "Home model", "sk-home-secret")])
    run(setup.handle_enable(b, credentials()))
    sync(b)
    on_b = stored_options(b)
    assert on_b["summarizeAboveChars"] == 20000  # a new machine takes the folder's settings
    assert [(p["id"], p["apiKey"]) for p in on_b["providers"]] == [("pa", ""), ("pb", "sk-home-secret")]
    sync(a)
    on_a = stored_options(a)
    assert [(p["id"], p["apiKey"]) for p in on_a["providers"]] == [("pa", "sk-work-secret"), ("pb", "")]
    for text in dav.files.values():
        assert "sk-" not in text
    settings = json.loads(run(_manifest_text(dav, a)))["settings"]
    opened = run(
        crypto.unseal(
            a,
            run(engine.read_config(a)).key,
            settings["files"][0],
            "".join(dav.object_files()[f] for f in settings["files"]),
        )
    )
    assert "apiKey" not in opened and "Home model" in opened
    assert (
        "tools.example/mcp" in opened and "mcp-header-secret" not in opened and "authorization" not in opened
    )
    before = len(dav.requests)
    sync(a), sync(b)
    assert [m for m, _ in dav.requests[before:]] == ["GET", "GET"]  # converged: nothing moves


def test_settings_changed_on_both_machines_end_as_the_last_to_sync_chose():
    _, a, b = two_devices(lambda a: save_options(a, [provider("p1", "Shared", "k")]))
    save_options(a, [provider("p1", "Shared", "k")], codeTimeLimitSeconds=60)
    save_options(b, [provider("p1", "Shared", "k")], codeTimeLimitSeconds=120)
    sync(a), sync(b), sync(a)
    assert stored_options(a)["codeTimeLimitSeconds"] == stored_options(b)["codeTimeLimitSeconds"] == 120


def test_a_login_page_where_the_manifest_should_be_is_named_and_changes_nothing():
    dav = FakeDav()
    a = device(dav)
    save(a, "mine")
    before = a.local.snapshot()
    dav.answer_next = [(200, "<!doctype html><title>Sign in</title>", "text/html; charset=utf-8")]
    error = failure(engine.handle_now(a, {}))
    assert error.code == "sync_not_webdav"
    after = a.local.snapshot()
    after.pop(SYNC_STATUS)
    assert after == before
    assert "manifest" not in dav.object_files()
