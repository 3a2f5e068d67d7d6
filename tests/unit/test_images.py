"""Images: stamping, placeholders, request-side conversion, the unseen-bytes bound, attachments."""

from __future__ import annotations

import copy
import io
import json
import random

import pytest
from helpers import run
from PIL import Image
from platform_memory import MemoryTabs, memory_platform

from margin.base import clock
from margin.base.errors import MarginError
from margin.images import attachments as image_attachments
from margin.images import bound as image_bound
from margin.images import data_urls, figures, request_images, screenshot
from margin.images import parts as images
from margin.platform.ports import WebTab
from margin.storage.history import HISTORY, Record, history_json, read_history
from margin.storage.keys import lock_for

CAPTURED = 1796047500000  # 2026-11-30 14:05 UTC


def data_url(image: Image.Image, fmt: str, **save) -> str:
    out = io.BytesIO()
    image.save(out, fmt, **save)
    mime = {
        "PNG": "image/png",
        "JPEG": "image/jpeg",
        "TIFF": "image/tiff",
        "BMP": "image/bmp",
        "GIF": "image/gif",
        "WEBP": "image/webp",
    }[fmt]
    return data_urls.build_data_url(mime, out.getvalue())


def noise(width: int, height: int, seed: int, mode: str = "RGB") -> Image.Image:
    channels = len(mode)
    return Image.frombytes(mode, (width, height), random.Random(seed).randbytes(width * height * channels))


def part(url: str, **meta) -> dict:
    p = {"type": "image_url", "image_url": {"url": url}}
    if meta:
        p["meta"] = meta
    return p


def decode(url: str) -> Image.Image:
    image = Image.open(io.BytesIO(data_urls.parse_data_url(url).decode()))
    image.load()
    return image


SMALL_PNG = data_url(noise(40, 30, 1), "PNG")
SMALL_JPEG = data_url(noise(30, 40, 2), "JPEG")


class LoadRecorder:
    def __init__(self, on_load=None):
        self.loaded: list[str] = []
        self.on_load = on_load

    async def __call__(self, name: str) -> None:
        self.loaded.append(name)
        if self.on_load:
            await self.on_load()


# -- stamping -----------------------------------------------------------------------------------


def test_stamping_marks_only_records_that_hold_images():
    records = [
        Record("user", "plain question"),
        Record("user", [{"type": "text", "text": "look"}, part(SMALL_PNG)]),
        Record("assistant", "an answer"),
        Record("user", [{"type": "text", "text": "only text parts"}]),
    ]
    before = copy.deepcopy(history_json(records))
    stamped = images.stamp_images_seen(records)
    assert [r.fields.get("imagesSeen") for r in stamped] == [None, True, None, None]
    assert history_json(records) == before  # the input is not mutated
    assert stamped[1].content == records[1].content  # pixels untouched


# -- placeholders ---------------------------------------------------------------------------------


def conversation() -> list[Record]:
    return [
        Record(
            "user",
            [
                {"type": "text", "text": "what is this?"},
                part(SMALL_PNG, name="Screenshot of Example page", source="screenshot", capturedAt=CAPTURED),
            ],
            {"imagesSeen": True},
        ),
        Record("assistant", "A web page."),
        Record(
            "user",
            [
                part(SMALL_JPEG),
                {"type": "text", "text": "and these?"},
                part(SMALL_PNG, name="cat.png", alt="a cat on a sofa", source="file"),
            ],
            {"imagesSeen": True},
        ),
        Record("assistant", "A photo and a cat."),
        Record(
            "user", [{"type": "text", "text": "new one"}, part(SMALL_JPEG, name="dog.jpg", source="paste")]
        ),
    ]


def test_seen_images_become_numbered_placeholders_in_place():
    prepared = figures.prepare_history_for_model(conversation())
    assert prepared[0].content == [
        {"type": "text", "text": "what is this?"},
        {"type": "text", "text": '[Figure 1: screenshot "Example page"]'},  # seen: no time (rule 4)
    ]
    assert prepared[2].content == [
        {"type": "text", "text": "[Figure 2: an image the user sent earlier]"},
        {"type": "text", "text": "and these?"},
        {"type": "text", "text": '[Figure 3: cat.png, "a cat on a sofa"]'},
    ]
    assert prepared[1] == Record("assistant", "A web page.")
    assert "base64" not in json.dumps(history_json(prepared[:4]))


