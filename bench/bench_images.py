"""Image figures: what seen images cost a request (issue 4), a send while the bound works and the
worker's memory (issue 14). The bound itself is measured in bench_image_bound.py, on the data
built here.

Concept: measurement functions in the style of `bench/run.py` (each takes run.py's `Bench`, or
None where no browser is needed, and returns a list of dicts with `Result`'s fields), so run.py
appends them with `Result(**d)`. Run alone: `python3 bench/run.py --only send_during_bound`.

1. `request_bytes_ratio`: request bytes at turn N of a conversation with K SEEN images, against
   the same conversation with the images removed, built by the Python core exactly as a turn
   builds it (`prepare_history_for_model` + `providers.openai.build_chat_request`). Target: at most
   1.01. Also reported, for scale: the same request if the pixels were resent.
2. `send_during_bound` (issue 14): the time from pressing Enter to the request reaching the fake
   provider while the panel's `images.bound` works on the same ~20 MB, against the same send with
   no bound running, in one run. Target: at most 1.5x (the send waits for one image's write at
   most). The scenario is tests/e2e/test_bound_yields_e2e.py's.
3. `worker_memory` (issue 14): the worker's wasm heap (`HEAPU8.length`; wasm memory never shrinks,
   so it is the peak so far) after a cold start, and after a turn over a 200-message conversation
   holding 8 MB of images.

Rules: the data is deterministic (seeded noise, fixed texts).
"""

from __future__ import annotations

import base64
import io
import random
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "py"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from bench_result import result

UNSEEN_LIMIT = 8 * 1024 * 1024
BOUND_PHOTOS = 7  # 2400x1600 JPEGs, ~3 MB of data URL each: ~21 MB in all
PHOTO_SIZE = (2400, 1600)


# --- data ---------------------------------------------------------------------------------------------------


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def photo_jpeg(seed: int, size: tuple[int, int] = PHOTO_SIZE) -> bytes:
    """A phone-photo-sized JPEG that does not compress well (noise): ~2.6 MB at 2400x1600."""
    from PIL import Image

    random.seed(seed)
    bands = [Image.effect_noise(size, 40 + (seed + i) % 30) for i in range(3)]
    image = Image.merge("RGB", bands)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()


_IMAGE_META = [
    {"name": "IMG_2041.jpg", "source": "file", "capturedAt": 1764511500000},
    {
        "name": "Screenshot of Pricing - Example Cloud Platform",
        "source": "screenshot",
        "capturedAt": 1764512100000,
    },
    {"name": "image.png", "source": "paste", "capturedAt": 1764512700000},
    {"name": "whiteboard.jpg", "source": "drop", "capturedAt": 1764513300000},
    {"name": "Screenshot of Error log - CI run #4821", "source": "screenshot", "capturedAt": 1764513900000},
]


