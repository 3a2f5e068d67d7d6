"""What a backup file may hold: every piece checked before anything of it is written.

Rules:
1. A piece of the wrong type (a session that is not an object, a history that is not a list, a
   name that is not text, a date that is not a plausible time, settings that are not an object...)
   refuses the whole file: `MarginError("bad_backup")` whose sentence names the session (its
   position and name) and what is wrong. Margin's export never writes such a file, so it was damaged or
   made by hand.
2. Every record is checked the way storage is read (`Record.from_json`, `parse_history`), and
   more strictly: the text of every text part is text, the url of every image part is text.
3. A session (or open conversation) the file itself marks damaged (`damaged`: Margin could not
   read all of it when exporting; the file still carries it as it was) and a session with no
   records are skipped, not refused: there is nothing Margin could restore whole.
4. Providers are checked like the options form checks them (`normalize_provider`); one that is
   not valid is left out and named in the import's message, never stored: a stored junk provider
   would make every later `options.save` fail. The file's `activeProviderId` is never read.
5. Saved prompts (`settings.prompts`, margin.settings.prompts) are read as storage reads them: an
   entry Margin cannot read is left out; a value that is not a list refuses the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.errors import MarginError
from ..base.sentences import Sentence, say, sentence
from ..providers import normalize_provider
from ..sessions import index as s
from ..settings.options import valid_language, valid_threshold
from ..settings.prompts import read_prompts
from ..storage.history import Record, parse_history
from ..storage.keys import MCP_SERVERS, SUMMARIZE_ABOVE_CHARS, UI_LANGUAGE
from ..tools.servers import servers_from_backup

# The largest time JavaScript's Date can hold (ms): a larger "date" was not written by Margin.
MAX_TIME_MS = 8.64e15

OPEN_CONVERSATION = sentence("py_error_backup_open_conversation")


def _bad(key: str, *args: object) -> MarginError:
    """Rule 1: the problem `key` (a py_error_backup_problem_* sentence) with its arguments."""
    return MarginError.said("bad_backup", "py_error_backup_damaged", sentence(key, *args))


@dataclass(frozen=True)
class Incoming:
    """One session of the file, checked."""

    sid: str
    raw: list[Any]
    records: list[Record]
    name: str | None
    created_at: float
    saved_at: float
    pinned: bool
    named: bool


@dataclass
class Settings:
    providers: list[dict[str, Any]] = field(default_factory=list)
    # Sentences naming the providers left out (rule 4).
    refused: list[str] = field(default_factory=list)
    ui_language: str | None = None
    summarize_above_chars: int | None = None
    # The file's saved prompts (rule 5), None when it carries none.
    prompts: list[dict[str, Any]] | None = None
    # The file's MCP servers (margin.tools.servers rule 6).
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)


def check_records(raw: Any, where: Sentence) -> list[Record]:
    """The records of a history, or bad_backup naming the first one that is not valid (rule 2)."""
    if not isinstance(raw, list):
        raise _bad("py_error_backup_problem_history", where)
    for position, value in enumerate(raw, 1):
        try:
            Record.from_json(value)  # strict: text parts hold text, image parts a url
        except ValueError as error:
            raise _bad("py_error_backup_problem_message", where, position, error) from None
    read = parse_history(raw)
    if read.unreadable_raw is not None:  # cannot happen after the checks above; never store it
        raise _bad("py_error_backup_problem_messages", where)
    return read.records


def _time(item: dict[str, Any], key: str, where: Sentence) -> float | None:
    value = item.get(key)
    if value is None:
        return None
    if not s.is_number(value) or not 0 <= value <= MAX_TIME_MS:
        raise _bad("py_error_backup_problem_date", where, key)
    return value


def _flag(item: dict[str, Any], key: str, where: Sentence) -> bool:
    value = item.get(key)
    if value is not None and not isinstance(value, bool):
        raise _bad("py_error_backup_problem_flag", where, key)
    return value is True


def check_session(item: Any, position: int) -> Incoming | None:
    """One element of `sessions`; None when there is nothing to restore (rule 3)."""
    where = sentence("py_error_backup_session", position + 1)
    if not isinstance(item, dict):
        raise _bad("py_error_backup_problem_not_session", where)
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise _bad("py_error_backup_problem_name", where)
    if isinstance(name, str) and name.strip():
        where = sentence("py_error_backup_session_named", position + 1, s.shorten(name, 40))
    sid = s.id_of_entry(item)
    if sid is None:
        raise _bad("py_error_backup_problem_id", where)
    created = _time(item, "createdAt", where)
    saved = _time(item, "savedAt", where)
    pinned = _flag(item, "pinned", where)
    named = _flag(item, "named", where)
    raw = item.get("history")
    if item.get("damaged") in ("missing", "unreadable"):
        return None
    records = check_records(raw, where)
    if not records or not isinstance(raw, list):
        return None
    created_at = created if created is not None else (saved or 0)
    return Incoming(
        sid=sid,
        raw=raw,
        records=records,
        name=name.strip()[: s.NAME_MAX] if isinstance(name, str) and name.strip() else None,
        created_at=created_at,
        saved_at=saved if saved is not None else created_at,
        pinned=pinned,
        named=named,
    )


def check_current(value: Any) -> tuple[list[Any], list[Record], str | None]:
    """The file's open conversation: (raw history, its records, the session it came from)."""
    if value is None:
        return [], [], None
    if not isinstance(value, dict):
        raise _bad("py_error_backup_problem_current")
    if value.get("damaged") == "unreadable":
        return [], [], None
    raw = value.get("history")
    their_id = value.get("historySessionId")
    if their_id is not None and not isinstance(their_id, str):
        raise _bad("py_error_backup_problem_current_session")
    if raw is None:
        return [], [], their_id
    return raw, check_records(raw, OPEN_CONVERSATION), their_id


def check_settings(value: Any) -> Settings:
    if value is None:
        return Settings()
    if not isinstance(value, dict):
        raise _bad("py_error_backup_problem_settings")
    settings = Settings()
    providers = value.get("providers")
    if providers is not None and not isinstance(providers, list):
        raise _bad("py_error_backup_problem_providers")
    seen: set[str] = set()
    for position, provider in enumerate(providers or []):
        try:
            clean = normalize_provider(provider, position)
        except MarginError as error:
            settings.refused.append(error.in_language())
            continue
        if clean["id"] in seen:
            same = sentence("py_error_backup_provider_same_id", sentence("py_error_provider_n", position + 1))
            settings.refused.append(say(same))
            continue
        seen.add(clean["id"])
        settings.providers.append({**clean, "fromBackup": True})
    language = value.get(UI_LANGUAGE)
    if language is not None and not isinstance(language, str):
        raise _bad("py_error_backup_problem_language")
    settings.ui_language = language if valid_language(language) else None
    threshold = value.get(SUMMARIZE_ABOVE_CHARS)
    if threshold is not None and not s.is_number(threshold):
        raise _bad("py_error_backup_problem_summarize")
    settings.summarize_above_chars = threshold if valid_threshold(threshold) else None
    saved_prompts = value.get("prompts")
    if saved_prompts is not None and not isinstance(saved_prompts, list):
        raise _bad("py_error_backup_problem_settings")
    settings.prompts = None if saved_prompts is None else read_prompts(saved_prompts).value
    settings.mcp_servers = servers_from_backup(value.get(MCP_SERVERS))
    return settings
