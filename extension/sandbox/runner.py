"""One run of an answer's code, inside the code sandbox's own Pyodide (extension/sandbox/runner.js).

This file runs only in the sandbox's worker, never in the service worker's Python: nothing of the
user's (storage, keys, other conversations) exists in this interpreter. It is plain Python, so
tests/unit/test_sandbox_runner.py runs it under CPython too.

Rules:
1. Each run gets a fresh namespace; modules it imported stay loaded (a second run is warm).
2. stdout and stderr go through `Capture`: sent to `emit(stream, text)` while the code runs (at
   most every FLUSH_SECONDS or FLUSH_CHARS), at most `limit` characters kept per stream; what is
   past the limit is counted, not kept, and the kept text ends with a note saying how much was cut.
3. If the last statement is an expression, its value is the run's value: a pandas DataFrame or
   Series becomes a table (its head: TABLE_ROWS rows, TABLE_COLUMNS columns, every cell as plain
   text that the panel shows as text), None is no value, anything else is its repr (capped).
   A missing value reads as pandas writes it in a notebook (`_cell`): "NaN" for a missing number
   (never Python's lowercase "nan"), "NaT" for a missing time, "<NA>" for pandas.NA, "None" for
   None; the stored table and what the model is sent carry the same words.
4. Every open matplotlib figure becomes a PNG data URL (at most MAX_FIGURES, each at most
   FIGURE_MAX_BYTES), then all figures are closed. matplotlib draws with Agg (no DOM in a worker).
   `plt.show()` works as in a notebook: the figures open at that moment are drawn then (in order)
   and closed, so the next plot starts a new figure; Agg's "FigureCanvasAgg is non-interactive,
   and thus cannot be shown" warning (from `plt.show()` or `figure.show()`) is never printed.
5. An exception ends the run with the traceback of the code's own frames; a MemoryError says that
   the sandbox's memory ran out, in a sentence, and asks for a fresh worker (`restart`: wasm memory
   never shrinks); asking for one object of 2 GB or more (an OverflowError on wasm32) says so too.
6. The result is one JSON string: {status, stdout, stderr, value, tables, figures, error, restart}.
7. Pyodide's matplotlib ships a font list of another version, so each fresh worker would build
   its own (tens of seconds on a busy machine). The first worker's list (`kept_font_list`, checked
   by `font_list_ok`: this matplotlib's version, only fonts of its own data folder) is handed by
   sandbox.js to the workers started after a Stop or a time limit, written before matplotlib is
   imported.
8. Warming (`warm_plotting`, called by runner.js once matplotlib.pyplot is imported ahead of a Run):
   one small figure is drawn off screen and closed (its font and the Agg renderer loaded), and
   pandas' matplotlib plotting imported, so a first `df.plot()` costs what a second one does. It
   leaves no figure open and changes no setting.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from types import CodeType
from typing import Any

os.environ.setdefault("MPLBACKEND", "Agg")

FLUSH_SECONDS = 0.1
FLUSH_CHARS = 16_384
VALUE_CHARS = 10_000
TABLE_ROWS = 50
TABLE_COLUMNS = 20
CELL_CHARS = 200
MAX_TABLES = 1
MAX_FIGURES = 4
FIGURE_MAX_BYTES = 1_500_000
FILENAME = "<answer>"
MEMORY_NOTE = (
    "MemoryError: the code asked for more memory than the sandbox can give "
    "(its Python has at most about 4 GB in all); the sandbox restarts to give it back."
)
# The sandbox's Python is 32-bit (wasm32): one object of 2 GB or more cannot even be asked for.
SIZE_NOTE = (
    "MemoryError: the sandbox's Python is 32-bit, so one object can hold at most 2 GB "
    "(2,147,483,647 bytes); this asked for more."
)

Emit = Callable[[str, str], None]


def _size(chars: int) -> str:
    if chars >= 1_000_000:
        return f"{chars / 1_000_000:.1f} million characters"
    return f"{chars:,} characters"


class Capture(io.TextIOBase):
    """Rule 2: one output stream, streamed in pieces and kept up to `limit` characters."""

    def __init__(self, stream: str, limit: int, emit: Emit, clock: Callable[[], float] | None = None):
        self.stream = stream
        self.limit = limit
        self.emit = emit
        self.clock = clock or time.monotonic
        self.kept: list[str] = []
        self.kept_chars = 0
        self.cut_chars = 0
        self.pending: list[str] = []
        self.pending_chars = 0
        self.last_flush = self.clock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = self.limit - self.kept_chars
        part = text[: max(room, 0)]
        self.cut_chars += len(text) - len(part)
        if part:
            self.kept.append(part)
            self.kept_chars += len(part)
            self.pending.append(part)
            self.pending_chars += len(part)
        if self.pending_chars >= FLUSH_CHARS or self.clock() - self.last_flush >= FLUSH_SECONDS:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.emit(self.stream, "".join(self.pending))
            self.pending = []
            self.pending_chars = 0
        self.last_flush = self.clock()

    def note(self) -> str:
        if not self.cut_chars:
            return ""
        return f"\n[output truncated: {_size(self.cut_chars)} more were printed and not kept]\n"

    def text(self) -> str:
        """What was kept, the note included, within `limit` characters."""
        note = self.note()
        return "".join(self.kept)[: max(self.limit - len(note), 0)] + note


def _compile(code: str) -> tuple[CodeType | None, CodeType | None]:
    """The code as (body, last expression or None), compiled with top-level await allowed."""
    tree = ast.parse(code, FILENAME, "exec")
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        expr = ast.Expression(tree.body.pop().value)  # type: ignore[attr-defined]
        last = compile(expr, FILENAME, "eval", flags=flags)
    body = compile(tree, FILENAME, "exec", flags=flags) if tree.body else None
    return body, last


async def _execute(code_object: CodeType, namespace: dict[str, Any]) -> Any:
    result = eval(code_object, namespace)  # noqa: S307 - running the user's code is the point
    if code_object.co_flags & 0x80:  # CO_COROUTINE: the code awaited at top level
        result = await result
    return result


# Agg cannot open a window; saying so on stderr reads as a failure (the figure is shown anyway).
AGG_SHOW_WARNING = r".* is non-interactive, and thus cannot be shown"
PANDAS_MISSING = ("NaT", "<NA>")


def _missing_words(value: Any) -> str | None:
    """Rule 3: how pandas writes a missing cell in a notebook; None when `value` is not missing."""
    if value is None:
        return "None"
    if isinstance(value, float):  # float and numpy.float64
        return "NaN" if value != value else None
    pandas = sys.modules.get("pandas")
    if pandas is None or isinstance(value, (str, bytes, int)):
        return None
    try:
        missing = pandas.isna(value)
    except Exception:  # noqa: BLE001 - an object pandas cannot judge is not missing
        return None
    if not isinstance(missing, bool) and type(missing).__name__ != "bool_":
        return None  # a list-like cell: pandas answers per item
    if not missing:
        return None
    text = str(value)
    return text if text in PANDAS_MISSING else "NaN"  # numpy.float32, Decimal("NaN"), ...


def _cell(value: Any) -> str:
    missing = _missing_words(value)
    text = missing if missing is not None else str(value)
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def table_of(value: Any) -> dict[str, Any] | None:
    """Rule 3: a DataFrame or Series as {columns, index, rows, shape}; None for anything else."""
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return None
    if isinstance(value, pandas.Series):
        value = value.to_frame()
    if not isinstance(value, pandas.DataFrame):
        return None
    head = value.iloc[:TABLE_ROWS, :TABLE_COLUMNS]
    return {
        "columns": [_cell(c) for c in head.columns],
        "index": [_cell(i) for i in head.index],
        "rows": [[_cell(v) for v in row] for row in head.itertuples(index=False, name=None)],
        "shape": [int(value.shape[0]), int(value.shape[1])],
    }


def figures(room: int = MAX_FIGURES) -> list[dict[str, Any]]:
    """Rule 4: the open matplotlib figures as PNG data URLs (at most `room`), then closed."""
    if "matplotlib.pyplot" not in sys.modules:
        return []
    plt = sys.modules["matplotlib.pyplot"]
    out: list[dict[str, Any]] = []
    for number in plt.get_fignums()[: max(room, 0)]:
        figure = plt.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        data = buffer.getvalue()
        if len(data) > FIGURE_MAX_BYTES:
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=50)
            data = buffer.getvalue()
        if len(data) > FIGURE_MAX_BYTES:
            continue
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        url = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        out.append({"dataUrl": url, "width": width, "height": height})
    plt.close("all")
    return out


# -- matplotlib's font list, kept for the next worker (rule 7) -----------------------------------

FONT_LIST_MAX_CHARS = 2_000_000


def font_list_path() -> str:
    """Where matplotlib keeps its font list: beside its own module (Pyodide's build)."""
    import sysconfig

    return os.path.join(sysconfig.get_paths()["purelib"], "matplotlib", "fontlist.json")


def font_list_ok(text: str, version: int, data_path: str) -> bool:
    """A font list matplotlib `version` wrote, naming only fonts of its own data folder."""
    if not isinstance(text, str) or len(text) > FONT_LIST_MAX_CHARS:
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    if not isinstance(value, dict) or value.get("_version") != version:
        return False
    entries = [*value.get("ttflist", []), *value.get("afmlist", [])]
    if not entries:
        return False
    prefix = data_path.rstrip("/") + "/"
    for entry in entries:
        name = entry.get("fname") if isinstance(entry, dict) else None
        if not isinstance(name, str) or ".." in name:
            return False
        if not (name.startswith(prefix) or name.startswith("fonts/")):
            return False
    return True


def kept_font_list() -> str | None:
    """Rule 7: the font list this worker's matplotlib built, if it is one to hand on."""
    font_manager = sys.modules.get("matplotlib.font_manager")
    if font_manager is None:
        return None
    try:
        with open(font_list_path()) as handle:
            text = handle.read()
    except OSError:
        return None
    matplotlib = sys.modules["matplotlib"]
    ok = font_list_ok(text, font_manager.FontManager.__version__, matplotlib.get_data_path())
    return text if ok else None


# -- the first drawing, done ahead (rule 8) -----------------------------------------------------


def warm_plotting() -> list[str]:
    """Rule 8: draw one small figure with text (and load pandas' plotting, if pandas is loaded)
    so the first Run's plot does not pay for it; what was warmed, by name."""
    warmed: list[str] = []
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return warmed
    if "pandas" in sys.modules:
        try:
            __import__("pandas.plotting._matplotlib")
            warmed.append("pandas.plotting")
        except Exception:  # noqa: BLE001 - a pandas without matplotlib plotting: its first plot says so
            pass
    figure = plt.figure()
    try:
        axes = figure.add_subplot()
        axes.plot([0, 1], [0, 1], label="warm")
        axes.set_title("warm")
        axes.legend()
        figure.savefig(io.BytesIO(), format="png")
        warmed.append("matplotlib")
    finally:
        plt.close(figure)
    return warmed


def _traceback(exc: BaseException) -> str:
    """Rule 5: the traceback from the code's own first frame on (the harness's frames left out)."""
    frames = traceback.extract_tb(exc.__traceback__)
    start = next((i for i, f in enumerate(frames) if f.filename == FILENAME), len(frames))
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames[start:])]
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(lines)
    if isinstance(exc, MemoryError):
        text += MEMORY_NOTE + "\n"
    elif isinstance(exc, OverflowError) and "index-sized" in str(exc):
        text += SIZE_NOTE + "\n"
    return text


