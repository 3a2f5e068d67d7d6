"""Paste, drop, request-side conversion, a full storage and malformed requests, in the real browser.

What `test_images_e2e.py` does not prove yet (issue 4, "Limits and bad input"; docs/protocol.md):
1. an image pasted into "Message" and one dropped on the panel become chips, are sent, and are stored
   byte for byte with `meta.source` "paste" / "drop";
2. a format the model cannot take (TIFF) is converted on the request side only: the provider gets a
   PNG or JPEG of the same picture, chrome.storage keeps the TIFF the user picked;
3. chrome.storage refusing a write (quota) is shown to the user as a plain sentence, nothing is sent,
   nothing stored is lost, the typed text stays, and sending works again once storage accepts writes;
4. the worker answers unknown and malformed requests with the protocol's error envelope and keeps
   answering.

Paste and drop are real DOM events (`ClipboardEvent`, `DragEvent`) carrying a `DataTransfer` with a
`File` built in the page from the exact bytes the test made with Pillow. The quota failure is made in
the service worker itself by replacing `chrome.storage.local.set` with one that rejects the way
Chrome does ("Resource::kQuotaBytes quota exceeded"); reads keep working.
"""

from __future__ import annotations

import base64
import io
import re

import pytest
from fake_provider import FakeProvider
from harness import Margin, poll
from PIL import Image, ImageChops, ImageStat
from test_images_e2e import (
    chips,
    data_url,
    decode_data_url,
    image_urls_in,
    pick_image,
    picture_png,
    srcs,
    stored_image_urls,
    text_of,
    user_images,
    user_messages,
)

# --- helpers ------------------------------------------------------------------------------------------

# Builds a File from base64 bytes inside the page and puts it in a fresh DataTransfer.
MAKE_TRANSFER_JS = """([b64, name, mime]) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, { type: mime }));
    return transfer;
}"""


def paste_file(page, data: bytes, name: str, mime: str) -> bool:
    """Dispatch a `paste` on the "Message" box carrying one file; True if the panel took it
    (called preventDefault, so the browser would not paste anything else)."""
    return Margin.message_box(page).evaluate(
        f"""(box, args) => {{
            const transfer = ({MAKE_TRANSFER_JS})(args);
            const event = new ClipboardEvent('paste', {{ clipboardData: transfer, bubbles: true, cancelable: true }});
            return !box.dispatchEvent(event);
        }}""",
        [base64.b64encode(data).decode("ascii"), name, mime],
    )


def drag_event(target, kind: str) -> bool:
    """Dispatch a `kind` drag event on `target` with the page's pending DataTransfer; True if the
    panel called preventDefault (for dragover: the drop is allowed; for drop: it handled it)."""
    return target.evaluate(
        """(node, kind) => !node.dispatchEvent(new DragEvent(kind, {
            dataTransfer: window.__marginTestTransfer, bubbles: true, cancelable: true }))""",
        kind,
    )


def tiff_bytes(width: int, height: int) -> tuple[bytes, Image.Image]:
    """A TIFF of a recognisable picture (the same one `picture_png` draws), and the picture itself."""
    picture = Image.open(io.BytesIO(picture_png(width, height, seed=11))).convert("RGB")
    out = io.BytesIO()
    picture.save(out, "TIFF")
    return out.getvalue(), picture


def mean_difference(a: Image.Image, b: Image.Image) -> float:
    diff = ImageChops.difference(a.convert("RGB"), b.convert("RGB"))
    return sum(ImageStat.Stat(diff).mean) / 3


def extension_worker(margin: Margin):
    """The extension's running service worker, once Python answers (so it is the one that serves turns)."""
    reply = margin.send_message({"type": "app.ping", "payload": {}})
    assert reply.get("ok"), reply
    workers = [w for w in margin.context.service_workers if w.url.startswith(margin.origin + "/")]
    assert workers, "no service worker of the extension is running"
    return workers[-1]


def image_part(record: dict) -> dict:
    (part,) = [p for p in record["content"] if isinstance(p, dict) and p.get("type") == "image_url"]
    return part


def assert_plain_sentence(sentence: str) -> None:
    assert isinstance(sentence, str) and len(sentence.split()) >= 4, sentence
    assert sentence.rstrip().endswith((".", "!")), sentence
    assert not re.search(r"Traceback|Error:|\{|kQuotaBytes|undefined|\bnull\b", sentence), sentence


# --- 1. paste ------------------------------------------------------------------------------------------


