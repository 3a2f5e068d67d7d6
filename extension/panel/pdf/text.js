// The text of a PDF from pdf.js's text content (the items of `page.getTextContent()`): lines,
// paragraphs, headings and tables, page by page, in reading order. Pure: no pdf.js, no DOM, so the
// same code runs in the PDF worker (panel/pdf/worker.js) and under node in the unit tests.
//
// Rules:
// 1. Reading order is the content stream's order (the order the PDF's author wrote the text: a
//    browser's print, a word processor's export), not the order of positions, so a two-column
//    page reads its left column before its right one. A line ends where the baseline moves, where
//    the text goes back to the left, or at pdf.js's end-of-line mark.
// 2. A paragraph ends at a vertical gap wider than the line spacing (1.5 times the font size
//    or more), at a change of font size, or at an empty line; its lines are joined with a space,
//    except between two CJK characters (Chinese and Japanese lines are not separated by spaces)
//    and after a hyphen that ends a word before a lowercase letter ("well-" + "known"; the hyphen
//    is kept: dropping it would break real compounds).
// 3. A line set in a font clearly larger than the body's (the size that carries most characters
//    of the document) is a heading, "#" to "###" by its size's rank, when it is short.
// 4. Text on one line broken by wide gaps (two font sizes or more) is a row of cells; two or more
//    such rows in a row with the same number of cells are a Markdown table.
// 5. A line that repeats at the top or bottom of most pages (a running header, a page number;
//    digits do not count) is left out.
// 6. The result is one string per page; Python adds the page markers and folds compatibility
//    characters (py/margin/page/pdf.py).

const CJK = /[\u2E80-\u2FDF\u3000-\u30FF\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\uFF00-\uFFEF]/u;
const HEADING_RATIO = 1.15;
const HEADING_MAX_CHARS = 160;
const CELL_GAP_EM = 2;
const PARAGRAPH_GAP_EM = 1.5;

const fontSize = (item) => Math.hypot(item.transform[2], item.transform[3]) || item.height || 0;

// Rule 1: the page's items as lines of runs {text, x, end, size}.
export function pageLines(items) {
  const lines = [];
  let line = null;
  let breakNext = false;
  for (const item of items) {
    const text = item.str ?? "";
    const size = fontSize(item);
    const x = item.transform[4];
    const y = item.transform[5];
    if (!text.trim()) {
      if (line && text && line.runs.length) line.spaceAfter = true;
      if (item.hasEOL) breakNext = true;
      continue;
    }
    const last = line?.runs[line.runs.length - 1];
    const sameLine =
      line && !breakNext && Math.abs(y - line.y) < Math.max(size, line.size) * 0.5 && x >= last.end - Math.max(size, line.size);
    if (!sameLine) {
      line = { y, size, runs: [], spaceAfter: false };
      lines.push(line);
    }
    line.size = Math.max(line.size, size);
    const gap = last && sameLine ? x - last.end : 0;
    line.runs.push({ text, x, end: x + (item.width || 0), size, gap, spaced: line.spaceAfter });
    line.spaceAfter = false;
    breakNext = Boolean(item.hasEOL);
  }
  return lines.map(finishLine);
}

function joinRuns(runs) {
  let out = "";
  for (const run of runs) {
    if (out) {
      const needsSpace = run.spaced || run.gap > run.size * 0.15;
      const cjkJoin = CJK.test(out.at(-1)) && CJK.test(run.text[0]);
      if (needsSpace && !cjkJoin && !/\s$/.test(out) && !/^\s/.test(run.text)) out += " ";
    }
    out += run.text;
  }
  return out.replace(/\s+/g, " ").trim();
}

// Rule 4: a line's cells, split where the gap between two runs is wide.
function finishLine(line) {
  const cells = [];
  let current = [];
  for (const run of line.runs) {
    if (current.length && run.gap > run.size * CELL_GAP_EM) {
      cells.push(joinRuns(current));
      current = [];
    }
    current.push(run);
  }
  if (current.length) cells.push(joinRuns(current));
  const first = line.runs[0];
  return { y: line.y, x: first.x, size: Math.round(line.size * 10) / 10, cells, text: cells.join(" ") };
}

