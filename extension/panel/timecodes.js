// Timestamps in answers about a video: the pure recognizer behind the "Seek to 12:34" capsules.
// No DOM here; tests/unit/test_timecodes.py runs it in node against tests/unit/timecode_cases.json.
//
// Rules:
// 1. A timecode is `m:ss`, `mm:ss`, `h:mm:ss` or `hh:mm:ss`: the first field has 1-2 digits (so
//    at most 99), every later field exactly 2 digits from 00 to 59. `1:5`, `16:9`, `12:60` are not.
// 2. It stands alone: the character before it is the start, whitespace, an opening bracket or
//    quote, `*`/`_`/`~`, an em dash, a bullet, an emoji or CJK; the one after it is the end,
//    whitespace, a closing bracket or quote, punctuation, an emoji or CJK (`在12:34处` IS one).
//    So letters, digits, `:`, `.`, `-`, `/` or `@` next to it rule it out: `10:30:45:12`,
//    `2024-01-01T10:30:00`, `fe80::1`, `00:1A:2B:3C:4D:5E`, `host:8080/`, `v1:23`. A `.`, `,` or
//    `:` after it counts as punctuation only when no digit follows: `12:34.5`, `0:01:02,500` are not.
// 3. Clock times are not timecodes: followed by am/pm (a.m./p.m., any case), UTC, GMT or Uhr, or
//    preceded by a date and a space (`2024-01-01 10:30`). `John 3:16` IS a capsule (predictable
//    beats clever; in an answer about a video a verse reference is rare).
// 4. `[01:05]` and `(4:05)`: the brackets belong to the capsule (label `01:05`, the span covers
//    the brackets). Ranges `12:34–13:10`, `12:34-13:10`, `12:34 — 13:10`, `12:34~13:10` give two
//    capsules; a range with a clock end (`10:30-11:45 pm`) gives none.

const CORE = /(\d{1,2}):([0-5]\d)(?::([0-5]\d))?/g;
const LABEL = /^(\d{1,2}):([0-5]\d)(?::([0-5]\d))?$/;
const CJK = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}" +
  "\\u3000-\\u303f\\uff01-\\uff0f\\uff1a-\\uff20\\uff3b-\\uff40\\uff5b-\\uff65";
const EMOJI = "\\p{Extended_Pictographic}\\ufe0f\\u200d";
const BEFORE_OK = new RegExp(`[\\s([{<"'\u201c\u2018\u00ab\u2039\u300c\u300e\uff08\u3010\u300a\u3008*_~\u2014\u2022\u00b7${CJK}${EMOJI}]`, "u");
const AFTER_OK = new RegExp(`[\\s)\\]}>"'\u201d\u2019\u00bb\u203a\u300d\u300f\uff09\u3011\u300b\u3009*_~\u2014.,;:!?\u2026${CJK}${EMOJI}]`, "u");
const CLOCK_AFTER = /^\s*(?:[ap]\.?m\b\.?|[ap]\.m\.|utc\b|gmt\b|uhr\b)/i;
const DATE_BEFORE = /\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\s$/;
const RANGE_BETWEEN = /^\s?[-\u2013\u2014~]\s?$/;
const BRACKETS = { "[": "]", "(": ")" };

function charBefore(text, index) {
  if (index <= 0) return "";
  const low = text.charCodeAt(index - 1);
  if (low >= 0xdc00 && low <= 0xdfff && index >= 2) {
    const high = text.charCodeAt(index - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.slice(index - 2, index);
  }
  return text[index - 1];
}

function charAfter(text, index) {
  if (index >= text.length) return "";
  return String.fromCodePoint(text.codePointAt(index));
}

function secondsOf(first, second, third) {
  const a = Number(first);
  const b = Number(second);
  return third === undefined ? a * 60 + b : a * 3600 + b * 60 + Number(third);
}

function beforeOk(text, index) {
  const c = charBefore(text, index);
  return c === "" || BEFORE_OK.test(c);
}

function afterOk(text, index) {
  const c = charAfter(text, index);
  if (c === "") return true;
  if (!AFTER_OK.test(c)) return false;
  if ((c === "." || c === "," || c === ":") && /\d/.test(text[index + 1] || "")) return false;
  return true;
}

export function findTimecodes(text) {
  if (typeof text !== "string" || text.indexOf(":") < 0) return [];
  const found = [];
  for (const match of text.matchAll(CORE)) {
    const start = match.index;
    const end = start + match[0].length;
    found.push({
      start, end, label: match[0], seconds: secondsOf(match[1], match[2], match[3]),
      before: beforeOk(text, start) && !DATE_BEFORE.test(text.slice(Math.max(0, start - 12), start)),
      after: afterOk(text, end),
      clock: CLOCK_AFTER.test(text.slice(end, end + 8)),
    });
  }
  // Ranges: a dash (or ~) between two candidates stands for the boundary on both sides.
  for (let i = 0; i + 1 < found.length; i++) {
    const a = found[i];
    const b = found[i + 1];
    if (RANGE_BETWEEN.test(text.slice(a.end, b.start))) {
      a.next = b;
      b.previous = a;
      if (b.clock) a.clock = true;
    }
  }
  const out = [];
  for (const c of found) {
    if (c.clock) continue;
    const before = c.before || (c.previous?.before && !c.previous.clock);
    const after = c.after || (c.next?.after && !c.next.clock);
    if (!before || !after) continue;
    let { start, end } = c;
    const open = text[start - 1];
    if (!c.previous && !c.next && BRACKETS[open] && text[end] === BRACKETS[open]) {
      start -= 1;
      end += 1;
    }
    out.push({ start, end, label: c.label, seconds: c.seconds });
  }
  return out;
}

// seconds -> "0:05", "12:34", "1:02:03": floored, hours only from one hour on (as Python writes
// transcript timestamps).
export function formatTimecode(seconds) {
  let total = Math.floor(Number(seconds));
  if (!Number.isFinite(total) || total < 0) total = 0;
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = String(s).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

// "12:34" / "1:02:03" (brackets and surrounding spaces allowed) -> seconds; anything else -> null.
export function parseTimecode(label) {
  if (typeof label !== "string") return null;
  let text = label.trim();
  const close = BRACKETS[text[0]];
  if (close && text.endsWith(close)) text = text.slice(1, -1).trim();
  const match = LABEL.exec(text);
  return match ? secondsOf(match[1], match[2], match[3]) : null;
}
