"""The side panel and the sessions drawer in other languages, end to end: Chromium started in
Japanese (and in Spanish) shows the panel's labels, an alert and the sessions list's dates in that
language; choosing Русский in the setting switches the open panel without a restart; and an Enter
pressed while an IME composition is active sends nothing."""

from __future__ import annotations

import time

import pytest
from fake_behaviours import bad_key, rate_limited, slow_stream
from harness import COLD_TIMEOUT_MS, Margin, launch, poll


def usage_line_reads(page, expected: str) -> None:
    """The usage line's text, as text: a bubble built again on a change of language is
    `content-visibility: auto`, and its innerText is '' until the next frame lays it out."""
    line = page.locator(".usage-line")
    poll(
        lambda: line.text_content() == expected,
        timeout=10,
        message=lambda: f"usage line {line.text_content()!r}",
    )


def three_minutes_ago() -> int:
    return int(time.time() * 1000) - 3 * 60 * 1000


# 2025-03-14 12:00 UTC: old enough to be shown as a date, not "… ago".
LONG_AGO = 1741953600000


CONVERSATION = [
    {"role": "user", "content": "Rivers?", "createdAt": 1764684310000},
    {
        "role": "assistant",
        "content": "Canyons.",
        "createdAt": 1764684320000,
        "usage": {"input": 1234, "output": 56},
    },
]


def legacy(sid: str, name: str, at: int) -> dict:
    """A session in the legacy format (docs/storage-model.md): the panel's migration lists it."""
    history = [{"role": "user", "content": f"{name}?"}, {"role": "assistant", "content": "ok"}]
    return {"id": sid, "name": name, "createdAt": at, "savedAt": at, "pinned": False, "history": history}


@pytest.fixture
def browser_in(request, playwright_instance, dist_dir):
    """`browser_in(lang)`: a Margin in a Chromium whose UI language is `lang`."""
    opened = []

    def start(lang: str) -> Margin:
        launched = launch(playwright_instance, dist_dir, lang=lang)
        request.node._margin_launched = launched
        opened.append(launched)
        return Margin(launched)

    yield start
    for launched in opened:
        launched.close()
        assert not launched.page_errors, launched.page_errors
        assert not launched.csp_violations, launched.csp_violations


def not_an_image_alert(margin: Margin, page, tmp_path) -> str:
    """Choose a text file with "Attach image": the panel's own sentence, in the alert."""
    note = tmp_path / "notes.txt"
    note.write_text("not a picture", encoding="utf-8")
    page.locator("#file-input").set_input_files(str(note))
    return margin.wait_alert(page)


def open_drawer(page, button: str, search: str):
    page.get_by_role("button", name=button, exact=True).click()
    page.get_by_role("searchbox", name=search).wait_for(state="visible", timeout=COLD_TIMEOUT_MS)


def searched(page, search: str, query: str) -> dict[str, list[str]]:
    """Type `query` into the search box named `search`: each name listed, with its marked words,
    once the list shows the search's own rows (known by a mark of the query's last word: the
    list before it has none, or the previous query's)."""
    page.get_by_role("searchbox", name=search).fill(query)
    last = query.split()[-1].lower()

    def rows():
        found = page.evaluate(
            """() => Object.fromEntries([...document.querySelectorAll('.sp-item .sp-name')].map((name) =>
                [name.textContent, [...name.querySelectorAll('mark')].map((m) => m.textContent)]))"""
        )
        return found if any(m.lower() == last for marks in found.values() for m in marks) else None

    return poll(rows, timeout=10, message=lambda: f"no rows marked for {query!r}: {dates(page)}")


