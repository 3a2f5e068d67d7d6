"""Python's sentences (margin.sentences, docs/i18n.md): in all seven catalogues with the same
placeholders, said in the user's language, English byte for byte as before, and English when a
catalogue is missing or unreadable."""

from __future__ import annotations

import json
import re
from asyncio import Event
from pathlib import Path

import pytest
from helpers import run

from margin import api, backup, catalogue, chat, errors, explain
from margin.errors import MarginError
from margin.platform_memory import ScriptedResponse, ScriptedTransport, memory_platform
from margin.providers import http_error, transport_error
from margin.sentences import ENGLISH, Sentence, say, sentence
from margin.storage import ACTIVE_PROVIDER_ID, PROVIDERS, UI_LANGUAGE

LOCALES_DIR = Path(__file__).resolve().parents[2] / "extension" / "_locales"
CATALOGUES = {
    locale: json.loads((LOCALES_DIR / locale / "messages.json").read_text(encoding="utf-8"))
    for locale in catalogue.LOCALES
}
PROVIDER = {"baseUrl": "https://api.example.com/v1", "model": "m-1", "apiKey": "sk-x"}


@pytest.fixture(autouse=True)
def fresh_catalogues(monkeypatch):
    monkeypatch.setattr(catalogue, "_loaded", {})
    monkeypatch.setattr(catalogue, "_spoken", "en")


def speak(language: str) -> None:
    run(catalogue.ensure(memory_platform(), language))


def test_every_sentence_is_in_all_seven_with_its_placeholders():
    for key, template in ENGLISH.items():
        arguments = {int(n) for n in re.findall(r"\$(\d)", template)}
        for locale, messages in CATALOGUES.items():
            # A plural form (`key__one`) a language does not have is said with its `__other`.
            entry = messages.get(key) or messages.get(key.split("__")[0] + "__other")
            assert entry is not None, f"{locale} lacks {key}"
            positions = {int(p["content"][1:]) for p in (entry.get("placeholders") or {}).values()}
            assert positions == arguments, (locale, key)
            named = set(re.findall(r"\$([A-Za-z0-9_]+)\$", entry["message"]))
            assert named == set(entry.get("placeholders") or {}), (locale, key)


def test_the_english_catalogue_says_the_fallback_byte_for_byte():
    english = CATALOGUES["en"]
    for key, template in ENGLISH.items():
        subs = tuple(f"<{n}>" for n in range(1, 10))
        assert catalogue.render(english[key], subs) == catalogue.substitute(template, subs), key


OLD_ENGLISH = [
    (errors.not_an_image(), "That file is not an image. Attach a PNG, JPEG, WebP or GIF picture."),
    (errors.image_too_large(20 * 1024 * 1024), "This image is larger than 20 MB. Use a smaller picture."),
    (
        errors.image_too_many_pixels((9000, 8000)),
        "This image is too large: 9000×8000 pixels; Margin accepts up to 50 megapixels.",
    ),
    (
        errors.image_format_unsupported("image/heic"),
        "Margin cannot read HEIC images. Save the picture as PNG or JPEG and attach it again.",
    ),
    (
        http_error(401, '{"error": {"message": "bad key"}}', {}, PROVIDER),
        "The provider rejected the API key (401). Check the key in Margin's options. "
        "The provider said: “bad key”.",
    ),
    (
        http_error(429, "", {"retry-after": "30"}, PROVIDER),
        "The provider is limiting requests (429). Wait 30 seconds and try again.",
    ),
    (
        http_error(404, "", {}, PROVIDER),
        "The provider at https://api.example.com/v1 does not know the model “m-1” or that address "
        "(404). Check the model name and the Base URL in Margin's options.",
    ),
]


@pytest.mark.parametrize(("error", "old"), OLD_ENGLISH)
def test_english_is_what_margin_always_said(error, old):
    assert error.message == old
    speak("en")
    assert error.to_json()["message"] == old