// Rule 5: the lines that repeat at the same height at the top or bottom of most pages. A short
// line's digits do not count (page numbers, "Page 3 of 10"); a heading is never a running line.
const RUNNING_MAX_CHARS = 60;
const runningKey = (line) =>
  `${Math.round(line.y / 2)}|${line.text.length <= RUNNING_MAX_CHARS ? line.text.replace(/\d+/g, "#") : line.text}`;

function runningLines(pages, levels) {
  if (pages.length < 3) return new Set();
  const counts = new Map();
  for (const lines of pages) {
    const ends = [lines[0], lines[1], lines.at(-1), lines.at(-2)].filter((l) => l && !levels.has(l.size));
    for (const key of new Set(ends.map(runningKey))) counts.set(key, (counts.get(key) || 0) + 1);
  }
  return new Set([...counts].filter(([, n]) => n >= 3 && n > pages.length / 2).map(([key]) => key));
}

// Rule 3: the body's size, and each larger size's heading level.
function headingLevels(pages) {
  const chars = new Map();
  for (const lines of pages) for (const l of lines) chars.set(l.size, (chars.get(l.size) || 0) + l.text.length);
  let body = 0;
  let most = -1;
  for (const [size, n] of chars) if (n > most) [body, most] = [size, n];
  const larger = [...chars.keys()].filter((s) => s >= body * HEADING_RATIO).sort((a, b) => b - a);
  return new Map(larger.map((size, i) => [size, Math.min(i + 1, 3)]));
}

const joinLines = (a, b) => {
  if (!a) return b;
  if (CJK.test(a.at(-1)) && CJK.test(b[0])) return a + b;
  if (/\p{L}-$/u.test(a) && /^\p{Ll}/u.test(b)) return a + b;
  return `${a} ${b}`;
};

const row = (cells) => `| ${cells.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`;

// Rules 2-4 on one page's lines: Markdown blocks.
function pageBlocks(lines, levels) {
  const blocks = [];
  let paragraph = "";
  let previous = null;
  let table = null;
  const flush = () => {
    if (paragraph) blocks.push(paragraph);
    paragraph = "";
  };
  const flushTable = () => {
    if (!table) return;
    if (table.length >= 2) {
      blocks.push([row(table[0]), row(table[0].map(() => "---")), ...table.slice(1).map(row)].join("\n"));
    } else {
      paragraph = joinLines(paragraph, table[0].join(" "));
    }
    table = null;
  };
  for (const line of lines) {
    const level = levels.get(line.size);
    if (line.cells.length >= 2 && !level) {
      if (table && table[0].length !== line.cells.length) flushTable();
      if (!table) flush();
      table = table || [];
      table.push(line.cells);
      previous = line;
      continue;
    }
    flushTable();
    if (level && line.text.length <= HEADING_MAX_CHARS) {
      // A heading set on two lines stays one heading.
      const last = blocks.at(-1);
      if (!paragraph && previous && previous.size === line.size && last?.startsWith("#") && Math.abs(previous.y - line.y) < line.size * PARAGRAPH_GAP_EM) {
        blocks[blocks.length - 1] = joinLines(last, line.text);
      } else {
        flush();
        blocks.push(`${"#".repeat(level)} ${line.text}`);
      }
      previous = line;
      continue;
    }
    const gap = previous ? Math.abs(previous.y - line.y) : 0;
    const newParagraph =
      !previous || levels.has(previous.size) || previous.size !== line.size || gap > line.size * PARAGRAPH_GAP_EM || line.y > previous.y;
    if (newParagraph) flush();
    paragraph = joinLines(paragraph, line.text);
    previous = line;
  }
  flushTable();
  flush();
  return blocks.join("\n\n");
}

// The text of every page (rule 6), from each page's lines (`pageLines`).
export function documentText(pages) {
  const running = runningLines(pages, headingLevels(pages));
  const kept = pages.map((lines) => lines.filter((l) => !running.has(runningKey(l))));
  const levels = headingLevels(kept);
  return kept.map((lines) => pageBlocks(lines, levels));
}