def test_unseen_images_keep_their_pixels_after_their_label():
    prepared = figures.prepare_history_for_model(conversation())
    assert prepared[4].content == [
        {"type": "text", "text": "new one"},
        {"type": "text", "text": "[Figure 4: pasted, dog.jpg]"},
        {"type": "image_url", "image_url": {"url": SMALL_JPEG}},  # byte-identical, meta left out
    ]


def test_placeholders_are_deterministic_and_stable_turn_after_turn():
    records = conversation()
    before = copy.deepcopy(history_json(records))
    first = json.dumps(history_json(figures.prepare_history_for_model(records)))
    assert json.dumps(history_json(figures.prepare_history_for_model(records))) == first
    assert history_json(records) == before  # never mutates

    # The turn succeeds, a new image arrives: the earlier request prefix is unchanged.
    later = [
        *images.stamp_images_seen(records),
        Record("assistant", "A dog."),
        Record("user", [part(SMALL_PNG)]),
    ]
    prepared_later = history_json(figures.prepare_history_for_model(later))
    assert json.dumps(prepared_later[:4]) == json.dumps(json.loads(first)[:4])
    assert prepared_later[4]["content"][1] == {"type": "text", "text": "[Figure 4: pasted, dog.jpg]"}
    assert prepared_later[6]["content"][0]["text"] == "[Figure 5: an image the user sent earlier]"


def test_the_capture_time_goes_with_the_pixels_and_not_into_the_resent_placeholder():
    """The model learns when a screenshot was taken with its pixels; every later turn resends only
    the terse placeholder (rule 4), so three seen images stay under 1% of a request."""
    shot = part(SMALL_PNG, name="Example page", source="screenshot", capturedAt=CAPTURED)
    unseen = [Record("user", [{"type": "text", "text": "and this?"}, shot])]
    sent = figures.prepare_history_for_model(unseen)[0].content
    assert sent[1]["text"] == '[Figure 1: screenshot "Example page", 2026-11-30 14:05 UTC]'
    seen = images.stamp_images_seen(unseen)
    assert figures.prepare_history_for_model(seen)[0].content[1] == {
        "type": "text",
        "text": '[Figure 1: screenshot "Example page"]',
    }


def test_chinese_placeholders():
    prepared = figures.prepare_history_for_model(conversation(), language="zh-CN")
    assert prepared[0].content[1]["text"] == "[图1：截图「Example page」]"
    assert prepared[2].content[0]["text"] == "[图2：用户之前发送的图片]"
    assert prepared[2].content[2]["text"] == "[图3：「cat.png」，“a cat on a sofa”]"


def test_placeholder_labels_cannot_break_out_of_the_brackets():
    label = figures.figure_label(7, {"name": 'evil]\n[Figure 1: "x"' + "y" * 200, "capturedAt": "soon"})
    assert label.startswith("[Figure 7: evil) (Figure 1: 'x'")
    assert label.count("[") == 1 and label.count("]") == 1 and "\n" not in label
    assert len(label) < 120


def test_seen_images_cost_almost_nothing_in_the_request():
    text = "x" * 20_000
    with_images = [
        Record("user", [{"type": "text", "text": text}, part(SMALL_PNG, name="a.png")], {"imagesSeen": True}),
        Record("assistant", text),
    ] * 3
    without = [Record("user", text), Record("assistant", text)] * 3

    def size(records):
        return len(json.dumps(history_json(figures.prepare_history_for_model(records))))

    assert size(with_images) / size(without) <= 1.01


# -- request-side conversion ----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["TIFF", "BMP"])
def test_formats_the_model_cannot_take_are_converted_for_the_request_only(fmt):
    original = data_url(noise(64, 48, 3), fmt)
    records = [Record("user", [{"type": "text", "text": "see"}, part(original, name=f"scan.{fmt.lower()}")])]
    stored = copy.deepcopy(history_json(records))
    platform = memory_platform()
    platform.load_package = LoadRecorder()
    prepared = run(figures.prepare_request_history(platform, records))
    assert platform.load_package.loaded == ["pillow"]
    sent = prepared[0].content[2]["image_url"]["url"]
    assert sent.split(";")[0] in ("data:image/png", "data:image/jpeg")
    assert decode(sent).size == (64, 48)
    assert history_json(records) == stored  # storage keeps the original