def test_an_error_under_the_japanese_setting_is_said_in_japanese():
    platform = memory_platform({UI_LANGUAGE: "ja"})

    async def refuse(platform, payload):
        raise MarginError.said("empty_message", "py_error_empty_message")

    reply = run(api.dispatch(platform, "chat.test", {}, handler=refuse))
    assert reply["error"] == {
        "code": "empty_message",
        "message": "先にメッセージを入力するか、画像を添付してください。",
    }
    error = http_error(429, '{"error": {"message": "slow down"}}', {"retry-after": "7"}, PROVIDER)
    assert error.to_json()["message"] == (
        "プロバイダーがリクエストを制限しています（429）。7 秒待ってから、もう一度お試しください。"
        "プロバイダーからの応答：“slow down”。"
    )
    assert error.message.startswith("The provider is limiting requests (429).")  # logs stay English


def test_russian_nested_sentences_and_a_transport_failure():
    speak("ru")
    assert errors.image_too_many_pixels().to_json()["message"] == (
        "В изображении слишком много пикселей. Margin принимает до 50 Мпикс."
    )
    assert say(sentence("py_error_stopped")) == "Ответ остановлен."
    assert isinstance(errors.not_an_image().sentence, Sentence)
    assert "interna" not in api.internal_error(ValueError("x")).to_json()["message"]


@pytest.mark.parametrize("broken", ["missing", "not json", "[]"])
def test_a_missing_or_broken_catalogue_leaves_the_sentence_in_english(broken):
    async def read_catalogue(locale: str) -> str:
        if locale != "ko":
            return (LOCALES_DIR / locale / "messages.json").read_text(encoding="utf-8")
        if broken == "missing":
            raise OSError("404")
        return broken

    platform = memory_platform({UI_LANGUAGE: "ko"})
    platform.read_catalogue = read_catalogue

    async def refuse(platform, payload):
        raise errors.image_damaged()

    reply = run(api.dispatch(platform, "chat.test", {}, handler=refuse))
    assert reply["error"]["message"] == "This image is damaged and cannot be read. Attach the file again."


def test_a_key_an_older_catalogue_lacks_is_said_in_english():
    catalogue.install("en", "{}")
    catalogue.install("es", "{}")
    catalogue._spoken = "es"
    assert say(sentence("py_error_wait_seconds", 5)) == "Wait 5 seconds and try again."
    assert transport_error_sentence() == "Margin could not reach api.example.com. " + (
        "Check that the server is running (for Ollama: `ollama serve`), that the Base URL is right, "
        "and that you are online."
    )


def transport_error_sentence() -> str:
    from margin.ports import TransportError

    return transport_error(TransportError("connect"), PROVIDER).to_json()["message"]


def test_the_trim_note_is_in_the_model_language_and_replaces_an_english_one():
    from margin import slimming
    from margin.history import PAGE_CONTEXT_PREFIX, Record

    header = f"{PAGE_CONTEXT_PREFIX} Page: t\nNote: shortened to fit the model's context: the first 9 of 20,000 characters."
    record = Record(
        "user", f"{header}\n\n" + "word " * 4000, {"attachment": {"url": "u", "trimmedFrom": 20000}}
    )
    shortened = slimming.trimmed_attachment(record, 3000, "ru").text.split("\n\n", 1)[0]
    assert shortened.splitlines()[1:] == [
        "Примечание: сокращено под контекст модели: первые 2\u00a0999 из 20\u00a0000 симв."
    ]


def test_an_unsaved_answer_s_sentence_is_one_language_cause_and_all():
    from margin import unsaved_answers
    from margin.ports import storage_refused

    speak("ja")
    event = unsaved_answers.error_event(storage_refused("QUOTA_BYTES quota exceeded"), {})
    assert event["error"]["code"] == "storage_full"
    assert event["error"]["message"].startswith("Chrome の Margin 用ストレージがいっぱいのため")
    assert event["error"]["message"].endswith("コピーするか、「保存を再試行」を押してください。")


