"""An answer's earlier versions (issue 35, item 4) and the notice of a model that cannot see images
(item 2), in the real panel against the fake provider.

Versions: Regenerate twice, "Previous version" shows the first answer again with "2 of 3", the
stored answer is the one shown, and the next question sends it; Edit & resend keeps the old
question, its answer and the turns after them one "Previous version" away; both survive a stopped
service worker and a reloaded panel. Image refusal: the alert's sentence names exactly the text
the retry sent in place of the picture, checked against the request the provider recorded.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from pathlib import Path

from a11y import violations
from fake_behaviours import HttpError
from fake_provider import FakeProvider
from harness import Margin, poll


def dialogue(messages: list[dict]) -> list[tuple[str, str]]:
    out = []
    for message in messages:
        if message.get("role") == "system":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        out.append((message["role"], content))
    return out


def versions_of(page, bubble):
    """The bubble's group "Versions of this answer"."""
    return bubble.get_by_role("group", name="Versions of this answer")


def position(page) -> str:
    return page.locator(".version-position").last.inner_text().strip()


def wait_shown(margin: Margin, page, expected: list[str]) -> None:
    poll(
        lambda: margin.bubble_texts(page) == expected,
        timeout=30,
        message=lambda: f"the panel shows {margin.bubble_texts(page)}, expected {expected}",
    )


