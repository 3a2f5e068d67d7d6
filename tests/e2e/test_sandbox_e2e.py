"""The code sandbox, in Chromium with the built extension: an answer's Python blocks get "Run",
their output is painted and stored, and hostile code cannot reach the user's data, the network,
the panel or a window, nor hang the panel or flood storage.

One browser for the module (each run after a Stop or a time limit pays a fresh worker's boot, but
not a browser's); one answer seeded into `history` holds every block, each test runs one of them.
"""

from __future__ import annotations

import base64
import io
import re
import time
from collections.abc import Iterator

import pytest
from fake_provider import FakeProvider
from fake_requests import message_texts
from harness import COLD_TIMEOUT_MS, Launched, Margin, launch
from PIL import Image
from web_pages import WebPages

# The first run boots the sandbox's Pyodide and, for pandas, loads its wheels and builds
# matplotlib's font cache: slow on a loaded 2-core machine.
RUN_TIMEOUT_MS = 240_000
LOOP_LIMIT_MS = 4_000

BLOCKS = {
    "storage": """\
import js
found = [name for name in ("chrome", "browser", "localStorage", "sessionStorage") if hasattr(js, name)]
print("globals:", found)
try:
    js.chrome.storage.local.get(None)
    print("STORAGE READ")
except Exception as error:
    print("storage refused:", type(error).__name__)
try:
    js.indexedDB.open("margin")
    print("IDB OPENED")
except Exception as error:
    print("indexedDB refused:", type(error).__name__)
""",
    "fetch": """\
import js
from pyodide.http import pyfetch
for attempt in (lambda: js.fetch(URL), lambda: pyfetch(URL)):
    try:
        reply = await attempt()
        print("FETCHED", reply.status)
    except Exception as error:
        print("fetch refused:", type(error).__name__)
""",
    "escape": """\
import js
reach = {name: hasattr(js, name) for name in ("parent", "top", "window", "document", "postMessage", "opener")}
print(reach)
try:
    js.eval("1")
    print("EVAL RAN")
except Exception as error:
    print("eval refused:", type(error).__name__)
""",
    "window": """\
import js
try:
    opened = js.open("https://example.com/")
    print("OPENED", opened)
except Exception as error:
    print("open refused:", type(error).__name__)
""",
    "loop": "while True:\n    pass\n",
    "huge": "data = bytearray(2 * 1024 ** 3)\nprint(len(data))\n",
    "memory": "kept = [bytearray(1024 ** 3) for _ in range(8)]\nprint(len(kept))\n",
    "flood": "print('x' * 50_000_000)\n",
    "science": """\
import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({"month": ["Jan", "Feb", "Mar"], "sales": [3, 5, 8]})
df.plot(x="month", y="sales")
print("total", df["sales"].sum())
df
""",
    "hello": "print('hello from the sandbox')\n6 * 7\n",
    "notebook": """\
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
plt.plot([1, 3, 2])
plt.show()
plt.bar(["a", "b"], [3, 1])
plt.gcf().show()
plt.show()
pd.DataFrame({
    "city": ["Oslo", "Rome", None],
    "temp": [3.5, np.nan, 20.0],
    "count": pd.array([1, None, 3], dtype="Int64"),
    "day": pd.to_datetime(["2024-01-01", None, "2024-01-03"]),
})
""",
    "markup": """\
import pandas as pd
print('<img src=x onerror="window.top.__pwned=1">')
pd.DataFrame({"<b>col</b>": ['<img src=x onerror="window.top.__pwned=1">']})
""",
}
ORDER = list(BLOCKS)


def answer_text(url: str) -> str:
    parts = ["Here is the code."]
    for name in ORDER:
        code = BLOCKS[name].replace("URL", repr(url))
        parts.append(f"{name}:\n\n```python\n{code}```")
    return "\n\n".join(parts)


@pytest.fixture(scope="module")
def web_pages() -> Iterator[WebPages]:
    with WebPages() as pages:
        yield pages