def dates(page) -> dict[str, str]:
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.sp-item')].map((row) =>
            [row.querySelector('.sp-name').textContent, row.querySelector('time').textContent]))"""
    )


def test_the_panel_speaks_japanese_then_follows_the_setting_to_russian(browser_in, tmp_path):
    margin = browser_in("ja")
    # Two sessions stored as "Untitled session": Margin's own sentinel is shown in the language of the
    # moment; the one the user named so keeps its words. (The untitled one's text does not say the
    # word either: search finds it by its name as shown.)
    untitled = {
        **legacy("s3", "Untitled session", LONG_AGO),
        "history": [{"role": "user", "content": "Rivers?"}, {"role": "assistant", "content": "ok"}],
    }
    named = {**legacy("s4", "Untitled session", LONG_AGO), "named": True}
    margin.storage_set(
        {
            "savedSessions": [
                legacy("s1", "Recent", three_minutes_ago()),
                legacy("s2", "Old", LONG_AGO),
                untitled,
                named,
            ]
        }
    )
    page = margin.context.new_page()
    page.goto(margin.url("sidepanel.html"))
    page.get_by_role("textbox", name="メッセージ").wait_for(timeout=COLD_TIMEOUT_MS)
    assert page.evaluate("document.documentElement.lang") == "ja"
    for name in (
        "送信",
        "新しいセッション",
        "セッション",
        "設定",
        "ページを添付",
        "画像を添付",
        "スクリーンショット",
    ):
        page.get_by_role("button", name=name, exact=True).wait_for()
    page.get_by_role("log", name="会話").wait_for(state="attached")
    assert page.get_by_role("heading", level=2).inner_text() == "読んでいるページについて質問"
    assert page.get_by_role("textbox", name="メッセージ").get_attribute("placeholder") == "何でも質問…"
    # The tips name the buttons with the buttons' own words.
    assert "ページを添付" in page.locator("#tip-attach strong").first.inner_text()

    assert not_an_image_alert(margin, page, tmp_path) == (
        "「notes.txt」は画像ではありません。PNG、JPEG、GIF、WebP などの画像ファイルを添付してください。"
    )
    # A conversation: its bubbles' buttons and its usage line speak Japanese too.
    margin.storage_set({"history": CONVERSATION})
    page.get_by_role("button", name="コピー", exact=True).first.wait_for(timeout=COLD_TIMEOUT_MS)
    page.get_by_role("button", name="編集", exact=True).wait_for()
    page.get_by_role("button", name="再生成", exact=True).wait_for()
    usage_line_reads(page, "入力 1,234 · 出力 56")

    open_drawer(page, "セッション", "セッションを検索")
    # Four saved sessions, and the open conversation as the list's first row (its last message's time).
    poll(lambda: len(dates(page)) == 5, timeout=COLD_TIMEOUT_MS / 1000, message=lambda: str(dates(page)))
    expected_old, expected_current = (
        page.evaluate("(ms) => new Intl.DateTimeFormat('ja', { dateStyle: 'medium' }).format(ms)", ms)
        for ms in (LONG_AGO, CONVERSATION[-1]["createdAt"])
    )
    assert dates(page) == {
        "Rivers?": expected_current,
        "Recent": "3 分前",
        "Old": expected_old,
        "無題のセッション": expected_old,
        "Untitled session": expected_old,
    }
    assert expected_old.startswith("2025/03/1")
    page.get_by_role("button", name="開く").first.wait_for()
    # Search matches the name as shown: the untitled session by its Japanese words, with a mark.
    assert searched(page, "セッションを検索", "無題") == {"無題のセッション": ["無題"]}
    page.get_by_role("searchbox", name="セッションを検索").fill("")
    poll(lambda: len(dates(page)) == 5, timeout=10, message=lambda: str(dates(page)))

    # The setting, changed elsewhere (the options page writes it): the open panel follows.
    margin.storage_set({"uiLanguage": "ru"})
    page.get_by_role("textbox", name="Сообщение").wait_for(timeout=COLD_TIMEOUT_MS)
    assert page.evaluate("document.documentElement.lang") == "ru"
    # The alert still up from before is the panel's own sentence: it is said again, in Russian.
    poll(
        lambda: margin.wait_alert(page).startswith("«notes.txt» — не изображение."),
        timeout=10,
        message=lambda: margin.wait_alert(page),
    )
    page.get_by_role("button", name="Отправить", exact=True).wait_for()
    page.get_by_role("searchbox", name="Поиск по сессиям").wait_for()
    assert dates(page)["Recent"] == "3 минуты назад"
    assert {"Сессия без названия", "Untitled session"} <= set(dates(page))
    # The bubbles were built again in Russian (their labels are built in).
    page.get_by_role("button", name="Изменить", exact=True).wait_for()
    page.get_by_role("button", name="Повторить", exact=True).wait_for()
    usage_line_reads(page, "1\u00a0234 вход · 56 выход")
    assert page.get_by_role("button", name="Открыть").count() == 4
    # With the drawer still open, a search now uses the Russian words (not the Japanese search
    # data the worker folded before), and "untitled" finds only the session the user named so.
    assert searched(page, "Поиск по сессиям", "без назв") == {"Сессия без названия": ["без", "назв"]}
    assert searched(page, "Поиск по сессиям", "untitled") == {"Untitled session": ["Untitled"]}
    page.get_by_role("searchbox", name="Поиск по сессиям").fill("")
    poll(lambda: len(dates(page)) == 5, timeout=10, message=lambda: str(dates(page)))
    page.get_by_role("button", name="Закрыть сессии").click()
    page.get_by_role("button", name="Новая сессия", exact=True).wait_for()
    margin.storage_set({"history": []})
    page.locator("#welcome").wait_for(state="visible")
    assert page.get_by_role("heading", level=2).inner_text() == "Спросите о том, что читаете"
    assert not_an_image_alert(margin, page, tmp_path).startswith("«notes.txt» — не изображение.")

    # "auto" again: the browser's Japanese.
    margin.storage_set({"uiLanguage": "auto"})
    page.get_by_role("textbox", name="メッセージ").wait_for(timeout=COLD_TIMEOUT_MS)


def test_the_panel_speaks_spanish(browser_in, tmp_path, fake_provider, provider_config):
    margin = browser_in("es")
    margin.save_provider(
        base_url=provider_config["baseUrl"], api_key=provider_config["apiKey"], name="Local", model="m1"
    )
    margin.storage_set({"savedSessions": [legacy("s1", "Reciente", three_minutes_ago())]})
    page = margin.context.new_page()
    page.goto(margin.url("sidepanel.html"))
    page.get_by_role("textbox", name="Mensaje").wait_for(timeout=COLD_TIMEOUT_MS)
    assert page.evaluate("document.documentElement.lang") == "es"
    for name in ("Enviar", "Nueva sesión", "Sesiones", "Ajustes", "Adjuntar página"):
        page.get_by_role("button", name=name, exact=True).wait_for()
    assert page.get_by_role("button", name="Cambiar de modelo").inner_text() == "Local · m1"
    assert not_an_image_alert(margin, page, tmp_path).startswith("«notes.txt» no es una imagen.")
    open_drawer(page, "Sesiones", "Buscar sesiones")
    poll(lambda: dates(page) == {"Reciente": "hace 3 minutos"}, timeout=30, message=lambda: str(dates(page)))


def test_the_worker_s_sentences_follow_the_browser_then_the_setting(
    browser_in, fake_provider, provider_config
):
    """A provider's refusal, said by Python: in the browser's Spanish, then in the chosen Russian,
    the provider's own words quoted in both."""
    margin = browser_in("es")
    margin.save_provider(base_url=provider_config["baseUrl"], api_key=provider_config["apiKey"], model="m1")
    page = margin.context.new_page()
    page.goto(margin.url("sidepanel.html"))
    box = page.get_by_role("textbox", name="Mensaje")
    box.wait_for(timeout=COLD_TIMEOUT_MS)
    fake_provider.script(rate_limited(20))
    box.fill("¿Ríos?")
    page.get_by_role("button", name="Enviar", exact=True).click()
    spanish = margin.wait_alert(page)
    assert spanish.startswith(
        "El proveedor está limitando las solicitudes (429). Espera 20 s y vuelve a intentarlo."
    )
    assert "El proveedor dijo: “Rate limit reached" in spanish

    margin.storage_set({"uiLanguage": "ru"})
    box = page.get_by_role("textbox", name="Сообщение")
    box.wait_for(timeout=COLD_TIMEOUT_MS)
    fake_provider.script(bad_key())
    box.fill("Реки?")
    page.get_by_role("button", name="Отправить", exact=True).click()
    poll(
        lambda: margin.wait_alert(page).startswith("Провайдер отклонил API-ключ (401)."),
        timeout=COLD_TIMEOUT_MS / 1000,
        message=lambda: margin.wait_alert(page),
    )


