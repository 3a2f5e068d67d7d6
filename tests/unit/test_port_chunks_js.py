"""extension/common/port_chunks.js in node: a message too large for one port message goes in pieces that
are each within the limit, never cut a surrogate pair, and join back to the exact message."""

from __future__ import annotations

from pathlib import Path

from helpers import run_js_module

from margin.app import api, contract

MODULE = Path(__file__).resolve().parents[2] / "extension" / "common" / "port_chunks.js"

SCRIPT = """
const posted = [];
const port = { postMessage: (m) => posted.push(JSON.parse(JSON.stringify(m))) };
const big = { action: "send", text: input.text, images: [{ dataUrl: "data:image/png;base64," + "QUJD".repeat(input.quads) }] };
chunks.postInPieces(port, big);
const join = chunks.joinPieces();
let whole;
for (const message of posted) whole = join(message) ?? whole;
const small = [];
chunks.postInPieces({ postMessage: (m) => small.push(m) }, { action: "stop" });
const cut = chunks.splitText("ab\\ud83d\\ude00cd\\ud83d\\ude00", 3);
let outOfOrder = null;
try { chunks.joinPieces()({ piece: { index: 1, count: 2, text: "x" } }); } catch (error) { outOfOrder = error.message; }
console.log(JSON.stringify({
  limit: chunks.PIECE_CHARS,
  pieces: posted.map((m) => ({ index: m.piece.index, count: m.piece.count, length: m.piece.text.length,
    lone: /[\\ud800-\\udbff]$/.test(m.piece.text) || /^[\\udc00-\\udfff]/.test(m.piece.text) })),
  same: whole.json === JSON.stringify(big),
  small, cut, outOfOrder,
}));
"""


def test_a_large_start_goes_in_pieces_within_the_limit_and_joins_back_exactly(tmp_path):
    limit = api.PORT_CHUNK_CHARS
    # Emoji everywhere, so some piece boundary falls inside a surrogate pair unless it is avoided.
    text = "😀" * (limit // 2 + 3) + "x"
    extra = {
        "../generated/contract.js": contract.render_js("margin-0-py3-none-any.whl"),
        "../package.json": '{"type": "module"}',
    }
    (tmp_path / "common").mkdir()
    out = run_js_module(
        tmp_path / "common", MODULE, "chunks", SCRIPT, {"text": text, "quads": limit // 2}, extra_files=extra
    )
    assert out["limit"] == limit
    pieces = out["pieces"]
    assert len(pieces) >= 3 and [p["index"] for p in pieces] == list(range(len(pieces)))
    assert all(p["count"] == len(pieces) and p["length"] <= limit for p in pieces)
    assert not any(p["lone"] for p in pieces)
    assert out["same"]
    assert out["small"] == [{"action": "stop"}]  # a small message goes as it is
    assert out["cut"] == ["ab", "😀c", "d😀"]  # 3 UTF-16 units each at most
    assert "out of order" in out["outOfOrder"]
