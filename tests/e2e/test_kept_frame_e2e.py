"""The kept first frame (extension/panel/first_frame.js, extension/panel/kept_frame.js): a panel opened
again shows the conversation as it last looked before its module has loaded, then the panel takes
over in the task that builds its own first frame. The frame is the panel's settled DOM (the newest
bubbles), it counts as the first paint only when it shows the stored conversation, and what is
kept in localStorage can never run anything or reach assistive technology."""

from __future__ import annotations

import json
from typing import Any

from harness import Margin
from histories import realistic_history

HISTORY = realistic_history(60)

# Set up before the page's scripts: the kept frame as it was mounted (first_frame.js appends it and
# scrolls it in one task; a MutationObserver callback runs right after that task).
WATCH = """
(() => {
  const seen = { frames: [], scriptsRan: 0 };
  window.__keptFrameWatch = seen;
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1 || !node.matches(".first-frame")) continue;
        const conversation = node.querySelector(".conversation");
        seen.frames.push({
          html: node.outerHTML,
          inert: node.inert,
          ariaHidden: node.getAttribute("aria-hidden"),
          ids: node.querySelectorAll("[id]").length,
          bubbles: node.querySelectorAll("article[data-role]").length,
          fromBottom: conversation ? conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight : null,
          realBubbles: document.querySelectorAll("#history article[data-role]").length,
        });
      }
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""

# A bubble as the user sees it: its outer HTML with the parts that differ between two paints of the
# same record left out (ids are stripped from the kept frame; code is highlighted lazily, by what
# scrolled into view).
NORMALIZED_BUBBLES = """(root) => [...root.querySelectorAll(":scope article[data-role], :scope .attachment-card")].map((node) => {
  const copy = node.cloneNode(true);
  for (const el of [copy, ...copy.querySelectorAll("*")]) {
    el.removeAttribute("id");
    el.removeAttribute("aria-controls");
  }
  copy.querySelectorAll("pre > code").forEach((code) => {
    code.textContent = code.textContent;
    code.removeAttribute("data-highlighted");
    code.classList.remove("hljs");
    if (!code.getAttribute("class")) code.removeAttribute("class");
  });
  return copy.outerHTML;
})"""

SETTLED_AND_KEPT = "() => document.body.dataset.ready === '1' && !document.querySelector('#history [data-pending]') && window.__marginFirstFrameKept > 0"


def _open(margin: Margin, *, settle: bool = True):
    page = margin.context.new_page()
    page.add_init_script(WATCH)
    page.goto(margin.url("sidepanel.html"))
    page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=30_000)
    if settle:
        page.wait_for_function(SETTLED_AND_KEPT, timeout=30_000)
    return page


def _local_storage(margin: Margin, script: str, arg: Any = None) -> Any:
    """Runs `script` on an extension page that runs none of Margin's scripts (its localStorage)."""
    page = margin.context.new_page()
    try:
        page.goto(margin.url("manifest.json"))
        return page.evaluate(script, arg)
    finally:
        page.close()


def _kept_value(margin: Margin) -> dict[str, Any] | None:
    return _local_storage(margin, "() => JSON.parse(localStorage.getItem('margin.firstFrame') || 'null')")


def _bubbles_of_frame(page, html: str) -> list[str]:
    return page.evaluate(
        f"(html) => ({NORMALIZED_BUBBLES})(new DOMParser().parseFromString(html, 'text/html').body)", html
    )


def test_a_reopened_panel_shows_its_kept_frame_first_and_the_panel_takes_over_unchanged(margin: Margin):
    margin.storage_set({"history": HISTORY})
    _open(margin).close()  # the first open ever: nothing kept yet; it keeps its settled frame
    kept = _kept_value(margin)
    assert kept and kept["v"] == 1 and len(kept["html"]) <= 256 * 1024
    page = _open(margin)
    frames = page.evaluate("window.__keptFrameWatch.frames")
    marks = page.evaluate("window.__marginPaintBreakdown")
    assert len(frames) == 1
    frame = frames[0]
    # Up before the panel had built a bubble, at the bottom of the conversation, out of reach.
    assert frame["realBubbles"] == 0 and frame["bubbles"] >= 4
    assert frame["fromBottom"] is not None and frame["fromBottom"] <= 1
    assert frame["inert"] and frame["ariaHidden"] == "true" and frame["ids"] == 0
    # It showed the stored conversation, so it was the first paint; then it left.
    assert marks["keptFrame"] == "current"
    assert page.evaluate("window.__marginFirstPaint") == marks["keptFrameAt"]
    assert page.locator(".first-frame").count() == 0
    assert page.get_by_role("button", name="Send").count() == 1
    # What it showed is what the panel shows once settled: the newest bubbles, node for node.
    shown = _bubbles_of_frame(page, frame["html"])
    settled = page.evaluate(f"({NORMALIZED_BUBBLES})(document.getElementById('history'))")
    assert len(shown) == frame["bubbles"]
    assert shown == settled[-len(shown) :]
    assert "Answer 30" in shown[-1]
    page.close()