def conversation(turns: int, images: int, *, seen: bool = True) -> list[dict[str, Any]]:
    """`turns` user/assistant exchanges (histories.realistic_history texts); the first `images` user
    turns, spread over the conversation, each carry one image (stamped seen when `seen`)."""
    from histories import realistic_history

    records = realistic_history(turns * 2)
    step = max(1, turns // max(1, images))
    with_image = {i * step for i in range(images)}
    out = []
    for index, record in enumerate(records):
        record = dict(record, createdAt=1764511000000 + index * 60_000)
        turn = index // 2
        if record["role"] == "user" and turn in with_image:
            n = sorted(with_image).index(turn)
            url = _data_url("image/jpeg", photo_jpeg(n, (1280, 853)))
            meta = dict(_IMAGE_META[n % len(_IMAGE_META)])
            record["content"] = [
                {"type": "image_url", "image_url": {"url": url}, "meta": meta},
                {"type": "text", "text": record["content"]},
            ]
            if seen:
                record["imagesSeen"] = True
        out.append(record)
    return out


def without_images(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same conversation with every image part removed (text parts kept as they were)."""
    out = []
    for record in records:
        content = record["content"]
        if isinstance(content, list):
            content = [p for p in content if p.get("type") != "image_url"]
            record = {k: v for k, v in record.items() if k != "imagesSeen"}
            record["content"] = content
        out.append(record)
    return out


def bound_history(photos: int = BOUND_PHOTOS) -> list[dict[str, Any]]:
    """~20 MB of UNSEEN photos in user records (answers between): pixels parked by failed turns."""
    records: list[dict[str, Any]] = []
    for n in range(photos):
        records.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"What is in photo {n + 1}?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": _data_url("image/jpeg", photo_jpeg(n))},
                        "meta": {"name": f"IMG_{3000 + n}.jpg", "source": "file"},
                    },
                ],
                "createdAt": 1764511000000 + n * 120_000,
            }
        )
        records.append(
            {
                "role": "assistant",
                "content": "(the provider was unreachable)",
                "createdAt": 1764511000000 + n * 120_000 + 1,
            }
        )
    return records


def unseen_bytes(records: list[dict[str, Any]]) -> int:
    return sum(
        len(p["image_url"]["url"])
        for r in records
        if not r.get("imagesSeen") and isinstance(r["content"], list)
        for p in r["content"]
        if p.get("type") == "image_url"
    )


# --- 1. request bytes with seen images ----------------------------------------------------------------------

PROVIDER = {
    "id": "bench",
    "type": "openai",
    "name": "Bench",
    "baseUrl": "https://api.openai.com/v1",
    "apiKey": "sk-bench",
    "model": "gpt-4o-mini",
}


def request_body_bytes(records: list[dict[str, Any]]) -> int:
    from margin.images.figures import prepare_history_for_model
    from margin.providers.openai import build_chat_request
    from margin.storage.history import Record

    prepared = prepare_history_for_model([Record.from_json(r) for r in records])
    body = build_chat_request(PROVIDER, prepared, stream=True).body
    assert body is not None
    return len(body.encode("utf-8") if isinstance(body, str) else body)


def request_bytes_ratio(
    bench: Any = None, grid: tuple[tuple[int, int], ...] = ((10, 1), (20, 1), (20, 3), (40, 1), (40, 5))
) -> list[dict[str, Any]]:
    """Ratio of request bytes, K seen images vs none, at turn N (the last user message is turn N)."""
    results = []
    for turns, images in grid:
        records = conversation(turns, images)
        # Turn N: the stored conversation up to and including the N-th question.
        at_turn_n = records[:-1]
        with_placeholders = request_body_bytes(at_turn_n)
        text_only = request_body_bytes(without_images(at_turn_n))
        resent = request_body_bytes([{k: v for k, v in r.items() if k != "imagesSeen"} for r in at_turn_n])
        ratio = with_placeholders / text_only
        per_image = (with_placeholders - text_only) / images
        results.append(
            result(
                f"request bytes, turn {turns} with {images} seen images / without images",
                round(ratio, 4),
                "x",
                1.01,
                compare="at_most",
                note=f"{with_placeholders} B vs {text_only} B: "
                f"+{with_placeholders - text_only} B for {images} placeholder(s)"
                f" ({per_image:.0f} B each; 1.01 needs >= {per_image / 0.01 / 1024:.1f} KB of request"
                f" per seen image);"
                f" resending the pixels instead: {resent} B ({resent / text_only:.0f}x)",
            )
        )
    return results


# --- 5. a send while the bound works; 6. the worker's memory ----------------------------------------------

BENCH_KEY = "sk-bench"
# The send with the bound running may take this much longer than without (what one original's
# write can add); before the bound yielded to turns, the send waited for the whole bound.
MAX_DELAY_RATIO = 1.5


def _with_fake_provider(margin: Any) -> Any:
    from fake_provider import FakeProvider

    fake = FakeProvider(api_key=BENCH_KEY).start()
    margin.save_provider(base_url=fake.base_url, api_key=BENCH_KEY)
    return fake


def send_during_bound(bench: Any) -> list[dict[str, Any]]:
    from test_bound_yields_e2e import measure_send_delays, parked_photos

    margin = bench.margin
    fake = _with_fake_provider(margin)
    try:
        delays = measure_send_delays(margin, fake, parked_photos())
        margin.wait_alert(delays.page, timeout_ms=120_000)
        delays.page.close()
    finally:
        fake.stop()
    ratio = delays.with_bound / delays.baseline
    return [
        result(
            "send -> request while images.bound works on 20 MB / the same send with no bound",
            round(ratio, 4),
            "x",
            MAX_DELAY_RATIO,
            compare="at_most",
            note=f"{delays.with_bound:.2f} s with the bound running, {delays.baseline:.2f} s without"
            " (the turn itself reads and rewrites the 20 MB history)",
        )
    ]


HEAP_JS = "async () => (await marginPython()).pyodide._module.HEAPU8.length"


def _heap_mb(margin: Any) -> float:
    return round(float(margin.worker().evaluate(HEAP_JS)) / 1024 / 1024, 1)


def worker_memory(bench: Any) -> list[dict[str, Any]]:
    margin = bench.margin
    margin.storage_set({"history": []})
    margin.stop_service_worker()
    cold = _heap_mb(margin)  # worker() wakes it with a ping: Python restored from the snapshot
    history = conversation(100, 10)  # 200 messages, 10 seen photos of ~0.85 MB: ~8 MB
    megabytes = sum(len(p["image_url"]["url"]) for r in history for p in _parts(r)) / 1024 / 1024
    fake = _with_fake_provider(margin)
    try:
        margin.storage_set({"history": history})
        page = margin.open_panel()
        margin.send(page, "One more question about the last photo.")
        margin.wait_answer(page)
        page.close()
    finally:
        fake.stop()
    after = _heap_mb(margin)
    return [
        result("worker wasm heap after a cold start", cold, "MB"),
        result(
            f"worker wasm heap after a turn over 200 messages with {megabytes:.1f} MB of images",
            after,
            "MB",
            note="HEAPU8.length; wasm memory only grows, so this is the peak so far",
        ),
    ]


def _parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    content = record["content"]
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


METRICS = [request_bytes_ratio, send_during_bound, worker_memory]
BROWSERLESS_METRICS = [request_bytes_ratio]