def test_supported_images_need_no_pillow_and_a_wrong_declared_type_is_corrected():
    png_declared_as_jpeg = SMALL_PNG.replace("data:image/png", "data:image/jpg", 1)
    records = [Record("user", [part(png_declared_as_jpeg)]), Record("user", [part(SMALL_JPEG)])]
    platform = memory_platform()
    platform.load_package = LoadRecorder()
    prepared = run(figures.prepare_request_history(platform, records))
    assert platform.load_package.loaded == []
    assert prepared[0].content[1]["image_url"]["url"] == SMALL_PNG
    assert prepared[1].content[1]["image_url"]["url"] == SMALL_JPEG


def test_seen_images_in_odd_formats_need_no_conversion():
    records = [Record("user", [part(data_url(noise(8, 8, 4), "TIFF"))], {"imagesSeen": True})]
    platform = memory_platform()
    platform.load_package = LoadRecorder()
    run(figures.prepare_request_history(platform, records))
    assert platform.load_package.loaded == []


def test_images_over_the_provider_side_limit_are_downscaled_for_the_request():
    wide = data_url(Image.new("RGB", (9000, 30), (200, 10, 10)), "PNG")
    records = [Record("user", [part(wide)])]
    prepared = figures.prepare_history_for_model(records)
    sent = decode(prepared[0].content[1]["image_url"]["url"])
    assert sent.size == (8000, 27)
    assert records[0].content[0]["image_url"]["url"] == wide


def test_conversions_kept_for_retries_hold_no_stored_url_and_stay_under_their_cap(monkeypatch):
    monkeypatch.setattr(request_images, "_conversion_cache", {})
    monkeypatch.setattr(request_images, "CONVERSION_CACHE_BYTES", 150_000)
    tiffs = [data_url(noise(200, 150, seed), "TIFF") for seed in range(6)]  # ~90 KB converted each
    records = [Record("user", [part(url)]) for url in tiffs]
    first = figures.prepare_history_for_model(records)
    again = figures.prepare_history_for_model(records)
    assert [r.content for r in again] == [r.content for r in first]  # a retry sends the same bytes
    assert 0 < request_images.conversion_cache_bytes() <= 150_000
    assert not set(request_images._conversion_cache) & set(tiffs), "a stored data URL is kept alive"


def test_an_unreadable_parked_image_becomes_a_labelled_placeholder_not_a_failed_turn():
    broken_tiff = data_urls.build_data_url("image/tiff", b"II*\x00" + b"\x00" * 40)
    records = [Record("user", [part(broken_tiff, name="scan.tiff")])]
    prepared = figures.prepare_history_for_model(records)
    assert prepared[0].content == [
        {
            "type": "text",
            "text": "[Figure 1: scan.tiff (could not be sent to "
            "the model: unreadable or unsupported format)]",
        }
    ]


# -- the bound on unseen pixels ---------------------------------------------------------------------


def big_history() -> list[dict]:
    """~20 MB of unseen noisy images (PNG and JPEG), plus a huge SEEN one that must not count."""
    shapes = [
        (1000, 750, "PNG"),
        (900, 1200, "JPEG"),
        (1100, 620, "PNG"),
        (1300, 1300, "JPEG"),
        (640, 960, "PNG"),
        (1000, 700, "PNG"),
        (1280, 720, "PNG"),
        (1000, 1000, "PNG"),
    ]
    history = [
        Record("user", [part(data_url(noise(1200, 1000, 99), "PNG"), name="seen.png")], {"imagesSeen": True}),
        Record("assistant", "seen it"),
    ]
    for index, (w, h, fmt) in enumerate(shapes):
        url = data_url(noise(w, h, index), fmt, **({"quality": 95} if fmt == "JPEG" else {}))
        history.append(
            Record("user", [{"type": "text", "text": f"image {index}"}, part(url, name=f"{index}.{fmt}")])
        )
    history.append(Record("assistant", "(failed turns leave no answer)"))
    return history_json(history)