def test_a_frame_of_another_conversation_is_replaced_and_not_counted_as_the_first_paint(margin: Margin):
    margin.storage_set({"history": HISTORY})
    _open(margin).close()
    # The conversation moved on while the panel was closed (another window, a backup restored).
    changed = [
        *HISTORY,
        {"role": "user", "content": "One more question?", "createdAt": 1764700000000},
        {"role": "assistant", "content": "One more **answer**.", "createdAt": 1764700001000},
    ]
    margin.storage_set({"history": changed})
    page = _open(margin)
    marks = page.evaluate("window.__marginPaintBreakdown")
    assert len(page.evaluate("window.__keptFrameWatch.frames")) == 1
    assert marks["keptFrame"] == "stale"
    assert page.evaluate("window.__marginFirstPaint") > marks["keptFrameAt"]
    assert page.locator(".first-frame").count() == 0
    log = page.get_by_role("log", name="Conversation")
    assert "One more answer." in log.locator("article[data-role]").last.inner_text()
    page.close()
    # The panel kept the frame of the conversation it now shows.
    page = _open(margin)
    assert page.evaluate("window.__marginPaintBreakdown.keptFrame") == "current"
    page.close()
    # Another model chosen in the options while the panel was closed: the chip it showed is stale.
    provider = {
        "id": "p1",
        "type": "openai",
        "name": "Local",
        "baseUrl": "http://localhost:11434/v1",
        "model": "llama3.2",
    }
    margin.storage_set({"providers": [provider], "activeProviderId": "p1"})
    page = _open(margin)
    assert page.evaluate("window.__marginPaintBreakdown.keptFrame") == "stale"
    assert "llama3.2" in page.get_by_role("button", name="Switch model", exact=False).inner_text()
    page.close()
    margin.storage_set({"providers": [], "activeProviderId": None})


HOSTILE = (
    '<div class="app"><main class="main"><section class="conversation"><div class="history" id="history">'
    '<article class="msg assistant" data-role="assistant" id="planted" onclick="window.__ran = 1">'
    '<div class="md"><p>kept <a href="javascript:window.__ran=2">link</a> '
    '<a href="https://example.com/" onmouseover="window.__ran=3">ok</a></p>'
    '<script>window.__ran = 4</script><iframe srcdoc="<script>parent.__ran=5</script>"></iframe>'
    '<img src="x" onerror="window.__ran = 6"><object data="data:text/html,hi"></object>'
    '<img src="data:image/svg+xml,&lt;svg onload=&quot;window.__ran=7&quot;/&gt;">'
    '<form action="javascript:window.__ran=8"><button formaction="javascript:window.__ran=9" autofocus>go</button></form>'
    "<style>body { display: none }</style></div></article></div></section></main></div>"
)


def test_a_hostile_kept_frame_runs_nothing_and_a_malformed_one_is_not_shown(margin: Margin):
    margin.storage_set({"history": HISTORY})
    frame = {"v": 1, "version": None, "stamp": "1:0:x", "lang": "en", "html": HOSTILE}
    version = _local_storage(margin, "() => chrome.runtime.getManifest().version")
    frame["version"] = version
    _local_storage(margin, "(value) => localStorage.setItem('margin.firstFrame', value)", json.dumps(frame))
    page = margin.context.new_page()
    page.add_init_script(WATCH)
    page.goto(margin.url("sidepanel.html"))
    margin.wait_panel_ready(page)
    frames = page.evaluate("window.__keptFrameWatch.frames")
    assert len(frames) == 1
    mounted = page.evaluate(
        """(html) => {
          const body = new DOMParser().parseFromString(html, 'text/html').body;
          const all = [...body.querySelectorAll('*')];
          return {
            text: body.textContent.replace(/\\s+/g, ' ').trim(),
            tags: [...new Set(all.map((e) => e.localName))].sort(),
            handlers: all.flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name))).length,
            urls: all.flatMap((e) => ['href', 'src', 'action', 'formaction', 'srcdoc'].map((n) => e.getAttribute(n)).filter(Boolean)),
            ids: all.filter((e) => e.id).length,
            autofocus: all.filter((e) => e.hasAttribute('autofocus')).length,
          };
        }""",
        frames[0]["html"],
    )
    assert mounted["text"].startswith("kept link ok")
    assert {"script", "iframe", "object", "style"}.isdisjoint(mounted["tags"])
    assert mounted["handlers"] == 0 and mounted["ids"] == 0 and mounted["autofocus"] == 0
    assert mounted["urls"] == ["https://example.com/"]
    assert page.evaluate("window.__ran ?? null") is None
    # It was not this conversation: the panel replaced it with its own, all of it.
    assert page.evaluate("window.__marginPaintBreakdown.keptFrame") == "stale"
    assert page.locator("#history article[data-role]").count() == len(HISTORY)
    assert page.locator("#planted").count() == 0
    page.close()

    # Not one `.app`, or kept by another version of the extension: not shown at all.
    for value in (
        {**frame, "html": '<div class="app"></div><div class="app"></div>'},
        {**frame, "html": '<section class="app"></section>'},
        {**frame, "version": "0.0.0-other", "html": '<div class="app"><p>old</p></div>'},
        "{not json",
    ):
        text = value if isinstance(value, str) else json.dumps(value)
        _local_storage(margin, "(value) => localStorage.setItem('margin.firstFrame', value)", text)
        page = _open(margin, settle=False)
        assert page.evaluate("window.__keptFrameWatch.frames") == []
        assert page.evaluate("window.__marginPaintBreakdown.keptFrame") == "none"
        page.close()


def test_choosing_another_language_forgets_the_kept_frame(margin: Margin):
    margin.storage_set({"history": HISTORY})
    _open(margin).close()
    assert _kept_value(margin) is not None
    options = margin.open_options()
    options.get_by_label("Margin's language").select_option("es")
    options.wait_for_function("() => document.documentElement.lang === 'es'", timeout=10_000)
    assert _kept_value(margin) is None
    options.close()
    # The panel opens in Spanish without a frame, and keeps a Spanish one.
    page = _open(margin)
    assert page.evaluate("window.__marginPaintBreakdown.keptFrame") == "none"
    assert _kept_value(margin)["lang"] == "es"
    page.close()
    margin.storage_set({"uiLanguage": "auto"})
