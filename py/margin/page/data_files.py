"""Data files the user attaches (CSV, TSV, JSON, Markdown, plain text): checked, and stored as an
attachment record of kind "file" (sans-IO; `margin.page.attach.handle_attach_file` stores it).

The concept: an attached data file is an attachment record like an attached page
(margin.page.context): a user record whose text starts with PAGE_CONTEXT_PREFIX, shown as a card,
answered by the next question, aged like a page (margin.turn.slimming). What the model READS is a
bounded view; the whole file goes into the code sandbox as `/data/<safe name>`
(margin.page.sandbox_files).

Rules:
1. A request is `{name, text}` (of the name, its last path segment is kept): the panel read the
   file and decoded it as UTF-8 (fatal).
   Python checks again and refuses with one sentence each: a name with no supported extension
   (XLSX and other spreadsheets named apart: no verified reader ships), text over
   MAX_FILE_BYTES in UTF-8, text with a NUL character (binary), an empty file, a malformed
   request. The media type comes from the name's extension, never from the sender.
2. The record: `attachment` = {kind: "file", title: the name, url: "", site: "", chars (of the
   view's body), truncated, originalChars (of the whole text), method: "file", capturedAt, name,
   size (bytes), mediaType, rows (CSV/TSV: data rows after the header)}, and `file` = {name,
   size, mediaType, text}: the whole text, exactly as attached.
3. The view (the record's text): a header (the name, the type and size, when it was attached, the
   row count of a CSV/TSV, a note when the view is cut), a blank line, then the body: for CSV/TSV the first
   VIEW_ROWS lines and the row count, for JSON and text the first VIEW_CHARS characters, cut at a
   line end when one is near. Nothing is parsed beyond the csv module's reading of lines, so a
   hostile JSON (deep nesting, huge numbers) is just text.
4. `safe_name` makes a name fit for `/data/`: its last path segment, letters, digits, `.`, `-`,
   `_` (anything else `_`), beginning with a letter or digit, no `..`, at most NAME_MAX_CHARS,
   the extension (letters and digits) kept.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from ..base.errors import MarginError
from ..base.sentences import sentence
from ..i18n import catalogue
from ..storage.history import PAGE_CONTEXT_PREFIX, Record
from .context import attached_at

MAX_FILE_BYTES = 5 * 1024 * 1024
VIEW_ROWS = 30
VIEW_CHARS = 10_000  # over slimming.AGING_MIN_CHARS: a long file's view ages like a long page
NAME_MAX_CHARS = 80
MEDIA_TYPES = {
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "json": "application/json",
    "md": "text/markdown",
    "txt": "text/plain",
}
SPREADSHEETS = ("xlsx", "xlsm", "xls", "ods", "numbers")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def extension_of(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1].lower() if "." in base.strip(".") else ""


def safe_name(name: str) -> str:
    """Rule 4."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem.strip("."):
        stem, ext = base, ""
    ext = re.sub(r"[^A-Za-z0-9]+", "", ext)[:10]
    # The sandbox takes only /data/ names that begin with a letter or digit (extension/sandbox/sandbox.js).
    stem = re.sub(r"\.{2,}", ".", _UNSAFE.sub("_", stem)).strip("._-")
    room = NAME_MAX_CHARS - (len(ext) + 1 if ext else 0)
    stem = stem[:room].rstrip("._-") or "file"
    return f"{stem}.{ext}" if ext else stem


def check_request(payload: Any) -> tuple[str, str, str]:
    """Rule 1: (name, media type, text) of a `file.attach` request, or a refusal."""
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        raise MarginError.said("bad_payload", "py_error_file_request")
    name = " ".join(payload["name"].replace("\\", "/").rsplit("/", 1)[-1].split())[:200]
    ext = extension_of(name)
    if ext in SPREADSHEETS:
        raise MarginError.said("file_type_unsupported", "py_error_file_spreadsheet", name)
    if ext not in MEDIA_TYPES:
        raise MarginError.said(
            "file_type_unsupported", "py_error_file_type", name or sentence("py_error_this_file")
        )
    text = payload.get("text")
    if not isinstance(text, str):
        raise MarginError.said("bad_payload", "py_error_file_request")
    if len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise MarginError.said(
            "file_too_large", "py_error_file_too_large", name, MAX_FILE_BYTES // (1024 * 1024)
        )
    if "\x00" in text or _has_lone_surrogate(text):
        raise MarginError.said("file_not_text", "py_error_file_not_text", name)
    if not text.strip():
        raise MarginError.said("file_empty", "py_error_file_empty", name)
    return name, MEDIA_TYPES[ext], text.removeprefix("\ufeff")


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _rows(text: str, delimiter: str) -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except csv.Error:
        return [line.split(delimiter) for line in text.splitlines()]


def _prefix(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    line_end = cut.rfind("\n")
    return cut[:line_end] if line_end > limit * 0.8 else cut


def view(text: str, media_type: str) -> tuple[str, bool, int | None]:
    """Rule 3's body: (body, whether it is cut, data rows of a CSV/TSV or None)."""
    if media_type in ("text/csv", "text/tab-separated-values"):
        rows = [row for row in _rows(text, "," if media_type == "text/csv" else "\t") if row]
        lines = text.splitlines()
        shown = lines[:VIEW_ROWS]
        body = _prefix("\n".join(shown), VIEW_CHARS)
        return body, len(shown) < len(lines) or len(body) < len("\n".join(shown)), max(len(rows) - 1, 0)
    body = _prefix(text, VIEW_CHARS)
    return body, len(body) < len(text), None


def file_record(name: str, media_type: str, text: str, *, captured_at: int, language: str = "en") -> Record:
    """Rules 2 and 3: the attachment record for a checked file."""
    words = catalogue.words(language)
    size = len(text.encode("utf-8"))
    body, truncated, rows = view(text, media_type)
    lines = [
        f"{PAGE_CONTEXT_PREFIX} {words.text('py_header_title', words.text('py_header_file'), name)}",
        words.text("py_file_type", media_type, words.number(size)),
        words.text("py_header_attached", attached_at(captured_at)),
    ]
    if rows is not None:
        lines.append(words.text("py_file_rows", words.number(rows)))
    if truncated:
        lines.append(words.text("py_header_note", words.text("py_file_cut", words.number(len(text)))))
    meta: dict[str, Any] = {
        "kind": "file",
        "title": name,
        "url": "",
        "site": "",
        "chars": len(body),
        "truncated": truncated,
        "originalChars": len(text),
        "method": "file",
        "capturedAt": captured_at,
        "name": name,
        "size": size,
        "mediaType": media_type,
    }
    if rows is not None:
        meta["rows"] = rows
    fields = {
        "attachment": meta,
        "file": {"name": name, "size": size, "mediaType": media_type, "text": text},
        "createdAt": captured_at,
    }
    return Record("user", "\n".join(lines) + "\n\n" + body, fields)


def stored_file(record: Record) -> dict[str, Any] | None:
    """The `file` object of a kind-"file" attachment, when it is whole (name and text)."""
    value = record.fields.get("file")
    if isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(value.get("text"), str):
        return value
    return None


def card(record: Record) -> dict[str, Any]:
    """What a reply tells the panel about a file it just stored."""
    meta = record.fields["attachment"]
    keys = ("kind", "title", "url", "site", "chars", "truncated", "capturedAt", "name", "size", "mediaType")
    return {key: meta.get(key) for key in keys}
