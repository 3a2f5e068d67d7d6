"""One session exported as a file the user keeps: Markdown to read, JSON to keep everything.

`session.export {id, format}` (docs/protocol.md) reads the session's body (margin.sessions.index
`read_body_checked`: a missing or unreadable body is an error, never an empty file) and returns
`{filename, mimeType, text}`; the panel downloads it.

Rules:
1. No record is left out: images are exported as stored (data URLs, inline in Markdown; the
   records verbatim in JSON), an attachment with the text the model got, and a record Margin
   cannot read as (the first 2,000 characters of) its raw JSON under a note.
2. The file name comes from the session's name as the user reads it (an untitled session's is
   the catalogue's word, rule 5; word characters and dashes, at most 60), or "session" when
   nothing of the name is left.
3. The JSON file is `{format: "margin-session", version: 1, session: {id, name, createdAt,
   savedAt, pinned}, history}`, `history` being the body's records exactly as stored.
4. Code runs are in the Markdown too: an answer's `toolRounds` (the model's own runs) before its
   text, each call's code as a Python block and its output as text (margin.sandbox.code_runs' compact
   form) with its figures as images; its blocks' `runs` after the text, the same way.
5. The Markdown's own words (who speaks, what was attached, a run's label and status, "date
   unknown", an image's alt text) are the catalogue's `py_export_*`, said in the user's language
   (`say`: the handler, margin.sessions.actions, loads it with `options.ensure_spoken` first); in English
   they are the bytes Margin always wrote. What the conversation holds is written as it is: its
   text, a run's output, a call's note, a kind or status Margin does not know. The date is the
   stamp `%Y-%m-%d %H:%M UTC`, the same in every language; an untitled session's heading is the
   catalogue's word (margin.sessions.entries, rule 3).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from ..base.errors import MarginError
from ..base.sentences import Sentence, say, sentence
from ..sandbox import code_runs, mcp_results
from ..storage.history import Record
from .index import IndexEntry, shown_name

# Rule 5: the words of what Margin knows; anything else is written as the record holds it.
_ATTACHED_KEYS = {
    "page": "py_export_attached_page",
    "video": "py_export_attached_video",
    "selection": "py_export_attached_selection",
    "file": "py_export_attached_file",
}
_ROLE_KEYS = {"user": "py_export_you", "assistant": "py_export_assistant"}
_STATUS_KEYS = {
    "ok": "py_export_status_ok",
    "error": "py_export_status_error",
    "timeout": "py_export_status_timeout",
    "stopped": "py_export_status_stopped",
    "crashed": "py_export_status_crashed",
}
_OUTCOME_KEYS = {
    "declined": "py_export_outcome_declined",
    "refused": "py_export_outcome_refused",
    "stopped": "py_export_status_stopped",
    "failed": "py_export_outcome_failed",
}


def _word(keys: dict[str, str], value: Any) -> Sentence | str:
    return sentence(keys[value]) if value in keys else str(value)


def _label(what: Sentence | str) -> str:
    """`what` followed by the language's colon: "You:", "あなた："."""
    return say(sentence("py_export_label", what))


def _date(ms: int) -> str:
    if not ms:
        return say(sentence("py_export_date_unknown"))
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _filename(name: str, extension: str) -> str:
    slug = re.sub(r"[^\w\-]+", "-", name, flags=re.UNICODE).strip("-")[:60] or "session"
    return f"{slug}.{extension}"


def _fenced(text: str, language: str) -> list[str]:
    return [f"```{language}", text.rstrip("\n").replace("```", "ʼʼʼ"), "```", ""]


def _run_lines(title: Sentence, run: dict[str, Any]) -> list[str]:
    """Rule 4: one run's output as text, then its figures."""
    _, _, output = code_runs.run_text(run).partition("\n")
    status = say(sentence("py_export_run_status", title, _word(_STATUS_KEYS, run["status"])))
    lines = [f"_{status}_", ""]
    if output.strip():
        lines += _fenced(output, "text")
    for number, figure in enumerate(run.get("figures", []), start=1):
        lines += [f"![{say(sentence('py_export_figure', number))}]({figure['dataUrl']})", ""]
    return lines


