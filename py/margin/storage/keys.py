"""The storage contract: which keys exist in chrome.storage.local, their defaults, and getAll.

Rules (docs/storage-model.md, "Reading the light keys"):
1. `DEFAULTS` names every light key with its default. `history` is in it but is heavy (it can
   hold megabytes of images), so it is read by address only (`margin.storage.history`).
2. `GET_ALL_KEYS` = DEFAULTS minus `history`, plus the option settings: a FIXED list.
   `get_all()` reads exactly that list and never asks for everything (`get(null)` would
   deserialize every image and every session snapshot on every turn).
3. Keys read by address stay out of the list: `history`, every `session_<id>` body, every
   `sessionDigest_<id>` search digest and `sessionEntry_<id>` index entry (margin.sessions.index)
   and every `imageOriginal_<digest>` and `imageThumbnail_<digest>` (margin.images.originals).
4. A new key that get_all's consumers must see goes into the list, and into docs/storage-model.md.

The side panel paints the conversation before Python is up by reading `history` itself; the key
names it uses are generated from this module at build time (`contract_for_js()`).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from ..platform.ports import StorageArea

HISTORY = "history"
HISTORY_SESSION_ID = "historySessionId"
SAVED_SESSIONS = "savedSessions"
PROVIDERS = "providers"
ACTIVE_PROVIDER_ID = "activeProviderId"
UI_LANGUAGE = "uiLanguage"
SUMMARIZE_ABOVE_CHARS = "summarizeAboveChars"
RUN_PYTHON_MODE = "runPython"
CODE_TIME_LIMIT = "codeTimeLimitSeconds"
SESSION_BODY_PREFIX = "session_"
# The search digest of session <id> (its text, at most DIGEST_CAP characters), apart from the index
# so that an action on one session does not rewrite 1,000 digests (margin.sessions.index, rule 1).
SESSION_DIGEST_PREFIX = "sessionDigest_"
# One index entry of session <id> (~300 characters), so that an action on one session reads and
# writes its own entry, not the 1,000 others (margin.sessions.index, rule 1).
SESSION_ENTRY_PREFIX = "sessionEntry_"
# Deleted sessions whose body waits out the undo window (margin.sessions.actions, rule 5).
SESSION_TRASH = "sessionTrash"
# The layout of `savedSessions` = {"layout": SESSION_INDEX_LAYOUT, "ids": [...]} (margin.sessions.index).
SESSION_INDEX_LAYOUT = 2
# What `savedSessions` held that could not be read as sessions, parked (margin.sessions.index).
SAVED_SESSIONS_UNREADABLE_PREFIX = "savedSessionsUnreadable_"
# Records of `history` Margin could not read, kept aside (margin.storage.history, rule 4); a second
# different value goes under `historyUnreadable_<12 hex of its sha256>`.
HISTORY_UNREADABLE = "historyUnreadable"
# The exact bytes of an image `images.bound` thumbnailed in `history`, by content address
# (`imageOriginal_<32 hex of the data URL's sha256>`, margin.images.originals); read by address only.
IMAGE_ORIGINAL_PREFIX = "imageOriginal_"
# The bound's thumbnail of an unseen image still inline in `history`, made ahead with its original
# (`imageThumbnail_<the same 32 hex>`, margin.images.originals rule 7): derived, never the only copy.
IMAGE_THUMBNAIL_PREFIX = "imageThumbnail_"
# In chrome.storage.session (cleared when the browser or the extension restarts).
SITE_CACHE_INDEX = "siteCacheIndex"
SITE_CACHE_BODY_PREFIX = "siteCache_"
EXPLAIN_REQUEST = "explainRequest"
# Answers whose final save failed, until "Retry save" stores them (margin.turn.unsaved_answers).
UNSAVED_ANSWERS = "unsavedAnswers"
# What undoing a delete needs, per undo token (margin.sessions.actions, rule 5).
SESSION_UNDO_PREFIX = "sessionUndo_"
# `true` once session.check has looked for lost bodies in this browser run (margin.sessions.actions, rule 8).
SESSION_BODIES_CHECKED = "sessionBodiesChecked"
# The bodies a backup import wrote and has not committed yet (margin.backup.importer, rule 3).
BACKUP_IMPORT_STAGING = "backupImportStaging"
# The search copy's epoch (a random id), written by the JS bridge only (extension/digest_copy.js):
# the IndexedDB copy of the digests is valid only while its own epoch equals this one.
SEARCH_COPY_EPOCH = "searchCopyEpoch"
# The user's MCP servers and their tools (margin.tools.servers): read by address only (rule 3),
# never by get_all, so no page is sent their Authorization headers.
MCP_SERVERS = "mcpServers"
# The saved prompts, in the user's order (margin.settings.prompts); read by address only.
PROMPTS = "prompts"
# When each saved prompt was last edited here or on another machine ({id: ms}), so that sync keeps
# the later of two edits (margin.settings.prompts rule 6, margin.sync.settings); by address only.
PROMPTS_EDITED = "promptsEdited"
# Sync (margin.sync): its settings and derived key, the manifest this device last agreed with,
# and how the last run ended; read by address only, never in GET_ALL_KEYS (nor in a backup).
SYNC_CONFIG = "syncConfig"
SYNC_BASE = "syncBase"
SYNC_STATUS = "syncStatus"
# In chrome.storage.session: a running sync's progress ({done, total}), for the options page.
SYNC_PROGRESS = "syncProgress"

DEFAULTS: dict[str, Any] = {
    # The one global, flat conversation: [{role, content, ...}] (margin.storage.history).
    HISTORY: [],
    # The saved session the current history was opened from (or last saved to), or None.
    HISTORY_SESSION_ID: None,
    # The session index: {layout: 2, ids: [...]}, each entry in `sessionEntry_<id>`
    # (margin.sessions.index); `[]` (no session yet) and the older lists are read too.
    SAVED_SESSIONS: [],
}

# The settings of the options page.
OPTION_DEFAULTS: dict[str, Any] = {
    PROVIDERS: [],
    ACTIVE_PROVIDER_ID: None,
    # "auto" follows the browser's UI language; a tag ("en", "zh-CN", "ja", ...) forces one of
    # the seven locales (margin.i18n.catalogue.locale_of; docs/i18n.md).
    UI_LANGUAGE: "auto",
    # An attachment longer than this many characters gets one summary pass (margin.page.summaries); 0 = off.
    SUMMARIZE_ABOVE_CHARS: 50_000,
    # The model's `run_python` tool (margin.sandbox.tool_loop): "off", "ask" (each call) or "auto".
    RUN_PYTHON_MODE: "ask",
    # The time limit of one code run in the sandbox, in seconds (margin.sandbox.code_runs).
    CODE_TIME_LIMIT: 30,
}

GET_ALL_KEYS: tuple[str, ...] = tuple([key for key in DEFAULTS if key != HISTORY] + list(OPTION_DEFAULTS))


_locks: dict[tuple[int, int], asyncio.Lock] = {}


def lock_for(area: StorageArea) -> asyncio.Lock:
    """One lock per storage area and event loop. Every read-modify-write of `history` and of the
    session index holds it: requests interleave at every await (a page attached while an answer
    streams must not be lost when the answer is stored)."""
    key = (id(area), id(asyncio.get_running_loop()))
    lock = _locks.get(key)
    if lock is None:
        lock = _locks[key] = asyncio.Lock()
    return lock


# One turn at a time per process (margin.turn.chat, rule 7): the turn says so here while it runs,
# and `images.bound` (margin.images.bound, rule 4) waits for it. Here, beside the lock both take,
# so neither module imports the other.
_turn_running = False


def turn_running() -> bool:
    """Whether a turn runs in this process now."""
    return _turn_running


def set_turn_running(running: bool) -> None:
    global _turn_running
    _turn_running = running


def session_body_key(session_id: str) -> str:
    return f"{SESSION_BODY_PREFIX}{session_id}"


def session_digest_key(session_id: str) -> str:
    return f"{SESSION_DIGEST_PREFIX}{session_id}"


def session_entry_key(session_id: str) -> str:
    return f"{SESSION_ENTRY_PREFIX}{session_id}"


def parked_history_key(digest: str) -> str:
    """Where a second, different unreadable `history` is parked (`digest`: 12 hex of its sha256)."""
    return f"{HISTORY_UNREADABLE}_{digest}"


def site_cache_body_key(tab_id: int) -> str:
    return f"{SITE_CACHE_BODY_PREFIX}{tab_id}"


def default_of(key: str) -> Any:
    if key in DEFAULTS:
        return copy.deepcopy(DEFAULTS[key])
    return copy.deepcopy(OPTION_DEFAULTS[key])


async def get_all(area: StorageArea) -> dict[str, Any]:
    """Every light key, with defaults filled in for the absent ones. Never reads history or bodies."""
    stored = await area.get(list(GET_ALL_KEYS))
    return {key: stored[key] if key in stored else default_of(key) for key in GET_ALL_KEYS}


def contract_for_js() -> dict[str, Any]:
    """What the JS pages may know of storage: key names only (they never write)."""
    return {
        "keys": {
            "history": HISTORY,
            "historySessionId": HISTORY_SESSION_ID,
            "savedSessions": SAVED_SESSIONS,
            "providers": PROVIDERS,
            "activeProviderId": ACTIVE_PROVIDER_ID,
            "uiLanguage": UI_LANGUAGE,
            "backupImportStaging": BACKUP_IMPORT_STAGING,
            "searchCopyEpoch": SEARCH_COPY_EPOCH,
            "syncConfig": SYNC_CONFIG,
            "syncStatus": SYNC_STATUS,
            "prompts": PROMPTS,
        },
        "sessionBodyPrefix": SESSION_BODY_PREFIX,
        "sessionDigestPrefix": SESSION_DIGEST_PREFIX,
        "sessionEntryPrefix": SESSION_ENTRY_PREFIX,
        "sessionIndexLayout": SESSION_INDEX_LAYOUT,
        # chrome.storage.session keys the pages and the worker's shell read (never write).
        "sessionKeys": {
            "siteCacheIndex": SITE_CACHE_INDEX,
            "explainRequest": EXPLAIN_REQUEST,
            "unsavedAnswers": UNSAVED_ANSWERS,
            "syncProgress": SYNC_PROGRESS,
        },
        "getAllKeys": list(GET_ALL_KEYS),
    }
