"""A session's Markdown export (margin.sessions.export, rule 5): its words in the user's language,
English byte for byte what Margin always wrote; what the conversation holds written as it is."""

from __future__ import annotations

import json

import pytest
from helpers import run
from platform_memory import memory_platform

from margin.i18n import catalogue
from margin.sandbox import tool_loop
from margin.sessions import actions as sessions
from margin.sessions.export import export_session, to_markdown
from margin.sessions.index import UNTITLED, IndexEntry
from margin.storage.history import Record
from margin.storage.keys import HISTORY, UI_LANGUAGE

PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
FIGURE = {"dataUrl": PNG, "width": 1, "height": 1}


def a_run(block: int, status: str, stdout: str = "", figures=()) -> dict:
    return {
        "block": block,
        "code": "print(42)",
        "status": status,
        "stdout": stdout,
        "stderr": "",
        "value": None,
        "tables": [],
        "figures": list(figures),
        "error": "",
        "note": "",
        "startedAt": 1,
        "ms": 3,
    }


def a_call(outcome: str, note: str = "", ran: dict | None = None) -> dict:
    call = tool_loop.ToolCall(f"call_{outcome}", "run_python", '{"code": "print(1)"}', None)
    return tool_loop.stored_call(call, "print(1)", outcome, ran, note)


def attached(kind: str, title: str) -> dict:
    meta = {"kind": kind, "title": title, "url": f"https://example.com/{kind}", "chars": 4}
    return Record("user", f"[Page context] {kind}\n\nbody", {"attachment": meta}).to_json()


CONVERSATION = [
    attached("page", "Docs"),
    attached("video", "Clip"),
    attached("selection", "Quote"),
    attached("file", "data.csv"),
    attached("slides", "Deck"),
    Record(
        "user",
        [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": PNG}},
            {"type": "image_url", "image_url": {"url": ""}},
        ],
    ).to_json(),
    Record(
        "assistant",
        "It is 42.",
        {
            "toolRounds": [
                {
                    "text": "Computing.",
                    "calls": [
                        a_call("ran", ran=a_run(0, "ok", "42\n", [FIGURE])),
                        a_call("declined"),
                        a_call("refused", "bad arguments"),
                        a_call("stopped"),
                        a_call("failed", "busy"),
                    ],
                }
            ],
            "runs": [a_run(0, "timeout"), a_run(1, "crashed"), a_run(2, "error", "x\n")],
        },
    ).to_json(),
    {"role": "mystery", "content": 7},
]

# What Margin's export wrote before its words came from the catalogue, byte for byte.
ENGLISH = "\n".join(
    [
        "# Things",
        "",
        "_date unknown_",
        "",
        "**Attached page:** Docs (https://example.com/page)",
        "",
        "<details><summary>The text the model got</summary>",
        "",
        "```text",
        "[Page context] page",
        "",
        "body",
        "```",
        "",
        "</details>",
        "",
        "**Attached video:** Clip (https://example.com/video)",
        "",
        "<details><summary>The text the model got</summary>",
        "",
        "```text",
        "[Page context] video",
        "",
        "body",
        "```",
        "",
        "</details>",
        "",
        "**Attached selection:** Quote (https://example.com/selection)",
        "",
        "<details><summary>The text the model got</summary>",
        "",
        "```text",
        "[Page context] selection",
        "",
        "body",
        "```",
        "",
        "</details>",
        "",
        "**Attached file:** data.csv (https://example.com/file)",
        "",
        "<details><summary>The text the model got</summary>",
        "",
        "```text",
        "[Page context] file",
        "",
        "body",
        "```",
        "",
        "</details>",
        "",
        "**Attached slides:** Deck (https://example.com/slides)",
        "",
        "<details><summary>The text the model got</summary>",
        "",
        "```text",
        "[Page context] slides",
        "",
        "body",
        "```",
        "",
        "</details>",
        "",
        "**You:**",
        "",
        "What is in these?",
        "",
        f"![image]({PNG})",
        "",
        "_(an image that could not be exported)_",
        "",
        "**Assistant:**",
        "",
        "Computing.",
        "",
        "_The model ran code (run_python):_",
        "",
        "```python",
        "print(1)",
        "```",
        "",
        "_Output: ok_",
        "",
        "```text",
        "42",
        "[figure: 1×1]",
        "```",
        "",
        f"![figure 1]({PNG})",
        "",
        "_The model ran code (run_python):_",
        "",
        "```python",
        "print(1)",
        "```",
        "",
        "_Not run (declined)_",
        "",
        "_The model ran code (run_python):_",
        "",
        "```python",
        "print(1)",
        "```",
        "",
        "_Not run (refused): bad arguments_",
        "",
        "_The model ran code (run_python):_",
        "",
        "```python",
        "print(1)",
        "```",
        "",
        "_Not run (stopped)_",
        "",
        "_The model ran code (run_python):_",
        "",
        "```python",
        "print(1)",
        "```",
        "",
        "_Not run (failed): busy_",
        "",
        "It is 42.",
        "",
        "_Output of code block 1: timeout_",
        "",
        "_Output of code block 2: crashed_",
        "",
        "_Output of code block 3: error_",
        "",
        "```text",
        "x",
        "```",
        "",
        "**(A message Margin could not read.)**",
        "",
        "```json",
        '{"role": "mystery", "content": 7}',
        "```",
        "",
    ]
)


