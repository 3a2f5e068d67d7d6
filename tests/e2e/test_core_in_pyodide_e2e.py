"""The Python core gives the same answers inside the extension's Pyodide as under CPython.

Most of the suite runs the core under CPython 3.11; the product runs it under Pyodide's CPython
3.12 in the service worker, from the wheel build.py made. This runs one probe in both and compares:
SSE decoding split at every index, request bytes, image placeholders (their words read from the
extension's _locales through the bridge in Pyodide, from the checkout under CPython), search folding (Unicode data
differs between Python versions), and the session digest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import Margin

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import json
from margin.base.sse import SSEDecoder
from margin.images.figures import figure_label, prepare_history_for_model
from margin.storage.history import Record
from margin.providers import openai
from margin.sessions import search as session_search

stream = 'data: {"choices":[{"delta":{"content":"Grüß"}}]}\r\n\r\n: keep-alive\n\ndata: {"choices":[{"delta":{"content":" 世界"}}]}\n\ndata: [DONE]\n\n'
splits = []
for cut in range(len(stream) + 1):
    decoder = SSEDecoder()
    events = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:]) + decoder.close()
    splits.append([e.data for e in events])

records = [
    Record("user", [{"type": "text", "text": "Look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                     "meta": {"name": "chart.png", "source": "file", "capturedAt": 1764511500000}}],
           {"imagesSeen": True}),
    Record("assistant", "A chart of signups."),
    Record("user", "Привет, ß and Æ?"),
]
provider = {"id": "p", "type": "openai", "name": "n", "baseUrl": "http://127.0.0.1:1/v1", "apiKey": "k", "model": "m"}
request = openai.build_chat_request(provider, prepare_history_for_model(records, language="zh"), stream=True, include_usage=True)

samples = ["Straße", "CAFÉ naïve", "Ｆｕｌｌｗｉｄｔｈ", "ǅemal", "ﬁnance", "Σίσυφος", "İstanbul", "世界", "Ⅻ", "ﬀ"]
result = {
    "platform": __import__("sys").platform,
    "splits_identical": all(s == splits[0] for s in splits),
    "events": splits[0],
    "request_body": request.body,
    "labels": [figure_label(3, {"name": "Screenshot of Docs", "source": "screenshot", "capturedAt": 1764511500000}, language=lang) for lang in ("en", "zh", "ja", "ru")],
    "folded": [session_search.fold(s) for s in samples],
}
json.dumps(result, ensure_ascii=False)
"""


def run_in_cpython() -> dict:
    code = PROBE.strip().rsplit("\n", 1)
    script = code[0] + "\nprint(" + code[1] + ")\n"
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO / "py"), "PATH": "/usr/bin:/bin"},
    )
    return json.loads(out.stdout)


def test_the_core_gives_the_same_answers_inside_pyodide(margin: Margin):
    assert margin.send_message({"type": "app.ping", "payload": {}})["ok"]
    worker = margin.context.service_workers[-1]
    # The worker's Python reads its words from the extension's _locales through the bridge
    # (margin.i18n.catalogue); CPython reads the checkout's: the same labels prove they are one catalogue.
    worker.evaluate(
        """async () => { const { pyodide } = await marginPython(); await pyodide.runPythonAsync(
            "from margin.i18n import catalogue\\nfrom margin.platform import browser as platform\\nfor lang in ('zh', 'ja', 'ru'):\\n    await catalogue.ensure(platform.browser_platform(), lang)"); }"""
    )
    in_pyodide = json.loads(
        worker.evaluate(
            "async (code) => { const { pyodide } = await marginPython(); return pyodide.runPython(code); }",
            PROBE,
        )
    )
    in_cpython = run_in_cpython()

    assert in_pyodide["splits_identical"] and in_cpython["splits_identical"]
    assert in_pyodide["events"] == [
        '{"choices":[{"delta":{"content":"Grüß"}}]}',
        '{"choices":[{"delta":{"content":" 世界"}}]}',
        "[DONE]",
    ]
    assert in_pyodide.pop("platform") == "emscripten" and in_cpython.pop("platform") != "emscripten"
    assert in_pyodide == in_cpython