def test_the_sessions_dates_tick_while_the_drawer_stays_open(margin: Margin):
    margin.storage_set({"savedSessions": [legacy("s1", "Recent", three_minutes_ago())]})
    page = margin.context.new_page()
    page.clock.install()  # the page's own clock, moved on below instead of waiting two minutes
    page.goto(margin.url("sidepanel.html"))
    margin.wait_panel_ready(page)
    open_drawer(page, "Sessions", "Search sessions")
    poll(lambda: dates(page) == {"Recent": "3 minutes ago"}, timeout=30, message=lambda: str(dates(page)))
    page.clock.fast_forward("02:00")
    poll(lambda: dates(page) == {"Recent": "5 minutes ago"}, timeout=10, message=lambda: str(dates(page)))


def test_a_streaming_answer_follows_a_change_of_language(configured_margin: Margin, fake_provider):
    """The streaming bubble is not built again: its words are relabeled where they stand."""
    margin = configured_margin
    waits = slow_stream(chunks=10, delay=0.05, word="otter")
    waits.first_delay = 8.0
    fake_provider.script(waits)
    page = margin.open_panel()
    margin.send(page, "Count otters")
    page.get_by_role("img", name="Margin is writing").wait_for(timeout=COLD_TIMEOUT_MS)
    margin.storage_set({"uiLanguage": "ru"})
    page.get_by_role("img", name="Margin пишет").wait_for(timeout=COLD_TIMEOUT_MS)
    assert page.get_by_role("img", name="Margin is writing").count() == 0
    margin.storage_set({"uiLanguage": "auto"})  # the harness finds its buttons by their English names
    margin.wait_answer(page)
    assert margin.bubble_texts(page) == ["Count otters", " ".join(f"otter{i}" for i in range(1, 11))]


