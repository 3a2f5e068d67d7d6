"""The code sandbox's benchmark: a pandas + matplotlib run cold and warm, and what the scientific
wheels add to the extension's size.

`sandbox_runs` frames sandbox/sandbox.html in an extension page and drives it by its own messages
(extension/sandbox/sandbox.js rule 2), timing from the "run" message to its "done": the cold run
loads numpy, pandas, matplotlib and their dependencies from the extension and builds matplotlib's
font cache; the warm run is the same code again in the same worker. `extension_size` needs no
browser: the built dist with and without the wheels that only the sandbox loads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_result import result

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


METRICS = [sandbox_runs, extension_size]
BROWSERLESS_METRICS = [extension_size]
