// How values cross between Python and the worker's JS (the JS half of py/margin/base/wire.py, rule 6):
// the reply shape every bridge function answers with, bulk text as UTF-8 bytes, and the bulk-piece
// codec. Used by the bridge's modules (storage.js, http.js, tabs.js, …); no browser API here.
//
// Rules:
// 1. A bridge function never throws: it answers `reply(value)` = {ok: true, value} or
//    `failed(kind, error)` = {ok: false, error: {kind, message}}, as JSON text.
// 2. Bulk text from Python arrives as UTF-8 bytes (a PyProxy of bytes) and is decoded by
//    `fromPython` before the function's first await: the proxy lives only until the call returns.
// 3. A bulk value crosses in pieces: its JSON text with each string of at least LONG_STRING
//    characters replaced by a marker {"\u0000margin.piece": i}, and that string as the i-th UTF-8
//    piece after it, so neither side writes or scans images and digests as JSON.

export const reply = (value) => JSON.stringify({ ok: true, value: value === undefined ? null : value });
export const failed = (kind, error) =>
  JSON.stringify({ ok: false, error: { kind, message: String(error?.message ?? error) } });

// Bulk text crosses the Python boundary as UTF-8 bytes: Pyodide turns a str argument into a JS
// string at ~5 MB/s and a JS string into a str at ~11 MB/s (Pyodide 0.27.7, measured: 0.8 s for
// 4 MB), while bytes and TextEncoder/TextDecoder take ~50 ms. A bytes argument arrives as a
// PyProxy that lives only until the call returns: `fromPython` must run before the first await.
const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();
export function fromPython(value) {
  if (typeof value === 'string') return value;
  return utf8Decoder.decode(value.toJs());
}

const LONG_STRING = 64 * 1024;
const PIECE = '\u0000margin.piece';

function withoutLongStrings(value, pieces) {
  if (typeof value === 'string') {
    if (value.length < LONG_STRING) return value;
    pieces.push(value);
    return { [PIECE]: pieces.length - 1 };
  }
  if (Array.isArray(value)) return value.map((item) => withoutLongStrings(item, pieces));
  if (value && typeof value === 'object') {
    const light = {};
    for (const [key, item] of Object.entries(value)) light[key] = withoutLongStrings(item, pieces);
    return light;
  }
  return value;
}

// Rule 3, Python to JS: the value with each marker replaced by its piece (a marker without its
// piece throws: nothing half-read is written).
export function withLongStrings(value, pieces) {
  if (Array.isArray(value)) return value.map((item) => withLongStrings(item, pieces));
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === PIECE) {
      const index = value[PIECE];
      if (!Number.isInteger(index) || index < 0 || index >= pieces.length) {
        throw new Error(`a bulk value refers to piece ${index} of ${pieces.length}`);
      }
      return pieces[index];
    }
    for (const key of keys) value[key] = withLongStrings(value[key], pieces);
  }
  return value;
}

// Rule 3, JS to Python: a reply with a bulk value: [the JSON text, ...the long strings], each as UTF-8.
export function replyPieces(value) {
  const pieces = [];
  const text = reply(withoutLongStrings(value, pieces));
  return [utf8(text), ...pieces.map(utf8)];
}

// UTF-8 of bulk text, mostly ASCII (JSON around data URLs): encodeInto a buffer of one byte per
// code unit took 41-60 ms for 21 MB where encode() took 100-180 ms (the 20 MB history the bound
// reads, in the worker, README.md "Measured"). Where the text is not all ASCII, the rest goes into
// a buffer sized for the worst case (3 bytes per UTF-16 code unit); encodeInto stops only between
// characters, so the rest starts on one.
function utf8(text) {
  const bytes = new Uint8Array(text.length);
  const { read, written } = utf8Encoder.encodeInto(text, bytes);
  if (read === text.length) return bytes.subarray(0, written);
  const rest = text.slice(read);
  const whole = new Uint8Array(written + rest.length * 3);
  whole.set(bytes.subarray(0, written));
  return whole.subarray(0, written + utf8Encoder.encodeInto(rest, whole.subarray(written)).written);
}