def test_a_pasted_image_becomes_a_chip_and_is_sent_and_stored_byte_for_byte_as_paste(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    png = picture_png(240, 160, seed=21)
    expected_url = data_url("image/png", png)
    page = margin.open_panel()

    taken = paste_file(page, png, "clipboard.png", "image/png")
    assert taken, "the panel did not handle the pasted image (no preventDefault)"
    chips(page).first.wait_for(state="visible", timeout=10_000)
    assert chips(page).count() == 1
    assert page.locator(".chip img, #chips img").first.get_attribute("src") == expected_url
    assert margin.message_box(page).input_value() == "", "pasting an image put text into the Message box"

    fake_provider.script(reply="A pasted chart.")
    margin.send(page, "What did I paste?")
    assert "pasted chart" in margin.wait_answer(page)
    assert chips(page).count() == 0

    (request,) = fake_provider.wait_for_chat_requests(1)
    (question,) = user_messages(request.body)
    assert image_urls_in(question) == [expected_url]
    assert "What did I paste?" in text_of(question)

    user_records = [r for r in margin.history() if r["role"] == "user"]
    assert len(user_records) == 1
    assert stored_image_urls(user_records[0]) == [expected_url]
    assert image_part(user_records[0])["meta"]["source"] == "paste"
    assert srcs(user_images(page)) == [expected_url]


# --- 2. drop -------------------------------------------------------------------------------------------


def test_an_image_dropped_on_the_conversation_becomes_a_chip_and_is_stored_as_drop(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    png = picture_png(200, 200, seed=33)
    expected_url = data_url("image/png", png)
    page = margin.open_panel()
    page.evaluate(
        f"(args) => {{ window.__marginTestTransfer = ({MAKE_TRANSFER_JS})(args); }}",
        [base64.b64encode(png).decode("ascii"), "dropped.png", "image/png"],
    )
    conversation = page.get_by_role("log", name="Conversation")
    overlay = page.get_by_text("Drop images to attach them")

    drag_event(conversation, "dragenter")
    overlay.wait_for(state="visible", timeout=5_000)
    assert drag_event(conversation, "dragover"), "the panel does not accept a drop (dragover not prevented)"
    assert drag_event(conversation, "drop"), "the panel did not handle the drop (browser would open the file)"
    overlay.wait_for(state="hidden", timeout=5_000)
    chips(page).first.wait_for(state="visible", timeout=10_000)
    assert chips(page).count() == 1
    assert page.locator(".chip img, #chips img").first.get_attribute("src") == expected_url

    fake_provider.script(reply="A dropped picture.")
    margin.send(page, "And this one?")
    margin.wait_answer(page)

    (request,) = fake_provider.wait_for_chat_requests(1)
    assert image_urls_in(user_messages(request.body)[0]) == [expected_url]
    (record,) = [r for r in margin.history() if r["role"] == "user"]
    assert stored_image_urls(record) == [expected_url]
    assert image_part(record)["meta"]["source"] == "drop"


# --- 3. request-side conversion --------------------------------------------------------------------------


def test_a_tiff_is_sent_as_png_or_jpeg_while_storage_keeps_the_tiff(
    configured_margin: Margin, fake_provider: FakeProvider, tmp_path
):
    margin = configured_margin
    tiff, picture = tiff_bytes(300, 180)
    page = margin.open_panel()
    tiff_url = pick_image(page, tmp_path, "scan.tif", tiff, "image/tiff")
    # Chrome cannot show a TIFF: the chip says what it is instead of a broken image.
    tile = page.get_by_title("scan.tif: no preview in this browser")
    tile.wait_for(state="visible", timeout=10_000)
    assert tile.inner_text().strip() == "TIFF"

    fake_provider.script(reply="A scanned chart.")
    margin.send(page, "Read this scan")
    margin.wait_answer(page)

    (request,) = fake_provider.wait_for_chat_requests(1)
    (question,) = user_messages(request.body)
    (sent_url,) = image_urls_in(question)
    assert sent_url.startswith(("data:image/png;base64,", "data:image/jpeg;base64,")), sent_url[:40]
    assert b"image/tiff" not in request.raw_body, "the TIFF itself went to the provider"
    sent = decode_data_url(sent_url)
    assert sent.format in ("PNG", "JPEG")
    assert sent.size == picture.size
    assert mean_difference(sent, picture) < 6, "the converted image is not the same picture"

    (record,) = [r for r in margin.history() if r["role"] == "user"]
    assert stored_image_urls(record) == [tiff_url], "storage does not keep the TIFF the user picked"
    assert image_part(record)["meta"]["source"] == "file"


# --- 4. storage refuses a write ---------------------------------------------------------------------------

BREAK_SET_JS = """() => {
    const local = chrome.storage.local;
    globalThis.__marginTestOriginalSet = local.set;
    local.set = function () {
        return Promise.reject(new Error("Resource::kQuotaBytes quota exceeded"));
    };
    return chrome.storage.local.set !== globalThis.__marginTestOriginalSet;
}"""

RESTORE_SET_JS = """() => {
    if (!globalThis.__marginTestOriginalSet) return false;
    chrome.storage.local.set = globalThis.__marginTestOriginalSet;
    delete globalThis.__marginTestOriginalSet;
    return true;
}"""

STILL_BROKEN_JS = "() => !!globalThis.__marginTestOriginalSet"


def test_a_full_storage_is_told_plainly_sends_nothing_loses_nothing_and_recovers(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    page = margin.open_panel()
    fake_provider.script(reply="First answer.")
    margin.send(page, "First question")
    margin.wait_answer(page)
    before = margin.history()
    assert [r["role"] for r in before] == ["user", "assistant"]

    worker = extension_worker(margin)
    assert worker.evaluate(BREAK_SET_JS), "could not replace chrome.storage.local.set in the worker"

    draft = "Second question, which must not be lost"
    margin.watch_turn_states(page)
    margin.send(page, draft)
    sentence = margin.wait_alert(page, timeout_ms=20_000)
    assert worker.evaluate(STILL_BROKEN_JS), (
        "the worker restarted during the test: the failure was not injected"
    )
    assert re.search(r"\bfull\b", sentence, re.I) and "storage" in sentence.lower(), sentence
    assert_plain_sentence(sentence)

    margin.wait_idle(page)
    poll(
        lambda: margin.message_box(page).input_value() == draft,
        timeout=5,
        message=lambda: (
            f"the typed text is gone: Message box holds {margin.message_box(page).input_value()!r}"
        ),
    )
    # The turn ended without the worker's "started" (nothing stored, so nothing requested): it went
    # from "starting" straight back to "idle", its error being its one terminal event.
    assert margin.turn_states(page) == ["starting", "idle"]
    margin.round_trip(page)
    assert len(fake_provider.chat_requests) == 1, "a request went to the provider although nothing was stored"
    assert margin.history() == before, "stored history changed after a refused write"
    assert margin.bubble_texts(page, "user") == ["First question"]
    assert margin.bubbles(page, "assistant").count() == 1

    # Storage accepts writes again: the same draft, sent with "Send", goes through.
    assert worker.evaluate(RESTORE_SET_JS)
    answers_before = margin.bubbles(page, "assistant").count()
    fake_provider.script(reply="Second answer.")
    page.get_by_role("button", name="Send").click()
    assert "Second answer" in margin.wait_answer(page, before=answers_before)
    assert page.get_by_role("alert").filter(has_text=re.compile(r"\S")).count() == 0, "the old alert stayed"

    history = margin.history()
    assert history[:2] == before
    assert [r["role"] for r in history] == ["user", "assistant", "user", "assistant"]
    assert text_of(history[2]["content"]) == draft
    second = fake_provider.wait_for_chat_requests(2)[1]
    assert text_of(user_messages(second.body)[-1]) == draft
    assert margin.message_box(page).input_value() == ""


# --- 5. unknown and malformed requests ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"type": "nope.nothing", "payload": {}}, "unknown_message"),
        ({"type": "nope.nothing"}, "unknown_message"),
        ("garbage", "bad_message"),
        (42, "bad_message"),
        ({"payload": {}}, "bad_message"),
        ({"type": 7, "payload": {}}, "bad_message"),
        ({"type": "app.state", "payload": "garbage"}, "bad_payload"),
        ({"type": "session.list", "payload": [1, 2]}, "bad_payload"),
        ({"type": "options.save", "payload": 5}, "bad_payload"),
    ],
    ids=[
        "unknown",
        "unknown-no-payload",
        "string",
        "number",
        "no-type",
        "type-not-string",
        "payload-string",
        "payload-list",
        "payload-number",
    ],
)
def test_unknown_and_malformed_requests_get_the_error_envelope_and_the_worker_keeps_answering(
    margin: Margin, message, code: str
):
    stored_before = margin.storage_get(["providers", "activeProviderId", "history"])
    reply = margin.send_message(message)
    assert isinstance(reply, dict) and reply.get("ok") is False, reply
    assert set(reply) == {"ok", "error"}, reply
    assert reply["error"]["code"] == code, reply
    assert_plain_sentence(reply["error"]["message"])

    # The worker keeps answering, Python included, and nothing was written.
    ping = margin.send_message({"type": "app.ping", "payload": {}})
    assert ping.get("ok") is True and ping["value"]["python"].startswith("3."), ping
    state = margin.send_message({"type": "app.state", "payload": {}})
    assert state.get("ok") is True and "providers" in state["value"], state
    assert margin.storage_get(["providers", "activeProviderId", "history"]) == stored_before