# -- sentences converted from English literals (issue 12) ------------------------------------------
#
# Each case is the real request that fails, what it always said in English, and a piece of what
# it says in Japanese and in Russian.

OLLAMA = {"id": "o", "type": "openai", "name": "Ollama", "baseUrl": "http://localhost:11434/v1", "model": "m"}


def told(language: str, request: tuple) -> str:
    """The sentence the user reads for `request` ((name, payload[, handler[, responses]])) under
    the language setting; a "turn" request is a chat turn (its payload is the provider, its
    handler the turn's start, a question by default)."""
    name, payload, handler, responses = (*request, None, ())[:4] if len(request) == 2 else (*request, ())[:4]
    transport = ScriptedTransport([replied(*response) for response in responses])
    if name == "turn":
        settings = {PROVIDERS: [payload], ACTIVE_PROVIDER_ID: payload["id"], UI_LANGUAGE: language}
        platform = memory_platform(settings, transport)
        events: list[dict] = []
        start = handler or {"action": "send", "text": "hi", "images": []}
        run(chat.run_turn(platform, start, events.append, Event()))
        return next(e["error"]["message"] for e in events if e["event"] == "error")
    platform = memory_platform({UI_LANGUAGE: language}, transport)
    reply = run(api.dispatch(platform, name, payload, handler=handler))
    return reply["error"]["message"] if not reply["ok"] else reply["value"]["message"]


def replied(body: str, content_type: str = "text/event-stream") -> ScriptedResponse:
    return ScriptedResponse(chunks=[body], headers={"content-type": content_type})


ANTHROPIC = {**PROVIDER, "id": "a", "type": "anthropic", "baseUrl": "https://api.anthropic.com/v1"}
GEMINI = {
    **PROVIDER,
    "id": "g",
    "type": "gemini",
    "baseUrl": "https://generativelanguage.googleapis.com/v1beta",
}
RESPONSES = {**PROVIDER, "id": "r", "type": "openai-responses", "baseUrl": "https://api.openai.com/v1"}


def save(*providers, **settings) -> tuple[str, dict]:
    return "options.save", {"providers": list(providers), **settings}


def backup_import(text: str) -> tuple:
    async def importing(platform, payload):
        return await backup.import_text(platform, text)

    return "backup.import", {}, importing


BACKUP = {"format": "margin-backup", "version": 1}


