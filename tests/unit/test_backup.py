"""Full backup: the export streams session by session in bounded chunks, the import streams in,
checks everything, stages, and commits or leaves storage as it was."""

import asyncio
import json

import pytest
from platform_memory import memory_platform

from margin.app.worker import Worker
from margin.backup import exporter as backup_export
from margin.backup import importer as backup_import
from margin.backup import stream as backup
from margin.base.errors import MarginError
from margin.i18n import catalogue
from margin.sessions import actions as sessions
from margin.sessions.index import stored_entries
from margin.settings import options
from margin.storage.keys import BACKUP_IMPORT_STAGING, HISTORY, PROVIDERS, session_body_key

PIXELS = "data:image/jpeg;base64," + "/9j/4AAQ" * 400
PROVIDER = {
    "id": "p1",
    "type": "openai",
    "name": "OpenAI",
    "baseUrl": "https://api.openai.com/v1",
    "apiKey": "sk-secret",
    "model": "gpt-4o",
}


def run(coro):
    return asyncio.run(coro)


def image_record(text):
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": PIXELS}}],
    }


def seeded(count=2):
    platform = memory_platform({PROVIDERS: [PROVIDER], "activeProviderId": "p1"})
    for n in range(count):
        run(platform.local.set({HISTORY: [image_record(f"chat {n}")]}))
        run(sessions.handle_new(platform, {}))
    run(platform.local.set({HISTORY: [{"role": "user", "content": "still open"}]}))
    return platform


def export(platform, keys=False, chunk_chars=1 << 20):
    return run(backup.export_text(platform, keys, chunk_chars))[0]


def import_text(platform, text, chunk_chars=1 << 20):
    return run(backup.import_text(platform, text, chunk_chars))


def bodies(platform):
    return {k: v for k, v in platform.local.snapshot().items() if k.startswith("session_")}


def test_export_holds_every_session_with_pixels_and_blanks_keys():
    text = export(seeded())
    data = json.loads(text)
    assert data["format"] == "margin-backup" and data["version"] == 1
    assert list(data)[:2] == ["format", "version"]
    assert len(data["sessions"]) == 2
    assert all(s["history"][0]["content"][1]["image_url"]["url"] == PIXELS for s in data["sessions"])
    assert data["current"]["history"] == [{"role": "user", "content": "still open"}]
    assert data["settings"]["providers"][0]["apiKey"] == ""
    assert "activeProviderId" not in data["settings"]
    assert json.loads(export(seeded(), keys=True))["settings"]["providers"][0]["apiKey"] == "sk-secret"


def test_export_streams_bounded_chunks_one_session_at_a_time_with_progress():
    platform = seeded(3)
    text, events = run(backup.export_text(platform, False, 1000))  # a session is ~3,300 characters
    chunks = [e for e in events if e["event"] == "chunk"]
    assert events[0]["event"] == "start" and events[0]["sessions"] == 3
    assert events[0]["filename"].startswith("margin-backup-") and events[0]["mimeType"] == "application/json"
    assert all(len(c["text"]) <= 1000 for c in chunks) and len(chunks) > 10
    assert [c["seq"] for c in chunks] == list(range(1, len(chunks) + 1))
    assert [e["sessions"] for e in events if e["event"] == "progress"] == [1, 2, 3]
    assert events[-1] == {"event": "done", "chars": len(text)}
    assert json.loads(text)["sessions"][2]["history"][0]["content"][1]["image_url"]["url"] == PIXELS
    reads = [k for k in platform.local.reads if k.startswith("session_")]
    assert len(reads) == len(set(reads)) == 3  # each body read once, alone


def test_export_waits_for_the_panel_when_too_many_chunks_are_unacknowledged():
    platform = seeded(3)
    events, acks_asked = [], []

    async def receive():
        acks_asked.append(len(events))
        unacked = [e["seq"] for e in events if e["event"] == "chunk"]
        return {"ack": unacked[0] if len(acks_asked) % 2 else unacked[-1]}

    run(backup_export.export_backup(platform, False, events.append, receive, 500))
    seqs = [e["seq"] for e in events if e["event"] == "chunk"]
    assert acks_asked and len(seqs) > backup_export.WINDOW * 3


