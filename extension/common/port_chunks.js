// Messages larger than one port message may carry, in pieces: Chrome refuses an extension message
// over 64 MiB, and a turn's start (several large images) or a backup can be larger.
//
// API: PIECE_CHARS                      the most characters of text one message carries
//      splitText(text, max) -> [string] pieces of at most `max` UTF-16 units, never cutting a
//                                       surrogate pair (a lone half would reach the other side as
//                                       U+FFFD)
//      postInPieces(port, message)      posts `message` as it is when small enough, else its JSON
//                                       as {piece: {index, count, text}} messages, in order
//      joinPieces() -> (message) -> undefined | {done: true, json}
//                                       the receiving side: feed it every message; once a whole
//                                       message has arrived it returns its JSON text (a message
//                                       that is not a piece is returned at once, as JSON)

import { CONTRACT } from "../generated/contract.js";

export const PIECE_CHARS = CONTRACT.limits.portChunkChars;

export function splitText(text, max = PIECE_CHARS) {
  const pieces = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + max, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

export function postInPieces(port, message) {
  const json = JSON.stringify(message);
  if (json.length <= PIECE_CHARS) {
    port.postMessage(message);
    return;
  }
  const pieces = splitText(json);
  for (const [index, text] of pieces.entries()) {
    port.postMessage({ piece: { index, count: pieces.length, text } });
  }
}

export function joinPieces() {
  let parts = [];
  return (message) => {
    const piece = message?.piece;
    if (!piece || typeof piece !== "object") return { done: true, json: JSON.stringify(message ?? {}) };
    if (piece.index !== parts.length || typeof piece.text !== "string") {
      throw new Error(`piece ${piece.index} arrived out of order`);
    }
    parts.push(piece.text);
    if (parts.length < piece.count) return undefined;
    const json = parts.join("");
    parts = [];
    return { done: true, json };
  };
}
