"""Images end to end (issue 4): attach, send, see a placeholder later, keep the pixels, bound the parked ones.

Every test drives the side panel by the accessible names of docs/interface.md ("Attach image",
"Screenshot", "Message", "Send") and checks three witnesses: what the provider received (the fake
server records every body), what chrome.storage `history` holds, and what the user sees.

The images are real files made with Pillow; the checks compare the exact bytes the user picked with
what was sent and what was stored (docs/storage-model.md, "Images: pixels are never destroyed").
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fake_behaviours import server_error
from fake_provider import FakeProvider
from harness import Margin, poll
from PIL import Image
from playwright.sync_api import expect

# Parked unseen pixels are bounded to this many data-URL characters (image_bound.UNSEEN_LIMIT_BYTES).
UNSEEN_LIMIT = 8 * 1024 * 1024
# The first bound in a fresh profile boots Python and loads Pillow inside Pyodide.
BOUND_TIMEOUT = 90


# --- images and data URLs ---------------------------------------------------------------------------


def picture_png(width: int, height: int, seed: int = 1) -> bytes:
    """A small recognisable picture: coloured bands plus a diagonal, as PNG bytes."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    pixels = image.load()
    for x in range(width):
        for y in range(height):
            if (x // 16) % 2 == 0:
                pixels[x, y] = (x * 255 // width, y * 255 // height, 128)
            if abs(x * height - y * width) < width * 2:
                pixels[x, y] = (0, 0, 0)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def noisy_png(width: int, height: int, seed: int) -> bytes:
    """Random pixels: PNG cannot compress them, so the size is predictable (~3 bytes a pixel)."""
    rng = random.Random(seed)
    image = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def decode_data_url(url: str) -> Image.Image:
    header, payload = url.split(",", 1)
    assert header.startswith("data:image/") and header.endswith(";base64"), header[:80]
    image = Image.open(io.BytesIO(base64.b64decode(payload, validate=True)))
    image.load()
    return image


# --- what went over the wire and what is stored ---------------------------------------------------------


def user_messages(body: dict) -> list[Any]:
    return [m["content"] for m in body["messages"] if m.get("role") == "user"]


def image_urls_in(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    return [p["image_url"]["url"] for p in content if isinstance(p, dict) and p.get("type") == "image_url"]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def stored_image_urls(record: dict) -> list[str]:
    return image_urls_in(record.get("content"))


def unseen_image_bytes(history: list[dict]) -> int:
    return sum(len(url) for r in history if not r.get("imagesSeen") for url in stored_image_urls(r))


# --- driving the panel --------------------------------------------------------------------------------


def attach_with_chooser(page, files: list[Path] | Path) -> None:
    """Click "Attach image" and pick `files` in the file chooser it opens."""
    with page.expect_file_chooser(timeout=10_000) as chooser:
        page.get_by_role("button", name="Attach image", exact=True).click()
    chooser.value.set_files(files)


def pick_image(page, folder: Path, name: str, data: bytes, mime: str) -> str:
    """Save `data` as `folder/name`, pick it with "Attach image", wait for its chip; its data URL."""
    path = folder / name
    path.write_bytes(data)
    attach_with_chooser(page, path)
    chips(page).first.wait_for(state="visible", timeout=10_000)
    return data_url(mime, data)


def chips(page):
    """The attachment chips above the message box (each has a "Remove image" button)."""
    return page.get_by_role("button", name="Remove image")


def user_images(page):
    return page.locator("article[data-role=user] img")


def srcs(locator) -> list[str]:
    return locator.evaluate_all("(nodes) => nodes.map((n) => n.src)")


# --- tests -------------------------------------------------------------------------------------------------


def test_picked_image_is_sent_once_then_a_placeholder_and_kept_byte_for_byte(
    configured_margin: Margin, fake_provider: FakeProvider, tmp_path: Path
):
    margin = configured_margin
    png = picture_png(320, 200, seed=7)
    page = margin.open_panel()
    expected_url = pick_image(page, tmp_path, "chart.png", png, "image/png")
    assert chips(page).count() == 1
    assert page.locator(".chip img, #chips img").first.get_attribute("src") == expected_url

    fake_provider.script(reply="A chart with a diagonal line.")
    margin.send(page, "What is in this picture?")
    assert "diagonal" in margin.wait_answer(page)
    assert chips(page).count() == 0, "the chip stayed after the image was sent"

    # 1. The first request carries the pixels, byte for byte, next to the question.
    (first,) = fake_provider.wait_for_chat_requests(1)
    (question,) = user_messages(first.body)
    assert image_urls_in(question) == [expected_url]
    assert "What is in this picture?" in text_of(question)
    assert "[Figure 1" in text_of(question), "the label the later placeholder refers to is missing"

    # 2. Storage keeps exactly what was sent, stamped as seen after the successful turn.
    history = margin.history()
    assert [r["role"] for r in history] == ["user", "assistant"]
    assert stored_image_urls(history[0]) == [expected_url]
    assert history[0].get("imagesSeen") is True

    # 3. The next turn sends a short placeholder instead of the pixels.
    fake_provider.script(reply="Nothing else.")
    margin.send(page, "Anything else?")
    margin.wait_answer(page)
    second = fake_provider.wait_for_chat_requests(2)[1]
    old_question, new_question = user_messages(second.body)
    assert image_urls_in(old_question) == []
    assert "[Figure 1" in text_of(old_question)
    assert "chart.png" in text_of(old_question)
    assert "What is in this picture?" in text_of(old_question)
    assert text_of(new_question) == "Anything else?"
    payload = expected_url.split(",", 1)[1]
    assert payload[:200].encode() not in second.raw_body, (
        "the second request still carries the image's pixels"
    )
    assert b"data:image" not in second.raw_body
    # The messages, not the whole body: every request also carries the run_python tool's definition.
    assert len(json.dumps(second.body["messages"])) < len(json.dumps(first.body["messages"])) // 10

    # Still byte-identical in storage after the second turn.
    history = margin.history()
    assert stored_image_urls(history[0]) == [expected_url]
    assert history[0].get("imagesSeen") is True

    # 4. The bubble shows the picture as sent; clicking it opens it full size.
    shown = user_images(page)
    assert srcs(shown) == [expected_url]
    shown.first.click()
    viewer = page.get_by_role("dialog")
    viewer.wait_for(state="visible", timeout=5_000)
    big = viewer.locator("img")
    assert big.get_attribute("src") == expected_url
    poll(
        lambda: big.evaluate("(img) => img.complete && img.naturalWidth"),
        timeout=5,
        message="the full-size image did not load",
    )
    assert big.evaluate("(img) => [img.naturalWidth, img.naturalHeight]") == [320, 200]
    page.keyboard.press("Escape")
    viewer.wait_for(state="hidden", timeout=5_000)


def test_a_failed_turn_stamps_nothing_so_the_next_send_carries_the_pixels_again(
    configured_margin: Margin, fake_provider: FakeProvider, tmp_path: Path
):
    margin = configured_margin
    png = picture_png(120, 90, seed=3)
    page = margin.open_panel()
    expected_url = pick_image(page, tmp_path, "photo.png", png, "image/png")
    fake_provider.script(server_error())
    margin.send(page, "Describe it")
    alert = margin.wait_alert(page)
    assert alert, "the failed turn showed no message"

    history = poll(lambda: (h := margin.history()) and h, timeout=10, message="the question was not stored")
    assert [r["role"] for r in history] == ["user"]
    assert stored_image_urls(history[0]) == [expected_url]
    assert not history[0].get("imagesSeen"), "a failed turn stamped the image as seen"
    (failed,) = fake_provider.wait_for_chat_requests(1)
    assert image_urls_in(user_messages(failed.body)[0]) == [expected_url]

    fake_provider.script(reply="Now I see it.")
    margin.send(page, "Try again please")
    margin.wait_answer(page)
    retry = fake_provider.wait_for_chat_requests(2)[1]
    first_question = user_messages(retry.body)[0]
    assert image_urls_in(first_question) == [expected_url], "the retry did not send the pixels again"

    history = margin.history()
    assert stored_image_urls(history[0]) == [expected_url]
    assert history[0].get("imagesSeen") is True
    assert srcs(user_images(page)) == [expected_url]


def test_a_failed_turn_over_the_limit_stores_ahead_what_the_bound_will_shrink(
    configured_margin: Margin, fake_provider: FakeProvider, tmp_path: Path
):
    """margin.turn.chat rule 13: the oldest parked image's original (byte for byte, under its content
    address) and its thumbnail are stored once the failed turn has ended; history is unchanged
    until the panel's next bound, which then refers to that original."""
    margin = configured_margin
    records, (oldest, _) = _image_history([(935, 935), (935, 935)])  # ~7 MB of parked pixels
    records.append({"role": "assistant", "content": "(lost)", "createdAt": 1_760_000_900_000})
    margin.storage_set({"history": records})
    page = margin.open_panel()  # its bound: under 8 MB, nothing to do
    pick_image(page, tmp_path, "more.png", noisy_png(612, 612, seed=9), "image/png")
    fake_provider.script(server_error())
    margin.send(page, "And this one?")
    margin.wait_alert(page)

    digest = hashlib.sha256(oldest.encode()).hexdigest()
    original, thumbnail = "imageOriginal_" + digest[:32], "imageThumbnail_" + digest[:32]
    stored = poll(
        lambda: got if len(got := margin.storage_get([original, thumbnail])) == 2 else None,
        timeout=20,
        message="the oldest parked image was not stored ahead",
    )
    assert stored[original] == {"url": oldest, "sha256": digest}
    assert stored[thumbnail]["side"] == 512 and len(stored[thumbnail]["url"]) < len(oldest) // 10
    assert stored_image_urls(margin.history()[0]) == [oldest]  # the part is not changed
    page.close()

    page = margin.open_panel()  # the bound shrinks the oldest, with what was stored ahead
    first = poll(
        lambda: (h := margin.history()) and h[0]["content"][1].get("meta", {}).get("originalKey") and h[0],
        timeout=BOUND_TIMEOUT,
        message="the bound did not shrink the oldest parked image",
    )
    part = first["content"][1]
    assert part["meta"]["originalKey"] == original and part["image_url"]["url"] == stored[thumbnail]["url"]
    assert margin.storage_get([original])[original] == {"url": oldest, "sha256": digest}


def _image_history(sizes: list[tuple[int, int]]) -> tuple[list[dict], list[str]]:
    """A conversation of user records with UNSEEN noisy images (answers between), oldest first."""
    records: list[dict] = []
    urls: list[str] = []
    for n, (width, height) in enumerate(sizes):
        url = data_url("image/png", noisy_png(width, height, seed=100 + n))
        urls.append(url)
        records.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"Look at picture {n + 1}"},
                    {
                        "type": "image_url",
                        "image_url": {"url": url},
                        "meta": {"name": f"noise-{n + 1}.png", "source": "file"},
                    },
                ],
                "createdAt": 1_760_000_000_000 + n * 60_000,
            }
        )
        if n < len(sizes) - 1:
            records.append(
                {
                    "role": "assistant",
                    "content": f"(the answer to picture {n + 1} was lost)",
                    "createdAt": 1_760_000_000_000 + n * 60_000 + 1,
                }
            )
    return records, urls


