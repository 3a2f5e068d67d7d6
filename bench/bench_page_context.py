"""Page-context figures of issue 7: Attach page on a 100 KB article, again from the site cache, and
the service-worker starts that tab activity causes when nothing is cached.

Concept: measurement functions in the style of `bench/run.py` (each takes its `Bench` and returns
a list of dicts with `Result`'s fields), appended by run.py. Run alone through run.py:
`MARGIN_DIST=dist/margin python3 bench/run.py --only attach_page,tab_event_wakes`.

1. `attach_page`: `tab.attach` on a ~100 KB article served on 127.0.0.1, timed from an extension
   page (worker running, Python up): the first attach of each fresh tab extracts (Readability in
   the tab, then Python's text pass); attaching the same unchanged tab again reads the site cache.
   Reported: both medians and their ratio in the same run. Every call is checked (the stored record
   holds the article, `fromCache` says which path ran), so a broken product gives an error.
2. `tab_event_wakes`: the worker stopped with nothing cached, then 20 tab events (opens,
   navigations, switches, closes); the worker starts counted from the browser's target list over
   CDP, which never attaches to the worker. Target: 0.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from bench_result import result
from web_pages import WebPages, article_html

ARTICLE_PARAGRAPHS = 620  # ~100 KB of HTML


ATTACH = """() => { const t = performance.now();
  return chrome.runtime.sendMessage({type: 'tab.attach', payload: {}})
    .then((r) => [performance.now() - t, r]); }"""


def _attach(bench, expect_cache: bool) -> float:
    elapsed, reply = bench.margin._extension_page().evaluate(ATTACH)
    if not (isinstance(reply, dict) and reply.get("ok")):
        raise RuntimeError(f"tab.attach failed: {reply!r}")
    if reply["value"]["fromCache"] is not expect_cache:
        raise RuntimeError(f"tab.attach took the wrong path (fromCache={reply['value']['fromCache']})")
    return elapsed


def attach_page(bench) -> list[dict[str, Any]]:
    margin = bench.margin
    html = article_html(ARTICLE_PARAGRAPHS)
    with WebPages({"/long.html": ("text/html; charset=utf-8", html.encode())}) as web:
        margin.send_message({"type": "app.ping", "payload": {}})
        fresh: list[float] = []
        cached: list[float] = []
        chars = 0
        for _ in range(max(3, bench.runs)):
            margin.storage_set({"history": []})
            tab = margin.context.new_page()
            tab.goto(web.url("/long.html"))
            tab.wait_for_load_state("load")
            tab.bring_to_front()
            fresh.append(_attach(bench, expect_cache=False))
            record = margin.history()[-1]
            if "Paragraph 559" not in record["content"]:
                raise RuntimeError("the attached text does not hold the whole article")
            chars = record["attachment"]["chars"]
            margin.storage_set({"history": []})  # not a duplicate: the cache path appends again
            cached.append(_attach(bench, expect_cache=True))
            tab.close()
    first, again = statistics.median(fresh), statistics.median(cached)
    note = f"{len(html) // 1024} KB of HTML, {chars:,} characters attached"
    return [
        result("attach_page_extract", round(first, 1), "ms", samples=fresh, note=note),
        result("attach_page_cached", round(again, 1), "ms", samples=cached, note="same tab, unchanged page"),
        result(
            "attach_page_cache_ratio",
            round(again / first, 4),
            "x",
            target=0.5,
            samples=[],
            note="cached ÷ extract, same run",
        ),
    ]


def tab_event_wakes(bench) -> list[dict[str, Any]]:
    margin = bench.margin
    with WebPages() as web:
        margin.storage_clear()
        margin.stop_service_worker()
        starts = margin.watch_worker_starts()
        events = 0
        pages = []
        for _ in range(5):
            page = margin.context.new_page()  # open
            page.goto(web.url("/article.html"))
            page.goto(web.url("/empty.html"))  # navigate
            pages.append(page)
            events += 2
            starts.sample()
        for page in pages:
            page.bring_to_front()  # switch
            events += 1
            starts.sample()
        for page in pages:
            page.close()  # close
            events += 1
            starts.sample()
        starts.watch_for(1.5)
        count = starts.count
        starts.close()
    return [
        result(
            "worker_starts_from_tab_events",
            count,
            "starts",
            target=0,
            compare="at_most",
            note=f"{events} tab events, nothing cached, worker stopped",
        )
    ]


METRICS = [attach_page, tab_event_wakes]
