"""The model runs Python itself (run_python), end to end: Chromium, the built extension, the fake
provider scripting the calls (OpenAI's wire, and Anthropic's, Gemini's and the Responses API's),
a web page with a table to attach.

- auto: the model's code reads the attached page's table from /data/ and the next request carries
  the right number as the tool's result; the call and its output are shown and survive a reload;
- ask: "Don't run" sends the model "the user chose not to run", "Run" runs it;
- off: no tool in the request;
- a worker stopped mid-call: the connection is said lost and the rounds come back with Retry save;
- Stop while a call waits: the answer is stored stopped, the call with it;
- Anthropic, Gemini, Responses: the same loop over each API's own wire;
- the time-limit setting ends an endless loop; a chart is shown as a PNG, the model gets its size.

One browser for the module (the sandbox boots once); each test starts from an empty history.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from a11y import violations
from fake_behaviours import Reply
from fake_provider import FakeProvider
from fake_tool_calls import ToolCall, tool_results
from harness import Margin, poll
from playwright.sync_api import expect
from web_pages import WebPages

# The first call boots the sandbox's own Pyodide: slow on a loaded 2-core machine.
RUN_TIMEOUT_MS = 240_000

TABLE_SUM = """\
import csv
rows = list(csv.DictReader(open("/data/page-1-table-1.csv")))
print(sum(int(row["Age (million years)"].replace(",", "")) for row in rows))
"""


@pytest.fixture(scope="module")
def web_pages() -> Iterator[WebPages]:
    with WebPages() as pages:
        yield pages


@pytest.fixture
def provider(module_provider: FakeProvider) -> FakeProvider:
    return module_provider


@pytest.fixture
def margin(sandbox_margin: Margin) -> Margin:
    return sandbox_margin


def tool_violations(panel) -> list[str]:
    """axe-core's violations in the calls' boxes (the rest of the panel is tested elsewhere)."""
    return [line for line in violations(panel) if ".tool-" in line or "tool-call" in line]


def set_mode(margin: Margin, mode: str) -> None:
    reply = margin.send_message(
        {
            "type": "options.save",
            "payload": {
                "providers": margin.storage_get("providers")["providers"],
                "activeProviderId": "fake",
                "runPython": mode,
            },
        }
    )
    assert reply["ok"], reply


def attach_article(margin: Margin, web_pages: WebPages):
    panel = margin.open_panel()
    article = margin.context.new_page()
    article.goto(web_pages.url("/article.html"))
    article.wait_for_load_state("load")
    article.bring_to_front()
    panel.get_by_role("button", name="Attach page", exact=True).click()
    poll(
        lambda: any("attachment" in r for r in margin.history()),
        timeout=60,
        message="the page was not attached",
    )
    return panel


def test_auto_mode_runs_the_models_code_on_the_attached_table_and_sends_back_the_number(
    margin: Margin, provider: FakeProvider, web_pages: WebPages
):
    set_mode(margin, "auto")
    panel = attach_article(margin, web_pages)
    provider.script(
        ToolCall(TABLE_SUM, text="Let me add the ages."), Reply("The ages add up to 2,020 million years.")
    )
    margin.send(panel, "What do the ages in the table add up to?")
    margin.wait_answer(panel, timeout_ms=RUN_TIMEOUT_MS)

    first, second = provider.wait_for_requests(2, kind="turn")[:2]
    tool = first.body["tools"][0]["function"]
    assert tool["name"] == "run_python"
    assert "/data/page-1.md" in tool["description"] and "/data/page-1-table-1.csv" in tool["description"]
    (result,) = tool_results(second.body)
    assert result["id"] == "call_fake_1"
    assert result["content"].splitlines() == ["[status: ok]", "2020"]

    answer = margin.history()[-1]
    assert answer["content"] == "The ages add up to 2,020 million years."
    call = answer["toolRounds"][0]["calls"][0]
    assert call["outcome"] == "ran" and call["run"]["stdout"] == "2020\n" and call["code"] == TABLE_SUM

    # Shown in the stored answer, and again after a reload (from storage).
    for _ in range(2):
        bubble = panel.locator("article.msg.assistant[data-index]").last
        box = bubble.get_by_role("group", name="Code the model asked to run")
        expect(box).to_contain_text("The model ran this Python code")
        expect(box.locator(".code-run-stdout")).to_have_text("2020\n")
        expect(bubble).to_contain_text("The ages add up to 2,020")
        panel.reload()
        margin.wait_panel_ready(panel)


def test_ask_mode_shows_the_code_with_run_and_dont_run(
    margin: Margin, provider: FakeProvider, web_pages: WebPages
):
    set_mode(margin, "ask")
    panel = margin.open_panel()
    provider.script(
        ToolCall("import os\nprint(os.listdir('/'))", call_id="call_no"),
        ToolCall("print(6 * 7)", call_id="call_yes"),
        Reply("Six times seven is 42."),
    )
    margin.send(panel, "Compute something")
    box = panel.get_by_role("group", name="Code the model asked to run").first
    box.wait_for(timeout=60_000)
    assert "os.listdir" in box.inner_text() and "The model wants to run this Python code" in box.inner_text()
    assert tool_violations(panel) == []  # the call waiting for the user's choice, as axe-core sees it
    box.get_by_role("button", name="Don't run", exact=True).click()

    second = provider.wait_for_requests(2, kind="turn")[1]
    assert tool_results(second.body)[0]["content"] == "The user chose not to run this code."
    run_button = panel.get_by_role("button", name="Run", exact=True)
    run_button.wait_for(timeout=60_000)
    assert "print(6 * 7)" in panel.get_by_role("group", name="Code the model asked to run").last.inner_text()
    run_button.click()
    margin.wait_answer(panel, timeout_ms=RUN_TIMEOUT_MS)

    third = provider.wait_for_requests(3, kind="turn")[2]
    results = tool_results(third.body)
    assert [r["id"] for r in results] == ["call_no", "call_yes"]
    assert results[1]["content"].splitlines() == ["[status: ok]", "42"]
    calls = [c for r in margin.history()[-1]["toolRounds"] for c in r["calls"]]
    assert [c["outcome"] for c in calls] == ["declined", "ran"]
    stored = panel.locator("article.msg.assistant[data-index]").last
    expect(stored.get_by_role("group", name="Code the model asked to run").last).to_contain_text("42")
    assert tool_violations(panel) == []  # the stored rounds: a declined call and a run with its output


def test_off_sends_no_tool_and_the_answer_is_plain(margin: Margin, provider: FakeProvider):
    # Chosen the way a user does: the options page's list, saved when changed.
    options = margin.open_options()
    choice = options.get_by_role("combobox", name="Let the model run Python")
    assert choice.input_value() == "ask"  # the default
    choice.select_option(label="Off")
    poll(
        lambda: margin.storage_get("runPython").get("runPython") == "off",
        timeout=20,
        message="Off was not saved",
    )
    limit = options.get_by_role("combobox", name="Time limit for code")
    assert limit.input_value() == "30"
    limit.select_option(label="60 seconds")
    poll(
        lambda: margin.storage_get("codeTimeLimitSeconds").get("codeTimeLimitSeconds") == 60,
        timeout=20,
        message="the limit was not saved",
    )
    options.close()
    panel = margin.open_panel()
    provider.script(Reply("No tools here."))
    margin.send(panel, "Hello")
    assert margin.wait_answer(panel) == "No tools here."
    (request,) = provider.wait_for_requests(1, kind="turn")
    assert "tools" not in request.body and "tool_choice" not in request.body
    assert panel.get_by_role("group", name="Code the model asked to run").count() == 0


def test_a_worker_stopped_mid_call_fails_clearly_and_the_rounds_come_back_with_retry_save(
    margin: Margin, provider: FakeProvider
):
    set_mode(margin, "ask")
    panel = margin.open_panel()
    margin.watch_alerts(panel)
    provider.script(ToolCall("print(1 + 1)", text="First, a check.", call_id="call_kept"))
    margin.send(panel, "Check something")
    box = panel.get_by_role("group", name="Code the model asked to run").first
    box.get_by_role("button", name="Don't run", exact=True).wait_for(timeout=60_000)
    poll(
        lambda: margin.storage_get("unsavedAnswers", area="session").get("unsavedAnswers"),
        timeout=20,
        message="the turn's progress was not kept",
    )

    margin.stop_service_worker()
    assert "connection to Margin's background worker was lost" in margin.wait_alert(panel)
    margin.wait_idle(panel)
    # The question is stored; the rounds so far come back as an answer not saved yet.
    unsaved = panel.locator("article[data-unsaved]")
    unsaved.wait_for(timeout=20_000)
    assert "First, a check." in unsaved.inner_text() and "print(1 + 1)" in unsaved.inner_text()
    unsaved.get_by_role("button", name="Retry save").click()
    answer = poll(
        lambda: (lambda h: h[-1] if h and h[-1]["role"] == "assistant" else None)(margin.history()),
        timeout=30,
        message=lambda: f"Retry save did not store the rounds: {margin.history()}",
    )
    (call,) = answer["toolRounds"][0]["calls"]
    assert call["id"] == "call_kept" and call["outcome"] == "stopped" and answer["incomplete"] is True


def test_the_answer_shows_it_is_being_written_again_once_the_call_is_answered(
    margin: Margin, provider: FakeProvider
):
    panel = margin.open_panel()
    provider.script(
        ToolCall("print(1)", text="Let me see.", call_id="call_dots"),
        Reply("Fine without it.", first_delay=6.0),
    )
    margin.send(panel, "Run nothing")
    box = panel.get_by_role("group", name="Code the model asked to run").first
    box.get_by_role("button", name="Don't run", exact=True).wait_for(timeout=60_000)
    writing = panel.get_by_role("img", name="Margin is writing")
    assert writing.count() == 0, "the call waits for the user, not for the model"
    box.get_by_role("button", name="Don't run", exact=True).click()
    panel.locator("article[data-streaming] .tool-call-slot + .md").get_by_role(
        "img", name="Margin is writing"
    ).wait_for(timeout=5_000)
    assert margin.wait_answer(panel).endswith("Fine without it.")
    assert writing.count() == 0


def test_a_change_of_language_relabels_the_waiting_call_and_its_run_where_they_stand(
    margin: Margin, provider: FakeProvider
):
    panel = margin.open_panel()
    provider.script(ToolCall("import time\ntime.sleep(15)", call_id="call_slow"), Reply("Slept."))
    margin.send(panel, "Sleep a little")
    box = panel.get_by_role("group", name="Code the model asked to run").first
    box.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
    box = panel.locator("article[data-streaming] .tool-call").first  # whatever its language
    try:
        margin.storage_set({"uiLanguage": "ru"})
        expect(box).to_have_attribute("aria-label", "Код, который модель попросила запустить")
        expect(box).to_contain_text("Модель хочет запустить этот код на Python")
        expect(box.get_by_role("button", name="Не запускать", exact=True)).to_be_visible()
        box.get_by_role("button", name="Запустить", exact=True).click()
        status = box.get_by_role("status")
        expect(status).to_have_text(re.compile(r"^(Запуск Python…( \d+ с)?|Выполняется…)$"))
        margin.storage_set({"uiLanguage": "auto"})
        expect(status).to_have_text(re.compile(r"^(Starting Python…( \d+ s)?|Running…)$"))
        expect(box).to_contain_text("Running the model's code…")
    finally:
        margin.storage_set({"uiLanguage": "auto"})
    panel.get_by_role("button", name="Stop").click()
    margin.wait_idle(panel)


def test_a_finished_run_in_a_streaming_answer_follows_a_change_of_language(
    margin: Margin, provider: FakeProvider
):
    """A run's "Ran in 1.2 s after 3.4 s of loading" keeps its words' keys: the bubble still streams, so it is relabeled in place."""
    panel = margin.open_panel()
    provider.script(ToolCall("print(1)", call_id="call_done"), Reply("Printed.", first_delay=12.0))
    margin.send(panel, "Print one")
    box = panel.locator("article[data-streaming] .tool-call").first
    box.get_by_role("button", name="Run", exact=True).click(timeout=60_000)
    status = box.get_by_role("status")
    expect(status).to_have_text(
        re.compile(r"^Ran in \d+\.\d s( after \d+\.\d s of loading)?$"), timeout=RUN_TIMEOUT_MS
    )
    assert panel.locator("article[data-streaming]").count() == 1
    try:
        margin.storage_set({"uiLanguage": "ru"})
        expect(status).to_have_text(re.compile(r"^Выполнено за \d+,\d с( после \d+,\d с загрузки)?$"))
        margin.storage_set({"uiLanguage": "ja"})
        expect(status).to_have_text(re.compile(r"^実行完了（\d+\.\d 秒(、読み込み \d+\.\d 秒)?）$"))
    finally:
        margin.storage_set({"uiLanguage": "auto"})
    expect(status).to_have_text(re.compile(r"^Ran in \d+\.\d s( after \d+\.\d s of loading)?$"))
    assert margin.wait_answer(panel).endswith("Printed.")


def test_stop_while_a_call_waits_stores_the_answer_stopped_with_the_call(
    margin: Margin, provider: FakeProvider
):
    panel = margin.open_panel()
    provider.script(ToolCall("print('never')", text="Shall I?", call_id="call_wait"))
    margin.send(panel, "Maybe run something")
    box = panel.get_by_role("group", name="Code the model asked to run").first
    box.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
    panel.get_by_role("button", name="Stop").click()
    margin.wait_idle(panel)
    answer = poll(
        lambda: (lambda h: h[-1] if h and h[-1]["role"] == "assistant" else None)(margin.history()),
        timeout=30,
        message=lambda: f"the stopped answer was not stored: {margin.history()}",
    )
    assert answer["stopped"] is True
    (round_,) = answer["toolRounds"]
    assert round_["text"] == "Shall I?" and round_["calls"][0]["outcome"] == "stopped"
    stored = panel.locator("article.msg.assistant[data-index]").last
    expect(stored.get_by_role("group", name="Code the model asked to run")).to_contain_text(
        "Stopped before it finished."
    )
    assert len(provider.wait_for_requests(1, kind="turn")) == 1


OTHER_WIRES = {
    "anthropic": {"baseUrl": "/v1", "model": "claude-fake"},
    "gemini": {"baseUrl": "/v1beta", "model": "gemini-2.5-flash"},
    "openai-responses": {"baseUrl": "/v1", "model": "gpt-fake"},
}


@pytest.mark.parametrize("kind", list(OTHER_WIRES))
def test_the_loop_runs_over_each_providers_own_wire(margin: Margin, provider: FakeProvider, kind: str):
    wire = OTHER_WIRES[kind]
    base = provider.base_url.removesuffix("/v1") + wire["baseUrl"]
    config = {
        "id": "other",
        "type": kind,
        "name": kind,
        "baseUrl": base,
        "apiKey": "k",
        "model": wire["model"],
    }
    reply = margin.send_message(
        {
            "type": "options.save",
            "payload": {"providers": [config], "activeProviderId": "other", "runPython": "auto"},
        }
    )
    assert reply["ok"], reply
    panel = margin.open_panel()
    provider.script(ToolCall("print(6 * 7)", text="Computing.", call_id="call_wire"), Reply("It is 42."))
    margin.send(panel, "Six times seven?")
    margin.wait_answer(panel, timeout_ms=RUN_TIMEOUT_MS)
    second = provider.requests[-1]
    (result,) = tool_results(second.body)
    assert result["content"].splitlines() == ["[status: ok]", "42"]
    assert result["id"] == ("run_python" if kind == "gemini" else "call_wire")
    answer = margin.history()[-1]
    assert answer["content"] == "It is 42." and answer["toolRounds"][0]["calls"][0]["run"]["stdout"] == "42\n"


def test_the_time_limit_setting_ends_the_models_endless_loop(margin: Margin, provider: FakeProvider):
    set_mode(margin, "auto")
    margin.storage_set({"codeTimeLimitSeconds": 5})  # the panel follows the setting as it changes
    panel = margin.open_panel()
    provider.script(ToolCall("while True:\n    pass\n", call_id="call_loop"), Reply("That took too long."))
    margin.send(panel, "Loop forever")
    margin.wait_answer(panel, timeout_ms=RUN_TIMEOUT_MS)
    (result,) = tool_results(provider.requests[-1].body)
    assert result["content"].splitlines() == [
        "[status: timeout]",
        "The run was stopped at the time limit (5 s).",
    ]
    run = margin.history()[-1]["toolRounds"][0]["calls"][0]["run"]
    assert run["status"] == "timeout" and 5_000 <= run["ms"] < 30_000


PLOT = """\
import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({"month": ["Jan", "Feb", "Mar"], "sales": [3, 5, 8]})
df.plot(x="month", y="sales")
df
"""


def test_a_models_chart_is_shown_as_a_png_and_the_model_gets_its_size_not_its_pixels(
    margin: Margin, provider: FakeProvider
):
    set_mode(margin, "auto")
    panel = margin.open_panel()
    provider.script(ToolCall(PLOT, call_id="call_plot"), Reply("Sales grew every month."))
    margin.send(panel, "Chart the sales")
    margin.wait_answer(panel, timeout_ms=RUN_TIMEOUT_MS)
    (result,) = tool_results(provider.requests[-1].body)
    lines = result["content"].splitlines()
    assert lines[0] == "[status: ok]" and "[table: 3 rows × 2 columns]" in lines
    figure_line = next(line for line in lines if line.startswith("[figure: "))
    assert "base64" not in result["content"] and len(result["content"]) < 1_000
    run = margin.history()[-1]["toolRounds"][0]["calls"][0]["run"]
    (figure,) = run["figures"]
    assert figure_line == f"[figure: {figure['width']}×{figure['height']}]"
    stored = panel.locator("article.msg.assistant[data-index]").last
    image = stored.get_by_role("img", name=f"Figure 1 ({figure['width']}×{figure['height']})")
    expect(image).to_have_attribute("src", figure["dataUrl"])
    assert stored.locator("table td").all_inner_texts() == ["Jan", "3", "Feb", "5", "Mar", "8"]