CONVERTED_CASES = {
    "empty base url": (
        save({**OLLAMA, "baseUrl": " "}),
        "Provider 1 (“Ollama”): the Base URL is empty. Enter one, for example https://api.openai.com/v1 "
        "or http://localhost:11434/v1.",
        "プロバイダー 1（「Ollama」）：ベース URL が空です。",
        "Провайдер 1 («Ollama»): базовый URL пуст.",
    ),
    "long system prompt": (
        save({**OLLAMA, "systemPrompt": "x" * 20_001}),
        "Provider 1 (“Ollama”): the System prompt is 20,001 characters long; shorten it to 20,000 or fewer.",
        "システムプロンプトが 20,001 文字あります。",
        "длиной 20\u00a0001 симв.; сократите его до 20\u00a0000 симв.",
    ),
    "bad price": (
        save({**OLLAMA, "prices": {"cachedInput": -1}}),
        "Provider 1 (“Ollama”): the Cached input price must be a number of US dollars per 1 million "
        "tokens, 0 or more.",
        "キャッシュ入力料金は",
        "цена ввода из кэша",
    ),
    "unnamed provider of unknown type": (
        ("provider.models", {"provider": {"type": "fax", "baseUrl": "https://x.example"}}),
        "The provider: the type “fax” is not supported; choose one of: openai, anthropic, gemini, openai-responses.",
        "プロバイダー：種類「fax」には対応していません。",
        "Провайдер: тип «fax» не поддерживается",
    ),
    "key over http": (
        save({**OLLAMA, "baseUrl": "http://lan.example/v1", "apiKey": "sk"}),
        "Provider 1 (“Ollama”): the API key would be sent over plain http:// to lan.example, where anyone "
        "on the network in between can read it. Use https://, or tick “Send the API key over plain "
        "HTTP” if you trust that network.",
        "「暗号化されていない HTTP で API キーを送る」にチェック",
        "отметьте «Отправлять API-ключ по незашифрованному HTTP»",
    ),
    "summarize size": (
        save(OLLAMA, summarizeAboveChars=5),
        "“Summarize long pages” must be off (0) or a whole number of characters from 1,000 to 2,000,000.",
        "「長いページを要約」は",
        "от 1\u00a0000 до 2\u00a0000\u00a0000",
    ),
    "run python setting": (
        save(OLLAMA, runPython="always"),
        "“Let the model run Python” must be “off”, “ask” or “auto”.",
        "「モデルに Python を実行させる」",
        "«Разрешить модели запускать Python»",
    ),
    "backup that is not json": (
        backup_import("<html>"),
        "This file is not a Margin backup (it is not valid JSON). Choose a file made with “Export backup”.",
        "「バックアップをエクスポート」で作ったファイルを選んでください。",
        "Этот файл — не резервная копия Margin (это не корректный JSON).",
    ),
    "backup cut off": (
        backup_import('{"format": "margin-backup", "sessions": [{"id": "a"'),
        "This backup file is incomplete: it ends too early, as if the download or copy was cut off. "
        "Export the backup again and import the new file.",
        "このバックアップファイルは不完全です。",
        "Файл копии неполный",
    ),
    "damaged backup near a character": (
        backup_import(
            '{"format": "margin-backup", '
            + "".join(f'"k{i}": 0, ' for i in range(950))
            + '"y": [1,,2], "z": 1}'
        ),
        "This backup file is damaged (unreadable near character 10,376). Export the backup again and "
        "import the new file.",
        "10,376 文字目付近が読み取れません",
        "около символа 10\u00a0376",
    ),
    "backup session with a bad date": (
        backup_import(json.dumps({**BACKUP, "sessions": [{"id": "a", "name": "Trip", "savedAt": "May"}]})),
        "This backup is damaged: session 1 (“Trip”) has a “savedAt” that is not a date. Export the "
        "backup again, or choose another file.",
        "このバックアップは壊れています：セッション 1（「Trip」）の「savedAt」が日付ではありません。",
        "Копия повреждена: сессия 1 («Trip»): «savedAt» — не дата.",
    ),
    "backup settings": (
        backup_import(json.dumps({**BACKUP, "settings": {"summarizeAboveChars": "big"}})),
        "This backup is damaged: its settings hold a “Summarize long pages” size that is not a number. "
        "Export the backup again, or choose another file.",
        "設定の「長いページを要約」のサイズが数値ではありません",
        "размер для «Пересказывать длинные страницы» — не число",
    ),
    "backup of a newer margin": (
        backup_import(json.dumps({**BACKUP, "version": 9})),
        "This backup was made by a newer Margin (format version 9). Update Margin, then import it again.",
        "形式バージョン 9",
        "версия формата 9",
    ),
    "backup port started wrong": (
        ("backup.port", {}, lambda platform, payload: backup.run(platform, {}, print, None, None)),
        'A backup port starts with {action: "export" or "import"}.',
        'バックアップのポートは {action: "export" または "import"} で始まります。',
        'Порт резервной копии начинается с {action: "export" или "import"}.',
    ),
    "anthropic stream that is not one": (
        ("turn", ANTHROPIC, None, [("data: nope\n\n",)]),
        "The provider sent something that is not an Anthropic message stream: “nope”. Check that the "
        "Base URL is https://api.anthropic.com/v1.",
        "Anthropic のメッセージストリームではありません",
        "Провайдер прислал не поток сообщений Anthropic",
    ),
    "gemini answer that is not a stream": (
        ("turn", GEMINI, None, [("<html>", "text/html")]),
        "Google answered, but not with a stream (content type “text/html”). Check that the Base URL is "
        "https://generativelanguage.googleapis.com/v1beta.",
        "Google は応答しましたが、ストリームではありませんでした（コンテンツタイプ「text/html」）。",
        "Google ответил, но не потоком (тип содержимого «text/html»).",
    ),
    "openai reply of the wrong shape": (
        ("turn", {**OLLAMA, "apiKey": ""}, None, [('data: {"choices": 5}\n\n',)]),
        "The server at localhost:11434 sent a reply Margin cannot read: “choices” is a number, not a "
        "list. Try again; if it keeps happening, check the provider and its Base URL in Margin's options.",
        "localhost:11434 のサーバーから、Margin が読めない応答が届きました：「choices」がリストではなく数値です。",
        "Сервер localhost:11434 прислал ответ, который Margin не может прочитать: «choices» — число, а не список.",
    ),
    "responses event that is not an object": (
        ("turn", RESPONSES, None, [("data: [1]\n\n",)]),
        "The Responses API at api.openai.com sent a reply Margin cannot read: a stream event is a list, "
        "not an object. Try again; if it keeps happening, check the provider and its Base URL in "
        "Margin's options.",
        "ストリームのイベントがオブジェクトではなくリストです。",
        "событие потока — список, а не объект.",
    ),
    "test of a provider that answers": (
        ("provider.test", {"provider": OLLAMA}, None, [('{"choices": []}', "application/json")]),
        "Connected to localhost:11434: model m answered.",
        "localhost:11434 に接続しました：モデル m が応答しました。",
        "Подключено к localhost:11434: модель m ответила.",
    ),
    "test of a server that is not anthropic": (
        ("provider.test", {"provider": ANTHROPIC}, None, [("{}", "application/json")]),
        "api.anthropic.com answered, but not like the Anthropic API. Check the Base URL (it is usually "
        "https://api.anthropic.com/v1).",
        "（通常は https://api.anthropic.com/v1）",
        "не как API Anthropic. Проверьте базовый URL (обычно это https://api.anthropic.com/v1).",
    ),
    "anthropic model list that is not one": (
        ("provider.models", {"provider": ANTHROPIC}, None, [("[]", "application/json")]),
        "api.anthropic.com did not answer with a model list. Type the model's name instead, for example "
        "claude-sonnet-4-5. You can still type the model's name.",
        "api.anthropic.com からモデル一覧が返ってきませんでした。",
        "api.anthropic.com не ответил списком моделей.",
    ),
    "spreadsheet attached": (
        ("file.attach", {"name": "q.xlsx", "text": "x"}),
        "Margin cannot read spreadsheet files (q.xlsx). Save the sheet as CSV and attach that.",
        "Margin は表計算ファイル（q.xlsx）を読めません。",
        "Margin не читает таблицы (q.xlsx).",
    ),
    "file of another type": (
        ("file.attach", {"name": "", "text": "x"}),
        "Margin can attach CSV, TSV, JSON, Markdown and plain text files; this file is none of them.",
        "このファイル はどれにも当たりません。",
        "этот файл не подходит ни под один из этих типов.",
    ),
    "file too big": (
        ("file.attach", {"name": "a.csv", "text": "x" * (5 * 1024 * 1024 + 1)}),
        "a.csv is larger than 5 MB. Attach a smaller file, or a part of it.",
        "a.csv は 5 MB を超えています。",
        "a.csv больше 5 МБ.",
    ),
    "binary file": (
        ("file.attach", {"name": "a.csv", "text": "a\x00b"}),
        "a.csv is not a text file in UTF-8. Save it as UTF-8 text (CSV, JSON or plain text) and attach "
        "it again.",
        "a.csv は UTF-8 のテキストファイルではありません。",
        "a.csv — не текстовый файл в UTF-8.",
    ),
    "empty file": (
        ("file.attach", {"name": "a.csv", "text": " \n"}),
        "a.csv is empty. Attach a file with some text in it.",
        "a.csv は空です。",
        "Файл a.csv пуст.",
    ),
    "seek without a time": (
        ("video.seek", {"seconds": -1}),
        "Margin could not tell which time to seek to.",
        "どの時刻に移動すればよいか",
        "Margin не понял, к какому моменту перейти.",
    ),
    "seek in a video that is gone": (
        ("video.seek", {"seconds": 3, "index": 0}),
        "The video this time belongs to is no longer in the conversation.",
        "この時刻の動画は、もう会話にありません。",
        "Видео, к которому относится это время, больше нет в разговоре.",
    ),
    "original image of no key": (
        ("images.original", {"key": 5}),
        "Margin did not say which image to open. Reopen the panel and try again.",
        "どの画像を開くかが Margin に伝わりませんでした。",
        "Margin не получил, какое изображение открыть.",
    ),
    "original image gone": (
        ("images.original", {"key": "imageOriginal_" + "0" * 32}),
        "The full-size copy of this image is gone (Chrome may have lost it while repairing its storage); "
        "the thumbnail is all that is left.",
        "残っているのはサムネイルだけです。",
        "осталась только миниатюра.",
    ),
    "export in another format": (
        ("session.export", {"id": "s", "format": "pdf"}),
        "Choose Markdown or JSON to export a session.",
        "セッションのエクスポートには Markdown か JSON を選んでください。",
        "Чтобы экспортировать сессию, выберите Markdown или JSON.",
    ),
    "attach again of no page": (
        ("attachment.reattach", {}),
        "Margin could not tell which attached page was meant. Reload the panel.",
        "どの添付ページのことか Margin には分かりませんでした。",
        "Margin не понял, о какой прикреплённой странице речь.",
    ),
    "retry save of no answer": (
        ("history.save_answer", {}),
        "Margin could not read the answer to save (no answer). Copy it instead.",
        "保存する回答を Margin が読み取れませんでした（no answer）。",
        "Margin не смог прочитать ответ для сохранения (no answer).",
    ),
    "code run of nothing": (
        ("code.save_run", {"index": 1, "createdAt": 2, "run": 5}),
        "Margin could not read the code run to save (not an object).",
        "保存するコードの実行結果を Margin が読み取れませんでした",
        "Margin не смог прочитать запуск кода для сохранения",
    ),
    "unknown request": (
        ("app.nothing", {}),
        "Margin does not know the request 'app.nothing'.",
        "Margin はリクエスト 'app.nothing' を知りません。",
        "Margin не знает запроса 'app.nothing'.",
    ),
    "regenerate with no question": (
        ("turn", OLLAMA, {"action": "regenerate"}),
        "There is no question to answer again yet.",
        "まだ回答し直せる質問がありません。",
        "Пока нет вопроса, на который можно ответить заново.",
    ),
    "an empty image": (
        ("turn", OLLAMA, {"action": "send", "text": "?", "images": [{"dataUrl": "data:image/png;base64,"}]}),
        "This image is empty. Attach the file again.",
        "この画像は空です。",
        "Изображение пустое.",
    ),
    "an image of broken base64": (
        (
            "turn",
            OLLAMA,
            {"action": "send", "text": "?", "images": [{"dataUrl": "data:image/png;base64,@@"}]},
        ),
        "This image's data is damaged, so it cannot be sent. Attach the file again.",
        "この画像のデータは壊れているため送信できません。",
        "Данные изображения повреждены",
    ),
    "explain with nothing selected": (
        ("explain", {}, lambda platform, payload: explain.queue(platform, payload)),
        "Select some text on the page first, then choose Explain with Margin.",
        "「Margin で解説」を選んでください。",
        "выберите «Объяснить в Margin».",
    ),
    "a number chrome cannot store": (
        ("save", {}, lambda platform, payload: platform.local.set({"x": [float("nan")]})),
        "Margin refused to save a number that is not finite (NaN or Infinity, at x[0]), which Chrome "
        "cannot store, so nothing was written.",
        "Margin は有限でない数値（NaN または Infinity、場所：x[0]）の保存を拒否しました。",
        "Margin отказался сохранять бесконечное или нечисловое значение (NaN или Infinity, в x[0])",
    ),
    "model list of a server that has none": (
        ("provider.models", {"provider": {**OLLAMA, "type": "gemini", "baseUrl": "https://g.example"}}),
        None,
        "モデル名は手入力できます。",
        "Название модели можно ввести вручную.",
    ),
}


