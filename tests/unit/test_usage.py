"""margin.providers.usage: every provider's usage payload in one shape, and the estimated cost."""

import math

import pytest

from margin.providers import normalize_usage, usage

OPENAI_USAGE = {  # a Chat Completions stream's last chunk, gpt-4o with a cache hit
    "prompt_tokens": 1234,
    "completion_tokens": 56,
    "total_tokens": 1290,
    "prompt_tokens_details": {"cached_tokens": 1000, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
}
ANTHROPIC_USAGE = {  # message_start's usage merged with message_delta's
    "input_tokens": 12,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 2048,
    "output_tokens": 15,
    "service_tier": "standard",
}
GEMINI_USAGE = {
    "promptTokenCount": 812,
    "cachedContentTokenCount": 512,
    "candidatesTokenCount": 40,
    "thoughtsTokenCount": 9,
    "totalTokenCount": 861,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 812}],
}
RESPONSES_USAGE = {
    "input_tokens": 900,
    "input_tokens_details": {"cached_tokens": 128},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 920,
}


def test_openai_usage():
    assert normalize_usage(OPENAI_USAGE, "openai") == {"input": 1234, "cachedInput": 1000, "output": 56}


def test_openai_usage_without_details_has_no_cached_input():
    raw = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    assert normalize_usage(raw, "openai") == {"input": 5, "cachedInput": 0, "output": 2}


def test_anthropic_input_counts_cache_reads_and_writes():
    assert normalize_usage(ANTHROPIC_USAGE, "anthropic") == {"input": 2360, "cachedInput": 2048, "output": 15}


def test_gemini_thinking_counts_as_output():
    assert normalize_usage(GEMINI_USAGE, "gemini") == {"input": 812, "cachedInput": 512, "output": 49}


def test_responses_api_usage_reads_through_the_openai_type():
    assert normalize_usage(RESPONSES_USAGE, "openai") == {"input": 900, "cachedInput": 128, "output": 20}


@pytest.mark.parametrize("raw", [None, {}, "12", [1, 2], {"total_tokens": 7}, {"prompt_tokens": "5"}])
def test_no_counts_is_none(raw):
    assert normalize_usage(raw, "openai") is None


@pytest.mark.parametrize("garbage", [float("nan"), float("inf"), -3, True, "12", 2.5, None, {"n": 1}])
def test_garbage_counts_are_dropped(garbage):
    raw = {"prompt_tokens": 10, "completion_tokens": garbage}
    assert normalize_usage(raw, "openai") == {"input": 10, "cachedInput": 0, "output": 0}
    assert normalize_usage({"input_tokens": garbage, "output_tokens": 4}, "anthropic") == {
        "input": 0,
        "cachedInput": 0,
        "output": 4,
    }
    assert normalize_usage({"promptTokenCount": garbage}, "gemini") is None


def test_a_whole_float_counts():
    assert normalize_usage({"prompt_tokens": 3.0, "completion_tokens": 1}, "openai")["input"] == 3


def test_cached_input_never_exceeds_input():
    raw = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 50}, "completion_tokens": 1}
    shaped = normalize_usage(raw, "openai")
    assert shaped["cachedInput"] <= shaped["input"]


def test_clean_keeps_only_the_three_counts_and_no_nan():
    assert usage.clean({"input": 4, "cachedInput": float("nan"), "output": 2, "extra": 9}) == {
        "input": 4,
        "cachedInput": 0,
        "output": 2,
    }
    assert usage.clean({"input": float("nan")}) is None
    assert usage.clean(None) is None


def test_cost_with_a_cached_input_price():
    counts = {"input": 1234, "cachedInput": 1000, "output": 56}
    prices = {"input": 2.5, "cachedInput": 1.25, "output": 10}
    assert math.isclose(usage.cost(counts, prices), (234 * 2.5 + 1000 * 1.25 + 56 * 10) / 1e6)


def test_cost_without_a_cached_price_charges_cached_tokens_at_the_input_price():
    counts = {"input": 1000, "cachedInput": 600, "output": 100}
    assert math.isclose(usage.cost(counts, {"input": 3, "output": 15}), (1000 * 3 + 100 * 15) / 1e6)


def test_cost_with_only_an_output_price():
    assert math.isclose(usage.cost({"input": 1000, "cachedInput": 0, "output": 2000}, {"output": 0.5}), 0.001)


@pytest.mark.parametrize("prices", [None, {}, {"cachedInput": 1.0}, {"input": float("nan")}, "2.5"])
def test_no_prices_no_cost(prices):
    assert usage.cost({"input": 10, "cachedInput": 0, "output": 1}, prices) is None


def test_no_usage_no_cost():
    assert usage.cost(None, {"input": 1, "output": 1}) is None


def test_clean_prices():
    assert usage.clean_prices(None) == {}
    assert usage.clean_prices({"input": 2, "cachedInput": "", "output": 0}) == {"input": 2.0, "output": 0.0}
    for bad in ({"input": -0.1}, {"output": float("inf")}, {"cachedInput": False}, {"input": "1"}, [1]):
        with pytest.raises(ValueError):
            usage.clean_prices(bad)