def test_import_into_an_empty_profile_restores_everything():
    text = export(seeded(), keys=True)
    fresh = memory_platform()
    result = import_text(fresh, text, chunk_chars=777)
    assert (result["added"], result["copies"], result["skipped"]) == (2, 0, 0)
    assert "Added 2 sessions" in result["message"]
    data = fresh.local.snapshot()
    assert len(stored_entries(data)) == 2
    for entry in stored_entries(data):
        assert data[session_body_key(entry["id"])]["history"][0]["content"][1]["image_url"]["url"] == PIXELS
    assert data[HISTORY] == [{"role": "user", "content": "still open"}]
    assert data[PROVIDERS][0]["apiKey"] == "sk-secret"
    assert "activeProviderId" not in data  # never taken from a file
    assert BACKUP_IMPORT_STAGING not in data


def test_a_file_of_the_first_exporter_imports_too():
    platform = seeded()
    data = json.loads(export(platform))
    old_order = {k: data[k] for k in ("format", "version", "exportedAt", "sessions", "current", "settings")}
    old_order["settings"]["activeProviderId"] = "p1"
    fresh = memory_platform()
    assert import_text(fresh, json.dumps(old_order), chunk_chars=64)["added"] == 2


def test_the_summary_setting_travels_with_the_backup_but_never_overrides_a_local_choice():
    source = seeded()
    run(source.local.set({"summarizeAboveChars": 0}))
    text = export(source)
    assert json.loads(text)["settings"]["summarizeAboveChars"] == 0
    fresh = memory_platform()
    import_text(fresh, text)
    assert fresh.local.snapshot()["summarizeAboveChars"] == 0
    chosen = memory_platform({"summarizeAboveChars": 20_000})
    import_text(chosen, text)
    assert chosen.local.snapshot()["summarizeAboveChars"] == 20_000
    hostile = json.loads(text)
    hostile["settings"]["summarizeAboveChars"] = -5
    other = memory_platform()
    import_text(other, json.dumps(hostile))
    assert "summarizeAboveChars" not in other.local.snapshot()


def test_import_over_a_conversation_margin_cannot_read_keeps_it():
    text = export(seeded())
    unreadable = {"not": "a list of records"}
    fresh = memory_platform({HISTORY: unreadable})
    import_text(fresh, text)
    data = fresh.local.snapshot()
    assert data[HISTORY] == [{"role": "user", "content": "still open"}]
    assert data["historyUnreadable"] == unreadable


def test_importing_twice_adds_nothing_and_says_so():
    text = export(seeded())
    fresh = memory_platform()
    import_text(fresh, text)
    before = fresh.local.snapshot()
    again = import_text(fresh, text)
    assert (again["added"], again["copies"], again["skipped"]) == (0, 0, 2)
    assert again["message"].startswith("Nothing new to import")
    assert fresh.local.snapshot() == before


def test_a_conflicting_session_with_a_newer_saved_at_comes_in_as_a_copy_and_ours_stays():
    platform = seeded()
    sid = stored_entries(platform.local.snapshot())[0]["id"]
    ours = platform.local.snapshot()[session_body_key(sid)]
    data = json.loads(export(platform))
    for item in data["sessions"]:
        if item["id"] == sid:
            item["history"] = [{"role": "user", "content": "written elsewhere"}]
            item["savedAt"] += 10**9  # claims to be much newer
    result = import_text(platform, json.dumps(data))
    assert (result["added"], result["copies"], result["skipped"]) == (1, 1, 1)
    assert "(imported)" in result["message"]
    stored = platform.local.snapshot()
    assert stored[session_body_key(sid)] == ours
    copy = next(e for e in stored_entries(stored) if e["id"].startswith(sid + "-"))
    assert copy["name"].endswith(" (imported)")
    assert stored[session_body_key(copy["id"])]["history"][0]["content"] == "written elsewhere"
    assert import_text(platform, json.dumps(data))["added"] == 0  # the copy is not made twice


