"""The side panel paints stored history before the Markdown libraries load, then upgrades it in
place: the upgraded conversation is the one a direct render gives, the kept render is shown only
when it is the sanitizer's own shape, and the view stays at the bottom."""

from __future__ import annotations

import base64
import json
from typing import Any

from harness import Margin
from histories import realistic_history

# A 1x1 PNG: an attached image and a Markdown image (data: URLs are the only images allowed).
DOT = (
    "data:image/png;base64,"
    + base64.b64encode(
        bytes.fromhex(
            "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
            "1f15c4890000000d49444154789c6360f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
        )
    ).decode()
)

PAGE = (
    "[Page context] Page: How rivers carve canyons\nURL: https://example.com/rivers\n"
    "Attached: 2026-12-02 14:05 UTC\n\nRivers carve canyons over millions of years."
)

SPECIAL: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": PAGE,
        "attachment": {
            "kind": "page",
            "title": "How rivers carve canyons",
            "url": "https://example.com/rivers",
            "site": "example.com",
            "chars": 44,
            "truncated": False,
            "originalChars": 44,
            "method": "readability",
            "capturedAt": 1764684300000,
        },
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture, and how do rivers cut rock?"},
            {"type": "image_url", "image_url": {"url": DOT}, "meta": {"name": "dot.png", "alt": "a dot"}},
        ],
        "createdAt": 1764684310000,
    },
    {
        "role": "assistant",
        "createdAt": 1764684320000,
        "usage": {"input": 1200, "cachedInput": 0, "output": 310},
        "content": (
            "## Canyons\n\n| river | depth |\n| --- | ---: |\n| Colorado | 1.8 km |\n| Yarlung | 6 km |\n\n"
            "```python\ndef depth(rate_mm, years):\n    return rate_mm * years / 1e6  # km\n```\n\n"
            "Read [the USGS page](https://www.usgs.gov/) and see ![a dot](" + DOT + ").\n\n"
            "```js\nconst km = (mm, years) => (mm * years) / 1e6;\n```\n\n> Water and time.\n\n- one\n- two"
        ),
    },
]
HISTORY = realistic_history(30) + SPECIAL
ANSWERS = sum(record["role"] == "assistant" for record in HISTORY)  # 16, each with a table

