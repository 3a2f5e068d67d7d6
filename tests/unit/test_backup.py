"""Full backup: export everything (keys only on request), import validates and merges."""

import asyncio
import json

import pytest

from margin import backup, clock, sessions
from margin.errors import MarginError
from margin.platform_memory import memory_platform
from margin.storage import HISTORY, PROVIDERS, SAVED_SESSIONS, session_body_key

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


def seeded():
    platform = memory_platform({PROVIDERS: [PROVIDER], "activeProviderId": "p1"})
    for text in ("first chat", "second chat"):
        run(
            platform.local.set(
                {
                    HISTORY: [
                        {
                            "role": "user",
                            "content": [
                                {"type": "text", "text": text},
                                {"type": "image_url", "image_url": {"url": PIXELS}},
                            ],
                        }
                    ]
                }
            )
        )
        run(sessions.handle_new(platform, {}))
    run(platform.local.set({HISTORY: [{"role": "user", "content": "still open"}]}))
    return platform


def export(platform, keys=False):
    return run(backup.handle_export(platform, {"includeApiKeys": keys}))


def test_export_holds_every_session_with_pixels_and_blanks_keys():
    result = export(seeded())
    assert result["filename"].startswith("margin-backup-") and result["mimeType"] == "application/json"
    data = json.loads(result["text"])
    assert data["format"] == "margin-backup" and data["version"] == 1
    assert len(data["sessions"]) == 2
    assert all(s["history"][0]["content"][1]["image_url"]["url"] == PIXELS for s in data["sessions"])
    assert data["current"]["history"] == [{"role": "user", "content": "still open"}]
    assert data["settings"]["providers"][0]["apiKey"] == ""
    assert (
        json.loads(export(seeded(), keys=True)["text"])["settings"]["providers"][0]["apiKey"] == "sk-secret"
    )


def test_import_into_an_empty_profile_restores_everything():
    text = export(seeded(), keys=True)["text"]
    fresh = memory_platform()
    result = run(backup.handle_import(fresh, {"text": text}))
    assert (result["added"], result["updated"], result["skipped"]) == (2, 0, 0)
    assert "Added 2 sessions" in result["message"]
    data = fresh.local.snapshot()
    assert len(data[SAVED_SESSIONS]) == 2
    for entry in data[SAVED_SESSIONS]:
        assert data[session_body_key(entry["id"])]["history"][0]["content"][1]["image_url"]["url"] == PIXELS
    assert data[HISTORY] == [{"role": "user", "content": "still open"}]
    assert data[PROVIDERS][0]["apiKey"] == "sk-secret"


def test_the_summary_setting_travels_with_the_backup_but_never_overrides_a_local_choice():
    source = seeded()
    run(source.local.set({"summarizeAboveChars": 0}))  # the user turned summaries off
    text = export(source)["text"]
    assert json.loads(text)["settings"]["summarizeAboveChars"] == 0

    fresh = memory_platform()
    run(backup.handle_import(fresh, {"text": text}))
    assert fresh.local.snapshot()["summarizeAboveChars"] == 0

    chosen = memory_platform({"summarizeAboveChars": 20_000})
    run(backup.handle_import(chosen, {"text": text}))
    assert chosen.local.snapshot()["summarizeAboveChars"] == 20_000

    hostile = json.loads(text)
    hostile["settings"]["summarizeAboveChars"] = -5
    other = memory_platform()
    run(backup.handle_import(other, {"text": json.dumps(hostile)}))
    assert "summarizeAboveChars" not in other.local.snapshot()


def test_import_over_a_conversation_margin_cannot_read_keeps_it():
    text = export(seeded())["text"]
    unreadable = {"not": "a list of records"}
    fresh = memory_platform({HISTORY: unreadable})
    run(backup.handle_import(fresh, {"text": text}))
    data = fresh.local.snapshot()
    assert data[HISTORY] == [{"role": "user", "content": "still open"}]
    assert data["historyUnreadable"] == unreadable


def test_a_session_deleted_then_imported_again_keeps_its_body(monkeypatch):
    platform = seeded()
    text = export(platform)["text"]
    sid = platform.local.snapshot()[SAVED_SESSIONS][0]["id"]
    run(sessions.handle_delete(platform, {"id": sid}))
    run(backup.handle_import(platform, {"text": text}))
    later = clock.now_ms() + sessions.UNDO_MS + 1
    monkeypatch.setattr(clock, "now_ms", lambda: later)
    listed = run(sessions.handle_list(platform, {}))["sessions"]
    restored = next(e for e in listed if e["id"] == sid)
    assert not restored["damaged"]
    assert session_body_key(sid) in platform.local.snapshot()


def test_importing_twice_adds_nothing_and_says_so():
    text = export(seeded())["text"]
    fresh = memory_platform()
    run(backup.handle_import(fresh, {"text": text}))
    before = fresh.local.snapshot()
    again = run(backup.handle_import(fresh, {"text": text}))
    assert (again["added"], again["updated"], again["skipped"]) == (0, 0, 2)
    assert again["message"].startswith("Nothing new to import")
    assert fresh.local.snapshot() == before


def test_import_never_overwrites_newer_local_data(monkeypatch):
    platform = seeded()
    text = export(platform)["text"]
    sid = platform.local.snapshot()[SAVED_SESSIONS][0]["id"]
    # The user goes on with that session after the backup was made.
    run(sessions.handle_open(platform, {"id": sid}))
    newer = [{"role": "user", "content": "edited later"}]
    monkeypatch.setattr(clock, "now_ms", lambda: 10**13 * 2)
    run(platform.local.set({HISTORY: newer}))
    run(sessions.save_current(platform.local))
    result = run(backup.handle_import(platform, {"text": text}))
    assert result["updated"] == 0
    assert platform.local.snapshot()[session_body_key(sid)]["history"] == newer


def test_import_takes_a_newer_copy_from_the_file():
    old = seeded()
    sid = old.local.snapshot()[SAVED_SESSIONS][0]["id"]
    data = json.loads(export(old)["text"])
    for item in data["sessions"]:
        if item["id"] == sid:
            item["history"] = [{"role": "user", "content": "newer elsewhere"}]
            item["savedAt"] += 60_000
    result = run(backup.handle_import(old, {"text": json.dumps(data)}))
    assert result["updated"] == 1
    assert old.local.snapshot()[session_body_key(sid)]["history"][0]["content"] == "newer elsewhere"


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("hello", "not valid JSON"),
        ('{"format": "something-else", "version": 1}', "not a Margin backup"),
        ("[1, 2]", "not a Margin backup"),
        ('{"format": "margin-backup", "version": 7, "sessions": []}', "newer Margin"),
        ('{"format": "margin-backup", "version": 1, "sessions": {}}', "damaged"),
    ],
)
def test_bad_files_are_refused_with_a_clear_sentence(text, words):
    platform = memory_platform()
    with pytest.raises(MarginError) as err:
        run(backup.handle_import(platform, {"text": text}))
    assert err.value.code == "bad_backup" and words in err.value.message
    assert platform.local.writes == []


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.999])
def test_truncated_backup_is_recognised(fraction):
    text = export(seeded())["text"]
    with pytest.raises(MarginError) as err:
        run(backup.handle_import(memory_platform(), {"text": text[: int(len(text) * fraction)]}))
    assert "incomplete" in err.value.message
