"""One session exported as a file the user keeps: Markdown to read, JSON to keep everything.

`session.export {id, format}` (docs/protocol.md) reads the session's body (margin.session_index
`read_body_checked`: a missing or unreadable body is an error, never an empty file) and returns
`{filename, mimeType, text}`; the panel downloads it.

Rules:
1. No record is left out: images are exported as stored (data URLs, inline in Markdown; the
   records verbatim in JSON), an attachment with the text the model got, and a record Margin
   cannot read as (the first 2,000 characters of) its raw JSON under a note.
2. The file name comes from the session's name (word characters and dashes, at most 60), or
   "session" when nothing of the name is left.
3. The JSON file is `{format: "margin-session", version: 1, session: {id, name, createdAt,
   savedAt, pinned}, history}`, `history` being the body's records exactly as stored.
4. Code runs are in the Markdown too: an answer's `toolRounds` (the model's own runs) before its
   text, each call's code as a Python block and its output as text (margin.code_runs' compact
   form) with its figures as images; its blocks' `runs` after the text, the same way.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from . import code_runs
from .errors import MarginError
from .history import Record
from .session_index import IndexEntry


def _date(ms: int) -> str:
    if not ms:
        return "date unknown"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _filename(name: str, extension: str) -> str:
    slug = re.sub(r"[^\w\-]+", "-", name, flags=re.UNICODE).strip("-")[:60] or "session"
    return f"{slug}.{extension}"


def _fenced(text: str, language: str) -> list[str]:
    return [f"```{language}", text.rstrip("\n").replace("```", "ʼʼʼ"), "```", ""]


def _run_lines(title: str, run: dict[str, Any]) -> list[str]:
    """Rule 4: one run's output as text, then its figures."""
    _, _, output = code_runs.run_text(run).partition("\n")
    lines = [f"_{title}: {run['status']}_", ""]
    if output.strip():
        lines += _fenced(output, "text")
    for number, figure in enumerate(run.get("figures", []), start=1):
        lines += [f"![figure {number}]({figure['dataUrl']})", ""]
    return lines


def _tool_round_lines(record: Record) -> list[str]:
    lines: list[str] = []
    for round_ in record.fields.get("toolRounds") or []:
        if round_["text"]:
            lines += [round_["text"], ""]
        for call in round_["calls"]:
            lines += ["_The model ran code (run_python):_", "", *_fenced(call["code"], "python")]
            if call["outcome"] == "ran" and call["run"]:
                lines += _run_lines("Output", call["run"])
            else:
                lines += [f"_Not run ({call['outcome']}){': ' + call['note'] if call['note'] else ''}_", ""]
    return lines


def _block_run_lines(record: Record) -> list[str]:
    lines: list[str] = []
    for run in record.fields.get("runs") or []:
        lines += _run_lines(f"Output of code block {run['block'] + 1}", run)
    return lines


def to_markdown(entry: IndexEntry, raw_history: list[Any]) -> str:
    lines = [f"# {entry.name}", "", f"_{_date(entry.created_at)}_", ""]
    for item in raw_history:
        try:
            record = Record.from_json(item)
        except ValueError:
            lines += [
                "**(A message Margin could not read.)**",
                "",
                "```json",
                json.dumps(item, ensure_ascii=False)[:2000],
                "```",
                "",
            ]
            continue
        if record.is_attachment:
            meta = record.fields["attachment"]
            lines += [
                f"**Attached {meta.get('kind', 'page')}:** {meta.get('title') or meta.get('url', '')} "
                f"({meta.get('url', '')})",
                "",
                "<details><summary>The text the model got</summary>",
                "",
                "```text",
                record.text.replace("```", "ʼʼʼ"),
                "```",
                "",
                "</details>",
                "",
            ]
            continue
        label = {"user": "You", "assistant": "Assistant"}.get(record.role, record.role.title())
        lines += [f"**{label}:**", ""]
        if record.role == "assistant":
            lines += _tool_round_lines(record)
        for part in record.parts:
            if part.get("type") == "text":
                lines += [part.get("text", ""), ""]
            elif part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                if isinstance(url, str) and url:
                    lines += [f"![image]({url})", ""]
                else:
                    lines += ["_(an image that could not be exported)_", ""]
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
            "filename": _filename(entry.name, "md"),
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
        "filename": _filename(entry.name, "json"),
        "mimeType": "application/json",
        "text": json.dumps(value, ensure_ascii=False, indent=2),
    }
