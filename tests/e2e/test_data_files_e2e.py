"""A data file the user attaches, end to end: Chromium, the built extension, the fake provider.

The user presses "Attach file" and picks a CSV: a card with its name, size and rows appears and
can be removed while it waits; a file that is not UTF-8 text is refused with a sentence and adds
nothing. Asked a question, the model (scripted) calls run_python on `/data/<file>.csv`: the
tool's description lists the file, the request carries the file's head (not the whole), and the
next request carries the right sum as the tool's result.
"""

from __future__ import annotations

import re
import time

import pytest
from fake_behaviours import Reply
from fake_provider import FakeProvider
from fake_tool_calls import ToolCall, tool_results
from harness import Margin, poll
from playwright.sync_api import expect

# The first call boots the sandbox's own Pyodide: slow on a loaded 2-core machine.
RUN_TIMEOUT_MS = 240_000
ROWS = 500
SALES = "region,amount\n" + "".join(f"r{i},{i}\n" for i in range(1, ROWS + 1))
TOTAL = ROWS * (ROWS + 1) // 2
COLUMN_SUM = """\
import csv
print(sum(int(row["amount"]) for row in csv.DictReader(open("/data/sales_2026.csv"))))
"""


@pytest.fixture
def provider(module_provider: FakeProvider) -> FakeProvider:
    return module_provider


@pytest.fixture
def margin(sandbox_margin: Margin) -> Margin:
    sandbox_margin.storage_set({"runPython": "auto"})
    return sandbox_margin


def pick_file(panel, name: str, data: bytes, mime: str = "text/csv") -> None:
    with panel.expect_file_chooser() as chooser:
        panel.get_by_role("button", name="Attach file", exact=True).click()
    chooser.value.set_files(files=[{"name": name, "mimeType": mime, "buffer": data}])


def test_a_csv_attached_in_the_panel_is_summed_by_the_models_code_from_data(
    margin: Margin, provider: FakeProvider
):
    panel = margin.open_panel()
    pick_file(panel, "sales 2026.csv", SALES.encode())
    card = panel.get_by_role("group", name="Attached file: sales 2026.csv")
    expect(card).to_be_visible(timeout=30_000)
    expect(card).to_contain_text(re.compile(r"CSV · [\d.]+ kB · 500 rows"))
    [record] = margin.history()
    assert record["file"]["text"] == SALES and record["attachment"]["kind"] == "file"
    card.get_by_role("button", name="View text").click()
    viewer = panel.get_by_role("dialog")
    expect(viewer).to_contain_text("r500,500")  # the whole file, not the head the model reads
    panel.keyboard.press("Escape")
    expect(viewer).to_be_hidden()

    provider.script(
        ToolCall(COLUMN_SUM, text="Adding the column."), Reply(f"The amounts add up to {TOTAL:,}.")
    )
    margin.send(panel, "What do the amounts add up to?")
    margin.wait_answer(panel, timeout_ms=RUN_TIMEOUT_MS)

    first, second = provider.wait_for_requests(2, kind="turn")[:2]
    description = first.body["tools"][0]["function"]["description"]
    assert "/data/sales_2026.csv" in description
    sent = first.body["messages"][0]["content"]
    assert sent.startswith("[Page context] File: sales 2026.csv") and "Rows: 500" in sent
    assert "r500,500" not in sent  # the model reads the head; the sandbox has the whole file
    (result,) = tool_results(second.body)
    assert result["content"].splitlines() == ["[status: ok]", str(TOTAL)]
    assert margin.history()[-1]["content"] == f"The amounts add up to {TOTAL:,}."
    # Answered, the card stays (no Remove) and survives a reload.
    panel.reload()
    margin.wait_panel_ready(panel)
    card = panel.get_by_role("group", name="Attached file: sales 2026.csv")
    expect(card).to_be_visible()
    expect(card.get_by_role("button", name=re.compile("Remove"))).to_have_count(0)


def test_a_waiting_file_can_be_removed_and_a_file_that_is_not_text_is_refused(margin: Margin):
    panel = margin.open_panel()
    pick_file(panel, "latin1.csv", "caf\xe9,1\n".encode("latin-1"))
    expect(panel.get_by_role("alert")).to_contain_text("latin1.csv is not a text file in UTF-8")
    pick_file(panel, "book.xlsx", b"PK\x03\x04", mime="application/octet-stream")
    expect(panel.get_by_role("alert")).to_contain_text("Save the sheet as CSV")
    assert margin.history() == []

    pick_file(panel, "notes.txt", b"first line\nsecond line\n", mime="text/plain")
    card = panel.get_by_role("group", name="Attached file: notes.txt")
    expect(card).to_be_visible(timeout=30_000)
    card.get_by_role("button", name=re.compile("Remove")).click()
    expect(card).to_have_count(0)
    poll(lambda: margin.history() == [], timeout=10, message="the file was not removed")


def test_a_file_near_the_5_mb_cap_attaches_and_one_over_it_is_refused(margin: Margin):
    panel = margin.open_panel()
    line = "r1,12345,some words about the row\n"
    big = ("region,amount,note\n" + line * ((5 * 1024 * 1024 - 100) // len(line))).encode()
    started = time.perf_counter()
    pick_file(panel, "big.csv", big)
    card = panel.get_by_role("group", name="Attached file: big.csv")
    expect(card).to_be_visible(timeout=60_000)
    print(f"\n[measure] a {len(big):,}-byte CSV attached in {time.perf_counter() - started:.2f} s")
    [record] = margin.history()
    assert record["file"]["size"] == len(big) and len(record["content"]) < 10_000
    pick_file(panel, "bigger.csv", big + b"x" * 200)
    expect(panel.get_by_role("alert")).to_contain_text("bigger.csv is larger than 5 MB")
    assert len(margin.history()) == 1