def _tool_round_lines(record: Record) -> list[str]:
    lines: list[str] = []
    for round_ in record.fields.get("toolRounds") or []:
        if round_["text"]:
            lines += [round_["text"], ""]
        for call in round_["calls"]:
            if isinstance(call.get("mcp"), dict):  # one of the user's MCP tools (margin.sandbox.mcp_results)
                lines += _mcp_call_lines(call)
                continue
            lines += [f"_{_label(sentence('py_export_model_ran'))}_", "", *_fenced(call["code"], "python")]
            if call["outcome"] == "ran" and call["run"]:
                lines += _run_lines(sentence("py_export_output"), call["run"])
            else:
                outcome = _word(_OUTCOME_KEYS, call["outcome"])
                said = (
                    sentence("py_export_not_run_note", outcome, call["note"])
                    if call["note"]
                    else sentence("py_export_not_run", outcome)
                )
                lines += [f"_{say(said)}_", ""]
    return lines


def _mcp_call_lines(call: dict[str, Any]) -> list[str]:
    mcp = call["mcp"]
    lines = [f"_{say(sentence('py_export_model_called', mcp['tool'], mcp['serverName']))}_", ""]
    lines += _fenced(call["arguments"], "json")
    if call["outcome"] == "ran" and mcp["result"]:
        return lines + _fenced(mcp_results.result_text(mcp["result"]), "text")
    outcome = _word(_OUTCOME_KEYS, call["outcome"])
    said = (
        sentence("py_export_not_run_note", outcome, call["note"])
        if call["note"]
        else sentence("py_export_not_run", outcome)
    )
    return [*lines, f"_{say(said)}_", ""]


def _block_run_lines(record: Record) -> list[str]:
    lines: list[str] = []
    for run in record.fields.get("runs") or []:
        lines += _run_lines(sentence("py_export_block_output", run["block"] + 1), run)
    return lines


def _attached(kind: Any) -> Sentence:
    if kind in _ATTACHED_KEYS:
        return sentence(_ATTACHED_KEYS[kind])
    return sentence("py_export_attached", kind)


def _said_name(entry: IndexEntry) -> str:
    name = shown_name(entry)
    return say(name) if isinstance(name, Sentence) else name


def to_markdown(entry: IndexEntry, raw_history: list[Any]) -> str:
    """Rules 1, 4 and 5: in the user's language (what `catalogue.ensure` last loaded)."""
    lines = [f"# {_said_name(entry)}", "", f"_{_date(entry.created_at)}_", ""]
    for item in raw_history:
        try:
            record = Record.from_json(item)
        except ValueError:
            lines += [
                f"**{say(sentence('py_export_unreadable'))}**",
                "",
                "```json",
                json.dumps(item, ensure_ascii=False)[:2000],
                "```",
                "",
            ]
            continue
        if record.is_attachment:
            meta = record.fields["attachment"]
            label = _label(_attached(meta.get("kind", "page")))
            lines += [
                f"**{label}** {meta.get('title') or meta.get('url', '')} ({meta.get('url', '')})",
                "",
                f"<details><summary>{say(sentence('py_export_model_text'))}</summary>",
                "",
                "```text",
                record.text.replace("```", "ʼʼʼ"),
                "```",
                "",
                "</details>",
                "",
            ]
            continue
        role = sentence(_ROLE_KEYS[record.role]) if record.role in _ROLE_KEYS else record.role.title()
        lines += [f"**{_label(role)}**", ""]
        if record.role == "assistant":
            lines += _tool_round_lines(record)
        for part in record.parts:
            if part.get("type") == "text":
                lines += [part.get("text", ""), ""]
            elif part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                if isinstance(url, str) and url:
                    lines += [f"![{say(sentence('py_export_image'))}]({url})", ""]
                else:
                    lines += [f"_{say(sentence('py_export_image_lost'))}_", ""]
        if record.role == "assistant":
            lines += _block_run_lines(record)
    return "\n".join(lines).rstrip() + "\n"


EXPORT_FORMATS = ("markdown", "json")


def check_export_format(fmt: Any) -> str:
    """`fmt` when it is one Margin can write; otherwise the sentence that says which are."""
    if fmt not in EXPORT_FORMATS:
        raise MarginError.said("bad_format", "py_error_export_format")
    return fmt


def export_session(entry: IndexEntry, raw_history: list[Any], fmt: str) -> dict[str, str]:
    if check_export_format(fmt) == "markdown":
        return {
            "filename": _filename(_said_name(entry), "md"),
            "mimeType": "text/markdown",
            "text": to_markdown(entry, raw_history),
        }
    value = {
        "format": "margin-session",
        "version": 1,
        "session": {
            "id": entry.id,
            "name": entry.name,
            "createdAt": entry.created_at,
            "savedAt": entry.saved_at,
            "pinned": entry.pinned,
        },
        "history": raw_history,
    }
    return {
        "filename": _filename(_said_name(entry), "json"),
        "mimeType": "application/json",
        "text": json.dumps(value, ensure_ascii=False, indent=2),
    }