@pytest.mark.parametrize("case", CONVERTED_CASES, ids=list(CONVERTED_CASES))
def test_a_converted_sentence_is_english_as_before_and_said_in_japanese_and_russian(case):
    request, english, japanese, russian = CONVERTED_CASES[case]
    if english is not None:
        assert told("en", request) == english
    assert japanese in told("ja", request)
    assert russian in told("ru", request)


@pytest.mark.parametrize(
    ("captions", "english", "japanese", "russian"),
    [
        ("WEBVTX", "These captions are in a format Margin cannot read.", "読めない形式です", "в формате"),
        ("<tt><p>", "These captions are not timed text Margin can read.", "タイムドテキスト", "по времени"),
        ('{"x": 1}', "These captions are not YouTube's timed text.", "YouTube の", "YouTube"),
    ],
)
def test_captions_margin_cannot_read_are_said_in_the_language(captions, english, japanese, russian):
    from margin.transcripts import TranscriptError, parse_captions

    with pytest.raises(TranscriptError) as caught:
        parse_captions(captions)
    assert caught.value.message == english
    for language, words in (("ja", japanese), ("ru", russian)):
        speak(language)
        assert words in caught.value.to_json()["message"]


def test_a_provider_that_goes_quiet_is_said_in_the_language():
    from margin.stoppable import race

    async def quiet():
        await Event().wait()

    async def wait(what):
        return await race(quiet(), Event(), timeout=0.01, what=what)

    with pytest.raises(errors.ProviderError) as caught:
        run(wait(sentence("py_error_waited_summary")))
    assert caught.value.message == (
        "The provider sent nothing for 0 seconds, so Margin gave up on the summary. Try again; if it "
        "keeps happening, check the server or choose a faster model."
    )
    speak("ru")
    assert "прекратил ждать пересказ." in caught.value.to_json()["message"]
    speak("ja")
    assert "Margin は要約を打ち切りました。" in caught.value.to_json()["message"]


