"""Attack surface: backup files. Each file of corpus/backup_files/ is imported, as the panel does,
into a profile holding the user's data; a refused file must get its specific `bad_backup` sentence
(corpus/backup_files/refused.json), the others their safe outcome, and every case settles the
ledger: nothing stored is lost, nothing staged is left behind (no orphan `session_*` key)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from platform_memory import memory_platform

from margin.backup import stream as backup
from margin.base.errors import MarginError
from margin.sessions import actions as sessions
from margin.sessions.index import stored_entries
from margin.settings import options
from margin.storage.keys import (
    BACKUP_IMPORT_STAGING,
    HISTORY,
    PROVIDERS,
    SAVED_SESSIONS,
    session_body_key,
    session_entry_key,
)

from .ledger import snapshot

CORPUS = Path(__file__).parent / "corpus" / "backup_files"
REFUSED = {
    k: v for k, v in json.loads((CORPUS / "refused.json").read_text(encoding="utf-8")).items() if k != "_"
}
MINE = {
    "id": "mine",
    "type": "openai",
    "name": "Mine",
    "baseUrl": "https://api.openai.com/v1",
    "apiKey": "sk-mine",
    "model": "gpt-4o",
}
# Small chunks: every value of the corpus is cut across chunks somewhere.
CHUNK = 97


def run(coro):
    return asyncio.run(coro)


def users_profile():
    """A profile with a saved session (id "mine1"), an open conversation and a provider."""
    platform = memory_platform({PROVIDERS: [MINE], "activeProviderId": "mine"})
    run(platform.local.set({HISTORY: [{"role": "user", "content": "my saved question"}]}))
    run(sessions.handle_new(platform, {}))
    entries = stored_entries(platform.local.snapshot())
    body = platform.local.snapshot()[session_body_key(entries[0]["id"])]
    run(platform.local.remove([session_body_key(entries[0]["id"]), session_entry_key(entries[0]["id"])]))
    entry = {**entries[0], "id": "mine1"}
    header = {"layout": 2, "ids": ["mine1"]}
    run(
        platform.local.set(
            {SAVED_SESSIONS: header, session_entry_key("mine1"): entry, session_body_key("mine1"): body}
        )
    )
    run(platform.local.set({HISTORY: [{"role": "user", "content": "my open question"}]}))
    return platform


def import_file(platform, name):
    return run(backup.import_text(platform, (CORPUS / name).read_text(encoding="utf-8"), CHUNK))


def body_keys(platform):
    return {k for k in platform.local.stored_keys() if k.startswith("session_")}


def test_the_corpus_is_all_named():
    named = set(REFUSED) | {
        "conflicting_newer_saved_at.json",
        "junk_providers.json",
        "active_provider_is_the_files.json",
    }
    assert {p.name for p in CORPUS.glob("*.json")} - {"refused.json"} == named


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_hostile_file_is_refused_with_its_sentence_and_changes_nothing(ledger, name):
    platform = users_profile()
    before = snapshot(platform)
    keys = body_keys(platform)
    with pytest.raises(MarginError) as err:
        import_file(platform, name)
    assert err.value.code == "bad_backup"
    assert REFUSED[name] in err.value.message, err.value.message
    assert body_keys(platform) == keys and BACKUP_IMPORT_STAGING not in platform.local.stored_keys()
    assert snapshot(platform) == before
    ledger.settle(before, snapshot(platform))


def test_a_conflicting_session_claiming_to_be_newer_comes_in_as_a_copy(ledger):
    platform = users_profile()
    before = snapshot(platform)
    mine = platform.local.snapshot()[session_body_key("mine1")]
    result = import_file(platform, "conflicting_newer_saved_at.json")
    assert (result["added"], result["copies"]) == (1, 1)
    stored = platform.local.snapshot()
    assert stored[session_body_key("mine1")] == mine
    copy = next(e for e in stored_entries(stored) if e["id"] != "mine1")
    assert copy["id"].startswith("mine1-") and copy["name"] == "Session mine1 (imported)"
    assert "rewritten by the file" in json.dumps(stored[session_body_key(copy["id"])])
    ledger.settle(before, snapshot(platform), replaced=["local:savedSessions"])


def test_junk_providers_are_left_out_and_never_block_a_later_save(ledger):
    platform = users_profile()
    before = snapshot(platform)
    result = import_file(platform, "junk_providers.json")
    stored = platform.local.snapshot()
    assert [p["id"] for p in stored[PROVIDERS]] == ["mine", "fine"]
    assert len(result["providersRefused"]) == 6 and "Left out 6 providers" in result["message"]
    assert "the Base URL is empty" in result["providersRefused"][0]
    saved = run(options.handle_save(platform, {"providers": stored[PROVIDERS], "activeProviderId": "mine"}))
    assert [p["id"] for p in saved[PROVIDERS]] == ["mine", "fine"]
    ledger.settle(before, snapshot(platform), replaced=["local:providers"])


def test_the_active_provider_is_never_taken_from_the_file(ledger):
    platform = users_profile()
    before = snapshot(platform)
    import_file(platform, "active_provider_is_the_files.json")
    assert platform.local.snapshot()["activeProviderId"] == "mine"
    assert run(options.active_provider(platform))["id"] == "mine"
    ledger.settle(before, snapshot(platform), replaced=["local:providers"])

    fresh = memory_platform()
    result = import_file(fresh, "active_provider_is_the_files.json")
    assert "activeProviderId" not in fresh.local.snapshot()
    assert "To use “Free GPT” (collector.example), choose it" in result["message"]
    with pytest.raises(MarginError) as refused:
        run(options.active_provider(fresh))
    assert refused.value.code == "no_provider"


def test_a_full_store_during_an_import_is_said_and_leaves_the_profile_as_it_was(ledger):
    platform = users_profile()
    before = snapshot(platform)
    used = sum(len(k) + len(v) for k, v in platform.local._data.items())
    platform.local.quota_bytes = used + 2_000  # room for about one staged session
    text = (
        (CORPUS / "bad_session_after_good_ones.json")
        .read_text(encoding="utf-8")
        .replace('"text": null', '"text": "fine after all"')
    )
    with pytest.raises(MarginError) as err:
        run(backup.import_text(platform, text, CHUNK))
    assert err.value.code == "storage_full" and "full" in err.value.message
    assert snapshot(platform) == before
    ledger.settle(before, snapshot(platform))


@pytest.mark.parametrize("writes", [1, 2, 3, 4])
def test_a_store_that_dies_at_any_write_of_an_import_loses_nothing_and_is_cleaned(ledger, writes):
    platform = users_profile()
    before = snapshot(platform)
    text = (
        (CORPUS / "bad_session_after_good_ones.json")
        .read_text(encoding="utf-8")
        .replace('"text": null', '"text": "fine after all"')
    )
    platform.local.fail_after_writes = len(platform.local.writes) + writes
    with pytest.raises(MarginError):
        run(backup.import_text(platform, text, CHUNK))
    platform.local.revive()
    assert [e["id"] for e in stored_entries(platform.local.snapshot())] == ["mine1"]  # nothing visible
    run(backup.recover(platform))
    assert snapshot(platform) == before
    ledger.settle(before, snapshot(platform))
