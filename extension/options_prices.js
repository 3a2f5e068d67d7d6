// The provider form's three optional prices (US dollars per 1 million tokens), saved as the
// provider's `prices` ({input?, cachedInput?, output?}); an empty field is no price. Python checks
// them again when saving (margin.usage.clean_prices).

const FIELDS = [
  ["input", "price-input", "Input price"],
  ["cachedInput", "price-cached-input", "Cached input price"],
  ["output", "price-output", "Output price"],
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
      return `The ${label} must be a number of US dollars per 1 million tokens, 0 or more (for example 2.5), or empty.`;
    }
  }
  return null;
}