# Set up before the panel's scripts run: notes, as they happen, when the libraries arrive (markdown.js
# puts highlight.js's stylesheets in <head> as it loads) and what the conversation held then; and
# whether anything that could run script ever entered the page.
WATCH = """
(() => {
  const seen = { librariesAt: null, atLibraries: null, dangerous: 0 };
  window.__firstPaintWatch = seen;
  const snapshot = () => {
    const md = [...document.querySelectorAll("#history article.assistant .md")];
    return {
      articles: document.getElementById("history")?.children.length ?? 0,
      pending: document.querySelectorAll("#history article[data-pending]").length,
      tables: document.querySelectorAll("#history .md table").length,
      plain: md.filter((m) => m.classList.contains("pending")).length,
      painted: typeof window.__marginFirstPaint === "number",
    };
  };
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (seen.librariesAt === null && node.matches("link[href*='hljs-']")) {
          seen.librariesAt = performance.now();
          seen.atLibraries = snapshot();
        }
        const all = [node, ...node.querySelectorAll("*")];
        for (const el of all) {
          if (el.matches("#history script, #history iframe, #history object, #history embed")) seen.dangerous++;
          for (const attr of el.attributes) if (/^on/i.test(attr.name)) seen.dangerous++;
        }
      }
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""

# The conversation's DOM with code normalized to its text (highlighting is lazy: it depends on what
# scrolled into view), and, apart, the highlighted HTML of each code block that has it.
SNAPSHOT = """() => {
  const history = document.getElementById("history").cloneNode(true);
  const highlighted = {};
  history.querySelectorAll("pre > code").forEach((code, i) => {
    if (code.dataset.highlighted) highlighted[i] = code.innerHTML;
    code.textContent = code.textContent;
    code.removeAttribute("data-highlighted");
    code.classList.remove("hljs");
    if (!code.getAttribute("class")) code.removeAttribute("class");
  });
  return { html: history.innerHTML, highlighted };
}"""

SETTLED = """() => !document.querySelector("#history [data-pending]")
  && [...document.querySelectorAll("#history pre > code")].slice(-2).every((c) => c.dataset.highlighted)"""

AT_BOTTOM = "() => { const c = document.getElementById('conversation'); return c.scrollHeight - c.scrollTop - c.clientHeight < 48; }"


def _open(margin: Margin):
    page = margin.launched.context.new_page()
    page.add_init_script(WATCH)
    page.goto(margin.url("sidepanel.html"))
    page.wait_for_function("() => typeof window.__marginFirstPaint === 'number'", timeout=30_000)
    page.wait_for_function(SETTLED, timeout=30_000)
    return page


def _kept(page):
    """Waits until the kept render holds the newest answers (written in idle time)."""
    page.wait_for_function(
        f"() => JSON.parse(localStorage.getItem('margin.renderCache') || 'null')?.entries?.length === {ANSWERS}",
        timeout=30_000,
    )
    return page


def _direct_render(page) -> dict:
    """The same history painted again with the libraries loaded: a non-initial paint renders each
    bubble's Markdown at once."""
    page.evaluate("() => chrome.storage.local.set({history: []})")
    page.wait_for_function("() => !document.getElementById('history').firstChild")
    page.evaluate(f"() => chrome.storage.local.set({{history: {json.dumps(HISTORY)}}})")
    page.wait_for_function(f"() => document.getElementById('history').children.length === {len(HISTORY)}")
    page.wait_for_function(SETTLED, timeout=30_000)
    return page.evaluate(SNAPSHOT)


def _assert_same(upgraded: dict, direct: dict) -> None:
    assert upgraded["html"] == direct["html"]
    both = set(upgraded["highlighted"]) & set(direct["highlighted"])
    assert len(both) >= 2  # the last code blocks (in view) are highlighted in both
    for index in both:
        assert upgraded["highlighted"][index] == direct["highlighted"][index]


def test_history_paints_before_the_libraries_and_upgrades_to_the_direct_render(margin: Margin):
    margin.storage_set({"history": HISTORY})
    page = _open(margin)
    watch = page.evaluate("window.__firstPaintWatch")
    marks = page.evaluate("window.__marginPaintBreakdown")
    # The libraries came after the first frame, and the whole conversation was on screen without them.
    assert watch["librariesAt"] is not None and watch["librariesAt"] > marks["paintedAt"]
    assert watch["atLibraries"]["painted"] and watch["atLibraries"]["articles"] == len(HISTORY)
    assert watch["atLibraries"]["tables"] == 0  # no kept render yet: plain text
    assert watch["atLibraries"]["plain"] == ANSWERS
    assert page.evaluate(AT_BOTTOM)
    # The upgraded bubbles work: the attachment card, the thumbnail, Copy, Regenerate, the usage line.
    log = page.get_by_role("log", name="Conversation")
    assert log.get_by_role("button", name="Open image: a dot").count() == 1
    assert log.get_by_role("button", name="Regenerate").count() == 1
    assert log.get_by_role("button", name="Copy code").count() == 2 + 15
    assert page.locator("#history .usage-line").count() == 1
    assert page.locator("#history table").count() == ANSWERS
    assert page.locator("#history .md a[href='https://www.usgs.gov/']").count() == 1
    assert page.locator("#history .md img[src^='data:image/png']").count() == 1
    upgraded = page.evaluate(SNAPSHOT)
    _assert_same(upgraded, _direct_render(page))
    assert page.evaluate("window.__firstPaintWatch.dangerous") == 0
    page.close()


