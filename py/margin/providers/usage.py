"""Token usage and its estimated cost: one shape for every provider, sans-IO.

Rules:
1. Usage is `{input, cachedInput, output}`: `input` counts every prompt token (cached ones
   included, as OpenAI's `prompt_tokens` does), `cachedInput` the part read from the provider's
   prompt cache, `output` the answer's tokens (thinking included: it is billed as output).
2. Each provider module's `normalize_usage(raw)` reads its own usage object with `field`, `total`
   and `shape` (`margin.providers.normalize_usage(raw, provider_type)` asks the type's module):
   - "openai" (Chat Completions): `prompt_tokens`, `prompt_tokens_details.cached_tokens`,
     `completion_tokens` (the Responses API's `input_tokens`, `input_tokens_details.cached_tokens`,
     `output_tokens` are read too, so an agent provider needs no shape of its own);
   - "anthropic": `input_tokens` counts only the uncached rest, so
     input = `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`, and
     cachedInput = `cache_read_input_tokens`;
   - "gemini": `promptTokenCount`, `cachedContentTokenCount`,
     `candidatesTokenCount` + `thoughtsTokenCount`.
   None when the provider reported no count at all.
3. Only finite, non-negative integers JS reads back exactly (at most 2**53 - 1) are counts:
   NaN, infinities, bools, strings, negative and larger numbers are dropped (a NaN must never
   reach storage: margin.base.wire). `clean` applies the same gate to an
   already normalized dict (what chat stores), and keeps `cachedInput <= input`.
4. `cost(usage, prices)` is in US dollars, prices per 1 million tokens:
   (input - cachedInput) * input + cachedInput * (cachedInput price, else input price)
   + output * output. None without prices (no input and no output price), or without usage,
   or when the product is not a finite number (a huge price times many tokens overflows).
5. `clean_prices` is the gate for a provider's `prices`: `{input?, cachedInput?, output?}`, each
   a finite non-negative number; anything else is a `PriceError` (a `ValueError`) whose `problem`
   is the sentence naming the field (margin.base.sentences).
"""

from __future__ import annotations

import math
from typing import Any

from ..base import wire
from ..base.sentences import Sentence, sentence

USAGE_KEYS = ("input", "cachedInput", "output")
PRICE_KEYS = ("input", "cachedInput", "output")
# Each price's problem sentence: the field's name is part of it (its grammar differs by language).
PRICE_PROBLEMS = {
    "input": "py_error_field_price_input",
    "cachedInput": "py_error_field_price_cached",
    "output": "py_error_field_price_output",
}
PER_TOKENS = 1_000_000


def count(value: Any) -> int | None:
    """A token count, or None (rule 3). A float with no fraction (3.0) counts as 3."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    return value if 0 <= value <= wire.MAX_SAFE_INTEGER else None


def field(raw: Any, *path: str) -> int | None:
    for key in path:
        if not isinstance(raw, dict):
            return None
        raw = raw.get(key)
    return count(raw)


def total(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def shape(input_tokens: int | None, cached: int | None, output: int | None) -> dict[str, int] | None:
    if input_tokens is None and cached is None and output is None:
        return None
    total_in = max(input_tokens or 0, cached or 0)
    return {"input": total_in, "cachedInput": min(cached or 0, total_in), "output": output or 0}


def clean(usage: Any) -> dict[str, int] | None:
    """An already normalized usage dict through rule 3's gate; None if nothing is left."""
    if not isinstance(usage, dict):
        return None
    return shape(count(usage.get("input")), count(usage.get("cachedInput")), count(usage.get("output")))


def _price(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def cost(usage: dict[str, Any] | None, prices: dict[str, Any] | None) -> float | None:
    """Rule 4: the estimated cost in US dollars, or None."""
    kept = clean(usage)
    if kept is None or not isinstance(prices, dict):
        return None
    input_price = _price(prices.get("input"))
    output_price = _price(prices.get("output"))
    if input_price is None and output_price is None:
        return None
    cached_price = _price(prices.get("cachedInput"))
    if cached_price is None:
        cached_price = input_price or 0.0
    fresh = kept["input"] - kept["cachedInput"]
    dollars = fresh * (input_price or 0.0) + kept["cachedInput"] * cached_price
    dollars += kept["output"] * (output_price or 0.0)
    dollars /= PER_TOKENS
    return dollars if math.isfinite(dollars) else None


class PriceError(ValueError):
    """Rule 5: `problem` says which price is wrong."""

    def __init__(self, problem: Sentence):
        super().__init__(problem.english())
        self.problem = problem


def clean_prices(value: Any) -> dict[str, float]:
    """Rule 5: the prices kept (only the ones given); `ValueError(sentence)` for a bad one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PriceError(sentence("py_error_field_prices"))
    kept: dict[str, float] = {}
    for key in PRICE_KEYS:
        given = value.get(key)
        if given is None or given == "":
            continue
        price = _price(given)
        if price is None:
            raise PriceError(sentence(PRICE_PROBLEMS[key]))
        kept[key] = price
    return kept
