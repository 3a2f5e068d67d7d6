"""Runs of an answer's code blocks: what is stored with the answer, and what the next turn sends.

The code itself runs in the code sandbox (extension/sandbox/, never in this Python); the panel
sends the finished run here to be kept with its answer (docs/protocol.md, `code.save_run`).

Rules:
1. An assistant record's `runs` is a list of at most MAX_RUNS runs, one per code block: `block` is
   the block's index among the answer's code blocks. A new run of a block replaces the old one.
2. A run is {block, code, status, stdout, stderr, value, tables, figures, error, note, startedAt,
   ms, loadMs?}. `status` is one of STATUSES; texts are capped (STREAM_CHARS for stdout and stderr,
   the head kept, with a note of how much was cut); at most MAX_TABLES tables of TABLE_ROWS rows x
   TABLE_COLUMNS columns of CELL_CHARS characters (a missing value is the text pandas shows in a
   notebook, "NaN", "NaT", "<NA>" or "None": extension/sandbox/runner.py rule 3, so the model reads
   the same words); at most MAX_FIGURES figures, each a PNG data URL of at most FIGURE_URL_CHARS
   characters with its pixel size. `ms` is the time the code ran; `loadMs`, present only when not 0,
   the wait before it (starting the sandbox's Python, loading packages): the panel's final line
   says both ("Ran in 0.7 s after 2.1 s of loading"). A run stored before `loadMs` existed has none.
3. What the panel sends is input: `clean_run` keeps exactly the fields of rule 2, each of its type,
   cut to its bound; anything it cannot read is `bad_payload`.
4. Read back from storage, `runs` is valid only if `clean_run` would keep every run unchanged
   (`is_runs`, a RECORD_FIELDS check of margin.storage.stored_values): a stored run can never be larger
   or of another shape than a fresh one.
5. The model sees a run compactly (`model_text`), after its answer's text: the status, the heads
   of stdout and stderr (MODEL_TEXT_CHARS each), the value, each table's shape and first
   MODEL_TABLE_ROWS rows, `[figure: 640×480]` for each figure, the error's last lines. Never the
   pixels, never the whole output.
6. `code.save_run {index, createdAt, run}` stores the run on the assistant record at `index`
   whose `createdAt` matches, under the history lock (margin.turn.saved_runs: this module is
   below storage, so that the readers of stored records can use rule 4); another record there
   is `run_answer_gone` and nothing is written.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any

from ..base.errors import MarginError

MAX_RUNS = 20
STATUSES = ("ok", "error", "timeout", "stopped", "crashed")
CODE_CHARS = 100_000
STREAM_CHARS = 100_000
VALUE_CHARS = 10_000
ERROR_CHARS = 20_000
NOTE_CHARS = 500
MAX_TABLES = 1
TABLE_ROWS = 50
TABLE_COLUMNS = 20
CELL_CHARS = 200
MAX_FIGURES = 4
FIGURE_URL_CHARS = 2_100_000
FIGURE_PREFIX = "data:image/png;base64,"
MAX_PIXELS = 100_000
MAX_MS = 24 * 3600 * 1000
MODEL_TEXT_CHARS = 2_000
MODEL_TABLE_ROWS = 5
MODEL_ERROR_LINES = 6
# The default time limit of one run (the panel's), in milliseconds.
TIMEOUT_MS = 30_000

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def limits_for_js() -> dict[str, int]:
    """What the panel and the sandbox need to agree with (generated/contract.js)."""
    return {"streamChars": STREAM_CHARS, "codeChars": CODE_CHARS, "timeoutMs": TIMEOUT_MS}


def _bad(what: str) -> MarginError:
    return MarginError.said("bad_payload", "py_error_run_unreadable", what)


def _count(value: Any, top: int) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= top
        and float(value).is_integer()
    )


def _size_words(chars: int) -> str:
    return f"{chars / 1_000_000:.1f} million characters" if chars >= 1_000_000 else f"{chars:,} characters"


def cap_text(text: str, limit: int) -> str:
    """Rule 2: the head of `text` and a note of what was cut; `text` itself when it fits."""
    if len(text) <= limit:
        return text
    note = f"\n[truncated: {_size_words(len(text) - limit)} more not kept]\n"
    return text[: max(limit - len(note), 0)] + note


def _text(value: Any, limit: int, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _bad(what)
    return cap_text(value, limit)


def unreadable_result(what: str) -> MarginError:
    """A stored tool round (margin.sandbox.tool_loop, margin.sandbox.mcp_results) that is not as a
    fresh one is written: `bad_payload`, naming the part."""
    return MarginError.said("bad_payload", "py_error_run_result_unreadable", what)


def exact_text(value: Any, limit: int, what: str) -> str:
    """A stored round's text, read back as it is: a string of at most `limit` characters, never cut
    (a longer one was not written by Margin), else `unreadable_result`."""
    if not isinstance(value, str) or len(value) > limit:
        raise unreadable_result(what)
    return value


def _cell(value: Any) -> str:
    if not isinstance(value, str):
        raise _bad("a table cell")
    return value if len(value) <= CELL_CHARS else value[: CELL_CHARS - 1] + "…"


def _cells(value: Any, count: int) -> list[str]:
    if not isinstance(value, list):
        raise _bad("a table row")
    return [_cell(v) for v in value[:count]]


def clean_table(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad("a table")
    shape = value.get("shape")
    if not isinstance(shape, list) or len(shape) != 2 or not all(_count(n, 2**53) for n in shape):
        raise _bad("a table's shape")
    columns_in, rows_in = value.get("columns"), value.get("rows")
    if not isinstance(columns_in, list) or not isinstance(rows_in, list):
        raise _bad("a table's columns or rows")
    if any(not isinstance(row, list) or len(row) != len(columns_in) for row in rows_in):
        raise _bad("a table row of another width")
    columns = _cells(columns_in, TABLE_COLUMNS)
    rows = [_cells(row, len(columns)) for row in rows_in[:TABLE_ROWS]]
    index = _cells(value.get("index", []), len(rows))
    if len(index) not in (0, len(rows)):
        raise _bad("a table's index")
    return {"columns": columns, "index": index, "rows": rows, "shape": [int(shape[0]), int(shape[1])]}


def png_size(url: str) -> tuple[int, int] | None:
    """The pixel size of a PNG data URL, or None when it is not one."""
    if not url.startswith(FIGURE_PREFIX):
        return None
    body = url[len(FIGURE_PREFIX) :]
    if not _BASE64.fullmatch(body) or len(body) < 32:
        return None
    try:
        head = base64.b64decode(body[:32])
    except ValueError:
        return None
    if not head.startswith(_PNG_MAGIC) or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def clean_figure(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("dataUrl"), str):
        raise _bad("a figure")
    url = value["dataUrl"]
    size = png_size(url) if len(url) <= FIGURE_URL_CHARS else None
    if size is None or not all(0 < n <= MAX_PIXELS for n in size):
        raise _bad("a figure that is not a PNG within bounds")
    return {"dataUrl": url, "width": size[0], "height": size[1]}


def clean_run(value: Any) -> dict[str, Any]:
    """Rule 3: the run as it is stored, or `bad_payload`."""
    if not isinstance(value, dict):
        raise _bad("not an object")
    if not _count(value.get("block"), MAX_RUNS * 50):
        raise _bad("block")
    if value.get("status") not in STATUSES:
        raise _bad("status")
    for key in ("startedAt", "ms"):
        if not _count(value.get(key), 2**53 if key == "startedAt" else MAX_MS):
            raise _bad(key)
    tables = value.get("tables", [])
    figures = value.get("figures", [])
    if not isinstance(tables, list) or not isinstance(figures, list):
        raise _bad("tables or figures")
    if not _count(value.get("loadMs", 0), MAX_MS):
        raise _bad("loadMs")
    value_text = value.get("value")
    load_ms = {"loadMs": int(value["loadMs"])} if value.get("loadMs") else {}
    return {
        "block": int(value["block"]),
        "code": _text(value.get("code"), CODE_CHARS, "code"),
        "status": value["status"],
        "stdout": _text(value.get("stdout"), STREAM_CHARS, "stdout"),
        "stderr": _text(value.get("stderr"), STREAM_CHARS, "stderr"),
        "value": None if value_text is None else _text(value_text, VALUE_CHARS, "value"),
        "tables": [clean_table(t) for t in tables[:MAX_TABLES]],
        "figures": [clean_figure(f) for f in figures[:MAX_FIGURES]],
        "error": _text(value.get("error"), ERROR_CHARS, "error"),
        "note": _text(value.get("note"), NOTE_CHARS, "note"),
        "startedAt": int(value["startedAt"]),
        "ms": int(value["ms"]),
        **load_ms,
    }


def is_runs(value: Any) -> bool:
    """Rule 4: a stored `runs` list that a fresh save could have written."""
    if not isinstance(value, list) or len(value) > MAX_RUNS:
        return False
    try:
        return all(clean_run(run) == run for run in value)
    except MarginError:
        return False


def with_run(runs: list[dict[str, Any]], run: dict[str, Any]) -> list[dict[str, Any]]:
    """Rule 1: `runs` with `run` in place of its block's earlier run, sorted by block."""
    kept = [r for r in runs if r.get("block") != run["block"]]
    merged = sorted([*kept, run], key=lambda r: r["block"])
    return merged[-MAX_RUNS:]