def unseen_size(history: list[dict]) -> int:
    return sum(
        len(p["image_url"]["url"])
        for r in history
        if not r.get("imagesSeen") and isinstance(r["content"], list)
        for p in r["content"]
        if p["type"] == "image_url"
    )


def test_the_bound_downscales_the_oldest_unseen_images_under_8_mb():
    history = big_history()
    assert unseen_size(history) >= 20 * 1024 * 1024
    platform = memory_platform({HISTORY: history})
    platform.load_package = LoadRecorder()

    result = run(image_bound.bound_unseen_image_bytes(platform))

    stored = platform.local.snapshot()[HISTORY]
    assert platform.load_package.loaded == ["pillow"]
    assert result["changed"] > 0
    assert result["bytesBefore"] == unseen_size(history)
    assert result["bytesAfter"] == unseen_size(stored) <= 8 * 1024 * 1024
    # The originals under their own keys first, one write each, then history once (image_originals
    # rule 1).
    *original_writes, written_history = platform.local.writes
    assert len(original_writes) == result["changed"]
    assert all(isinstance(w, dict) and len(w) == 1 for w in original_writes)
    originals = {k: v for w in original_writes for k, v in w.items()}
    assert all(k.startswith("imageOriginal_") for k in originals)
    assert isinstance(written_history, dict) and list(written_history) == [HISTORY]
    assert stored[0] == history[0]  # seen: never degraded
    assert stored[-2] == history[-2]  # the newest record with images: byte for byte
    for before, after in zip(history, stored, strict=True):
        assert before["role"] == after["role"]
        if not isinstance(before["content"], list):
            continue
        old_part, new_part = before["content"][-1], after["content"][-1]
        assert new_part["type"] == "image_url"  # never replaced by a label
        old, new = decode(old_part["image_url"]["url"]), decode(new_part["image_url"]["url"])
        assert abs(new.width - old.width * new.height / old.height) <= 1
        if new_part != old_part:
            assert max(new.size) <= 512
            assert new_part["meta"]["downscaledFrom"] == {
                "width": old.width,
                "height": old.height,
                "bytes": len(data_urls.parse_data_url(old_part["image_url"]["url"]).decode()),
            }
            assert new_part["meta"]["name"] == old_part["meta"]["name"]
            key = new_part["meta"]["originalKey"]
            assert originals[key]["url"] == old_part["image_url"]["url"]  # the exact original

    # Running it again changes nothing more.
    again = run(image_bound.bound_unseen_image_bytes(platform))
    assert again == {"changed": 0, "bytesBefore": result["bytesAfter"], "bytesAfter": result["bytesAfter"]}
    assert platform.local.snapshot()[HISTORY] == stored
    assert len(platform.local.writes) == result["changed"] + 1


def test_the_bound_goes_down_to_256_px_and_is_idempotent_when_it_cannot_reach_the_limit():
    history = history_json(
        [Record("user", [part(data_url(noise(800, 600, seed), "PNG"))]) for seed in range(4)]
    )
    platform = memory_platform({HISTORY: history})
    first = run(
        image_bound.bound_unseen_image_bytes(
            platform, limit_bytes=len(history[-1]["content"][0]["image_url"]["url"])
        )
    )
    stored = platform.local.snapshot()[HISTORY]
    assert first["changed"] == 3 and stored[-1] == history[-1]
    assert all(max(decode(r["content"][0]["image_url"]["url"]).size) == 256 for r in stored[:3])
    second = run(image_bound.bound_unseen_image_bytes(platform, limit_bytes=1))
    assert second["changed"] == 0 and platform.local.snapshot()[HISTORY] == stored


def test_under_the_limit_nothing_is_loaded_or_written():
    history = history_json([Record("user", [part(SMALL_PNG)]), Record("user", [part(SMALL_JPEG)])])
    platform = memory_platform({HISTORY: history})
    platform.load_package = LoadRecorder()
    result = run(image_bound.handle_bound(platform, {}))
    assert result == {
        "changed": 0,
        "bytesBefore": len(SMALL_PNG) + len(SMALL_JPEG),
        "bytesAfter": len(SMALL_PNG) + len(SMALL_JPEG),
    }
    assert platform.load_package.loaded == [] and platform.local.writes == []


