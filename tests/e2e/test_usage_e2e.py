"""Usage and cost end to end: the fake OpenAI-compatible server's usage chunk (it sends one when
`stream_options.include_usage` is asked) becomes the answer's quiet usage line; prices entered on
the options page add the estimated cost, stored on the answer and shown on the line."""

from __future__ import annotations

from conftest import API_KEY
from fake_provider import FakeProvider
from harness import Margin, poll


def usage_line(page):
    return page.locator("article[data-role=assistant]").last.locator(".usage-line")


def test_an_answer_shows_its_token_usage(margin: Margin, fake_provider: FakeProvider):
    margin.configure_provider(base_url=fake_provider.base_url, api_key=API_KEY).close()
    page = margin.open_panel()
    margin.send(page, "How many tokens?")
    assert "You said: How many tokens?" in margin.wait_answer(page)

    (request,) = fake_provider.wait_for_chat_requests(1)
    assert request.body["stream_options"] == {"include_usage": True}
    answer = margin.history()[-1]
    usage = answer["usage"]
    assert set(usage) == {"input", "cachedInput", "output"} and usage["input"] > 0 and usage["output"] > 0
    assert "cost" not in answer
    line = usage_line(page)
    poll(lambda: line.count() == 1, timeout=10, message="no usage line under the answer")
    assert line.inner_text() == f"{usage['input']:,} in · {usage['output']:,} out"
    assert line.evaluate("e => e.tagName") == "P"  # a plain text line, not a control
    # The answer's text is still only the answer.
    assert margin.bubble_texts(page, "assistant")[-1] == "You said: How many tokens?"


def test_prices_from_the_options_page_add_the_estimated_cost(margin: Margin, fake_provider: FakeProvider):
    options = margin.open_options()
    margin.fill_provider_form(options, base_url=fake_provider.base_url, api_key=API_KEY, model="fake-model")
    options.get_by_role("textbox", name="Input price (per 1M tokens)", exact=True).fill("2.5")
    options.get_by_role("textbox", name="Output price (per 1M tokens)", exact=True).fill("10")
    options.get_by_role("button", name="Save", exact=True).click()
    poll(
        lambda: (margin.storage_get(["providers"]).get("providers") or [{}])[0].get("prices"),
        timeout=30,
        message="the prices were not saved",
    )
    (provider,) = margin.storage_get(["providers"])["providers"]
    assert provider["prices"] == {"input": 2.5, "output": 10}

    # A price that is not a number is a sentence, and nothing is saved.
    options.get_by_role("textbox", name="Cached input price (per 1M tokens)", exact=True).fill("cheap")
    options.get_by_role("button", name="Save", exact=True).click()
    alert = options.get_by_role("alert")
    poll(
        lambda: "Cached input price" in alert.inner_text(), timeout=10, message="no sentence for a bad price"
    )
    assert margin.storage_get(["providers"])["providers"][0]["prices"] == {"input": 2.5, "output": 10}
    options.close()

    page = margin.open_panel()
    margin.send(page, "What does it cost?")
    margin.wait_answer(page)
    answer = margin.history()[-1]
    usage = answer["usage"]
    expected = round((usage["input"] * 2.5 + usage["output"] * 10) / 1e6, 6)
    assert answer["cost"] == expected
    line = usage_line(page)
    poll(lambda: line.count() == 1 and "≈ $" in line.inner_text(), timeout=10, message="no cost on the line")
    text = line.inner_text()
    assert text.startswith(f"{usage['input']:,} in · {usage['output']:,} out · ≈ $0.")
    page.screenshot(path="/tmp/usage_line.png")