def test_a_request_that_is_not_json_is_refused_in_the_language():
    from margin.worker import Worker

    worker = Worker(memory_platform({UI_LANGUAGE: "ja"}), lambda port, event: True)
    reply = json.loads(run(worker.dispatch_json("app.ping", "{", "extension")))
    assert reply["error"] == {
        "code": "bad_payload",
        "message": "リクエストが有効な JSON ではありませんでした。",
    }


@pytest.mark.parametrize(
    ("language", "reason"),
    [
        ("en", 'The arguments were not valid JSON; send {"code": "<python code>"}.'),
        ("ja", '引数が有効な JSON ではありませんでした。{"code": "<python code>"} の形で送ってください。'),
        ("ru", 'Аргументы — не корректный JSON; отправьте {"code": "<python code>"}.'),
    ],
)
def test_why_a_tool_call_was_not_run_is_in_the_model_language(language, reason):
    from test_tool_turn import Panel, call_answer, text_answer

    panel = Panel([call_answer("", arguments='{"code": "print(1)'), text_answer("Sorry.")])
    run(panel.platform.local.set({UI_LANGUAGE: language}))
    run(panel.run())
    (refused,) = panel.calls
    assert refused["call"]["refusal"] == reason  # the panel shows it after its own "Not run:"
    assert panel.body(1)["messages"][-1]["content"] == reason