def test_opening_the_panel_bounds_parked_unseen_images_by_downscaling_the_oldest(margin: Margin):
    # ~2.9 MB of data URL each: ~14.5 MB of unseen pixels, plus a text-only record at the end.
    sizes = [(1000, 700), (700, 1000), (900, 900), (1200, 500), (1000, 700)]
    seeded, urls = _image_history(sizes)
    seeded.append({"role": "assistant", "content": "Text only, after the newest picture."})
    # An older picture the model has already seen: not parked, so never touched.
    seen_url = data_url("image/png", noisy_png(800, 800, seed=99))
    seeded[:0] = [
        {
            "role": "user",
            "imagesSeen": True,
            "content": [
                {"type": "text", "text": "An old, answered picture"},
                {
                    "type": "image_url",
                    "image_url": {"url": seen_url},
                    "meta": {"name": "seen.png", "source": "paste"},
                },
            ],
        },
        {"role": "assistant", "content": "It was answered."},
    ]
    before = unseen_image_bytes(seeded)
    assert before > UNSEEN_LIMIT + 4 * 1024 * 1024
    margin.storage_set({"history": seeded})
    margin.stop_service_worker()

    page = margin.open_panel()  # the panel calls images.bound once it is open

    def bounded():
        history = margin.history()
        return history if unseen_image_bytes(history) <= UNSEEN_LIMIT else None

    history = poll(
        bounded,
        timeout=BOUND_TIMEOUT,
        interval=0.5,
        message=lambda: (
            f"unseen image bytes stayed at {unseen_image_bytes(margin.history())} "
            f"(limit {UNSEEN_LIMIT}); see the worker's console"
        ),
    )

    assert len(history) == len(seeded)
    assert [r["role"] for r in history] == [r["role"] for r in seeded]
    assert [text_of(r["content"]) for r in history] == [text_of(r["content"]) for r in seeded]
    assert history[:2] == seeded[:2], "the bound touched an image the model has already seen"
    user_records = [r for r in history if r["role"] == "user" and not r.get("imagesSeen")]
    # The newest record with images is protected: byte-identical.
    assert stored_image_urls(user_records[-1]) == [urls[-1]]
    # The oldest went first, and every record still has its picture, same aspect ratio.
    assert stored_image_urls(user_records[0]) != [urls[0]], "the oldest image was not the one downscaled"
    changed = 0
    for record, original, (width, height) in zip(user_records, urls, sizes, strict=True):
        (url,) = stored_image_urls(record)
        image = decode_data_url(url)
        if url == original:
            assert image.size == (width, height)
            continue
        changed += 1
        assert max(image.size) < max(width, height)
        scale = max(image.size) / max(width, height)
        assert abs(image.size[0] - width * scale) <= 1 and abs(image.size[1] - height * scale) <= 1, (
            f"aspect ratio changed: {width}x{height} -> {image.size}"
        )
        (part,) = [p for p in record["content"] if p.get("type") == "image_url"]
        assert part["meta"]["name"] == seeded[history.index(record)]["content"][1]["meta"]["name"]
        assert part["meta"].get("downscaledFrom", {}).get("width") == width
    assert changed >= 1
    assert [bool(r.get("imagesSeen")) for r in history] == [bool(r.get("imagesSeen")) for r in seeded], (
        "the bound changed which images are stamped seen"
    )

    # The panel shows a picture for every record, each exactly as stored now.
    shown = user_images(page)
    expected_srcs = [seen_url] + [stored_image_urls(r)[0] for r in user_records]
    poll(
        lambda: srcs(shown) == expected_srcs,
        timeout=15,
        message=lambda: (
            f"the panel shows {shown.count()} images for {len(expected_srcs)} records with images"
        ),
    )

    # Each thumbnail's original is stored, byte for byte, under the key its part names.
    thumbnailed = [
        (p, original)
        for record, original in zip(user_records, urls, strict=True)
        for p in record["content"]
        if p.get("type") == "image_url" and p.get("meta", {}).get("originalKey")
    ]
    assert len(thumbnailed) == changed
    keys = [p["meta"]["originalKey"] for p, _ in thumbnailed]
    stored_originals = margin.storage_get(keys)
    for p, original in thumbnailed:
        assert stored_originals[p["meta"]["originalKey"]]["url"] == original

    # Clicking the oldest thumbnail opens its original (a blob URL), at the original's size.
    user_images(page).nth(1).click()  # nth(0) is the seen picture
    viewer = page.get_by_role("dialog")
    viewer.wait_for(state="visible", timeout=5_000)
    big = viewer.locator("img")
    poll(
        lambda: (
            (big.get_attribute("src") or "").startswith("blob:")
            and big.evaluate("(img) => img.complete && img.naturalWidth > 0")
        ),
        timeout=10,
        message="the viewer did not show the original",
    )
    assert big.evaluate("(img) => [img.naturalWidth, img.naturalHeight]") == list(sizes[0])
    page.keyboard.press("Escape")
    viewer.wait_for(state="hidden", timeout=5_000)

    # Running it again changes nothing more.
    reply = margin.send_message({"type": "images.bound", "payload": {}})
    assert reply["ok"], reply
    assert reply["value"]["changed"] == 0
    assert margin.history() == history


