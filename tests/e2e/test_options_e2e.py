"""The options page: a provider set up through the form is stored, and "Test connection" says plainly
whether the endpoint, key and model work."""

from __future__ import annotations

import re

from fake_provider import FakeProvider
from harness import MODEL_CHIP_NAME, Margin, poll
from playwright.sync_api import expect


def announced(page) -> str:
    """The text of the page's live feedback (status or alert), once there is some; the Sync
    section's standing state ("Sync is off.") is not feedback."""
    feedback = page.locator(
        "[role=status]:not(#sync-status), [role=alert], output, [aria-live]:not(#sync-status)"
    ).filter(has_text=re.compile(r"\S"))
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
    assert margin.model_field(page).input_value() == "fake-model"  # an input with a list: a combobox
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


# -- provider types, the system prompt, the model list, several providers -------------------------


def test_the_type_combobox_lists_the_types_python_knows(margin: Margin):
    from margin.providers import DEFAULT_BASE_URLS, PROVIDER_TYPES

    page = margin.open_options()
    kind = page.get_by_role("combobox", name="Provider type")
    options = kind.evaluate("e => [...e.options].map(o => [o.value, o.textContent])")
    assert options == [[name, entry["label"]] for name, entry in PROVIDER_TYPES.items()]

    base_url = page.get_by_role("textbox", name="Base URL", exact=True)
    others = [name for name in PROVIDER_TYPES if name != "openai"]
    for name in [*others, "openai"]:
        kind.select_option(name)
        assert base_url.input_value() == DEFAULT_BASE_URLS.get(name, ""), name
    base_url.fill("http://localhost:11434/v1")
    for name in others:  # a Base URL the user typed is never replaced
        kind.select_option(name)
        assert base_url.input_value() == "http://localhost:11434/v1"
    if not others:
        base_url.fill("")
        kind.select_option("openai")
        kind.dispatch_event("change")
        assert base_url.input_value() == DEFAULT_BASE_URLS["openai"]


def test_the_system_prompt_is_saved_and_sent_first(
    margin: Margin, fake_provider: FakeProvider, provider_config
):
    page = margin.configure_provider(
        base_url=provider_config["baseUrl"],
        api_key=provider_config["apiKey"],
        system_prompt="  Answer like a pirate.  ",
    )
    (stored,) = margin.storage_get(["providers"])["providers"]
    assert stored["systemPrompt"] == "Answer like a pirate."
    page.reload()
    assert page.get_by_role("textbox", name="System prompt").input_value() == "Answer like a pirate."

    panel = margin.open_panel()
    margin.send(panel, "Hello there")
    margin.wait_answer(panel)
    (request,) = fake_provider.turn_requests
    assert request.body["messages"][0] == {"role": "system", "content": "Answer like a pirate."}
    assert request.body["messages"][-1]["role"] == "user"


def test_the_model_field_offers_the_servers_models(margin: Margin, provider_config):
    with FakeProvider(api_key=provider_config["apiKey"], models=["alpha-1", "beta-2"]) as server:
        page = margin.open_options()
        page.get_by_role("textbox", name="Base URL", exact=True).fill(server.base_url)
        page.get_by_role("textbox", name="API key", exact=True).fill(provider_config["apiKey"])
        page.get_by_role("button", name="Refresh models").click()
        offered = poll(
            lambda: page.locator("#model-list option").evaluate_all("os => os.map(o => o.value)") or None,
            timeout=30,
            message="the model list stayed empty",
        )
        assert offered == ["alpha-1", "beta-2"]
        models = [r for r in server.requests if r.method == "GET" and r.path.rstrip("/").endswith("/models")]
        assert models and models[-1].headers.get("authorization") == f"Bearer {provider_config['apiKey']}"
        assert margin.model_field(page).get_attribute("list") == "model-list"

        # A typed name that is not in the list is still saved.
        margin.model_field(page).fill("my-own-model")
        page.get_by_role("button", name="Save", exact=True).click()
        poll(
            lambda: any(
                p.get("model") == "my-own-model"
                for p in margin.storage_get(["providers"]).get("providers", [])
            ),
            timeout=30,
            message="the typed model was not saved",
        )