COMPOSING_ENTER_JS = """(composing) => {
    const box = document.getElementById('message');
    const init = { key: 'Enter', code: 'Enter', bubbles: true, cancelable: true };
    const event = composing === 'flag'
        ? new KeyboardEvent('keydown', { ...init, isComposing: true })
        : new KeyboardEvent('keydown', { ...init, keyCode: 229 });
    box.dispatchEvent(event);
    return event.defaultPrevented;
}"""


def test_enter_during_an_ime_composition_sends_nothing(configured_margin: Margin, fake_provider):
    margin = configured_margin
    fake_provider.script(reply="こんにちは")
    page = margin.open_panel()
    box = margin.message_box(page)
    box.fill("日本語で")
    for composing in ("flag", "keyCode"):
        # The IME's Enter confirms the composition: it must reach the IME, not send.
        assert page.evaluate(COMPOSING_ENTER_JS, composing) is False
    margin.round_trip(page)
    page.wait_for_timeout(500)
    assert fake_provider.turn_requests == []
    assert margin.history() == []
    assert box.input_value() == "日本語で"
    assert margin.turn_state(page) == "idle"
    # The same Enter once the composition has ended sends.
    box.press("Enter")
    assert margin.wait_answer(page, before=0) == "こんにちは"
    assert len(fake_provider.turn_requests) == 1