def test_a_file_that_is_not_an_image_gets_a_plain_sentence_and_nothing_is_sent(
    configured_margin: Margin, fake_provider: FakeProvider, tmp_path: Path
):
    margin = configured_margin
    path = tmp_path / "notes.txt"
    path.write_text("These are notes, not a picture.\n")
    page = margin.open_panel()
    margin.watch_turn_states(page)
    attach_with_chooser(page, path)
    sentence = margin.wait_alert(page, timeout_ms=10_000)
    assert sentence == "“notes.txt” is not an image. Attach a picture such as a PNG, JPEG, GIF or WebP file."
    assert chips(page).count() == 0
    # Every request goes out in a turn, and the panel started none: it never left "idle".
    margin.round_trip(page)
    assert margin.turn_states(page) == [] and margin.turn_state(page) == "idle"
    assert fake_provider.chat_requests == []
    assert margin.history() == []


def test_a_file_over_the_attachment_limit_is_refused_with_the_limit_python_enforces(
    configured_margin: Margin, fake_provider: FakeProvider, tmp_path: Path
):
    margin = configured_margin
    page = margin.open_panel()
    limit = page.evaluate(
        "async () => (await import(chrome.runtime.getURL('generated/contract.js'))).CONTRACT.limits.attachmentMaxBytes"
    )
    path = tmp_path / "huge.png"
    with path.open("wb") as handle:  # sparse: the size is what the composer checks
        handle.truncate(limit + 1)
    attach_with_chooser(page, path)
    sentence = margin.wait_alert(page, timeout_ms=10_000)
    assert sentence == (
        f"“huge.png” is larger than {limit // (1024 * 1024)} MB. "
        "Attach a smaller image or a screenshot of it."
    ), sentence
    assert chips(page).count() == 0
    assert margin.turn_state(page) == "idle"
    assert fake_provider.chat_requests == []