def test_the_bound_keeps_a_record_a_turn_stored_while_pillow_was_loading():
    history = history_json([Record("user", [part(data_url(noise(700, 500, s), "PNG"))]) for s in range(3)])
    platform = memory_platform({HISTORY: history})

    async def a_turn_writes_meanwhile():
        # Like every writer of history, under the lock: the bound lets go of it and reads again.
        async with lock_for(platform.local):
            read = await read_history(platform.local)
            await platform.local.set(
                {HISTORY: history_json([*read.records, Record("assistant", "late answer")])}
            )

    platform.load_package = LoadRecorder(a_turn_writes_meanwhile)
    result = run(
        image_bound.bound_unseen_image_bytes(
            platform, limit_bytes=len(history[-1]["content"][0]["image_url"]["url"])
        )
    )
    stored = platform.local.snapshot()[HISTORY]
    assert result["changed"] == 2
    assert stored[-1] == {"role": "assistant", "content": "late answer"}
    assert stored[2] == history[2]


# The memory twin refuses like chrome.storage does: a quota is storage_full, anything else storage_failed.
@pytest.mark.parametrize(
    "storage, code", [({"quota_bytes": 1000}, "storage_full"), ({"fail_after_writes": 0}, "storage_failed")]
)
def test_a_refused_write_is_reported_and_nothing_is_lost(storage, code):
    history = history_json([Record("user", [part(data_url(noise(700, 500, s), "PNG"))]) for s in range(3)])
    platform = memory_platform({HISTORY: history}, **storage)
    with pytest.raises(MarginError) as raised:
        run(image_bound.bound_unseen_image_bytes(platform, limit_bytes=1000))
    assert raised.value.code == code
    platform.local.revive()
    assert platform.local.snapshot()[HISTORY] == history


