"""The code sandbox warms ahead of a Run (extension/panel/sandbox_warmup.js), in Chromium with the
built extension: never when no Python block is shown and the model may not run Python (no frame,
not one of Pyodide's files asked for); after the first paint when a Python block is shown or the
model may run Python; the next panel's sandbox boots from the memory snapshot the first one left.
Not timed: the benchmark (bench/bench_sandbox.py) measures what warming saves.
"""

from __future__ import annotations

import re

from harness import COLD_TIMEOUT_MS, Margin
from playwright.sync_api import expect

PROVIDER = {
    "id": "warmup-provider",
    "type": "openai",
    "name": "Fake provider",
    "baseUrl": "http://127.0.0.1:9/v1",
    "apiKey": "sk-test",
    "model": "fake-model",
}
WARM_TIMEOUT_MS = 240_000


def history(answer: str) -> list[dict]:
    return [
        {"role": "user", "content": "Show me", "createdAt": 1_700_000_000_000},
        {"role": "assistant", "content": answer, "createdAt": 1_700_000_001_000},
    ]


NO_PYTHON = (
    "Run this in a shell:\n\n```bash\nls -la\n```\n\nand this in the page:\n\n```js\nconsole.log(1)\n```\n"
)
WITH_PYTHON = "Here:\n\n```python\nimport json\nprint(json.dumps({'a': 1}))\n```\n"


def sandbox_state(page) -> str | None:
    return page.evaluate("document.body.dataset.sandbox ?? null")


def open_and_decide(margin: Margin, requests: list[str]):
    page = margin.context.new_page()
    page.add_init_script("globalThis.__marginSandboxWarmup = true")  # the harness turns it off
    page.on("request", lambda request: requests.append(request.url))
    page.goto(margin.url("sidepanel.html"))
    margin.wait_panel_ready(page)
    # Decided in the idle time after the first paint: "cold", or "warm" and then "prepared".
    page.wait_for_function("() => !!document.body.dataset.sandbox", timeout=COLD_TIMEOUT_MS)
    return page


def test_no_warm_up_without_a_python_block_and_with_python_off_until_a_block_is_shown(margin: Margin):
    margin.storage_set({"runPython": "off", "providers": [PROVIDER], "activeProviderId": PROVIDER["id"]})
    margin.storage_set({"history": history(NO_PYTHON)})
    requests: list[str] = []
    page = open_and_decide(margin, requests)
    assert sandbox_state(page) == "cold"
    assert page.locator("iframe.code-sandbox").count() == 0
    expect(page.locator(".code-block")).to_have_count(2)  # the blocks are there, none of them Python
    assert not [url for url in requests if "/pyodide/" in url or "/sandbox/" in url]

    # An answer with a Python block arrives: the sandbox warms, though Python is still off for the model.
    margin.storage_set({"history": history(NO_PYTHON) + history(WITH_PYTHON)})
    page.locator("iframe.code-sandbox").wait_for(state="attached", timeout=COLD_TIMEOUT_MS)
    page.wait_for_function("() => document.body.dataset.sandbox === 'prepared'", timeout=WARM_TIMEOUT_MS)
    assert [url for url in requests if url.endswith("/sandbox/sandbox.html")]

    # Its Run finds Python up: nothing to wait for, so the final line counts no loading.
    block = page.locator("article[data-role=assistant] .code-block", has_text="json.dumps").first
    block.get_by_role("button", name="Run").click()
    output = block.locator("xpath=following-sibling::div[contains(@class,'code-run')][1]")
    page.wait_for_function(
        "(node) => node.dataset.status", arg=output.element_handle(), timeout=WARM_TIMEOUT_MS
    )
    assert output.get_attribute("data-status") == "ok", output.inner_text()
    assert re.fullmatch(r"Ran in \d+\.\d s", output.locator(".code-run-status").text_content())
    assert '{"a": 1}' in output.locator(".code-run-stdout").inner_text()


PING_JS = """() => new Promise((resolve) => {
  const frame = document.querySelector("iframe.code-sandbox");
  addEventListener("message", function listen(event) {
    if (event.source !== frame.contentWindow || event.data?.type !== "pong") return;
    removeEventListener("message", listen);
    resolve(event.data.how);
  });
  frame.contentWindow.postMessage({channel: "margin-sandbox", v: 1, type: "ping"}, "*");
})"""


def test_the_model_may_run_python_so_the_sandbox_warms_and_the_next_one_boots_from_its_snapshot(
    margin: Margin,
):
    margin.storage_set({"runPython": "ask", "providers": [PROVIDER], "activeProviderId": PROVIDER["id"]})
    margin.storage_set({"history": history(NO_PYTHON)})
    first = open_and_decide(margin, [])
    first.wait_for_function("() => document.body.dataset.sandbox === 'prepared'", timeout=WARM_TIMEOUT_MS)
    assert first.locator("iframe.code-sandbox").count() == 1
    assert first.evaluate(PING_JS) == "fresh"  # a first sandbox ever: it leaves a snapshot
    # The snapshot is kept by the panel (IndexedDB) once the sandbox hands it over.
    first.wait_for_function(
        """() => new Promise((resolve) => {
          const open = indexedDB.open("margin-sandbox", 1);
          open.onupgradeneeded = () => open.result.createObjectStore("snapshots");
          open.onsuccess = () => {
            const get = open.result.transaction("snapshots").objectStore("snapshots").get("python");
            get.onsuccess = () => { open.result.close(); resolve(get.result?.bytes instanceof Uint8Array); };
          };
        })""",
        timeout=COLD_TIMEOUT_MS,
    )
    first.close()
    second = open_and_decide(margin, [])
    second.wait_for_function("() => document.body.dataset.sandbox === 'prepared'", timeout=WARM_TIMEOUT_MS)
    assert second.evaluate(PING_JS) == "snapshot"

    # "Let the model run Python" off, no Python block: the next panel stays cold.
    second.close()
    margin.storage_set({"runPython": "off"})
    third = open_and_decide(margin, [])
    assert sandbox_state(third) == "cold" and third.locator("iframe.code-sandbox").count() == 0
