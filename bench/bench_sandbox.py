"""The code sandbox's benchmark: a pandas + matplotlib run cold and warm, and what the scientific
wheels add to the extension's size.

`sandbox_runs` frames sandbox/sandbox.html in an extension page and drives it by its own messages
(extension/sandbox/sandbox.js rule 2), timing from the "run" message to its "done": the cold run
loads numpy, pandas, matplotlib and their dependencies from the extension and builds matplotlib's
font cache; the warm run is the same code again in the same worker (a sandbox that boots from
scratch: no memory snapshot, no kept font list). `warm_sandbox_runs` drives the side panel as a
user does: the sandbox warms after the first paint (panel/sandbox_warmup.js), and the first Run is
set against the same Run warm. `warming_first_paint` checks that warming never delays the first
paint. `extension_size` needs no browser: the built dist with and without the wheels that only the
sandbox loads.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_result import median, result
from histories import realistic_history

from buildsteps import fetch, sources

CODE = """\
import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({"month": ["Jan", "Feb", "Mar"], "sales": [3, 5, 8]})
df.plot(x="month", y="sales")
print(df["sales"].sum())
df
"""

# Frames the sandbox, waits for its worker, then runs CODE twice; returns the times in ms.
RUNS_JS = """async (code) => {
  const frame = document.createElement("iframe");
  const made = performance.now();
  frame.src = "sandbox/sandbox.html";
  const boot = {channel: "margin-sandbox", v: 1, type: "boot"};
  frame.addEventListener("load", () => frame.contentWindow.postMessage(boot, "*"));
  document.body.append(frame);
  const waitFor = (type, id) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} in 300 s`)), 300000);
    addEventListener("message", function listen(event) {
      if (event.source !== frame.contentWindow || event.data?.type !== type) return;
      if (id && event.data.id !== id) return;
      removeEventListener("message", listen);
      clearTimeout(timer);
      resolve(event.data);
    });
  });
  await waitFor("ready");
  const ready = performance.now() - made;
  const times = [];
  for (const id of ["cold", "warm"]) {
    const started = performance.now();
    const done = waitFor("done", id);
    const message = {type: "run", id, code, timeoutMs: 120000, limit: 100000};
    frame.contentWindow.postMessage({channel: "margin-sandbox", v: 1, ...message}, "*");
    const reply = await done;
    const drawn = reply.status === "ok" && reply.result.figures.length;
    if (!drawn) throw new Error(JSON.stringify(reply).slice(0, 500));
    times.push(performance.now() - started);
  }
  frame.remove();
  return {ready, cold: times[0], warm: times[1]};
}"""


def sandbox_runs(bench: Any) -> list[dict[str, Any]]:
    page = bench.margin.open_panel()
    try:
        timings = page.evaluate(RUNS_JS, CODE)
    finally:
        page.close()
    ratio = timings["warm"] / timings["cold"]
    return [
        result("code sandbox: worker up (its own Pyodide, from the extension)", timings["ready"], "ms"),
        result(
            "code sandbox: pandas + matplotlib run, cold (loads the wheels, builds the font cache)",
            timings["cold"],
            "ms",
        ),
        result(
            "code sandbox: the same run again, warm",
            timings["warm"],
            "ms",
            note=f"{ratio:.3f}× the cold run, in the same run",
        ),
    ]


# Clicks block `index`'s Run in the panel; the ms from the click to the run's final status.
CLICK_RUN_JS = """async (index) => {
  const blocks = document.querySelectorAll("article[data-role=assistant] .code-block");
  const block = blocks[index];
  const button = block.querySelector(".code-run-button");
  const started = performance.now();
  button.click();
  const output = block.nextElementSibling;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no result in 300 s")), 300000);
    const check = () => {
      if (!output.dataset.status) return requestAnimationFrame(check);
      clearTimeout(timer);
      resolve();
    };
    check();
  });
  if (output.dataset.status !== "ok") throw new Error(output.innerText.slice(0, 500));
  return {ms: performance.now() - started, status: output.querySelector(".code-run-status").textContent};
}"""


def _answer(code: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Show me", "createdAt": 1_700_000_000_000},
        {"role": "assistant", "content": f"Here:\n\n```python\n{code}```\n", "createdAt": 1_700_000_001_000},
    ]


def _first_and_warm(bench: Any, page: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    page.locator(".code-run-button").first.wait_for()
    first = page.evaluate(CLICK_RUN_JS, 0)
    warm = page.evaluate(CLICK_RUN_JS, 0)
    return first, warm


def _ratio_row(
    name: str, firsts: list[float], warms: list[float], target: float, note: str
) -> dict[str, Any]:
    ratios = [f / w for f, w in zip(firsts, warms, strict=True)]
    return result(
        name,
        round(median(ratios), 2),
        "×",
        target,
        compare="at_most",
        samples=[round(r, 2) for r in ratios],
        note=f"first {median(firsts):.0f} ms, warm {median(warms):.1f} ms (medians); {note}",
    )


def _warming_panel(margin: Any, *, wait_ready: bool = True) -> Any:
    """The side panel with warming on (the harness launches with it off: tests/e2e/harness.py)."""
    page = margin.context.new_page()
    page.add_init_script("globalThis.__marginSandboxWarmup = true")
    page.goto(margin.url("sidepanel.html"))
    if wait_ready:
        margin.wait_panel_ready(page)
    return page


def warm_sandbox_runs(bench: Any) -> list[dict[str, Any]]:
    """A Python block on screen warms the sandbox after the first paint (panel/sandbox_warmup.js):
    the first Run of `print(1)` 3 s after the panel opened, and the first pandas + matplotlib Run
    once the warm-up has loaded its imports, each against the same Run warm, in one run; and the
    sandbox's memory once warmed (its Pyodide's wasm heap: the worker's memory, which never shrinks)."""
    margin = bench.margin
    rows: list[dict[str, Any]] = []
    heaps: list[float] = []
    # A first sandbox ever boots from scratch and leaves its memory snapshot for the next ones.
    margin.storage_set({"history": _answer("print(1)\n")})
    page = _warming_panel(margin)
    page.wait_for_function("() => document.body.dataset.sandbox === 'prepared'", timeout=300_000)
    page.close()
    for code, name, target, wait in (
        ("print(1)\n", "first Run of print(1), panel opened 3 s before ÷ the same Run warm", 3.0, "3 s"),
        (CODE, "first pandas + matplotlib Run in a freshly opened panel ÷ the same Run warm", 4.0, "warm-up"),
    ):
        margin.storage_set({"history": _answer(code)})
        firsts: list[float] = []
        warms: list[float] = []
        warmups: list[float] = []
        statuses: list[str] = []
        boots: list[dict[str, Any]] = []
        for _ in range(max(1, min(bench.runs, 3))):
            page = _warming_panel(margin, wait_ready=False)
            opened = time.monotonic()
            try:
                margin.wait_panel_ready(page)
                if wait == "3 s":
                    time.sleep(max(0.0, 3.0 - (time.monotonic() - opened)))  # the row's premise
                else:
                    page.wait_for_function(
                        "() => document.body.dataset.sandbox === 'prepared'", timeout=300_000
                    )
                    warmups.append((time.monotonic() - opened) * 1000)
                first, warm = _first_and_warm(bench, page)
                boots.append(page.evaluate(PING_JS))
            finally:
                page.close()
            firsts.append(first["ms"])
            warms.append(warm["ms"])
            statuses.append(first["status"])
        boot_ms = median([b["ms"] for b in boots]) / 1000
        hows = ",".join(sorted({b["how"] for b in boots}))
        note = f"first run said {statuses[-1]!r}; sandbox booted ({hows}) in {boot_ms:.1f} s"
        if warmups:
            note += f"; warm-up (open to imports loaded) {median(warmups) / 1000:.1f} s"
        rows.append(_ratio_row(name, firsts, warms, target, note))
        heaps.append(median([b["heapBytes"] for b in boots]) / 1e6)
    rows.append(
        result(
            "panel memory: the warmed sandbox's Python (wasm heap), print(1) / pandas + matplotlib",
            heaps[1],
            "MB",
            note=f"{heaps[0]:.0f} MB with nothing imported, {heaps[1]:.0f} MB with pandas + matplotlib;"
            " one worker per open panel",
        )
    )
    return rows


def _wait_kept_frame(page: Any) -> None:
    """As bench/run.py's first paint: the next open starts from the frame this one kept."""
    page.wait_for_function("() => !document.querySelector('[data-pending]')", timeout=60_000)
    page.wait_for_function("() => window.__marginFirstFrameKept > 0", timeout=60_000)


# After each open of warming_first_paint: a closed panel's sandbox (a ~100 MB wasm heap) is torn
# down while the next panel opens, in either half of the measurement.
SETTLE_S = 0.5


def warming_first_paint(bench: Any) -> list[dict[str, Any]]:
    """The panel's first paint over a 200-message history with Python blocks, with the sandbox
    warming after it ÷ with warming turned off (`__marginSandboxWarmup = false`), alternated in
    one run."""
    margin = bench.margin
    margin.storage_set({"history": realistic_history(200)})
    warming: list[float] = []
    cold: list[float] = []
    # One open first, not counted: a first open ever has no kept frame to show (3-4× slower).
    page = margin.open_panel()
    _wait_kept_frame(page)
    page.close()
    # Alternated, in turns of either order; the same init script in both, its value apart. Nothing
    # of the warm-up runs before the first paint. One open spreads from 45 to 130 ms on a quiet
    # machine: medians of 8 put the ratio anywhere in 0.93-1.18x from run to run, so 16 each.
    for turn in range(max(bench.runs, 16)):
        for warm in (False, True) if turn % 2 else (True, False):
            page = margin.context.new_page()
            try:
                page.add_init_script(f"globalThis.__marginSandboxWarmup = {'true' if warm else 'false'}")
                page.goto(margin.url("sidepanel.html"))
                page.wait_for_function("() => typeof window.__marginFirstPaint === 'number'", timeout=30_000)
                value = page.evaluate("window.__marginFirstPaint")
                expected = "prepared" if warm else "cold"
                page.wait_for_function(
                    f"() => document.body.dataset.sandbox === '{expected}'", timeout=300_000
                )
                _wait_kept_frame(page)
            finally:
                page.close()
            time.sleep(SETTLE_S)
            (warming if warm else cold).append(float(value))
    ratio = median(warming) / median(cold)
    return [
        result(
            "panel first paint with the sandbox warming ÷ without",
            round(ratio, 3),
            "×",
            1.05,
            compare="at_most",
            samples=warming,
            note=f"{median(warming):.0f} ms with, {median(cold):.0f} ms without (medians of {len(cold)})",
        ),
    ]


# The warmed sandbox's answer to a "ping": {ready, ms, how, heapBytes} (its boot and its wasm heap).
PING_JS = """() => new Promise((resolve, reject) => {
  const frame = document.querySelector("iframe.code-sandbox");
  const timer = setTimeout(() => reject(new Error("no answer to ping")), 10000);
  addEventListener("message", function listen(event) {
    if (event.source !== frame.contentWindow || event.data?.type !== "pong") return;
    removeEventListener("message", listen);
    clearTimeout(timer);
    resolve(event.data);
  });
  frame.contentWindow.postMessage({channel: "margin-sandbox", v: 1, type: "ping"}, "*");
})"""


def extension_size(_bench: Any = None) -> list[dict[str, Any]]:
    dist = Path(os.environ.get("MARGIN_DIST") or REPO / "dist" / "margin")
    lock = json.loads((dist / "pyodide" / "pyodide-lock.json").read_text())
    only_sandbox = set(fetch.with_dependencies(lock, sources.SANDBOX_PACKAGES)) - set(
        sources.PYODIDE_PACKAGES
    )
    wheels = sum(
        (dist / "pyodide" / lock["packages"][name]["file_name"]).stat().st_size for name in only_sandbox
    )
    total = sum(p.stat().st_size for p in dist.rglob("*") if p.is_file())
    return [
        result("extension size, with the sandbox's scientific wheels", total / 1e6, "MB"),
        result(
            "extension size without them",
            (total - wheels) / 1e6,
            "MB",
            note=f"{len(only_sandbox)} wheels, {wheels / 1e6:.1f} MB",
        ),
    ]


METRICS = [sandbox_runs, warm_sandbox_runs, warming_first_paint, extension_size]
BROWSERLESS_METRICS = [extension_size]
