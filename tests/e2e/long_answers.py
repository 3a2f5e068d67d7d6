"""Long answers for the tests and the bench that paint them: the text, and the page-side probes.

`long_answer(n)` is varied Markdown (headings, lists, code, tables, quotes) of about n characters
that ends with "The end of the long answer."; `PAGE_GAP_PROBE_JS` (an init script) records every
gap between ticks of a 20 ms timer from the page's start, so a long task shows as a long gap;
`WHOLE_RENDER_JS` renders a text at once in the page and times it; `LAST_ANSWER_JS` says what the
last stored answer's bubble shows; `ANSWER_PAINTED_JS` is true once that bubble is Markdown to its
end; `open_panel_on_long_answer` stores a question and `text` as its answer and opens the panel
with the gap probe installed.
"""

from __future__ import annotations

from harness import Margin
from playwright.sync_api import Page


def long_answer(target_chars: int) -> str:
    """Varied Markdown of about `target_chars` characters, its sections numbered."""
    blocks: list[str] = []
    size = 0
    n = 0
    while size < target_chars:
        n += 1
        section = "\n\n".join(
            [
                f"## Section {n}",
                f"Paragraph {n}: the survey crew measured the **riverbank** again and noted how far the "
                f"water had cut into the clay since the last visit, marker `M-{n}` included.",
                f"- point one of {n}\n- point two of {n}\n  - a nested point",
                f"```python\ndef section_{n}():\n    return {n} * 2\n```",
                f"| marker | depth |\n|---|---|\n| M-{n} | {n % 97} cm |",
                f"> A quote in section {n}.",
            ]
        )
        blocks.append(section)
        size += len(section) + 2
    return "\n\n".join(blocks) + "\n\nThe end of the long answer."


# How long rendering the whole answer at once takes in this page, now, and what it shows.
WHOLE_RENDER_JS = """async (text) => {
    const { renderMarkdown } = await import("/panel/markdown.js");
    const target = document.createElement("div");
    const started = performance.now();
    renderMarkdown(target, text, { highlight: false });
    const ms = performance.now() - started;
    for (const button of target.querySelectorAll("button")) button.remove();
    return { ms, blocks: target.children.length, text: target.textContent.length };
}"""

# What the stored answer's bubble shows, its buttons aside (the panel adds "Run" to Python blocks).
LAST_ANSWER_JS = """() => {
    const md = [...document.querySelectorAll('#history article.msg.assistant .md')].pop().cloneNode(true);
    for (const button of md.querySelectorAll("button")) button.remove();
    return { blocks: md.children.length, text: md.textContent.length };
}"""

# Installed before the panel's own scripts: every gap between ticks of a 20 ms timer, from the start.
PAGE_GAP_PROBE_JS = """
    window.__gaps = [];
    let last = performance.now();
    window.__probe = setInterval(() => {
        const now = performance.now();
        window.__gaps.push(now - last);
        last = now;
    }, 20);
"""

# The last stored answer is painted as Markdown to its end (the plain-text first paint has no headings).
ANSWER_PAINTED_JS = """() => {
    const md = [...document.querySelectorAll('#history article.msg.assistant .md')].pop();
    return !!md && !md.classList.contains('pending') && !!md.querySelector('h2')
        && md.textContent.trimEnd().endsWith('The end of the long answer.');
}"""


def open_panel_on_long_answer(margin: Margin, text: str) -> Page:
    margin.storage_set(
        {
            "history": [
                {"role": "user", "content": "Write a very long report"},
                {"role": "assistant", "content": text},
            ]
        }
    )
    page = margin.context.new_page()
    page.add_init_script(PAGE_GAP_PROBE_JS)
    page.goto(margin.url("sidepanel.html"))
    margin.wait_panel_ready(page)
    return page