def test_the_bound_on_code_runs_is_said_in_the_model_language():
    from test_tool_turn import Panel, chunk, sse, text_answer

    from margin import tool_loop

    calls = [
        {"index": i, "id": f"c{i}", "type": "function", "function": {"name": "run_python", "arguments": ""}}
        for i in range(tool_loop.MAX_CALLS + 1)
    ]
    arguments = [
        {"index": i, "function": {"arguments": json.dumps({"code": f"print({i})"})}}
        for i in range(len(calls))
    ]
    items = [chunk({"tool_calls": calls}), chunk({"tool_calls": arguments}), chunk({}, "tool_calls")]
    many = ScriptedResponse(chunks=[sse(i) for i in items] + [sse("[DONE]")])
    panel = Panel([many, text_answer("Done.")])
    run(panel.platform.local.set({UI_LANGUAGE: "ru"}))
    run(panel.run())
    refusals = [e["call"]["refusal"] for e in panel.calls if "refusal" in e["call"]]
    assert refusals == ["Достигнут предел запусков кода на один ответ (6). Отвечайте с тем, что есть."]


def imported(language: str, members: dict) -> str:
    """The summary the sessions panel shows after importing `members` over the backup port."""
    platform = memory_platform({UI_LANGUAGE: language})
    pieces = iter([{"chunk": json.dumps({**BACKUP, **members})}, {"end": True}])
    events: list[dict] = []

    async def receive():
        return next(pieces)

    run(backup.run(platform, {"action": "import"}, events.append, Event(), receive))
    return next(e["result"]["message"] for e in events if e["event"] == "done")


