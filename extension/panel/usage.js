// An answer's usage line: "1,234 in (1,000 cached) · 56 out · ≈ $0.0031" (pure; no DOM).
//
// Rules:
// 1. The line is made only from what is stored on the record: `usage` ({input, cachedInput,
//    output}, docs/storage-model.md) and `cost` (US dollars, present only when the provider has prices).
// 2. A count that is not a finite number of 0 or more is left out; no usage, no line ("").
// 3. The cached part shows only when it is above 0; the cost only when it was stored.
// 4. A cost under a dollar keeps two significant digits ($0.0031), else cents ($1.25).

// 5. Words and numbers are the chosen language's (i18n.js): "1 234 вход", "$0.0031" as "0,0031 $".

import { t, language } from "../common/i18n.js";

// Made at first use (a page's first Intl object loads ICU data), again when the language changed.
let formats = null;
const numberFormats = () => {
  if (formats?.tag !== language()) {
    const tag = language();
    formats = {
      tag,
      COUNT: new Intl.NumberFormat(tag, { maximumFractionDigits: 0 }),
      SMALL_COST: new Intl.NumberFormat(tag, { style: "currency", currency: "USD", maximumSignificantDigits: 2 }),
      COST: new Intl.NumberFormat(tag, { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }),
    };
  }
  return formats;
};

const isCount = (value) => typeof value === "number" && Number.isFinite(value) && value >= 0;

export function formatCost(dollars) {
  return dollars < 1 ? numberFormats().SMALL_COST.format(dollars) : numberFormats().COST.format(dollars);
}

export function usageLine(record) {
  const usage = record?.usage;
  if (!usage || typeof usage !== "object") return "";
  const parts = [];
  if (isCount(usage.input)) {
    const count = numberFormats().COUNT;
    const cached = isCount(usage.cachedInput) && usage.cachedInput > 0;
    parts.push(cached ? t("panel_usage_input_cached", count.format(usage.input), count.format(usage.cachedInput)) : t("panel_usage_input", count.format(usage.input)));
  }
  if (isCount(usage.output)) parts.push(t("panel_usage_output", numberFormats().COUNT.format(usage.output)));
  if (!parts.length) return "";
  if (isCount(record.cost)) parts.push(t("panel_usage_cost", formatCost(record.cost)));
  return parts.join(" · ");
}
