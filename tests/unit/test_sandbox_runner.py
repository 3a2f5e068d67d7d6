"""The code sandbox's run harness (extension/sandbox/runner.py) under CPython: streaming, the cap on
output, the last expression's value, tracebacks of the code's own frames, a fresh namespace."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import warnings
from pathlib import Path

from margin.sandbox import code_runs

RUNNER = Path(__file__).resolve().parents[2] / "extension" / "sandbox" / "runner.py"
spec = importlib.util.spec_from_file_location("sandbox_runner", RUNNER)
assert spec and spec.loader
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)


def run(code: str, limit: int = 1000) -> tuple[dict, list[tuple[str, str]]]:
    emitted: list[tuple[str, str]] = []
    result = json.loads(
        asyncio.run(runner.run(code, limit, lambda stream, text: emitted.append((stream, text))))
    )
    return result, emitted


def test_the_last_expression_is_the_value_and_print_is_stdout():
    result, emitted = run("import sys\nprint('hi')\nprint('oops', file=sys.stderr)\n6 * 7")
    assert result["status"] == "ok" and result["value"] == "42"
    assert result["stdout"] == "hi\n" and result["stderr"] == "oops\n"
    assert "".join(t for s, t in emitted if s == "stdout") == "hi\n"


def test_none_and_statements_give_no_value_and_top_level_await_works():
    assert run("x = 1")[0]["value"] is None
    assert run("print('a')")[0]["value"] is None
    assert run("import asyncio\nawait asyncio.sleep(0)\n'done'")[0]["value"] == "'done'"


def test_output_is_streamed_in_pieces_while_the_code_runs(monkeypatch):
    ticks = iter(range(1000))
    monkeypatch.setattr(runner.time, "monotonic", lambda: next(ticks))
    result, emitted = run("for i in range(3):\n    print(i)")
    assert result["stdout"] == "0\n1\n2\n"
    assert len([1 for s, _ in emitted if s == "stdout"]) >= 3  # not one piece at the end


def test_output_past_the_limit_is_counted_not_kept_and_the_note_says_how_much():
    result, emitted = run("print('x' * 5_000_000)", limit=code_runs.STREAM_CHARS)
    assert result["stdout"].startswith("x" * 1000)
    assert "[output truncated: 4.9 million characters more were printed and not kept]" in result["stdout"]
    assert len(result["stdout"]) <= code_runs.STREAM_CHARS
    assert sum(len(t) for _, t in emitted) == code_runs.STREAM_CHARS
    # what the sandbox keeps fits what Margin stores
    assert (
        len(
            code_runs.clean_run(
                {"block": 0, "status": "ok", "stdout": result["stdout"], "startedAt": 0, "ms": 0}
            )["stdout"]
        )
        <= code_runs.STREAM_CHARS
    )


def test_an_exception_gives_the_code_own_traceback():
    result, _ = run("def f():\n    raise ValueError('bad month')\n\nf()")
    assert result["status"] == "error"
    error = result["error"]
    assert error.startswith("Traceback (most recent call last):")
    assert 'File "<answer>", line 4' in error and "ValueError: bad month" in error
    assert "runner.py" not in error


def test_a_syntax_error_and_system_exit_are_reported_not_raised():
    assert "SyntaxError" in run("def (:")[0]["error"]
    assert "SystemExit" in run("raise SystemExit(3)")[0]["error"]


def test_a_memory_error_says_the_sandbox_memory_ran_out():
    result, _ = run("raise MemoryError()")
    assert result["status"] == "error" and runner.MEMORY_NOTE in result["error"]


def test_every_run_gets_a_fresh_namespace():
    run("secret = 1")
    result, _ = run("secret")
    assert "NameError" in result["error"]


def test_a_long_repr_is_capped():
    result, _ = run("'x' * 20_000")
    assert len(result["value"]) <= runner.VALUE_CHARS + 1


def test_an_object_too_big_for_32_bit_says_so_and_memory_errors_ask_for_a_fresh_worker():
    # what wasm32 CPython raises for bytearray(2 * 1024**3)
    result, _ = run("raise OverflowError(\"cannot fit 'int' into an index-sized integer\")")
    assert runner.SIZE_NOTE in result["error"] and result["restart"] is False
    assert run("raise MemoryError()")[0]["restart"] is True
    assert run("1")[0]["restart"] is False


def test_only_a_font_list_of_this_matplotlib_naming_its_own_fonts_is_handed_on():
    data = "/lib/python3.12/site-packages/matplotlib/mpl-data"
    entry = {"fname": f"{data}/fonts/ttf/DejaVuSans.ttf", "name": "DejaVu Sans"}
    good = {"_version": 330, "ttflist": [entry], "afmlist": []}
    assert runner.font_list_ok(json.dumps(good), 330, data)
    # the list Pyodide's wheel ships (another version), a font elsewhere, a path that climbs out
    assert not runner.font_list_ok(json.dumps({**good, "_version": 390}), 330, data)
    assert not runner.font_list_ok(json.dumps({**good, "ttflist": [{"fname": "/etc/passwd"}]}), 330, data)
    climbing = {**good, "ttflist": [{"fname": f"{data}/../../x.ttf"}]}
    assert not runner.font_list_ok(json.dumps(climbing), 330, data)
    assert not runner.font_list_ok("not json", 330, data)
    assert not runner.font_list_ok(json.dumps({**good, "ttflist": []}), 330, data)
    assert not runner.font_list_ok(" " * (runner.FONT_LIST_MAX_CHARS + 1), 330, data)


def test_agg_saying_it_cannot_show_a_figure_is_not_printed_other_warnings_are(monkeypatch):
    # pytest records warnings; print them to sys.stderr, as Python does outside pytest
    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    monkeypatch.setattr(warnings, "showwarning", show)
    # what matplotlib's Agg backend warns on plt.show() / figure.show() where there is no display
    agg = "import warnings\nwarnings.warn('FigureCanvasAgg is non-interactive, and thus cannot be shown')\n"
    result, emitted = run(agg + "warnings.warn('the column is empty')")
    assert result["status"] == "ok"
    assert "non-interactive" not in result["stderr"] and "the column is empty" in result["stderr"]
    assert not [t for _, t in emitted if "non-interactive" in t]
    # a run that resets the warning filters does not bring the warning back in the next run
    run("import warnings\nwarnings.resetwarnings()\nwarnings.simplefilter('always')")
    assert "non-interactive" not in run(agg)[0]["stderr"]


def test_a_missing_value_reads_as_pandas_writes_it_never_lowercase_nan():
    assert runner._cell(float("nan")) == "NaN"
    assert runner._cell(float("-nan")) == "NaN"
    assert runner._cell(None) == "None"
    assert runner._cell(1.5) == "1.5" and runner._cell("nan") == "nan"  # a text "nan" is the text
    assert runner._cell(float("inf")) == "inf" and runner._cell(0) == "0"


def test_warming_draws_one_figure_to_png_and_leaves_none_open(monkeypatch):
    """Rule 8, with a stand-in pyplot that records what is done (CPython has no matplotlib here)."""
    assert runner.warm_plotting() == []  # no pyplot imported: nothing to warm

    class Figure:
        def __init__(self, log):
            self.log = log

        def add_subplot(self):
            log = self.log

            class Axes:
                def plot(self, *args, **kwargs):
                    log.append("plot")

                def set_title(self, text):
                    log.append("title")

                def legend(self):
                    log.append("legend")

            return Axes()

        def savefig(self, buffer, format):
            self.log.append(f"savefig {format}")

    class Pyplot:
        def __init__(self):
            self.log: list[str] = []
            self.open: list[Figure] = []

        def figure(self):
            self.open.append(Figure(self.log))
            return self.open[-1]

        def close(self, figure):
            self.open.remove(figure)

    plt = Pyplot()
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", plt)
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    assert runner.warm_plotting() == ["matplotlib"]
    assert plt.log == ["plot", "title", "legend", "savefig png"] and plt.open == []