@pytest.mark.parametrize(
    ("language", "suffix", "quoted"),
    [
        ("ru", " (импорт)", "«(импорт)»"),
        ("ja", "（インポート）", "「（インポート）」"),
        ("zh-CN", "（已导入）", "“（已导入）”"),
    ],
)
def test_a_copy_is_named_in_the_language_of_the_import_and_the_summary_quotes_that_word(
    language, suffix, quoted
):
    platform = seeded()
    untitled = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PIXELS}}]}
    run(platform.local.set({HISTORY: [untitled]}))
    run(sessions.handle_new(platform, {}))  # a session with nothing to name it by: "Untitled session"
    data = json.loads(export(platform))
    for item in data["sessions"]:
        item["history"] = [*item["history"], {"role": "assistant", "content": "written elsewhere"}]
    run(catalogue.ensure(platform, language))  # the port loads the setting's language (margin.backup.stream)
    result = import_text(platform, json.dumps(data))
    assert result["copies"] == 3 and quoted in result["message"]
    copies = sorted(e["name"] for e in stored_entries(platform.local.snapshot()) if e.get("named"))
    untitled_word = catalogue.words(language).text("py_session_untitled")
    assert copies == sorted(["chat 0" + suffix, "chat 1" + suffix, untitled_word + suffix])
    # The copies are told by id and body hash, not by name: importing again in English adds nothing.
    run(catalogue.ensure(platform, "en"))
    assert import_text(platform, json.dumps(data))["added"] == 0


def test_a_session_deleted_then_imported_again_comes_back_beside_its_trashed_body():
    platform = seeded()
    text = export(platform)
    sid = stored_entries(platform.local.snapshot())[0]["id"]
    run(sessions.handle_delete(platform, {"id": sid}))
    trashed = platform.local.snapshot()[session_body_key(sid)]
    result = import_text(platform, text)
    assert result["added"] == 1
    stored = platform.local.snapshot()
    assert stored[session_body_key(sid)] == trashed  # never overwritten
    copy = next(e for e in stored_entries(stored) if e["id"].startswith(sid + "-"))
    assert stored[session_body_key(copy["id"])]["history"] == trashed["history"]


def test_providers_are_checked_like_the_form_and_junk_is_left_out():
    data = json.loads(export(seeded(), keys=True))
    data["settings"]["providers"] = [
        {"id": "junk", "type": "openai", "name": "Junk", "baseUrl": "javascript:alert(1)", "model": "m"},
        {"id": "ok", "type": "openai", "name": "Theirs", "baseUrl": "https://evil.example/v1", "model": "m"},
        "not a provider",
    ]
    data["settings"]["activeProviderId"] = "ok"
    mine = {**PROVIDER, "id": "mine"}
    platform = memory_platform({PROVIDERS: [mine], "activeProviderId": "mine"})
    result = import_text(platform, json.dumps(data))
    stored = platform.local.snapshot()
    assert [p["id"] for p in stored[PROVIDERS]] == ["mine", "ok"]
    assert stored["activeProviderId"] == "mine"
    assert result["providersAdded"] == 1 and len(result["providersRefused"]) == 2
    assert "Left out 2 providers that are not valid" in result["message"]
    from margin.settings import options

    saved = run(options.handle_save(platform, {"providers": stored[PROVIDERS], "activeProviderId": "mine"}))
    assert saved["activeProviderId"] == "mine"  # nothing imported blocks a later save


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("hello", "not valid JSON"),
        ('{"format": "something-else", "version": 1}', "not a Margin backup"),
        ('{"hello": "world"}', "not a Margin backup"),
        ("[1, 2]", "not a Margin backup"),
        ('{"format": "margin-backup", "version": 7, "sessions": []}', "newer Margin"),
        ('{"format": "margin-backup", "version": "1", "sessions": []}', "unknown format version"),
        ('{"format": "margin-backup", "version": 1, "sessions": {}}', "damaged"),
        ('{"format": "margin-backup", "version": 1, "sessions": [1]}', "session 1 is not a session"),
        ('{"format": "margin-backup", "version": 1, "sessions": []} trailing', "text after its end"),
        ('{"format": "margin-backup", "version": 1, "version": 1}', "twice"),
        ('{"format": "margin-backup", "version": 1, "exportedAt": NaN}', "NaN"),
        ('{"format": "margin-backup", "version": 1, "exportedAt": 1e999}', "too large"),
        (
            '{"format": "margin-backup", "version": 1, "exportedAt": ' + "9" * 5000 + "}",
            "more than 20 digits",
        ),
        ('{"format": "margin-backup", "version": 1, "x": ' + "[" * 10_000 + "]" * 10_000 + "}", "nested"),
    ],
)
def test_bad_files_are_refused_with_a_clear_sentence(text, words):
    platform = memory_platform()
    with pytest.raises(MarginError) as err:
        import_text(platform, text, chunk_chars=50)
    assert err.value.code == "bad_backup" and words in err.value.message
    assert platform.local.writes == []


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.999])
def test_truncated_backup_is_recognised(fraction):
    text = export(seeded())
    with pytest.raises(MarginError) as err:
        import_text(memory_platform(), text[: int(len(text) * fraction)], chunk_chars=300)
    assert "incomplete" in err.value.message