def test_regenerate_twice_then_previous_version_shows_stores_and_sends_the_second(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    page = margin.open_panel()
    fake_provider.script(reply="First answer.", chunks=2)
    margin.send(page, "Tell me a fact")
    margin.wait_answer(page)
    for reply in ("Second answer.", "Third answer."):
        fake_provider.script(reply=reply, chunks=2)
        margin.bubbles(page, "assistant").last.get_by_role("button", name="Regenerate", exact=True).click()
        wait_shown(margin, page, ["Tell me a fact", reply])
        margin.wait_idle(page)

    # One send, one bubble, and its versions: "3 of 3", the newest shown.
    answer = margin.bubbles(page, "assistant").last
    bar = versions_of(page, answer)
    assert bar.count() == 1
    assert position(page) == "3 of 3"
    assert bar.get_by_role("button", name="Next version", exact=True).is_disabled()

    previous = bar.get_by_role("button", name="Previous version", exact=True)
    previous.focus()
    previous.press("Enter")
    wait_shown(margin, page, ["Tell me a fact", "Second answer."])
    poll(lambda: position(page) == "2 of 3", timeout=10, message=lambda: f"position {position(page)}")
    # The focus came back to the same button in the bubble painted again.
    poll(
        lambda: (
            page.evaluate("() => document.activeElement?.getAttribute('aria-label')") == "Previous version"
        ),
        timeout=5,
        message=lambda: "the focus left the version buttons",
    )
    assert violations(page) == [], "axe-core found violations with the version buttons on screen"
    stored = margin.history()
    assert [(r["role"], r["content"]) for r in stored] == [
        ("user", "Tell me a fact"),
        ("assistant", "Second answer."),
    ]
    assert [v["content"] for v in stored[1]["versions"]] == ["First answer.", "Third answer."]

    # The shown version is what survives a stopped worker and a reloaded panel.
    margin.stop_service_worker()
    page.reload()
    margin.wait_panel_ready(page)
    assert margin.bubble_texts(page) == ["Tell me a fact", "Second answer."]
    assert position(page) == "2 of 3"

    versions_of(page, margin.bubbles(page, "assistant").last).get_by_role(
        "button", name="Previous version", exact=True
    ).click()
    wait_shown(margin, page, ["Tell me a fact", "First answer."])
    assert position(page) == "1 of 3"
    versions_of(page, margin.bubbles(page, "assistant").last).get_by_role(
        "button", name="Next version", exact=True
    ).click()
    wait_shown(margin, page, ["Tell me a fact", "Second answer."])

    # The next question sends the answer shown, and no other version.
    fake_provider.script(reply="Fourth.", chunks=1)
    margin.send(page, "And another?")
    margin.wait_answer(page)
    last = fake_provider.wait_for_chat_requests(4)[-1]
    assert dialogue(last.body["messages"]) == [
        ("user", "Tell me a fact"),
        ("assistant", "Second answer."),
        ("user", "And another?"),
    ]
    # The earlier answer keeps its bar; the newest has none (it was never replaced).
    assert versions_of(page, margin.bubbles(page, "assistant").first).count() == 1
    assert versions_of(page, margin.bubbles(page, "assistant").last).count() == 0


def test_edit_keeps_the_old_question_and_what_followed_one_previous_version_away(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    page = margin.open_panel()
    margin.send(page, "first question")
    margin.wait_answer(page)
    margin.send(page, "second question")
    margin.wait_answer(page)

    margin.bubbles(page, "user").first.get_by_role("button", name="Edit", exact=True).click()
    margin.message_box(page).fill("edited question")
    page.get_by_role("button", name="Send", exact=True).click()
    wait_shown(margin, page, ["edited question", "You said: edited question"])
    margin.wait_idle(page)
    assert position(page) == "2 of 2"

    versions_of(page, margin.bubbles(page, "assistant").first).get_by_role(
        "button", name="Previous version", exact=True
    ).click()
    before = [
        "first question",
        "You said: first question",
        "second question",
        "You said: second question",
    ]
    wait_shown(margin, page, before)
    assert position(page) == "1 of 2"
    assert [r["content"] for r in margin.history()] == before

    margin.stop_service_worker()
    page.reload()
    margin.wait_panel_ready(page)
    assert margin.bubble_texts(page) == before

    margin.send(page, "third question")
    margin.wait_answer(page)
    last = fake_provider.wait_for_chat_requests(4)[-1]
    assert dialogue(last.body["messages"]) == [
        ("user", "first question"),
        ("assistant", "You said: first question"),
        ("user", "second question"),
        ("assistant", "You said: second question"),
        ("user", "third question"),
    ]

    versions_of(page, margin.bubbles(page, "assistant").first).get_by_role(
        "button", name="Next version", exact=True
    ).click()
    wait_shown(margin, page, ["edited question", "You said: edited question"])
    # The three later bubbles went with their version; nothing was dropped.
    kept = margin.history()[1]["versions"][0]["later"]
    assert [r["content"] for r in kept] == [
        "second question",
        "You said: second question",
        "third question",
        "You said: third question",
    ]


# --- item 2: an image the model cannot take -----------------------------------------------------------


def tiny_png(width: int = 4, height: int = 3) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes([200, 30, 30]) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


IMAGES_REFUSED = {
    "error": {"message": "Invalid content type. image_url is only supported by certain models.", "code": None}
}


def test_the_image_refusal_notice_names_exactly_what_was_sent_instead(
    configured_margin: Margin, fake_provider: FakeProvider, tmp_path: Path
):
    margin = configured_margin
    page = margin.open_panel()
    margin.watch_alerts(page)
    path = tmp_path / "chart.png"
    path.write_bytes(tiny_png())
    with page.expect_file_chooser(timeout=10_000) as chooser:
        page.get_by_role("button", name="Attach image", exact=True).click()
    chooser.value.set_files(path)
    page.get_by_role("button", name="Remove image").first.wait_for(state="visible", timeout=10_000)

    fake_provider.script(HttpError(400, IMAGES_REFUSED), reply="I cannot see it.", chunks=1)
    margin.send(page, "What does this show?")
    # The notice stays in the alert line while the answer streams (wait_answer takes any alert as a failure).
    poll(
        lambda: margin.bubble_texts(page, "assistant") == ["I cannot see it."],
        timeout=45,
        message=lambda: f"no answer: {margin.bubble_texts(page)}",
    )
    margin.wait_idle(page)
    refused, retry = fake_provider.wait_for_chat_requests(2)
    pixels = "data:image/png;base64," + base64.b64encode(tiny_png()).decode()
    assert pixels in str(refused.body)
    assert pixels not in str(retry.body) and "image_url" not in str(retry.body)

    sentence = next((a for a in margin.alerts(page) if "does not take images" in a), "")
    match = re.fullmatch(
        r"This model does not take images, so it did not see what you attached: "
        r"Margin sent only the text (\[Figure 1: [^\]]*chart\.png[^\]]*\]) in its place\.",
        sentence,
    )
    assert match, f"the alert said {sentence!r}"
    (question,) = [m for m in retry.body["messages"] if m["role"] == "user"]
    sent = dialogue([question])[0][1]
    assert match.group(1) in sent, f"the notice names {match.group(1)!r}, the retry sent {sent!r}"
    assert "description" not in sentence
    # Storage keeps the pixels the model could not take.
    assert margin.history()[0]["content"][1]["image_url"]["url"] == pixels