def exported(language: str, entry: IndexEntry | None = None) -> str:
    run(catalogue.ensure(memory_platform(), language))
    return to_markdown(entry or IndexEntry("s", "Things", 0, False, ""), CONVERSATION)


def test_english_is_what_margin_always_wrote():
    assert exported("en") == ENGLISH


@pytest.mark.parametrize(
    ("language", "words"),
    [
        (
            "ru",
            [
                "_дата неизвестна_",
                "**Прикреплённая страница:** Docs (https://example.com/page)",
                "**Прикреплённое видео:** Clip",
                "**Прикреплённый фрагмент:** Quote",
                "**Прикреплённый файл:** data.csv",
                "**Вложение (slides):** Deck",
                "<details><summary>Текст, который получила модель</summary>",
                "**Вы:**",
                f"![изображение]({PNG})",
                "_(изображение, которое не удалось экспортировать)_",
                "**Ассистент:**",
                "_Модель запустила код (run_python):_",
                "_Вывод: готово_",
                f"![рисунок 1]({PNG})",
                "_Не запущено (отклонено)_",
                "_Не запущено (не принят): bad arguments_",
                "_Не запущено (остановлено)_",
                "_Не запущено (не удалось): busy_",
                "_Вывод блока кода 1: время вышло_",
                "_Вывод блока кода 2: сбой_",
                "_Вывод блока кода 3: ошибка_",
                "**(Сообщение, которое Margin не смог прочитать.)**",
            ],
        ),
        (
            "ja",
            [
                "_日付不明_",
                "**添付したページ：** Docs (https://example.com/page)",
                "**添付（slides）：** Deck",
                "<details><summary>モデルが受け取ったテキスト</summary>",
                "**あなた：**",
                f"![画像]({PNG})",
                "_（エクスポートできなかった画像）_",
                "**アシスタント：**",
                "_モデルがコードを実行（run_python）：_",
                "_出力：完了_",
                f"![図1]({PNG})",
                "_未実行（拒否）_",
                "_未実行（実行不可）：bad arguments_",
                "_コードブロック1の出力：時間切れ_",
                "**（Margin が読み取れなかったメッセージ）**",
            ],
        ),
    ],
)
def test_the_export_is_in_the_users_language(language, words):
    text = exported(language)
    for line in words:
        assert line in text.split("\n") or line in text, (line, text)
    assert "```text\n42\n" in text and "It is 42." in text  # what the conversation holds, as it is


def test_an_untitled_sessions_heading_is_said_in_the_language():
    untitled = IndexEntry("s", UNTITLED, 1764511500000, False, "")
    assert exported("en", untitled).startswith("# Untitled session\n\n_2025-11-30 14:05 UTC_\n")
    assert exported("ko", untitled).startswith("# 제목 없는 세션\n\n_2025-11-30 14:05 UTC_\n")
    renamed = IndexEntry("s", UNTITLED, 0, False, "", named=True)  # the user chose these words
    assert exported("ko", renamed).startswith("# Untitled session\n")


def test_an_untitled_sessions_file_is_named_as_the_user_reads_it():
    untitled = IndexEntry("s", UNTITLED, 0, False, "")
    run(catalogue.ensure(memory_platform(), "ko"))
    assert export_session(untitled, CONVERSATION, "markdown")["filename"] == "제목-없는-세션.md"
    kept = export_session(untitled, CONVERSATION, "json")
    assert kept["filename"] == "제목-없는-세션.json"
    assert json.loads(kept["text"])["session"]["name"] == UNTITLED  # the file keeps what is stored
    renamed = IndexEntry("s", UNTITLED, 0, False, "", named=True)  # the user chose these words
    assert export_session(renamed, CONVERSATION, "markdown")["filename"] == "Untitled-session.md"


def test_the_handler_says_the_export_in_the_setting_s_language():
    """`session.export` loads the user's language first: the Markdown is said in it, the JSON is the
    records as stored."""
    platform = memory_platform({UI_LANGUAGE: "es"})
    run(
        platform.local.set(
            {HISTORY: [{"role": "user", "content": "¿Ríos?"}, {"role": "assistant", "content": "Sí."}]}
        )
    )
    sid = run(sessions.handle_new(platform, {}))["savedId"]
    markdown = run(sessions.handle_export(platform, {"id": sid, "format": "markdown"}))["text"]
    assert markdown.split("\n")[4:10] == ["**Tú:**", "", "¿Ríos?", "", "**Asistente:**", ""]


def test_a_sentence_about_an_untitled_session_names_it_in_the_language():
    from margin.base.errors import MarginError
    from margin.sessions.index import read_body_checked

    platform = memory_platform()
    for language, said in (("en", "“Untitled session”"), ("ja", "「無題のセッション」")):
        run(catalogue.ensure(platform, language))
        with pytest.raises(MarginError) as refused:
            run(read_body_checked(platform.local, IndexEntry("s", UNTITLED, 0, False, "")))
        assert said in refused.value.to_json()["message"]
        assert refused.value.message.startswith("The saved text of “Untitled session” is missing")