# --- Screenshot -------------------------------------------------------------------------------------------

RED_PAGE = b"""<!doctype html><html><head><title>Red test page</title>
<style>html,body{margin:0;height:100%;background:#ff0000}</style></head>
<body><h1 style="color:#ffffff;margin:0;padding:8px">A red page</h1></body></html>"""


@pytest.fixture
def web_page_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(RED_PAGE)))
            self.end_headers()
            self.wfile.write(RED_PAGE)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/red.html"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_screenshot_of_the_active_web_tab_is_attached_and_sent_as_png(
    configured_margin: Margin, fake_provider: FakeProvider, web_page_server: str
):
    margin = configured_margin
    panel = margin.open_panel()
    web = margin.context.new_page()
    web.goto(web_page_server)
    web.wait_for_load_state("load")
    # The panel's page is a tab of its own here: the web page must be the active tab of the last
    # focused window, as it is when the real side panel sits beside it.
    web.bring_to_front()

    panel.get_by_role("button", name="Screenshot", exact=True).click()
    chips(panel).first.wait_for(state="visible", timeout=30_000)
    shot_url = panel.locator(".chip img, #chips img").first.get_attribute("src")
    assert shot_url.startswith("data:image/png;base64,")
    # Its name is the tab's title; the chip says what it is in the user's language, live.
    chip = panel.locator(".chip").first
    assert chip.get_attribute("title") == "Screenshot of Red test page"
    try:
        margin.storage_set({"uiLanguage": "ru"})
        expect(chip).to_have_attribute("title", "Скриншот «Red test page»")
    finally:
        margin.storage_set({"uiLanguage": "auto"})
    expect(chip).to_have_attribute("title", "Screenshot of Red test page")

    fake_provider.script(reply="A red page.")
    margin.send(panel, "What page is this?")
    margin.wait_answer(panel)
    (request,) = fake_provider.wait_for_chat_requests(1)
    (question,) = user_messages(request.body)
    (sent,) = image_urls_in(question)
    assert sent == shot_url
    image = decode_data_url(sent)
    assert image.format == "PNG"
    width, height = image.size
    assert width > 100 and height > 100
    assert image.convert("RGB").getpixel((width // 2, height - 10)) == (255, 0, 0), (
        "the screenshot is not of the web page"
    )
    assert "Red test page" in text_of(question), "the placeholder label does not name the captured page"

    (record,) = [r for r in margin.history() if r["role"] == "user"]
    assert stored_image_urls(record) == [shot_url]
    (part,) = [p for p in record["content"] if p.get("type") == "image_url"]
    assert part["meta"]["source"] == "screenshot"
    assert part["meta"]["name"] == "Red test page"  # no word of any language stored
