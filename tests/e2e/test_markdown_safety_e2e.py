"""Hostile model output can never run script in the panel, whether streamed or painted from storage."""

from __future__ import annotations

from fake_provider import FakeProvider
from harness import Margin

HOSTILE = "\n\n".join(
    [
        "Safe **start**.",
        '<img src=x onerror="window.__pwned=1">',
        "<script>window.__pwned=1</script>",
        "[click](javascript:window.__pwned=1)",
        '<a href="javascript:window.__pwned=1">x</a>',
        '<svg onload="window.__pwned=1"><circle r="5"/></svg>',
        '<iframe src="javascript:window.parent.__pwned=1"></iframe>',
        '<details open ontoggle="window.__pwned=1">d</details>',
        '<a href="JaVaScRiPt:window.__pwned=1">y</a> [z](  javascript:window.__pwned=1  )',
        "```html\n<script>window.__pwned=1</script>\n```",
        "Safe end.",
    ]
)

DANGEROUS = (
    "script, iframe, object, embed, svg[onload], [onerror], [onload], [ontoggle], "
    "a[href^='javascript' i], a[href*='javascript:' i], [src^='javascript' i]"
)


# Resolves once every event the hostile markup could have set off has had its turn: each image in
# the conversation has finished loading or failing (`complete`: its load/error event has fired), a
# probe image with the hostile `src=x` has failed the same way, and a probe <details open> has had
# its toggle event, queued like the hostile one would be. Then one more task, for what they queued.
EVENTS_SETTLED_JS = """async () => {
    const log = document.querySelector("[role=log]");
    const finished = (img) => img.complete ? Promise.resolve() : new Promise((resolve) => {
        img.addEventListener("load", resolve, { once: true });
        img.addEventListener("error", resolve, { once: true });
    });
    const probeImage = new Image();
    const probeFailed = new Promise((resolve) => {
        probeImage.addEventListener("error", resolve, { once: true });
        probeImage.addEventListener("load", resolve, { once: true });
    });
    probeImage.src = "x";
    const probeDetails = document.createElement("details");
    const probeToggled = new Promise((resolve) => probeDetails.addEventListener("toggle", resolve, { once: true }));
    probeDetails.open = true;
    document.body.append(probeDetails);
    await Promise.all([probeFailed, probeToggled, ...[...log.querySelectorAll("img")].map(finished)]);
    probeDetails.remove();
    await new Promise((resolve) => setTimeout(resolve, 0));
    return true;
}"""


def assert_harmless(page) -> None:
    assert page.evaluate(EVENTS_SETTLED_JS)
    assert page.evaluate("window.__pwned") is None
    log = page.get_by_role("log", name="Conversation")
    assert log.locator(DANGEROUS).count() == 0, log.inner_html()
    answer = page.locator("article[data-role=assistant]").last
    assert answer.locator("strong").inner_text() == "start"
    assert "Safe end." in answer.inner_text()
    # The fenced code stays visible as text.
    assert "<script>window.__pwned=1</script>" in answer.locator("pre").inner_text()


def test_hostile_markdown_never_runs(configured_margin: Margin, fake_provider: FakeProvider):
    margin = configured_margin
    page = margin.open_panel()
    fake_provider.script(reply=HOSTILE, chunks=12)
    margin.send(page, "Say something nasty")
    margin.wait_answer(page)
    assert_harmless(page)
    assert (
        margin.history()[-1]["content"] == HOSTILE
    )  # stored as the model sent it; only the view is sanitized

    page.close()
    painted = margin.open_panel()
    assert_harmless(painted)