# -- attachments ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "att, code",
    [
        ("not a dict", "not_an_image"),
        ({"dataUrl": "https://example.com/a.png"}, "not_an_image"),
        ({"dataUrl": "data:text/plain;base64,aGVsbG8="}, "not_an_image"),
        ({"dataUrl": "data:image/svg+xml,<svg/>"}, "not_an_image"),
        ({"dataUrl": "data:image/png;base64,iVBORw0K!!!"}, "image_corrupt"),
        ({"dataUrl": "data:image/png;base64,"}, "image_corrupt"),
        ({"dataUrl": data_urls.build_data_url("image/png", b"just some text, not a png")}, "image_corrupt"),
        ({"dataUrl": SMALL_PNG[: len(SMALL_PNG) // 2 // 4 * 4]}, "image_corrupt"),  # truncated
        # A valid header claiming 20000 x 20000 pixels (a decompression bomb).
        (
            {
                "dataUrl": data_urls.build_data_url(
                    "image/png",
                    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
                    + (20000).to_bytes(4, "big") * 2
                    + b"\x08\x02\x00\x00\x00",
                )
            },
            "image_too_large",
        ),
    ],
)
def test_bad_attachments_get_specific_codes(att, code):
    import PIL.Image  # noqa: F401  (Pillow is loaded: the full decode runs)

    with pytest.raises(MarginError) as raised:
        image_attachments.validate_attachment(att)
    assert raised.value.code == code
    assert raised.value.message.endswith(".")


def test_oversized_attachments_are_refused_before_decoding():
    huge = "data:image/png;base64," + "A" * (image_attachments.ATTACHMENT_MAX_BYTES // 3 * 4 + 8)
    with pytest.raises(MarginError) as raised:
        image_attachments.validate_attachment({"dataUrl": huge})
    assert raised.value.code == "image_too_large"


def test_a_good_attachment_is_normalized_and_its_data_url_kept_exactly():
    att = {
        "dataUrl": SMALL_PNG,
        "name": " cat.png ",
        "alt": "",
        "source": "bogus",
        "capturedAt": CAPTURED,
        "x": 1,
    }
    assert image_attachments.validate_attachment(att) == {
        "dataUrl": SMALL_PNG,
        "name": "cat.png",
        "capturedAt": CAPTURED,
    }
    assert image_attachments.attachment_to_part(att) == {
        "type": "image_url",
        "image_url": {"url": SMALL_PNG},
        "meta": {"name": "cat.png", "capturedAt": CAPTURED},
    }


def test_check_attachment_loads_pillow_and_decodes_every_attachment_even_a_model_format():
    platform = memory_platform()
    platform.load_package = LoadRecorder()
    run(image_attachments.check_attachment(platform, {"dataUrl": SMALL_JPEG}))
    assert platform.load_package.loaded == ["pillow"]
    run(image_attachments.check_attachment(platform, {"dataUrl": data_url(noise(20, 20, 5), "TIFF")}))
    assert platform.load_package.loaded == ["pillow", "pillow"]
    # A JPEG whose header sniffs fine but whose stream is cut: refused, not stored to fail later.
    data = data_urls.parse_data_url(data_url(noise(200, 200, 6), "JPEG")).decode()
    cut = data_urls.build_data_url("image/jpeg", data[: len(data) // 2])
    with pytest.raises(MarginError) as raised:
        run(image_attachments.check_attachment(platform, {"dataUrl": cut}))
    assert raised.value.code == "image_corrupt"
    with pytest.raises(MarginError) as raised:
        run(image_attachments.check_attachment(platform, "not an attachment"))
    assert raised.value.code == "not_an_image" and platform.load_package.loaded == ["pillow"] * 3


def test_an_image_pillow_cannot_read_is_refused_with_a_clear_message():
    heic = data_urls.build_data_url(
        "image/heic", b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64
    )
    with pytest.raises(MarginError) as raised:
        run(image_attachments.check_attachment(memory_platform(), {"dataUrl": heic, "name": "IMG_0001.HEIC"}))
    assert raised.value.code == "image_format_unsupported"
    assert "HEIC" in raised.value.message


# -- handlers -------------------------------------------------------------------------------------


def test_screenshot_needs_a_web_tab():
    platform = memory_platform()
    with pytest.raises(MarginError) as raised:
        run(screenshot.handle_screenshot(platform, {}))
    assert raised.value.code == "no_web_tab"
    assert raised.value.message == "Switch to a web page (http, https or file) and try again."


def test_screenshot_of_the_active_tab(monkeypatch):
    platform = memory_platform()
    platform.tabs = MemoryTabs(WebTab(3, 7, "https://example.com/", "Example page"), screenshot=SMALL_PNG)
    monkeypatch.setattr(clock, "now_ms", lambda: CAPTURED)
    shot = run(screenshot.handle_screenshot(platform, {}))
    assert shot == {
        "dataUrl": SMALL_PNG,
        "name": "Example page",  # the source says "screenshot": no word of any language stored
        "source": "screenshot",
        "title": "Example page",
        "url": "https://example.com/",
        "capturedAt": CAPTURED,
    }
    label = figures.figure_label(1, image_attachments.attachment_to_part(shot)["meta"])
    assert label == '[Figure 1: screenshot "Example page", 2026-11-30 14:05 UTC]'


@pytest.mark.parametrize("language", ["en", "zh-CN", "ja", "ru"])
def test_a_screenshot_stored_before_has_the_same_placeholder_as_a_new_one(language):
    """Old records name a screenshot "Screenshot of <title>" in English, new ones by the title alone:
    the model reads the same placeholder for both (a request's prefix stays byte for byte)."""
    new = {"source": "screenshot", "name": "Example page", "alt": "a", "capturedAt": CAPTURED}
    old = {**new, "name": "Screenshot of Example page"}
    assert figures.figure_label(2, old, language=language) == figures.figure_label(2, new, language=language)
    assert "Example page" in figures.figure_label(2, new, language=language)
    assert "Screenshot of" not in figures.figure_label(2, new, language=language)


def test_without_pillow_loaded_the_cheap_check_still_tells_junk_from_images(monkeypatch):
    monkeypatch.setattr(image_attachments, "_pillow_loaded", lambda: False)
    junk_png = data_urls.build_data_url("image/png", b"just some text, not a png")
    junk_other = data_urls.build_data_url("image/x-thing", b"just some text")
    for url, code in [(junk_png, "image_corrupt"), (junk_other, "not_an_image")]:
        with pytest.raises(MarginError) as raised:
            image_attachments.validate_attachment({"dataUrl": url})
        assert raised.value.code == code
    assert image_attachments.validate_attachment({"dataUrl": SMALL_JPEG}) == {"dataUrl": SMALL_JPEG}
