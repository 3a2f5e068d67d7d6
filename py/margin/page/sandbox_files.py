"""The conversation's attachments as files in the code sandbox, under /data/ (sans-IO).

What the `run_python` tool's code can read, and all it can read of the user's: the panel writes
these files into the sandbox's own file system before a call runs (extension/sandbox/runner.js),
and the tool's description lists them to the model (margin.sandbox.tool_loop).

Rules:
1. An attached page becomes `/data/page-N.md` (its text as Markdown, the header left out); each
   table of it (a pipe table, as margin.page.text writes an HTML table) also
   `/data/page-N-table-M.csv`, its first row the header. A video's transcript and a selection
   become `/data/transcript-N.txt` and `/data/selection-N.txt`. N counts attachments of that
   kind in conversation order, M the tables of one page.
2. Each image a user attached (an image part of a user record) becomes `/data/image-N.<ext>`
   from its data URL (png, jpeg, gif, webp); a part that is not a data URL is left out.
3. Bounded: at most MAX_FILES files, MAX_TOTAL_CHARS characters in all (text plus base64); what
   does not fit is left out, never cut into a broken file. A file is {path, about, text} or
   {path, about, base64}; `about` says in a few words what it is, for the description.
4. The same conversation gives the same files, in the same order (a stable tool description,
   so a provider's prompt cache keeps hitting).
5. A data file the user attached (margin.page.data_files) becomes `/data/<safe name>`, its whole text
   as attached (not the view the model reads). A name already taken (by an earlier file, or by a
   name of rules 1-2) gets `-2`, `-3`, ... before its extension.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from ..storage.history import Record
from .data_files import safe_name, stored_file

MAX_FILES = 40
MAX_TOTAL_CHARS = 40_000_000
TABLE_MIN_ROWS = 2
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_SEPARATOR = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")
_KIND_NAMES = {"page": "page", "video": "transcript", "selection": "selection"}


def _split_row(line: str) -> list[str]:
    """One pipe-table line into its cells; `\\|` is a pipe inside a cell."""
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    cells, cell, escaped = [], [], False
    for char in inner:
        if escaped:
            cell.append(char if char == "|" else "\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            cells.append("".join(cell).strip())
            cell = []
        else:
            cell.append(char)
    if escaped:
        cell.append("\\")
    cells.append("".join(cell).strip())
    return cells


def pipe_tables(markdown: str) -> list[list[list[str]]]:
    """Every pipe table of `markdown` (a header row, a `| --- |` line, body rows) as rows of cells."""
    tables: list[list[list[str]]] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines) - 1:
        head, rule = lines[i].strip(), lines[i + 1].strip()
        if head.startswith("|") and _SEPARATOR.match(rule.replace(" ", "")):
            rows = [_split_row(head)]
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                rows.append(_split_row(lines[j]))
                j += 1
            if len(rows) >= TABLE_MIN_ROWS:
                tables.append(rows)
            i = j
            continue
        i += 1
    return tables


def to_csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    width = max(len(r) for r in rows)
    for row in rows:
        writer.writerow(row + [""] * (width - len(row)))
    return out.getvalue()


def _body(record: Record) -> str:
    return record.text.split("\n\n", 1)[-1]


def _title(record: Record) -> str:
    meta = record.fields.get("attachment")
    title = meta.get("title") if isinstance(meta, dict) else None
    return " ".join(str(title).split())[:80] if title else ""


def conversation_files(records: list[Record]) -> list[dict[str, Any]]:
    """Rules 1-4."""
    files: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    total = 0

    def add(entry: dict[str, Any]) -> None:
        nonlocal total
        size = len(entry.get("text") or entry.get("base64") or "")
        if len(files) < MAX_FILES and total + size <= MAX_TOTAL_CHARS:
            files.append(entry)
            total += size

    for record in records:
        if record.is_attachment:
            meta = record.fields.get("attachment")
            kind = meta.get("kind") if isinstance(meta, dict) else None
            data_file = stored_file(record) if kind == "file" else None
            if data_file is not None:
                wanted = safe_name(data_file["name"])
                kind_name = data_file.get("mediaType") or "text"
                chars = len(data_file["text"])
                about = f"attached file {data_file['name'][:80]}, {kind_name}, {chars} characters"
                add({"path": "", "wanted": wanted, "about": about, "text": data_file["text"]})
                continue
            if kind == "file":
                continue
            name = _KIND_NAMES.get(str(kind), "page")
            counts[name] = number = counts.get(name, 0) + 1
            body = _body(record)
            title = _title(record)
            named = f": {title}" if title else ""
            if name == "page":
                add(
                    {
                        "path": f"/data/page-{number}.md",
                        "about": f"attached page {number}{named}, Markdown",
                        "text": body,
                    }
                )
                for m, rows in enumerate(pipe_tables(body), start=1):
                    about = f"table {m} of page {number}, {len(rows) - 1} rows × {len(rows[0])} columns, CSV"
                    add({"path": f"/data/page-{number}-table-{m}.csv", "about": about, "text": to_csv(rows)})
            else:
                add(
                    {
                        "path": f"/data/{name}-{number}.txt",
                        "about": f"attached {name} {number}{named}, text",
                        "text": body,
                    }
                )
            continue
        if record.role != "user":
            continue
        for part in record.image_parts:
            url = (part.get("image_url") or {}).get("url")
            head, _, payload = url.partition(",") if isinstance(url, str) else ("", "", "")
            mime = head[5:].split(";")[0].lower() if head.lower().startswith("data:") else ""
            if mime not in _EXTENSIONS or ";base64" not in head.lower() or not payload:
                continue
            counts["image"] = number = counts.get("image", 0) + 1
            add(
                {
                    "path": f"/data/image-{number}.{_EXTENSIONS[mime]}",
                    "about": f"attached image {number}",
                    "base64": payload,
                }
            )
    return _name_data_files(files)


def _numbered(name: str, n: int) -> str:
    stem, dot, ext = name.rpartition(".")
    return f"{stem}-{n}.{ext}" if dot and stem else f"{name}-{n}"


def _name_data_files(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rule 5: each data file's path, clear of every other path."""
    taken = {f["path"] for f in files if "wanted" not in f}
    named = []
    for entry in files:
        wanted = entry.pop("wanted", None)
        if wanted is not None:
            path, n = f"/data/{wanted}", 1
            while path in taken:
                n += 1
                path = f"/data/{_numbered(wanted, n)}"
            taken.add(path)
            entry = {**entry, "path": path}
        named.append(entry)
    return named


def listing(files: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The files as the tool description names them (no contents)."""
    return [{"path": f["path"], "about": f["about"]} for f in files]
