"""Python's sentences converted from English literals (issue 12), said through the real request that
refuses: English byte for byte as before, and the sentence in Japanese and in Russian. The backup's
are in test_i18n_backup_sentences.py."""

from __future__ import annotations

import pytest
from said import ANTHROPIC, GEMINI, OLLAMA, RESPONSES, save, told

from margin.i18n import catalogue
from margin.turn import explain


@pytest.fixture(autouse=True)
def fresh_catalogues(monkeypatch):
    monkeypatch.setattr(catalogue, "_loaded", {})
    monkeypatch.setattr(catalogue, "_spoken", "en")


# Each case: the request, what it always said in English (None: a result, not a refusal), and a
# piece of what it says in Japanese and in Russian.
CONVERTED_CASES = {
    "empty base url": (
        save({**OLLAMA, "baseUrl": " "}),
        "Provider 1 (“Ollama”): the Base URL is empty. Enter one, for example https://api.openai.com/v1 "
        "or http://localhost:11434/v1.",
        "1 番目のプロバイダー（「Ollama」）：ベース URL が空です。",
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
        "このファイルはどれにも当たりません。",
        "этот файл не подходит ни под один из этих типов.",
    ),
    "file too big": (
        ("file.attach", {"name": "a.csv", "text": "x" * (5 * 1024 * 1024 + 1)}),
        "a.csv is larger than 5 MB. Attach a smaller file, or a part of it.",
        "a.csvは5 MB を超えています。",
        "a.csv больше 5 МБ.",
    ),
    "binary file": (
        ("file.attach", {"name": "a.csv", "text": "a\x00b"}),
        "a.csv is not a text file in UTF-8. Save it as UTF-8 text (CSV, JSON or plain text) and attach "
        "it again.",
        "a.csvは UTF-8 のテキストファイルではありません。",
        "a.csv — не текстовый файл в UTF-8.",
    ),
    "empty file": (
        ("file.attach", {"name": "a.csv", "text": " \n"}),
        "a.csv is empty. Attach a file with some text in it.",
        "a.csvは空です。",
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
    "providers missing": (
        ("options.save", {}),
        "The list of providers is missing. Reload the options page and save again.",
        "プロバイダーの一覧がありません。",
        "Нет списка провайдеров.",
    ),
    "two providers of one id": (
        save(OLLAMA, {**OLLAMA, "name": "Other"}),
        "Two providers share the id “o”. Reload the options page and save again.",
        "2 つのプロバイダーの ID が同じ（「o」）です。",
        "У двух провайдеров одинаковый id «o».",
    ),
    "active provider not listed": (
        save(OLLAMA, activeProviderId="zz"),
        "The active provider is not in the list of providers. Choose one of them and save again.",
        "使用中のプロバイダーが一覧にありません。",
        "Активного провайдера нет в списке.",
    ),
    "language setting": (
        save(OLLAMA, uiLanguage="??"),
        "The interface language must be “auto” or a language code such as “en” or “zh-CN”.",
        "表示言語は「auto」か、「en」「zh-CN」のような言語コードにしてください。",
        "Язык интерфейса должен быть «auto» или кодом языка, например «en» или «zh-CN».",
    ),
    "time limit setting": (
        save(OLLAMA, codeTimeLimitSeconds=0),
        "“Time limit for code” must be a whole number of seconds from 5 to 600.",
        "「コードの制限時間」は 5〜600 の整数の秒数にしてください。",
        "«Ограничение времени для кода»: целое число секунд от 5 до 600.",
    ),
    "provider that is not settings": (
        save(5),
        "Provider 1 is not a set of settings. Fill in the provider form again.",
        "1 番目のプロバイダーは設定として読み取れません。",
        "Провайдер 1: это не набор настроек.",
    ),
    "base url of no address": (
        save({**OLLAMA, "baseUrl": "http://[::1"}),
        "Provider 1 (“Ollama”): the Base URL is not a web address (an IPv6 address goes in "
        "brackets: http://[::1]:8080/v1).",
        "1 番目のプロバイダー（「Ollama」）：ベース URL が Web アドレスになっていません（IPv6 "
        "アドレスは角かっこで囲みます：http://[::1]:8080/v1）。",
        "Провайдер 1 («Ollama»): базовый URL — не веб-адрес (адрес IPv6 пишется в квадратных "
        "скобках: http://[::1]:8080/v1).",
    ),
    "base url of another scheme": (
        save({**OLLAMA, "baseUrl": "ftp://x.example"}),
        "Provider 1 (“Ollama”): the Base URL must start with http:// or https://, for example "
        "https://api.openai.com/v1.",
        "1 番目のプロバイダー（「Ollama」）：ベース URL は http:// か https:// "
        "で始めてください（例：https://api.openai.com/v1）。",
        "Провайдер 1 («Ollama»): базовый URL должен начинаться с http:// или https://, например "
        "https://api.openai.com/v1.",
    ),
    "empty model": (
        save({**OLLAMA, "model": " "}),
        "Provider 1 (“Ollama”): the Model is empty. Enter the model's name, for example "
        "gpt-4o-mini or llama3.2.",
        "1 番目のプロバイダー（「Ollama」）：モデルが空です。",
        "Провайдер 1 («Ollama»): модель не указана.",
    ),
    "api key not text": (
        save({**OLLAMA, "apiKey": 5}),
        "Provider 1 (“Ollama”): the API key must be text.",
        "1 番目のプロバイダー（「Ollama」）：API キーはテキストにしてください。",
        "Провайдер 1 («Ollama»): API-ключ должен быть текстом.",
    ),
    "id not text": (
        save({**OLLAMA, "id": 5}),
        "Provider 1 (“Ollama”): its id must be text.",
        "1 番目のプロバイダー（「Ollama」）：ID はテキストにしてください。",
        "Провайдер 1 («Ollama»): id должен быть текстом.",
    ),
    "name not text": (
        save({**OLLAMA, "name": 5}),
        "Provider 1: the Name must be text.",
        "1 番目のプロバイダー：名前はテキストにしてください。",
        "Провайдер 1: название должно быть текстом.",
    ),
    "system prompt not text": (
        save({**OLLAMA, "systemPrompt": 5}),
        "Provider 1 (“Ollama”): the System prompt must be text.",
        "1 番目のプロバイダー（「Ollama」）：システムプロンプトはテキストにしてください。",
        "Провайдер 1 («Ollama»): системный промпт должен быть текстом.",
    ),
    "prices not an object": (
        save({**OLLAMA, "prices": 5}),
        "Provider 1 (“Ollama”): the prices must be an object with input, cachedInput and output.",
        "1 番目のプロバイダー（「Ollama」）：料金は input、cachedInput、output を持つオブジェクトにしてください。",
        "Провайдер 1 («Ollama»): цены должны быть объектом с полями input, cachedInput и output.",
    ),
    "bad input price": (
        save({**OLLAMA, "prices": {"input": "x"}}),
        "Provider 1 (“Ollama”): the Input price must be a number of US dollars per 1 million "
        "tokens, 0 or more.",
        "1 番目のプロバイダー（「Ollama」）：入力料金は 100 万トークンあたりの米ドル額（0 以上の数値）にしてください。",
        "Провайдер 1 («Ollama»): цена ввода — число долларов США за 1 млн токенов, 0 или больше.",
    ),
    "bad output price": (
        save({**OLLAMA, "prices": {"output": -2}}),
        "Provider 1 (“Ollama”): the Output price must be a number of US dollars per 1 million "
        "tokens, 0 or more.",
        "1 番目のプロバイダー（「Ollama」）：出力料金は 100 万トークンあたりの米ドル額（0 以上の数値）にしてください。",
        "Провайдер 1 («Ollama»): цена вывода — число долларов США за 1 млн токенов, 0 или больше.",
    ),
    "model list 404": (
        ("provider.models", {"provider": OLLAMA}, None, [("{}", "application/json", 404)]),
        "The provider does not offer a list of models (404). You can still type the model's name.",
        "このプロバイダーはモデル一覧を提供していません（404）。",
        "Провайдер не отдаёт список моделей (404).",
    ),
    "empty model list": (
        ("provider.models", {"provider": OLLAMA}, None, [('{"data": []}', "application/json")]),
        "The provider lists no models. Type the model's name.",
        "このプロバイダーの一覧にモデルがありません。",
        "Провайдер не перечислил ни одной модели.",
    ),
    "not a model list": (
        ("provider.models", {"provider": OLLAMA}, None, [("hello", "text/plain")]),
        "localhost:11434 did not send a list of models. Type the model's name instead, or check "
        "the Base URL (it usually ends in /v1). You can still type the model's name.",
        "localhost:11434 からモデル一覧が届きませんでした。",
        "localhost:11434 не прислал список моделей.",
    ),
    "gemini model list": (
        ("provider.models", {"provider": GEMINI}, None, [("[]", "application/json")]),
        "generativelanguage.googleapis.com sent no model list. You can still type the model's name.",
        "generativelanguage.googleapis.com からモデル一覧が届きませんでした。",
        "generativelanguage.googleapis.com не прислал список моделей.",
    ),
    "test answered with an error": (
        ("provider.test", {"provider": OLLAMA}, None, [('{"error": {"message": "no"}}', "application/json")]),
        "localhost:11434 answered with an error: “no”.",
        "localhost:11434 からエラーが返されました：“no”。",
        "localhost:11434 ответил ошибкой: “no”.",
    ),
    "test of something else": (
        ("provider.test", {"provider": GEMINI}, None, [("{}", "application/json")]),
        "generativelanguage.googleapis.com answered, but not like the Gemini API. Check the Base "
        "URL (usually https://generativelanguage.googleapis.com/v1beta).",
        "generativelanguage.googleapis.com は応答しましたが、Gemini APIの応答ではありません。",
        "generativelanguage.googleapis.com ответил, но не как API Gemini.",
    ),
    "responses not a stream": (
        ("turn", RESPONSES, None, [("<p>", "text/html")]),
        "The provider answered, but not with a stream (content type “text/html”). Check that the "
        "Base URL is https://api.openai.com/v1.",
        "プロバイダーは応答しましたが、ストリームではありませんでした（コンテンツタイプ「text/html」）。",
        "Провайдер ответил, но не потоком (тип содержимого «text/html»).",
    ),
    "responses garbage": (
        ("turn", RESPONSES, None, [("data: nope\n\n",)]),
        "The provider sent something that is not a Responses stream: “nope”. Check that the Base "
        "URL is https://api.openai.com/v1.",
        "プロバイダーから届いたものは Responses のストリームではありません：“nope”。",
        "Провайдер прислал не поток Responses: “nope”.",
    ),
    "gemini garbage": (
        ("turn", GEMINI, None, [("data: nope\n\n",)]),
        "Google sent something that is not an answer stream: “nope”. Check that the Base URL is "
        "https://generativelanguage.googleapis.com/v1beta.",
        "Google から届いたものは回答のストリームではありません：“nope”。",
        "Google прислал не поток ответа: “nope”.",
    ),
    "gemini item": (
        ("turn", GEMINI, None, [("data: [1, 2]\n\n",)]),
        "Google's API at generativelanguage.googleapis.com sent a reply Margin cannot read: a "
        "stream item is a list, not an object. Try again; if it keeps happening, check the "
        "provider and its Base URL in Margin's options.",
        "generativelanguage.googleapis.com の Google APIから、Margin "
        "が読めない応答が届きました：ストリームの項目がオブジェクトではなくリストです。",
        "API Google на generativelanguage.googleapis.com прислал ответ, который Margin не может "
        "прочитать: элемент потока — список, а не объект.",
    ),
    "deep reply": (
        ("turn", OLLAMA, None, [("data: " + "[" * 200 + "]" * 200 + "\n\n",)]),
        "The server at localhost:11434 sent a reply Margin cannot read: its JSON is nested more "
        "than 128 levels deep. Try again; if it keeps happening, check the provider and its Base "
        "URL in Margin's options.",
        "localhost:11434 のサーバーから、Margin が読めない応答が届きました：JSON の入れ子が 128 階層を超えています。",
        "Сервер localhost:11434 прислал ответ, который Margin не может прочитать: вложенность "
        "JSON глубже 128 уровней.",
    ),
    "key over http at a request": (
        ("turn", {**OLLAMA, "baseUrl": "http://lan.example/v1", "apiKey": "sk"}),
        "Margin did not send your API key to lan.example: the Base URL is plain http://, where "
        "anyone on the network in between can read it. Use https:// in Margin's options, or tick "
        "“Send the API key over plain HTTP” for this provider.",
        "Margin は API キーを lan.example に送りませんでした。",
        "Margin не отправил API-ключ на lan.example: базовый URL — незашифрованный http://, и "
        "ключ мог бы прочитать любой в сети по пути.",
    ),
}


@pytest.mark.parametrize("case", CONVERTED_CASES, ids=list(CONVERTED_CASES))
def test_a_converted_sentence_is_english_as_before_and_said_in_japanese_and_russian(case):
    request, english, japanese, russian = CONVERTED_CASES[case]
    if english is not None:
        assert told("en", request) == english
    assert japanese in told("ja", request)
    assert russian in told("ru", request)