def saved_session(number: int) -> dict:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    return {"id": f"s{number}", "name": f"S{number}", "savedAt": 1000 + number, "history": history}


A_PROVIDER = {"id": "pa", "type": "openai", "name": "A", "baseUrl": "https://a.example/v1", "model": "m"}
MIXED_BACKUP = {
    "sessions": [saved_session(n) for n in range(3)] + [{"id": "d", "damaged": "missing"}],
    "settings": {"providers": [A_PROVIDER, {**A_PROVIDER, "id": "pb", "baseUrl": ""}]},
}


def test_what_an_import_did_is_english_as_before_and_said_in_the_language():
    assert imported("en", MIXED_BACKUP) == (
        "Added 3 sessions, added 1 provider. 1 session the backup marks as damaged could not be "
        "restored. Left out 1 provider that is not valid: Provider 2 (“A”): the Base URL is empty. "
        "Enter one, for example https://api.openai.com/v1 or http://localhost:11434/v1. To use “A” "
        "(a.example), choose it in the model menu: a provider from a backup is not used until you pick it."
    )
    assert imported("ja", MIXED_BACKUP).startswith(
        "セッション 3 件を追加、プロバイダー 1 件を追加。バックアップで破損と記録されたセッション 1 件は"
        "復元できませんでした。無効なプロバイダー 1 件は追加しませんでした：プロバイダー 2（「A」）：ベース URL が空です。"
    )
    assert imported("ru", MIXED_BACKUP).startswith("Добавлены 3 сессии, добавлен 1 провайдер.")


@pytest.mark.parametrize(
    ("count", "russian", "spanish"),
    [
        (1, "Добавлена 1 сессия.", "Se añadió 1 sesión."),
        (22, "Добавлены 22 сессии.", "Se añadieron 22 sesiones."),
        (11, "Добавлено 11 сессий.", "Se añadieron 11 sesiones."),
    ],
)
def test_a_count_of_sessions_takes_the_language_s_plural_form(count, russian, spanish):
    members = {"sessions": [saved_session(n) for n in range(count)]}
    assert imported("ru", members) == russian
    assert imported("es", members) == spanish
    assert imported("en", members) == f"Added {count} session{'s' if count > 1 else ''}."