class Shows:
    """Rule 4: `plt.show()` during one run draws the open figures then and closes them."""

    def __init__(self) -> None:
        self.drawn: list[dict[str, Any]] = []
        self.plt: Any = None
        self.saved: Any = None

    def start(self) -> None:
        # Again each run: the code may have reset the warning filters in an earlier one.
        warnings.filterwarnings("ignore", message=AGG_SHOW_WARNING, category=UserWarning)
        self.plt = sys.modules.get("matplotlib.pyplot")  # imported before the run (runner.js)
        if self.plt is None:
            return

        # A plain function, as pyplot's own: its first backend switch sets `show.__signature__`.
        def show(*args: Any, **kwargs: Any) -> None:
            """pyplot.show's stand-in (its arguments, like block=False, mean nothing here)."""
            self.drawn += figures(MAX_FIGURES - len(self.drawn))  # past MAX_FIGURES: closed, not kept

        self.saved = self.plt.show
        self.plt.show = show

    def end(self) -> None:
        if self.plt is not None:
            self.plt.show = self.saved


async def run(code: str, limit: int, emit: Emit) -> str:
    """Run `code` once (rules 1-6); never raises."""
    out, err = Capture("stdout", limit, emit), Capture("stderr", limit, emit)
    saved = sys.stdout, sys.stderr
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    status, value, tables, error, restart = "ok", None, [], None, False
    shows = Shows()
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    try:
        shows.start()
        body, last = _compile(code)
        if body is not None:
            await _execute(body, namespace)
        if last is not None:
            result = await _execute(last, namespace)
            table = table_of(result)
            if table is not None:
                tables.append(table)
            elif result is not None and not _is_plot(result):
                text = repr(result)
                value = text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "…"
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt end the run too
        status, error = "error", _traceback(exc)
        restart = isinstance(exc, MemoryError)
    finally:
        shows.end()
        sys.stdout, sys.stderr = saved
        out.flush()
        err.flush()
    drawn = shows.drawn
    try:
        drawn = drawn + figures(MAX_FIGURES - len(drawn))
    except Exception as exc:  # noqa: BLE001 - a figure that cannot be drawn is reported, not fatal
        status = "error"
        error = (error or "") + f"The figure could not be drawn: {type(exc).__name__}: {exc}\n"
    result_json = {
        "status": status,
        "stdout": out.text(),
        "stderr": err.text(),
        "value": value,
        "tables": tables[:MAX_TABLES],
        "figures": drawn,
        "error": error,
        "restart": restart,
    }
    return json.dumps(result_json)


def _is_plot(value: Any) -> bool:
    """A matplotlib object as the last expression (`plt.plot(...)`): the figure shows it."""
    module = type(value).__module__ or ""
    if module.startswith("matplotlib"):
        return True
    return isinstance(value, list) and bool(value) and type(value[0]).__module__.startswith("matplotlib")