# -- what the model is sent (rule 5) -------------------------------------------------------------


def _head(text: str, limit: int = MODEL_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more characters]"


def _table_text(table: dict[str, Any]) -> str:
    rows, columns = table["shape"]
    lines = [f"[table: {rows} rows × {columns} columns]", "\t".join(["", *table["columns"]])]
    index = table["index"] or [""] * len(table["rows"])
    for name, row in list(zip(index, table["rows"], strict=False))[:MODEL_TABLE_ROWS]:
        lines.append("\t".join([name, *row]))
    if rows > MODEL_TABLE_ROWS:
        lines.append("…")
    return "\n".join(lines)


def run_text(run: dict[str, Any]) -> str:
    parts = [f"[Output of code block {run['block'] + 1}: {run['status']}]"]
    if run["stdout"]:
        parts.append(_head(run["stdout"]).rstrip("\n"))
    if run["stderr"]:
        parts.append("stderr: " + _head(run["stderr"]).rstrip("\n"))
    if run["value"]:
        parts.append(_head(run["value"]))
    parts.extend(_table_text(t) for t in run["tables"])
    parts.extend(f"[figure: {f['width']}×{f['height']}]" for f in run["figures"])
    if run["error"]:
        parts.append("\n".join(run["error"].rstrip("\n").splitlines()[-MODEL_ERROR_LINES:]))
    if run["note"]:
        parts.append(run["note"])
    return "\n".join(parts)


def model_text(runs: list[dict[str, Any]]) -> str:
    """Rule 5: every run of an answer, compact, in block order."""
    return "\n\n".join(run_text(r) for r in runs)


# -- code.save_run (rule 6; the request itself is margin.turn.saved_runs) -------------------------


def check_address(index: Any, created_at: Any) -> None:
    """Rule 6: the answer a run is for, by its index in `history` and its `createdAt`."""
    if not _count(index, 2**31) or not _count(created_at, 2**53):
        raise _bad("index or createdAt")


def for_model(record: Any) -> Any:
    """Rule 5: an answer (a margin.storage.history Record) with its runs' compact output after its text."""
    runs = record.fields.get("runs")
    if record.role != "assistant" or not runs or not isinstance(record.content, str):
        return record
    return type(record)(record.role, f"{record.content}\n\n{model_text(runs)}", record.fields)
