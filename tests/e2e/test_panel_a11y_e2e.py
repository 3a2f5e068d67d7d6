"""Accessibility of the side panel and the sessions drawer: axe-core finds no violation in any
state a user meets (empty, with a conversation and attachment cards (one aged), with an alert, in edit
mode, waiting for an answer's first words, while it streams; the drawer with sessions listed,
after a delete, renaming, and with none), in light and dark themes, in English, Japanese and
Russian."""

from __future__ import annotations

import base64

import pytest
from a11y import violations
from fake_behaviours import slow_stream
from harness import COLD_TIMEOUT_MS, Margin
from histories import AGED

DOT = "data:image/png;base64," + base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
    )
).decode("ascii")

CONVERSATION = [
    {
        "role": "user",
        "content": "[Page context] Page: How rivers carve canyons\nURL: https://example.com/rivers\n"
        "Attached: 2026-12-02 14:05 UTC\n\nRivers carve canyons over millions of years.",
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
        "usage": {"input": 1200, "cachedInput": 200, "output": 310},
        "cost": 0.0031,
        "content": "## Canyons\n\n| river | depth |\n| --- | ---: |\n| Colorado | 1.8 km |\n\n"
        "```python\nprint(1.8 * 1000)\n```\n\nSee [the USGS page](https://www.usgs.gov/).",
    },
]


def legacy(sid: str, name: str, at: int) -> dict:
    history = [{"role": "user", "content": f"{name}?"}, {"role": "assistant", "content": "ok"}]
    return {"id": sid, "name": name, "createdAt": at, "pinned": sid == "s1", "history": history}


class Audit:
    """axe-core on the page as it is, in both themes (reduced motion: no transition half-way)."""

    def __init__(self, page, tag: str):
        self.page, self.tag, self.found = page, tag, []
        self.checked: list[str] = []

    def __call__(self, state: str) -> None:
        for scheme in ("light", "dark"):
            self.page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
            self.page.wait_for_timeout(250)
            found = violations(self.page)
            self.found += [f"{self.tag} {state} {scheme}: {line}" for line in found]
            self.checked.append(f"{state}/{scheme}")


def open_panel(margin: Margin, tag: str):
    page = margin.context.new_page()
    page.set_viewport_size({"width": 400, "height": 760})
    page.goto(margin.url("sidepanel.html"))
    page.wait_for_function(
        "(tag) => document.body.dataset.ready === '1' && document.documentElement.lang === tag",
        arg=tag,
        timeout=COLD_TIMEOUT_MS,
    )
    return page


@pytest.mark.parametrize("tag", ["en", "ja", "ru"])
def test_the_panel_and_the_drawer_have_no_violations(
    margin: Margin, fake_provider, provider_config, tag, tmp_path
):
    if tag != "en":
        margin.storage_set({"uiLanguage": tag})
    margin.storage_set(
        {"savedSessions": [legacy("s1", "Rivers", 1764684300000), legacy("s2", "Lyon", 1700000000000)]}
    )
    page = open_panel(margin, tag)
    audit = Audit(page, tag)
    audit("empty, no provider")

    margin.save_provider(base_url=provider_config["baseUrl"], api_key=provider_config["apiKey"], name="Local")
    margin.storage_set({"history": AGED + CONVERSATION})
    page.locator(".attachment-card[data-slimming=aged]").wait_for(timeout=COLD_TIMEOUT_MS)
    page.locator("article[data-role=assistant] .code-run-button").wait_for(timeout=COLD_TIMEOUT_MS)
    audit("conversation with attachment cards, one aged")

    note = tmp_path / "notes.txt"
    note.write_text("not a picture", encoding="utf-8")
    page.locator("#file-input").set_input_files(str(note))
    margin.wait_alert(page)
    audit("alert")
    page.locator("#alert-dismiss").click()

    page.locator("article[data-role=user] button[data-action=edit]").last.click()
    page.locator("#edit-bar").wait_for(state="visible")
    audit("edit mode")
    page.keyboard.press("Escape")
    page.locator("#edit-bar").wait_for(state="hidden")

    first = slow_stream(chunks=100, delay=0.1)
    first.first_delay = 3.0
    fake_provider.script(first)
    page.locator("#message").fill("More, please")
    page.locator("#message").press("Enter")
    margin.wait_turn_state(page, "streaming")
    page.locator("article[data-streaming] .typing").wait_for(timeout=COLD_TIMEOUT_MS)
    audit("waiting for the first words")
    page.locator("article[data-streaming] .md").filter(has_text="word3").wait_for(timeout=COLD_TIMEOUT_MS)
    audit("streaming")
    page.locator("#send").click()
    margin.wait_turn_state(page, "idle")

    page.locator("#sessions").click()
    page.locator(".sp-item").nth(1).wait_for(timeout=COLD_TIMEOUT_MS)
    audit("drawer with sessions")
    page.locator(".sp-item[data-id=s2] [data-action=delete]").click()
    page.locator(".sp-toast").wait_for(state="visible")
    audit("drawer after a delete (its undo toast)")
    page.locator(".sp-item[data-id=s1] [data-action=rename]").click()
    page.locator(".sp-rename").wait_for()
    audit("drawer renaming a session")
    page.keyboard.press("Escape")
    page.locator(".sp-search").fill("zzzz-nothing")
    page.locator(".sp-empty").wait_for(state="visible")
    audit("drawer with no match")

    assert len(audit.checked) == 20
    assert audit.found == [], "\n".join(audit.found)
