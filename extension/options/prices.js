// The provider form's three optional prices (US dollars per 1 million tokens), saved as the
// provider's `prices` ({input?, cachedInput?, output?}); an empty field is no price. Python checks
// them again when saving (margin.providers.usage.clean_prices).

import { t } from "../common/i18n.js";

const FIELDS = [
  ["input", "price-input", "options_price_input_name"],
  ["cachedInput", "price-cached-input", "options_price_cached_name"],
  ["output", "price-output", "options_price_output_name"],
];

const field = (id) => document.getElementById(id);

export function fillPrices(provider) {
  for (const [key, id] of FIELDS) {
    const value = provider?.prices?.[key];
    field(id).value = typeof value === "number" && Number.isFinite(value) ? String(value) : "";
  }
}

// The prices the form holds, only those filled in; a field that is not a number stays as typed so
// `pricesProblem` can name it.
export function formPrices() {
  const prices = {};
  for (const [key, id] of FIELDS) {
    const text = field(id).value.trim();
    if (text) prices[key] = Number.isFinite(Number(text)) ? Number(text) : text;
  }
  return prices;
}

export function pricesProblem(prices) {
  for (const [key, , label] of FIELDS) {
    const value = prices?.[key];
    if (value !== undefined && !(typeof value === "number" && value >= 0)) {
      return t("options_price_problem", t(label));
    }
  }
  return null;
}
