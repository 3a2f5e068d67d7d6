"""The options page: a provider set up through the form is stored, and "Test connection" says plainly
whether the endpoint, key and model work."""

from __future__ import annotations

import re

from fake_provider import FakeProvider
from harness import Margin, poll


def announced(page) -> str:
    """The text of the page's live feedback (status or alert), once there is some."""
    feedback = page.locator("[role=status], [role=alert], output, [aria-live]").filter(
        has_text=re.compile(r"\S")
    )
    return poll(
        lambda: feedback.count() and " ".join(t.strip() for t in feedback.all_inner_texts() if t.strip()),
        timeout=30,
        message="the options page announced nothing",
    )


def test_save_stores_the_provider_and_it_survives_a_reload(margin: Margin, provider_config):
    page = margin.configure_provider(
        base_url=provider_config["baseUrl"], api_key=provider_config["apiKey"], name="My fake"
    )
    stored = margin.storage_get(["providers", "activeProviderId"])
    (provider,) = stored["providers"]
    assert provider["type"] == "openai"
    assert provider["name"] == "My fake"
    assert provider["baseUrl"] == provider_config["baseUrl"]
    assert provider["apiKey"] == provider_config["apiKey"]
    assert provider["model"] == "fake-model"
    assert stored["activeProviderId"] == provider["id"]

    page.reload()
    assert (
        page.get_by_role("textbox", name="Base URL", exact=True).input_value() == provider_config["baseUrl"]
    )
    assert page.get_by_role("textbox", name="Model", exact=True).input_value() == "fake-model"
    assert page.get_by_role("textbox", name="Name", exact=True).input_value() == "My fake"


def test_test_connection_says_it_works(margin: Margin, fake_provider: FakeProvider, provider_config):
    page = margin.open_options()
    margin.fill_provider_form(
        page, base_url=provider_config["baseUrl"], api_key=provider_config["apiKey"], model="fake-model"
    )
    page.get_by_role("button", name="Test connection").click()
    sentence = announced(page)
    assert re.search(r"connected|works|answered|success", sentence, re.I), sentence
    assert not re.search(r"reject|fail|error|could not", sentence, re.I), sentence
    assert fake_provider.requests, "Test connection did not reach the provider"
    assert all(
        r.headers.get("authorization") == f"Bearer {provider_config['apiKey']}"
        for r in fake_provider.requests
    )


def test_test_connection_with_a_bad_key_says_so(margin: Margin, fake_provider: FakeProvider, provider_config):
    page = margin.open_options()
    margin.fill_provider_form(
        page, base_url=provider_config["baseUrl"], api_key="sk-wrong-key", model="fake-model"
    )
    page.get_by_role("button", name="Test connection").click()
    sentence = announced(page)
    assert re.search(r"\bkey\b", sentence, re.I), sentence
    assert not re.search(r"connected|works|success", sentence, re.I), sentence
    assert len(fake_provider.requests) >= 1