def test_the_kept_render_paints_the_newest_answers_as_they_looked(margin: Margin):
    margin.storage_set({"history": HISTORY})
    _kept(_open(margin)).close()  # renders, and keeps the newest answers' sanitized HTML
    page = _open(margin)
    at_libraries = page.evaluate("window.__firstPaintWatch.atLibraries")
    # Before the libraries: every answer (the 16 newest are kept) as it looked, none as plain text.
    assert at_libraries["articles"] == len(HISTORY)
    assert at_libraries["tables"] == ANSWERS and at_libraries["plain"] == 0
    assert at_libraries["pending"] == ANSWERS  # still to be rendered from their records
    assert page.evaluate(AT_BOTTOM)
    upgraded = page.evaluate(SNAPSHOT)
    _assert_same(upgraded, _direct_render(page))
    page.close()


NEW_ANSWER = "A **new** answer.\n\n```python\nx = 1\n```\n\n```js\nlet y = 2;\n```"


def test_a_changed_answer_or_a_tampered_kept_render_is_never_shown(margin: Margin):
    margin.storage_set({"history": HISTORY})
    page = _kept(_open(margin))
    # Anything of the extension's origin could write the cache: make every kept render hostile.
    page.evaluate("""() => {
      const value = JSON.parse(localStorage.getItem("margin.renderCache"));
      for (const entry of value.entries) entry.html = '<table><tr><td>stale</td></tr></table><img src="x" onerror="window.__pwned=1">';
      localStorage.setItem("margin.renderCache", JSON.stringify(value));
    }""")
    page.close()
    changed = [*HISTORY[:-1], {**HISTORY[-1], "content": NEW_ANSWER}]
    margin.storage_set({"history": changed})
    page = _open(margin)
    at_libraries = page.evaluate("window.__firstPaintWatch.atLibraries")
    assert at_libraries["tables"] == 0  # neither the hostile value nor a stale render was shown
    assert page.evaluate("window.__firstPaintWatch.dangerous") == 0
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#history article.assistant .md").last.inner_text().startswith("A new answer.")
    page.close()


# The words on screen when the panel first puts the stored conversation in, before that frame is drawn.
FIRST_WORDS = """
(() => {
  window.__firstWords = null;
  const labels = (selector) => [...new Set([...document.querySelectorAll(selector)].map((node) => node.getAttribute("aria-label")))];
  new MutationObserver((_records, observer) => {
    if (!document.querySelector("#history article")) return;
    observer.disconnect();
    window.__firstWords = {
      painted: typeof window.__marginFirstPaint === "number",
      lang: document.documentElement.lang,
      log: document.getElementById("conversation").getAttribute("aria-label"),
      message: document.getElementById("message").getAttribute("aria-label"),
      copy: labels("#history article button[data-action='copy']"),
      edit: labels("#history article button[data-action='edit']"),
    };
  }).observe(document, { childList: true, subtree: true });
})();
"""


def test_the_first_paint_speaks_the_chosen_language_and_upgrades_to_its_direct_render(margin: Margin):
    # Japanese chosen in an English browser: the catalogue is fetched before anything is painted.
    margin.storage_set({"history": HISTORY, "uiLanguage": "ja"})
    page = margin.launched.context.new_page()
    page.add_init_script(FIRST_WORDS)
    page.goto(margin.url("sidepanel.html"))
    page.wait_for_function("() => typeof window.__marginFirstPaint === 'number'", timeout=30_000)
    page.wait_for_function(SETTLED, timeout=30_000)
    assert page.evaluate("window.__firstWords") == {
        "painted": False,
        "lang": "ja",
        "log": "会話",
        "message": "メッセージ",
        "copy": ["コピー"],
        "edit": ["編集"],
    }
    assert page.get_by_role("log", name="会話").get_by_role("button", name="再生成").count() == 1
    assert page.locator("#history table").count() == ANSWERS
    _assert_same(page.evaluate(SNAPSHOT), _direct_render(page))
    page.close()


