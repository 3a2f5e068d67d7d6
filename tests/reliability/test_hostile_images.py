"""Hostile images sent through the real turn (margin.turn.chat.run_turn): bombs, truncated files, wrong
magic, odd modes, animations, empty files. A refused image gets its specific code and changes
nothing stored; an accepted one is stored byte for byte. Corpus: corpus/hostile_images/
(make_corpus.py writes it; images big once decoded are generated here)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.turn import chat

from .ledger import snapshot

CORPUS = Path(__file__).parent / "corpus" / "hostile_images"
PROVIDER = {
    "id": "p",
    "type": "openai",
    "name": "Local",
    "baseUrl": "http://localhost:11434/v1",
    "apiKey": "",
    "model": "m",
}
OLD = [
    {"role": "user", "content": "an earlier question"},
    {"role": "assistant", "content": "an earlier answer"},
]

# file -> (declared mime, the error code, or None: accepted and stored exactly)
CASES = {
    "bomb_png_100k.png": ("image/png", "image_too_large"),
    "truncated.png": ("image/png", "image_corrupt"),
    "truncated.jpg": ("image/jpeg", "image_corrupt"),
    "png_named_jpeg.jpg": ("image/jpeg", None),
    "cmyk.jpg": ("image/jpeg", None),
    "sixteen_bit.png": ("image/png", None),
    "animated.gif": ("image/gif", None),
    "animated.webp": ("image/webp", None),
    "animated.png": ("image/png", None),
    "palette_transparency.png": ("image/png", None),
    "zero_size.png": ("image/png", "image_corrupt"),
    # Pillow sizes a GIF by its logical screen: 65,535 x 65,535 is refused before any frame decodes.
    "giant_gif_screen.gif": ("image/gif", "image_too_large"),
    "png_as_text_mime": ("text/plain", "not_an_image"),
}


def answer() -> ScriptedResponse:
    items = [{"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}, "[DONE]"]
    return ScriptedResponse(chunks=[f"data: {i if isinstance(i, str) else json.dumps(i)}\n\n" for i in items])


def one_colour_png(side: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (side, side), "white").save(out, "PNG", compress_level=9)
    return out.getvalue()


def data_url_of(name: str) -> str:
    if name == "png_as_text_mime":
        return (
            "data:text/plain;base64,"
            + base64.b64encode((CORPUS / "png_named_jpeg.jpg").read_bytes()).decode()
        )
    mime, _ = CASES[name]
    return f"data:{mime};base64," + base64.b64encode((CORPUS / name).read_bytes()).decode()


def send(url: str):
    transport = ScriptedTransport([answer()])
    platform = memory_platform({"providers": [PROVIDER], "activeProviderId": "p", "history": OLD}, transport)
    before = snapshot(platform)
    events: list[dict] = []
    start = {"action": "send", "text": "what is this?", "images": [{"dataUrl": url, "name": "x"}]}
    asyncio.run(asyncio.wait_for(chat.run_turn(platform, start, events.append, asyncio.Event()), 60))
    errors = [e["error"]["code"] for e in events if e["event"] == "error"]
    assert all(e["error"]["message"].endswith(".") for e in events if e["event"] == "error")
    return platform, transport, before, errors


def check(ledger, url: str, code: str | None) -> None:
    platform, transport, before, errors = send(url)
    assert len(errors) <= 1
    history = platform.local.snapshot()["history"]
    if code is None:
        assert errors == []
        assert [p["image_url"]["url"] for p in history[-2]["content"] if p["type"] == "image_url"] == [url]
        assert len(transport.requests) == 1
        ledger.settle(before, snapshot(platform), replaced=["local:history"])
        assert history[: len(OLD)] == OLD
    else:
        assert errors == [code]
        assert transport.requests == []  # refused before anything was sent
        ledger.settle(before, snapshot(platform))
        assert history == OLD


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_image(ledger, name):
    check(ledger, data_url_of(name), CASES[name][1])


def test_a_real_8000_px_image_of_one_colour_is_refused_over_the_50_mp_cap(ledger):
    data = one_colour_png(8000)  # 64 MP decoded (192 MB of RGB), a few hundred KB compressed
    assert len(data) < 1_000_000
    check(ledger, "data:image/png;base64," + base64.b64encode(data).decode(), "image_too_large")
