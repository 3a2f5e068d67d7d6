"""Seven languages end to end: Chromium started in Japanese shows the options page in Japanese;
choosing Русский in the page's language setting switches it without a browser restart; the
screenshots of both (tests/artifacts/i18n-options-*.png) are looked at for cut-off text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness import COLD_TIMEOUT_MS, Margin, launch

ARTIFACTS = Path(__file__).resolve().parents[2] / "tests" / "artifacts"


@pytest.fixture
def japanese(request, playwright_instance, dist_dir):
    browser = launch(playwright_instance, dist_dir, lang="ja")
    request.node._margin_launched = browser
    yield Margin(browser)
    browser.close()
    assert not browser.page_errors, browser.page_errors
    assert not browser.csp_violations, browser.csp_violations


def open_options(margin: Margin):
    page = margin.context.new_page()
    page.set_viewport_size({"width": 760, "height": 1000})
    page.goto(margin.url("options.html"))
    page.locator("body[data-ready]").wait_for(state="attached", timeout=COLD_TIMEOUT_MS)
    return page


def test_the_browsers_language_and_then_the_setting_decide(japanese: Margin):
    page = open_options(japanese)
    assert page.evaluate("chrome.i18n.getUILanguage()").startswith("ja")
    # Chrome's own i18n answers: the labels, the accessible names, <html lang>, the title.
    assert page.evaluate("document.documentElement.lang") == "ja"
    assert page.title() == "Margin — 設定"
    page.get_by_role("heading", name="設定", level=1).wait_for()
    for name in ("名前", "ベース URL", "API キー", "システムプロンプト"):
        page.get_by_role("textbox", name=name, exact=True).wait_for()
    page.get_by_role("button", name="保存", exact=True).wait_for()
    page.get_by_role("button", name="接続をテスト").wait_for()
    page.get_by_role("button", name="モデル一覧を更新").wait_for()
    page.get_by_role("textbox", name="入力料金（100 万トークンあたり）", exact=True).wait_for()
    options = page.get_by_role("combobox", name="Margin の表示言語").locator("option").all_inner_texts()
    assert options == [
        "自動（ブラウザの言語）",
        "English",
        "简体中文",
        "日本語",
        "한국어",
        "Español",
        "Português (Brasil)",
        "Русский",
    ]
    assert (
        page.get_by_role("combobox", name="長いページを要約").locator("option:checked").inner_text()
        == "50,000 文字を超える場合"
    )
    page.screenshot(path=str(ARTIFACTS / "i18n-options-ja.png"), full_page=True)
    # A sentence the page says.
    page.get_by_role("button", name="保存", exact=True).click()
    assert "ベース URL" in page.get_by_role("alert").inner_text()

    # The setting, chosen in the page: everything follows at once, no restart.
    page.get_by_role("combobox", name="Margin の表示言語").select_option("ru")
    page.get_by_role("heading", name="Настройки", level=1).wait_for(timeout=COLD_TIMEOUT_MS)
    assert page.locator(".messages").get_by_role("status").filter(
        has_text=re.compile(r"\S")
    ).inner_text() == ("Язык сохранён.")
    assert japanese.storage_get("uiLanguage")["uiLanguage"] == "ru"
    assert page.evaluate("document.documentElement.lang") == "ru"
    assert page.title() == "Margin — Настройки"
    page.get_by_role("button", name="Сохранить", exact=True).wait_for()
    page.get_by_role("textbox", name="Базовый URL", exact=True).wait_for()
    summarize = page.get_by_role("combobox", name="Пересказывать длинные страницы")
    assert summarize.locator("option").all_inner_texts() == [
        "Выкл.",
        "Более 20\u00a0000 символов",
        "Более 50\u00a0000 символов",
        "Более 100\u00a0000 символов",
    ]

    # The service worker, running all along, answers in Russian too: it follows its own write of
    # the setting (bridge.js onLocalWrite), with no storage.onChanged listener of its own, which
    # Chrome would hand every change of `history` with its images.
    reply = japanese.send_message({"type": "no.such.request", "payload": {}})
    assert reply["ok"] is False and reply["error"]["message"] == "Margin не знает запроса «no.such.request»."
    assert japanese.worker().evaluate("chrome.storage.onChanged.hasListeners()") is False

    # Another page opened now starts in Russian too (the setting, not the browser, decides).
    again = open_options(japanese)
    again.get_by_role("heading", name="Настройки", level=1).wait_for()
    again.screenshot(path=str(ARTIFACTS / "i18n-options-ru.png"), full_page=True)

    # Back to "auto": the browser's Japanese again.
    page.get_by_role("combobox", name="Язык Margin").select_option("auto")
    page.get_by_role("heading", name="設定", level=1).wait_for(timeout=COLD_TIMEOUT_MS)