# What the conversation looks like when the first frame is drawn (the moment sidepanel.js sets
# `window.__marginFirstPaint`), when the panel says it is ready (the older bubbles are in) and a
# frame later: how many bubbles, whether the view is at the bottom, where the newest bubble sits.
FRAMES = """
(() => {
  window.__frames = [];
  const look = (at) => {
    const log = document.getElementById("conversation");
    const articles = [...document.querySelectorAll("#history > article")];
    const rect = articles.at(-1)?.getBoundingClientRect();
    const fill = articles.reduce((sum, a) => sum + a.getBoundingClientRect().height, 0);
    window.__frames.push({
      at, articles: articles.length, fill, view: log.clientHeight, newestTop: rect?.top, newestBottom: rect?.bottom,
      bottom: log.scrollHeight - log.scrollTop - log.clientHeight, busy: log.getAttribute("aria-busy"),
    });
  };
  let value;
  Object.defineProperty(window, "__marginFirstPaint", {
    configurable: true,
    get: () => value,
    set: (painted) => { value = painted; look("painted"); },
  });
  new MutationObserver((_records, observer) => {
    if (!document.body?.dataset.ready) return;
    observer.disconnect();
    look("ready");
    requestAnimationFrame(() => requestAnimationFrame(() => look("after")));
  }).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-ready"] });
})();
"""

LONG = realistic_history(200)
# Each of its answers is taller than the view: only the newest code block is highlighted (in view).
SETTLED_LONG = """() => !document.querySelector("#history [data-pending]")
  && document.querySelector("#history article:last-child pre > code")?.dataset.highlighted"""


def test_the_first_frame_holds_the_newest_bubbles_and_the_older_ones_come_without_a_jump(margin: Margin):
    """conversation.js rule 10: the first frame builds only the bubbles that fill the view; the
    older ones go in above them once it is drawn, the view pinned to the bottom, and the panel
    ends with the DOM a one-shot render gives."""
    margin.storage_set({"history": LONG})
    # Python up first: a fresh profile's install-time boot would be measured with the panel (its
    # "Starting Python…" bar no longer moves a bubble: test_cold_start_e2e.py).
    assert margin.send_message({"type": "app.ping", "payload": {}})["ok"]
    page = margin.launched.context.new_page()
    page.add_init_script(FRAMES)
    page.goto(margin.url("sidepanel.html"))
    page.wait_for_function("() => window.__frames.length === 3", timeout=30_000)
    painted, ready, after = page.evaluate("window.__frames")
    # The first frame: the newest bubbles only, more than fill the view, the view at the bottom.
    assert 0 < painted["articles"] < len(LONG) // 2
    assert painted["fill"] > painted["view"] > 0
    assert painted["bottom"] < 1
    # Once ready, every bubble is in; the newest did not move and the view is still at the bottom.
    assert ready["articles"] == after["articles"] == len(LONG)
    assert ready["newestTop"] == painted["newestTop"] == after["newestTop"]
    assert ready["newestBottom"] == painted["newestBottom"]
    assert ready["bottom"] < 1 and after["bottom"] < 1
    # Putting in the older bubbles is not news for a screen reader (aria-busy for that frame).
    assert ready["busy"] == "true" and after["busy"] is None
    page.wait_for_function(SETTLED_LONG, timeout=60_000)
    assert page.evaluate(AT_BOTTOM)
    assert page.locator("#history table").count() == len(LONG) // 2
    upgraded = page.evaluate(SNAPSHOT)
    page.evaluate("() => chrome.storage.local.set({history: []})")
    page.wait_for_function("() => !document.getElementById('history').firstChild")
    page.evaluate(f"() => chrome.storage.local.set({{history: {json.dumps(LONG)}}})")
    page.wait_for_function(f"() => document.getElementById('history').children.length === {len(LONG)}")
    page.wait_for_function(SETTLED_LONG, timeout=60_000)
    direct = page.evaluate(SNAPSHOT)
    assert upgraded["html"] == direct["html"]
    assert upgraded["highlighted"] and upgraded["highlighted"] == direct["highlighted"]
    page.close()
