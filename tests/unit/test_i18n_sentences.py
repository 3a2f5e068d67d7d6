"""Python's sentences (margin.base.sentences, docs/i18n.md): in all seven catalogues with the same
placeholders, said in the user's language, English byte for byte as before, and English when a
catalogue is missing or unreadable."""

from __future__ import annotations

import json
import re
from asyncio import Event
from pathlib import Path

import pytest
from helpers import run
from platform_memory import ScriptedResponse, memory_platform

from margin.app import api
from margin.base import errors
from margin.base.errors import MarginError
from margin.base.sentences import ENGLISH, Sentence, say, sentence
from margin.i18n import catalogue
from margin.providers import http_error, transport_error
from margin.storage.keys import UI_LANGUAGE

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
    from margin.platform.ports import TransportError

    return transport_error(TransportError("connect"), PROVIDER).to_json()["message"]


def test_the_trim_note_is_in_the_model_language_and_replaces_an_english_one():
    from margin.storage.history import PAGE_CONTEXT_PREFIX, Record
    from margin.turn import slimming

    header = f"{PAGE_CONTEXT_PREFIX} Page: t\nNote: shortened to fit the model's context: the first 9 of 20,000 characters."
    record = Record(
        "user", f"{header}\n\n" + "word " * 4000, {"attachment": {"url": "u", "trimmedFrom": 20000}}
    )
    shortened = slimming.trimmed_attachment(record, 3000, "ru").text.split("\n\n", 1)[0]
    assert shortened.splitlines()[1:] == [
        "Примечание: сокращено под контекст модели: первые 2\u00a0999 из 20\u00a0000 симв."
    ]


def test_an_unsaved_answer_s_sentence_is_one_language_cause_and_all():
    from margin.platform.ports import storage_refused
    from margin.turn import unsaved_answers

    speak("ja")
    event = unsaved_answers.error_event(storage_refused("QUOTA_BYTES quota exceeded"), {})
    assert event["error"]["code"] == "storage_full"
    assert event["error"]["message"].startswith("Chrome の Margin 用ストレージがいっぱいのため")
    assert event["error"]["message"].endswith("コピーするか、「保存を再試行」を押してください。")


@pytest.mark.parametrize(
    ("captions", "english", "japanese", "russian"),
    [
        ("WEBVTX", "These captions are in a format Margin cannot read.", "読めない形式です", "в формате"),
        ("<tt><p>", "These captions are not timed text Margin can read.", "タイムドテキスト", "по времени"),
        ('{"x": 1}', "These captions are not YouTube's timed text.", "YouTube の", "YouTube"),
    ],
)
def test_captions_margin_cannot_read_are_said_in_the_language(captions, english, japanese, russian):
    from margin.page.transcripts import TranscriptError, parse_captions

    with pytest.raises(TranscriptError) as caught:
        parse_captions(captions)
    assert caught.value.message == english
    for language, words in (("ja", japanese), ("ru", russian)):
        speak(language)
        assert words in caught.value.to_json()["message"]


def test_a_provider_that_goes_quiet_is_said_in_the_language():
    from margin.base.stoppable import race

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
    from margin.app.worker import Worker

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

    from margin.sandbox import tool_loop

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
