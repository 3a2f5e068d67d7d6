// What "Read aloud" says for an answer (panel/read_aloud.js): pure functions over the answer's
// Markdown, tested in node (tests/unit/test_speech_text_js.py).
//
// Rules:
// 1. `speechText(markdown, words)`: a fenced code block is said as `words.codeBlock`, a table as
//    `words.table` (never read character by character); links and images say their text; Markdown
//    marks (headings, emphasis, list bullets, quotes, rules, inline code ticks, HTML tags) are not
//    said. Paragraphs stay apart (one per line).
// 2. `speechChunks(text, max)`: the text in pieces of at most `max` characters, cut at a paragraph,
//    else a sentence's end, else a space: Chrome stops one long utterance after ~15 s.
// 3. `speechLanguage(text, fallback)`: the language the answer is written in when its script says
//    so (kana: ja, Hangul: ko, Han: zh-CN, Cyrillic: ru), else `fallback` (Margin's language).

const FENCE_OPEN = /^ {0,3}(\x60{3,}|~{3,})/; // \x60: a backtick
const TABLE_ROW = /^\s*\|.*\|\s*$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

// A fenced block, to its closing fence (or the end of the answer, as Markdown reads one left open).
function withoutCode(text, codeBlock) {
  const out = [];
  let fence = null;
  for (const line of text.split("\n")) {
    if (fence) {
      const closing = line.match(FENCE_OPEN);
      if (closing && closing[1][0] === fence[0] && closing[1].length >= fence.length && !line.trim().slice(closing[1].length).trim()) fence = null;
      continue;
    }
    const opening = line.match(FENCE_OPEN);
    if (opening) {
      fence = opening[1];
      out.push(`${codeBlock}.`);
    } else {
      out.push(line);
    }
  }
  return out.join("\n");
}

function withoutTables(text, table) {
  const lines = text.split("\n");
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    if (TABLE_ROW.test(lines[i]) && TABLE_RULE.test(lines[i + 1] || "")) {
      while (i + 1 < lines.length && (TABLE_ROW.test(lines[i + 1]) || TABLE_RULE.test(lines[i + 1]))) i++;
      out.push(`${table}.`);
    } else {
      out.push(lines[i]);
    }
  }
  return out.join("\n");
}

export function speechText(markdown, words) {
  let text = String(markdown ?? "").replace(/\r\n?/g, "\n");
  text = withoutCode(text, words.codeBlock);
  text = withoutTables(text, words.table);
  text = text
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1") // an image says its alt text
    .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1") // a link says its text
    .replace(/<\/?[a-zA-Z][^>]*>/g, "") // HTML tags
    .replace(/`+([^`\n]+)`+/g, "$1") // inline code says its words
    .replace(/^ {0,3}#{1,6}[ \t]+/gm, "") // headings
    .replace(/^ {0,3}(?:[-*_][ \t]*){3,}$/gm, "") // rules
    .replace(/^[ \t]*>[ \t]?/gm, "") // quotes
    .replace(/^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?/gm, "") // list bullets and task boxes
    .replace(/(\*\*|__|~~)(?=\S)([\s\S]*?\S)\1/g, "$2")
    .replace(/(^|[^\w*])[*_](?=\S)([^*_\n]*?\S)[*_](?![\w*])/g, "$1$2");
  return text
    .split("\n")
    .map((line) => line.replace(/\s+/g, " ").trim())
    .filter(Boolean)
    .join("\n");
}

export function speechChunks(text, max = 220) {
  const chunks = [];
  for (const paragraph of String(text).split("\n")) {
    let rest = paragraph.trim();
    while (rest.length > max) {
      const head = rest.slice(0, max);
      const sentenceEnd = Math.max(...[". ", "! ", "? ", "。", "！", "？", "; "].map((mark) => head.lastIndexOf(mark)));
      let cut = sentenceEnd > max / 3 ? sentenceEnd + 1 : head.lastIndexOf(" ");
      if (cut <= 0) cut = max;
      chunks.push(rest.slice(0, cut).trim());
      rest = rest.slice(cut).trim();
    }
    if (rest) chunks.push(rest);
  }
  return chunks;
}

const SCRIPTS = [
  ["ja", /[\u3040-\u30ff]/g],
  ["ko", /[\uac00-\ud7af\u1100-\u11ff]/g],
  ["zh-CN", /[\u4e00-\u9fff]/g],
  ["ru", /[\u0400-\u04ff]/g],
];

export function speechLanguage(text, fallback) {
  const sample = String(text).slice(0, 2000);
  const letters = (sample.match(/\p{L}/gu) || []).length;
  if (!letters) return fallback;
  const counts = Object.fromEntries(SCRIPTS.map(([lang, pattern]) => [lang, (sample.match(pattern) || []).length]));
  // Japanese mixes kana with Han: any real share of kana makes it Japanese.
  if (counts.ja > letters * 0.05) return "ja";
  for (const [lang] of SCRIPTS.slice(1)) {
    if (counts[lang] > letters * 0.3) return lang;
  }
  const fallbackScript = SCRIPTS.find(([lang]) => fallback.startsWith(lang.slice(0, 2)));
  // Margin speaks Japanese but the answer is all Latin letters: read it in English, not with a Japanese voice.
  return fallbackScript && counts[fallbackScript[0]] === 0 ? "en" : fallback;
}