def test_a_bad_record_late_in_the_file_rolls_back_every_staged_body():
    data = json.loads(export(seeded(4)))
    data["sessions"][3]["history"][0]["content"][0]["text"] = {"not": "text"}
    platform = seeded(1)
    before = platform.local.snapshot()
    with pytest.raises(MarginError) as err:
        import_text(platform, json.dumps(data), chunk_chars=500)
    assert err.value.code == "bad_backup" and "session 4" in err.value.message
    assert "a text part's text is not a string" in err.value.message
    assert platform.local.snapshot() == before
    assert any(BACKUP_IMPORT_STAGING in w for w in platform.local.writes if isinstance(w, dict))


def test_a_full_store_mid_import_says_so_and_leaves_storage_as_it_was():
    text = export(seeded(6))
    platform = seeded(1)
    before = platform.local.snapshot()
    used = sum(len(k) + len(json.dumps(v)) for k, v in before.items())
    platform.local.quota_bytes = used + len(text) // 2
    with pytest.raises(MarginError) as err:
        import_text(platform, text)
    assert err.value.code == "storage_full"
    assert platform.local.snapshot() == before


def test_a_store_that_dies_mid_import_is_cleaned_at_the_next_start():
    text = export(seeded(5))
    platform = seeded(1)
    before = platform.local.snapshot()
    platform.local.fail_after_writes = len(platform.local.writes) + 3
    with pytest.raises(MarginError):
        import_text(platform, text)
    platform.local.revive()
    orphans = set(bodies(platform)) - set(before)
    assert orphans and BACKUP_IMPORT_STAGING in platform.local.snapshot()  # staged, never indexed
    assert run(backup.recover(platform)) == len(orphans)
    assert platform.local.snapshot() == before


def test_the_worker_runs_an_export_and_an_import_over_a_port():
    source, target = seeded(3), memory_platform()
    posted = []
    worker = Worker(source, lambda port, event: posted.append((port, event)) or True)

    async def exporting():
        task = asyncio.ensure_future(worker.run_backup_json("e", json.dumps({"action": "export"})))
        while not task.done():
            await asyncio.sleep(0)
            chunks = [ev["seq"] for p, ev in posted if ev["event"] == "chunk"]
            if chunks:
                worker.backup_message("e", json.dumps({"ack": chunks[-1]}))
        await task

    run(exporting())
    text = "".join(ev["text"] for _, ev in posted if ev["event"] == "chunk")
    assert posted[-1][1]["event"] == "done"

    posted.clear()
    worker.platform = target
    pieces = [text[i : i + 900] for i in range(0, len(text), 900)]

    async def importing():
        task = asyncio.ensure_future(worker.run_backup_json("i", json.dumps({"action": "import"})))
        answered = 0
        while not task.done():
            await asyncio.sleep(0)
            asked = sum(1 for _, ev in posted if ev["event"] == "more")
            while answered < asked:
                message = {"chunk": pieces[answered]} if answered < len(pieces) else {"end": True}
                worker.backup_message("i", json.dumps(message))
                answered += 1
        await task

    run(importing())
    assert posted[-1][1]["event"] == "done" and posted[-1][1]["result"]["added"] == 3
    assert len(stored_entries(target.local.snapshot())) == 3


def test_closing_the_port_mid_import_removes_what_was_staged():
    text = export(seeded(3))
    platform = memory_platform({HISTORY: [{"role": "user", "content": "mine"}]})
    before = platform.local.snapshot()
    posted = []
    worker = Worker(platform, lambda port, event: posted.append(event) or True)

    async def importing():
        task = asyncio.ensure_future(worker.run_backup_json("i", json.dumps({"action": "import"})))
        answered = 0
        while answered < len(text) // 400 - 2:
            await asyncio.sleep(0)
            if sum(1 for ev in posted if ev["event"] == "more") > answered:
                worker.backup_message("i", json.dumps({"chunk": text[answered * 400 : (answered + 1) * 400]}))
                answered += 1
        assert set(bodies(platform)) - set(before)  # something was staged
        worker.stop_backup("i")
        await task

    run(importing())
    assert platform.local.snapshot() == before
    assert not [ev for ev in posted if ev["event"] in ("done", "error")]