def test_a_failed_model_list_is_a_sentence_and_saving_still_works(margin: Margin, provider_config):
    page = margin.open_options()
    page.get_by_role("textbox", name="Base URL", exact=True).fill(provider_config["baseUrl"])
    page.get_by_role("textbox", name="API key", exact=True).fill("sk-wrong-key")
    page.get_by_role("button", name="Refresh models").click()
    hint = page.locator("#model-hint")
    sentence = poll(
        lambda: "key" in hint.inner_text() and hint.inner_text(),
        timeout=30,
        message="no sentence for the failed list",
    )
    assert "type the model" in sentence
    margin.model_field(page).fill("fake-model")
    page.get_by_role("button", name="Save", exact=True).click()
    poll(lambda: margin.storage_get(["providers"]).get("providers"), timeout=30, message="saving was blocked")


def test_several_providers_and_the_panel_switches_in_two_clicks(margin: Margin, fake_provider: FakeProvider):
    with FakeProvider() as second:
        providers = [
            {
                "id": "one",
                "type": "openai",
                "name": "First",
                "baseUrl": fake_provider.base_url,
                "apiKey": fake_provider.api_key,
                "model": "fake-model",
            },
            {
                "id": "two",
                "type": "openai",
                "name": "Second",
                "baseUrl": second.base_url,
                "apiKey": "",
                "model": "other-model",
            },
        ]
        reply = margin.send_message(
            {"type": "options.save", "payload": {"providers": providers, "activeProviderId": "one"}}
        )
        assert reply.get("ok"), reply

        options_page = margin.open_options()
        assert options_page.get_by_role("radio", name=re.compile("First")).is_checked()
        assert options_page.get_by_role("radio", name=re.compile("Second")).count() == 1
        options_page.close()

        panel = margin.open_panel()
        chip = panel.get_by_role("button", name=MODEL_CHIP_NAME)
        poll(lambda: "First" in chip.inner_text(), timeout=30, message="the chip does not show the provider")
        assert "fake-model" in chip.inner_text()

        margin.switch_model(panel, "Second — other-model")
        poll(
            lambda: margin.storage_get(["activeProviderId"]).get("activeProviderId") == "two",
            timeout=30,
            message="the menu did not switch the provider",
        )
        poll(lambda: "Second" in chip.inner_text(), timeout=30, message="the chip was not repainted")
        # Its name holds what it shows (WCAG 2.5.3): a voice-control user can say what they see.
        expect(
            panel.get_by_role("button", name="Switch model: Second · other-model", exact=True)
        ).to_be_visible()
        assert panel.get_by_role("menu", name="Switch model").is_hidden()

        margin.send(panel, "Which one?")
        margin.wait_answer(panel)
        assert [r.body["model"] for r in second.turn_requests] == ["other-model"]
        assert fake_provider.turn_requests == []


def test_the_model_menu_is_keyboard_navigable_and_closes(margin: Margin, configured_margin: Margin):
    panel = margin.open_panel()
    chip = panel.get_by_role("button", name=MODEL_CHIP_NAME)
    chip.click()
    menu = panel.get_by_role("menu", name="Switch model")
    assert menu.is_visible()
    checked = panel.get_by_role("menuitemradio", name="Fake provider — fake-model")
    assert checked.get_attribute("aria-checked") == "true"
    assert checked.evaluate("e => e === document.activeElement")
    panel.keyboard.press("ArrowDown")
    manage = panel.get_by_role("menuitem", name="Manage providers…")
    assert manage.evaluate("e => e === document.activeElement")
    panel.keyboard.press("Escape")
    assert menu.is_hidden()
    assert chip.evaluate("e => e === document.activeElement")

    chip.click()
    assert menu.is_visible()
    panel.get_by_role("textbox", name="Message").click()
    assert menu.is_hidden()
