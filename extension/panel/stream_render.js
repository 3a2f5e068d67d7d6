// A streaming answer's Markdown, rendered in linear time: finished blocks once, the rest per paint.
//
// Pure (no DOM, no imports): given marked's `lex(text)` and `render(tokens)`, `createStreamSplit`
// turns the growing answer into HTML pieces; markdown.js sanitizes each piece and shows it.
//
// Rules:
// 1. The answer's text is split at a "stable" boundary: everything before it is rendered once (the
//    `frozen` HTML pieces, appended in order) and never again; only the `tail` after it is lexed
//    and rendered at each paint.
// 2. A boundary is stable when Markdown cannot move it any more: it follows a blank line, comes
//    before the last two blocks (the last may still grow: a list, a table, a paragraph that turns
//    into a heading; the one before may still take it in: "2." after a list becomes its item),
//    and nothing before it is raw HTML or a link reference definition. Raw HTML (block or
//    inline) may open an element that a later block closes, and a definition changes links in
//    earlier blocks, so the boundary never passes one: from there the tail is rendered whole.
// 3. The frozen pieces followed by the tail's HTML equal `render(lex(text))` of the whole text
//    (tests/unit/test_stream_render_js.py checks it over many random chunkings). `finish(text)`
//    says `whole: true` when the answer holds a reference definition: the caller then renders
//    the whole answer once, as the definition may apply to blocks frozen before it.
// 4. Cost: each paint lexes only the tail. The tail is two blocks unless rule 2 holds it back, so
//    the caller also spaces paints by their cost (markdown.js).

function holdsHtml(token) {
  if (token.type === "html") return true;
  for (const child of token.tokens || []) if (holdsHtml(child)) return true;
  for (const item of token.items || []) if (holdsHtml(item)) return true;
  if (token.type === "table") {
    for (const cell of token.header || []) if (cell.tokens?.some(holdsHtml)) return true;
    for (const row of token.rows || []) for (const cell of row) if (cell.tokens?.some(holdsHtml)) return true;
  }
  return false;
}

// How many of the tail's leading tokens may be frozen (rule 2), and the characters they span.
export function stablePrefix(tokens, tail) {
  // The last two blocks stay in the tail: the last may grow, and the one before it may still take
  // it in (a "2." after a list becomes its next item once its text arrives).
  const blocks = [];
  for (let i = 0; i < tokens.length; i += 1) if (tokens[i].type !== "space") blocks.push(i);
  const last = blocks.length >= 2 ? blocks[blocks.length - 2] : 0;
  let count = 0;
  let length = 0;
  let offset = 0;
  for (let i = 0; i < last; i += 1) {
    const token = tokens[i];
    if (token.type === "def" || holdsHtml(token)) break;
    // marked's raw is the source, except where it normalized line ends: stop there.
    if (!tail.startsWith(token.raw, offset)) break;
    offset += token.raw.length;
    if (tail.charAt(offset - 1) === "\n" && tail.charAt(offset - 2) === "\n") {
      count = i + 1;
      length = offset;
    }
  }
  return { count, length };
}

export function createStreamSplit({ lex, render }) {
  let stableEnd = 0; // characters of the answer rendered into `frozen` for good
  let definitions = false;

  function tokensOf(tail) {
    const tokens = lex(tail);
    if (tokens.links && Object.keys(tokens.links).length) definitions = true;
    return tokens;
  }

  function piecesOf(tokens, from, to) {
    const part = tokens.slice(from, to);
    part.links = tokens.links;
    return render(part);
  }

  return {
    // Rule 1: the HTML pieces newly frozen by `text`, and the tail's HTML.
    update(text) {
      const tail = text.slice(stableEnd);
      const tokens = tokensOf(tail);
      const { count, length } = stablePrefix(tokens, tail);
      const frozen = count ? piecesOf(tokens, 0, count) : "";
      stableEnd += length;
      return { frozen, tail: piecesOf(tokens, count, tokens.length) };
    },
    // Rule 3: the last paint; nothing is frozen, so the caller shows `tail` after its frozen pieces.
    finish(text) {
      const tokens = tokensOf(text.slice(stableEnd));
      return { frozen: "", tail: piecesOf(tokens, 0, tokens.length), whole: definitions };
    },
    get stableEnd() {
      return stableEnd;
    },
  };
}
