"""Accessibility: axe-core finds no violation on the options page, in light and dark themes, in
English, Japanese and Russian (the language setting switched live, no browser restart)."""

from __future__ import annotations

import pytest
from a11y import violations
from harness import COLD_TIMEOUT_MS, Margin


def open_options(margin: Margin):
    page = margin.context.new_page()
    page.goto(margin.url("options.html"))
    page.locator("body[data-ready]").wait_for(state="attached", timeout=COLD_TIMEOUT_MS)
    return page


def set_language(margin: Margin, page, tag: str, heading: str) -> None:
    margin.storage_set({"uiLanguage": tag})
    page.get_by_role("heading", name=heading, exact=True, level=1).wait_for(timeout=COLD_TIMEOUT_MS)


@pytest.mark.parametrize(("tag", "heading"), [("en", "Settings"), ("ja", "設定"), ("ru", "Настройки")])
def test_the_options_page_has_no_violations_in_either_theme(margin: Margin, tag, heading):
    page = open_options(margin)
    # A saved provider: its row (the meta line on the active row's tint) is what a new user meets
    # right after saving; a key for an http:// server on another machine also shows the plain-HTTP
    # checkbox (a server on this machine, or one without a key, shows none).
    margin.send_message(
        {
            "type": "options.save",
            "payload": {
                "providers": [
                    {
                        "id": "p1",
                        "type": "openai",
                        "name": "Local",
                        "baseUrl": "http://192.168.1.20:11434/v1",
                        "apiKey": "sk-lan",
                        "allowPlainHttpKey": True,
                        "model": "llama3.2",
                    },
                    {
                        "id": "p2",
                        "type": "openai",
                        "name": "Other",
                        "baseUrl": "https://api.example.com/v1",
                        "model": "m",
                    },
                ],
                "activeProviderId": "p1",
            },
        },
        page,
    )
    page.reload()
    page.locator("body[data-ready]").wait_for(state="attached", timeout=COLD_TIMEOUT_MS)
    if tag != "en":
        set_language(margin, page, tag, heading)
    assert page.evaluate("document.documentElement.lang") == tag
    page.get_by_role(
        "button", name={"en": "Edit Local", "ja": "Local を編集", "ru": "Изменить Local"}[tag]
    ).click()
    for scheme in ("light", "dark"):
        # Reduced motion as well: the rows and buttons then change colour at once (no fade to
        # measure half-way), which is also what those users get.
        page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
        page.wait_for_timeout(400)
        found = violations(page)
        assert found == [], f"{tag}, {scheme} theme:\n" + "\n".join(found)