def test_an_unknown_start_is_a_clear_error():
    posted = []
    worker = Worker(memory_platform(), lambda port, event: posted.append(event) or True)
    run(worker.run_backup_json("x", json.dumps({"action": "erase"})))
    assert posted[-1]["event"] == "error" and posted[-1]["error"]["code"] == "bad_payload"


def test_the_import_module_reports_its_format():
    assert backup.FORMAT == backup_import.FORMAT == "margin-backup" and backup.VERSION == 1


def test_a_profile_with_no_provider_uses_an_imported_one_only_once_the_user_chooses_it():
    data = json.loads(export(seeded(), keys=True))
    data["settings"]["activeProviderId"] = "p1"
    fresh = memory_platform()
    result = import_text(fresh, json.dumps(data))
    assert "activeProviderId" not in fresh.local.snapshot()
    assert "To use “OpenAI” (api.openai.com), choose it in the model menu" in result["message"]
    with pytest.raises(MarginError) as refused:
        run(options.active_provider(fresh))
    assert refused.value.code == "no_provider" and "restored from a backup" in refused.value.message
    run(options.handle_activate(fresh, {"id": "p1"}))
    assert run(options.active_provider(fresh))["id"] == "p1"
    # The form's Save keeps the mark, so deleting the chosen one never falls back to a backup's.
    saved = run(
        options.handle_save(
            fresh, {"providers": fresh.local.snapshot()["providers"], "activeProviderId": "p1"}
        )
    )
    assert saved["providers"][0]["fromBackup"] is True


def test_brackets_and_escaped_quotes_inside_text_are_not_nesting():
    platform = seeded(1)
    data = json.loads(export(platform))
    tricky = 'a quote \\" then ' + "[" * 200 + ' and {"json": [1]} \\\\' + "{" * 100
    data["sessions"][0]["history"].append({"role": "assistant", "content": tricky})
    data["sessions"][0]["id"] = "other"
    result = import_text(memory_platform(), json.dumps(data), chunk_chars=61)
    assert result["added"] == 1


def test_what_margin_cannot_read_is_exported_marked_damaged_and_the_rest_imports():
    platform = seeded(2)
    entries = stored_entries(platform.local.snapshot())
    odd = [{"role": "user", "content": "fine"}, {"role": "wizard", "content": 3}]
    run(
        platform.local.set({session_body_key(entries[0]["id"]): {"history": odd}, HISTORY: {"not": "a list"}})
    )
    data = json.loads(export(platform))
    marked = {s["id"]: s.get("damaged") for s in data["sessions"]}
    assert marked == {entries[0]["id"]: "unreadable", entries[1]["id"]: None}
    assert data["sessions"][[s["id"] for s in data["sessions"]].index(entries[0]["id"])]["history"] == odd
    assert data["current"] == {
        "history": {"not": "a list"},
        "historySessionId": None,
        "damaged": "unreadable",
    }
    fresh = memory_platform()
    result = import_text(fresh, json.dumps(data))
    assert (result["added"], result["damaged"]) == (1, 1)
    assert "marks as damaged could not be restored" in result["message"]
    assert HISTORY not in fresh.local.snapshot()


def test_the_open_conversations_thumbnails_are_exported_with_their_originals():
    # images.bound left a thumbnail + reference in `history`; the file must carry the original.
    from margin.images import originals as image_originals

    original = "data:image/png;base64," + "QUJD" * 1000
    key = image_originals.original_key(original)
    thumbnail = {
        "type": "image_url",
        "image_url": {"url": "data:image/jpeg;base64,/9j/AA=="},
        "meta": {"originalKey": key},
    }
    platform = memory_platform({PROVIDERS: [PROVIDER], "activeProviderId": "p1"})
    run(
        platform.local.set(
            {
                HISTORY: [{"role": "user", "content": [thumbnail]}],
                **image_originals.originals_items([original]),
            }
        )
    )
    data = json.loads(export(platform))
    part = data["current"]["history"][0]["content"][0]
    assert part["image_url"]["url"] == original
    assert "originalKey" not in part.get("meta", {})
    # Imported into a fresh profile, the open conversation holds the original bytes themselves.
    fresh = memory_platform()
    import_text(fresh, json.dumps(data))
    assert fresh.local.snapshot()[HISTORY][0]["content"][0]["image_url"]["url"] == original