@pytest.fixture(scope="module")
def browser(playwright_instance, dist_dir) -> Iterator[Launched]:
    launched = launch(playwright_instance, dist_dir)
    yield launched
    launched.close()
    assert not launched.csp_violations, launched.csp_violations  # harness rule 5


@pytest.fixture(scope="module")
def sandboxed(browser: Launched, web_pages: WebPages):
    margin = Margin(browser)
    margin.storage_set(
        {
            "history": [
                {"role": "user", "content": "Show me", "createdAt": 1_700_000_000_000},
                {
                    "role": "assistant",
                    "content": answer_text(web_pages.url("/secret")),
                    "createdAt": 1_700_000_001_000,
                },
            ]
        }
    )
    page = margin.open_panel()
    return margin, page


def block(page, name: str):
    return page.locator("article[data-role=assistant] .code-block").nth(ORDER.index(name))


def run(page, name: str, timeout_ms: int = RUN_TIMEOUT_MS):
    code_block = block(page, name)
    code_block.get_by_role("button", name="Run").click()
    output = code_block.locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    output.wait_for(state="attached")
    page.wait_for_function(
        "(node) => node && node.dataset.status", arg=output.element_handle(), timeout=timeout_ms
    )
    return output


def stored_run(margin: Margin, name: str, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = margin.history()[1].get("runs", [])
        found = [r for r in runs if r["block"] == ORDER.index(name)]
        if found:
            return found[0]
        time.sleep(0.2)
    raise AssertionError(f"no stored run of block {name!r}")


RAN = r"Ran in \d+\.\d s"
RAN_AFTER_LOADING = RAN + r" after \d+\.\d s of loading"


def status_of(output) -> str:
    return output.locator(".code-run-status").text_content()


STATUS_STARTS_JS = "(start) => [...document.querySelectorAll('.code-run-status')].some((n) => n.textContent.startsWith(start))"
STATUS_MATCHES_JS = "(pattern) => [...document.querySelectorAll('.code-run-status')].some((n) => new RegExp(pattern).test(n.textContent))"
STATUS_IS_JS = (
    "(text) => [...document.querySelectorAll('.code-run-status')].some((n) => n.textContent === text)"
)


def test_a_pandas_and_matplotlib_block_gives_a_table_and_a_real_png_that_are_stored(sandboxed):
    margin, page = sandboxed
    code_block = block(page, "science")
    code_block.get_by_role("button", name="Run").click()
    # The panel says what loads in its own words, from the package names the sandbox sends, and
    # says it again in the new language when the language changes while pandas loads (cold: seconds).
    page.wait_for_function(STATUS_STARTS_JS, arg="Loading ", timeout=RUN_TIMEOUT_MS)
    loading = page.locator(".code-run-status").text_content()
    # From the first whole second on, the wait is counted: "Loading pandas, matplotlib… 3 s".
    assert re.fullmatch(r"Loading (\w+, )*pandas(, \w+)*…( \d+ s)?", loading), loading
    page.wait_for_function(STATUS_MATCHES_JS, arg=r"^Loading .*… \d+ s$", timeout=RUN_TIMEOUT_MS)
    packages = loading.removeprefix("Loading ").split("…")[0]
    try:
        margin.storage_set({"uiLanguage": "ru"})
        # The whole status, as text: the bubbles are built again in the new language, and until
        # the next frame lays out the new bubble (content-visibility: auto) innerText says "".
        page.wait_for_function(
            STATUS_MATCHES_JS, arg=f"^Загрузка {re.escape(packages)}…( \\d+ с)?$", timeout=20_000
        )
    finally:
        margin.storage_set({"uiLanguage": "auto"})
    output = code_block.locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    page.wait_for_function(
        "(node) => node.dataset.status", arg=output.element_handle(), timeout=RUN_TIMEOUT_MS
    )
    assert output.get_attribute("data-status") == "ok", output.inner_text()
    # The cold run waited for Python and pandas: the final line keeps that wait apart from the run.
    assert re.fullmatch(RAN_AFTER_LOADING, status_of(output)), status_of(output)
    assert "total 16" in output.locator(".code-run-stdout").inner_text()
    cells = output.locator("table td").all_inner_texts()
    assert cells == ["Jan", "3", "Feb", "5", "Mar", "8"]
    src = output.get_by_role("img").get_attribute("src")
    stored = stored_run(margin, "science")
    assert stored["status"] == "ok" and stored["tables"][0]["shape"] == [3, 2]
    assert stored["figures"][0]["dataUrl"] == src
    image = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
    assert image.format == "PNG" and image.size == (
        stored["figures"][0]["width"],
        stored["figures"][0]["height"],
    )
    assert image.size[0] > 100 and len(set(image.convert("L").getdata())) > 2  # drawn, not blank

    # A second run is warm (nothing to load), and the output survives a reload, from storage.
    started = time.monotonic()
    hello = run(page, "hello")
    assert time.monotonic() - started < 30
    assert re.fullmatch(RAN, status_of(hello)), status_of(hello)  # nothing loaded: no loading
    assert stored_run(margin, "hello")["value"] == "42" and "loadMs" not in stored_run(margin, "hello")
    assert stored_run(margin, "science")["loadMs"] > 0
    page.reload()
    margin.wait_panel_ready(page)
    science = block(page, "science").locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    assert science.locator("table td").all_inner_texts() == cells
    assert science.get_by_role("img").get_attribute("src") == src


def test_plt_show_shows_each_figure_without_a_warning_and_missing_values_read_nan(sandboxed):
    """A notebook's habits: plt.show() draws what is open then (the next plot is a new figure),
    with no "FigureCanvasAgg is non-interactive" on stderr; a missing value reads as pandas writes
    it in a notebook, never Python's lowercase "nan"."""
    margin, page = sandboxed
    output = run(page, "notebook")
    assert output.get_attribute("data-status") == "ok", output.inner_text()
    # the first run of this page (the test before reloads it): Python and pandas load first
    assert re.fullmatch(RAN_AFTER_LOADING, status_of(output)), status_of(output)
    assert "non-interactive" not in output.inner_text()
    assert output.locator(".code-run-stderr").count() == 0
    images = output.get_by_role("img")
    assert images.count() == 2  # the line, then the bars: two figures, not one drawn over
    first, second = (images.nth(i).get_attribute("src") for i in range(2))
    assert first != second
    assert output.locator("table th").all_inner_texts()[:5] == ["", "city", "temp", "count", "day"]
    rows = [row.locator("td").all_inner_texts() for row in output.locator("tbody tr").all()]
    assert rows == [
        ["Oslo", "3.5", "1", "2024-01-01 00:00:00"],
        ["Rome", "NaN", "<NA>", "NaT"],
        ["None", "20.0", "3", "2024-01-03 00:00:00"],
    ]
    stored = stored_run(margin, "notebook")
    assert stored["tables"][0]["rows"][1] == ["Rome", "NaN", "<NA>", "NaT"]
    assert [f["dataUrl"] for f in stored["figures"]] == [first, second]


def test_hostile_code_cannot_read_storage_fetch_reach_the_panel_or_open_a_window(sandboxed, web_pages):
    margin, page = sandboxed
    storage = run(page, "storage").inner_text()
    assert "globals: []" in storage and "STORAGE READ" not in storage and "storage refused" in storage
    assert "IDB OPENED" not in storage and "indexedDB refused" in storage
    fetched = run(page, "fetch").inner_text()
    assert "FETCHED" not in fetched and fetched.count("fetch refused") == 2
    assert web_pages.requested == []
    escape = run(page, "escape").inner_text()
    assert "'parent': False" in escape and "'postMessage': False" in escape and "'document': False" in escape
    assert "EVAL RAN" not in escape and "eval refused" in escape
    pages = len(margin.context.pages)
    opened = run(page, "window").inner_text()
    assert "OPENED" not in opened and "open refused" in opened
    assert len(margin.context.pages) == pages  # nothing opened


def test_an_endless_loop_is_ended_at_the_limit_and_the_panel_stays_responsive(sandboxed):
    margin, page = sandboxed
    page.evaluate(f"globalThis.__marginCodeRunTimeoutMs = {LOOP_LIMIT_MS}")
    try:
        code_block = block(page, "loop")
        code_block.get_by_role("button", name="Run").click()
        code_block.get_by_role("button", name="Stop").wait_for(timeout=COLD_TIMEOUT_MS)
        output = code_block.locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
        page.wait_for_function(
            "(node) => node.querySelector('.code-run-status')?.textContent === 'Running…'",
            arg=output.element_handle(),
            timeout=RUN_TIMEOUT_MS,
        )
        started = time.monotonic()
        # The panel answers while the loop spins.
        box = margin.message_box(page)
        box.fill("still typing")
        assert box.input_value() == "still typing"
        page.wait_for_function("(node) => node.dataset.status", arg=output.element_handle(), timeout=60_000)
        assert time.monotonic() - started < LOOP_LIMIT_MS / 1000 + 15
        assert output.get_attribute("data-status") == "timeout"
        assert "time limit" in output.inner_text()
        assert stored_run(margin, "loop")["status"] == "timeout"
    finally:
        page.evaluate("delete globalThis.__marginCodeRunTimeoutMs")
    # A fresh worker takes the next run.
    assert "hello from the sandbox" in run(page, "hello").inner_text()


def test_stop_ends_a_run(sandboxed):
    _margin, page = sandboxed
    code_block = block(page, "loop")
    code_block.get_by_role("button", name="Run").click()
    page.wait_for_function(STATUS_IS_JS, arg="Running…", timeout=RUN_TIMEOUT_MS)
    code_block.get_by_role("button", name="Stop").click()
    output = code_block.locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    page.wait_for_function(
        "(node) => node.dataset.status === 'stopped'", arg=output.element_handle(), timeout=20_000
    )
    code_block.get_by_role("button", name="Run").wait_for()
    assert re.fullmatch(r"Stopped after \d+\.\d s", status_of(output)), status_of(output)
    # The stopped worker was replaced: the next run says it waits for the fresh worker's Python,
    # and its final line counts that wait as loading.
    block(page, "hello").get_by_role("button", name="Run").click()
    page.wait_for_function(STATUS_STARTS_JS, arg="Starting Python…", timeout=20_000)
    hello = block(page, "hello").locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    page.wait_for_function(
        "(node) => node.dataset.status", arg=hello.element_handle(), timeout=RUN_TIMEOUT_MS
    )
    assert re.fullmatch(RAN_AFTER_LOADING, status_of(hello)), status_of(hello)


def test_a_running_block_keeps_its_run_through_a_change_of_language(sandboxed):
    """The bubbles are built again in the new language: the block's run stays with its block, its
    status and its "Stop" in the new words."""
    margin, page = sandboxed
    code_block = block(page, "loop")
    code_block.get_by_role("button", name="Run").click()
    output = code_block.locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    page.wait_for_function(STATUS_IS_JS, arg="Running…", timeout=RUN_TIMEOUT_MS)
    try:
        margin.storage_set({"uiLanguage": "ru"})
        code_block.get_by_role("button", name="Стоп").wait_for(timeout=COLD_TIMEOUT_MS)
        assert output.locator(".code-run-status").text_content() == "Выполняется…"
        code_block.get_by_role("button", name="Стоп").click()
        page.wait_for_function(
            "(node) => node.dataset.status === 'stopped'", arg=output.element_handle(), timeout=20_000
        )
    finally:
        margin.storage_set({"uiLanguage": "auto"})
    code_block.get_by_role("button", name="Run").wait_for(timeout=COLD_TIMEOUT_MS)


def test_a_2_gb_allocation_gives_a_clear_memory_error(sandboxed):
    _margin, page = sandboxed
    # One 2 GB object cannot exist in a 32-bit Python: said in a sentence, not only OverflowError.
    huge = run(page, "huge")
    assert huge.get_attribute("data-status") == "error"
    assert (
        "MemoryError: the sandbox's Python is 32-bit, so one object can hold at most 2 GB"
        in huge.inner_text()
    )
    # 8 GB in 1 GB pieces runs out of the sandbox's memory: Python's MemoryError, said in a sentence.
    memory = run(page, "memory")
    assert memory.get_attribute("data-status") == "error"
    assert "MemoryError: the code asked for more memory than the sandbox can give" in memory.inner_text()
    # the worker was replaced (its memory given back) and the next run works
    assert "hello from the sandbox" in run(page, "hello").inner_text()


def test_printing_50_mb_is_truncated_with_a_note(sandboxed):
    margin, page = sandboxed
    output = run(page, "flood")
    text = output.locator(".code-run-stdout").inner_text()
    assert "output truncated" in text and len(text) < 110_000
    stored = stored_run(margin, "flood")
    assert "output truncated" in stored["stdout"] and len(stored["stdout"]) <= 100_000


# Posts malformed messages to the sandbox frame from the panel (its parent); returns its replies.
PROBE_JS = """async () => {
    const frame = document.querySelector("iframe.code-sandbox");
    const replies = [];
    const listen = (event) => { if (event.source === frame.contentWindow) replies.push(event.data); };
    addEventListener("message", listen);
    const send = (message) => frame.contentWindow.postMessage({ channel: "margin-sandbox", ...message }, "*");
    const run = { type: "run", code: "print('ran')", timeoutMs: 5000, limit: 100 };
    send({ ...run, v: 2, id: "old-version" });
    send({ v: 1, type: "eval", code: "1" });
    send({ ...run, v: 1, id: "bad-code", code: 5 });
    send({ ...run, v: 1, id: "bad-limit", timeoutMs: 1e12 });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    removeEventListener("message", listen);
    return replies;
}"""


def test_the_sandbox_refuses_messages_of_another_version_type_or_shape(sandboxed):
    _margin, page = sandboxed
    run(page, "hello")  # the frame exists
    replies = page.evaluate(PROBE_JS)
    assert [r["reason"] for r in replies if r.get("type") == "refused"] == [
        "version",
        "unknown type",
        "bad run",
        "bad timeout",
    ]
    assert not [r for r in replies if r.get("type") != "refused"]  # nothing ran


def test_printed_html_and_table_cells_are_shown_as_text_never_parsed(sandboxed):
    _margin, page = sandboxed
    output = run(page, "markup")
    assert output.get_attribute("data-status") == "ok", output.inner_text()
    hostile = '<img src=x onerror="window.top.__pwned=1">'
    assert output.locator(".code-run-stdout").inner_text().strip() == hostile
    assert output.locator("table td").all_inner_texts() == [hostile]
    assert "<b>col</b>" in output.locator("table th").all_inner_texts()
    assert output.locator("img, b").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_a_scripted_answer_runs_and_the_next_turn_sends_the_model_its_output(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    fake_provider.script(reply="Here:\n\n```python\n" + BLOCKS["science"] + "```\n")
    page = margin.open_panel()
    margin.send(page, "Chart sales per month")
    margin.wait_answer(page)
    code_block = page.locator("article[data-role=assistant] .code-block").first
    code_block.get_by_role("button", name="Run").click()
    output = code_block.locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    page.wait_for_function(
        "(node) => node.dataset.status", arg=output.element_handle(), timeout=RUN_TIMEOUT_MS
    )
    assert output.get_attribute("data-status") == "ok", output.inner_text()
    deadline = time.monotonic() + 20
    while not margin.history()[-1].get("runs") and time.monotonic() < deadline:
        time.sleep(0.2)
    (stored,) = margin.history()[-1]["runs"]
    assert stored["tables"][0]["rows"] == [["Jan", "3"], ["Feb", "5"], ["Mar", "8"]]

    fake_provider.script(reply="Done.")
    margin.send(page, "Now per quarter")
    margin.wait_answer(page)
    request = fake_provider.chat_requests[-1]
    answer = next(t for t in message_texts(request.body) if t.startswith("Here:"))
    width, height = stored["figures"][0]["width"], stored["figures"][0]["height"]
    assert "[Output of code block 1: ok]\ntotal 16" in answer
    assert "[table: 3 rows × 2 columns]" in answer and f"[figure: {width}×{height}]" in answer
    assert "base64" not in request.raw_body.decode()
