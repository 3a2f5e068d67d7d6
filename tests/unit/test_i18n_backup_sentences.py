"""The backup's sentences (margin.backup.stream*), converted from English literals (issue 12): a refused
file and the import's summary, English byte for byte as before, said in Japanese and in Russian,
with the language's plural forms."""

from __future__ import annotations

import json

import pytest
from said import BACKUP, backup_import, imported, saved_session, told

from margin.backup import stream as backup
from margin.i18n import catalogue


@pytest.fixture(autouse=True)
def fresh_catalogues(monkeypatch):
    monkeypatch.setattr(catalogue, "_loaded", {})
    monkeypatch.setattr(catalogue, "_spoken", "en")


A_PROVIDER = {"id": "pa", "type": "openai", "name": "A", "baseUrl": "https://a.example/v1", "model": "m"}
MIXED_BACKUP = {
    "sessions": [saved_session(n) for n in range(3)] + [{"id": "d", "damaged": "missing"}],
    "settings": {"providers": [A_PROVIDER, {**A_PROVIDER, "id": "pb", "baseUrl": ""}]},
}


SESSION = saved_session(0)


def backup_of(members: dict) -> tuple:
    return backup_import(json.dumps({**BACKUP, **members}))


BACKUP_CASES = {
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
        "このバックアップは壊れています：1 番目のセッション（「Trip」）の「savedAt」が日付ではありません。",
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
    "backup empty file": (
        backup_import(""),
        "The chosen file is empty. Choose a file made with “Export backup”.",
        "選んだファイルは空です。",
        "Выбранный файл пуст.",
    ),
    "backup NaN": (
        backup_import('{"format": "margin-backup", "a": NaN}'),
        "This backup holds “NaN”, which is not a number Margin stores. Export the backup again "
        "and import the new file.",
        "このバックアップには「NaN」が含まれていますが、これは Margin が保存する数値ではありません。",
        "В копии есть «NaN» — Margin не хранит такие числа.",
    ),
    "backup long number": (
        backup_import('{"format": "margin-backup", "a": 1234567890123456789012}'),
        "This backup holds a number of more than 20 digits, far larger than any Margin stores, "
        "so it is damaged or was not made by Margin. Export the backup again and import the new "
        "file.",
        "このバックアップには 20 桁を超える数値があります。",
        "В копии есть число длиннее 20 цифр — намного больше любого, что хранит Margin, значит "
        "файл повреждён или создан не Margin.",
    ),
    "backup huge number": (
        backup_import('{"format": "margin-backup", "a": 1e999}'),
        "This backup holds a number too large to store (1e999). Export the backup again and "
        "import the new file.",
        "このバックアップには保存できないほど大きな数値があります（1e999）。",
        "В копии есть слишком большое число (1e999).",
    ),
    "backup twice": (
        backup_import('{"format": "margin-backup", "a": 1, "a": 2}'),
        "This backup is damaged: it holds “a” twice. Export the backup again and import the new file.",
        "このバックアップは壊れています：「a」が 2 回含まれています。",
        "Копия повреждена: «a» встречается в ней дважды.",
    ),
    "backup text after": (
        backup_import('{"format": "margin-backup"} x'),
        "This backup is damaged: there is text after its end. Export the backup again and import "
        "the new file.",
        "このバックアップは壊れています：末尾のあとにテキストがあります。",
        "Копия повреждена: после её конца есть текст.",
    ),
    "backup deep": (
        backup_import('{"format": "margin-backup", "a": ' + "[" * 70 + "]" * 70 + "}"),
        "This backup is nested more than 64 levels deep, which no Margin backup is: it is "
        "damaged or was not made by Margin. Choose a file made with “Export backup”.",
        "このバックアップは 64 階層を超えて入れ子になっています。",
        "Вложенность копии глубже 64 уровней, такой не бывает у копий Margin: файл повреждён или "
        "создан не Margin.",
    ),
    "backup unknown version": (
        backup_of({"version": "x"}),
        "This backup has an unknown format version ('x'); Margin reads version 1. Export it "
        "again with this version of Margin.",
        "このバックアップの形式バージョン（'x'）は不明です。",
        "У копии неизвестная версия формата ('x'); Margin читает версию 1.",
    ),
    "backup sessions not a list": (
        backup_of({"sessions": 5}),
        "This backup is damaged: its list of sessions is not readable. Choose a file made with "
        "“Export backup”.",
        "このバックアップは壊れています：セッションの一覧が読み取れません。",
        "Копия повреждена: список сессий не читается.",
    ),
    "backup date": (
        backup_of({"exportedAt": "x"}),
        "This backup is damaged: its date is not a date. Choose a file made with “Export backup”.",
        "このバックアップは壊れています：日付が日付になっていません。",
        "Копия повреждена: дата — не дата.",
    ),
    "backup current": (
        backup_of({"current": 5}),
        "This backup is damaged: its open conversation is not readable. Export the backup again, "
        "or choose another file.",
        "このバックアップは壊れています：開いていた会話が読み取れません。",
        "Копия повреждена: открытый разговор не читается.",
    ),
    "backup current session": (
        backup_of({"current": {"historySessionId": 5}}),
        "This backup is damaged: its open conversation names its session with something that is "
        "not text. Export the backup again, or choose another file.",
        "このバックアップは壊れています：開いていた会話のセッション指定がテキストではありません。",
        "Копия повреждена: открытый разговор указывает свою сессию не текстом.",
    ),
    "backup settings unreadable": (
        backup_of({"settings": 5}),
        "This backup is damaged: its settings are not readable. Export the backup again, or "
        "choose another file.",
        "このバックアップは壊れています：設定が読み取れません。",
        "Копия повреждена: настройки не читаются.",
    ),
    "backup providers": (
        backup_of({"settings": {"providers": 5}}),
        "This backup is damaged: its settings hold a list of providers that is not a list. "
        "Export the backup again, or choose another file.",
        "このバックアップは壊れています：設定のプロバイダー一覧が一覧になっていません。",
        "Копия повреждена: в настройках список провайдеров — не список.",
    ),
    "backup language": (
        backup_of({"settings": {"uiLanguage": 5}}),
        "This backup is damaged: its settings hold an interface language that is not text. "
        "Export the backup again, or choose another file.",
        "このバックアップは壊れています：設定の表示言語がテキストではありません。",
        "Копия повреждена: в настройках язык интерфейса — не текст.",
    ),
    "backup not a session": (
        backup_of({"sessions": [5]}),
        "This backup is damaged: session 1 is not a session. Export the backup again, or choose "
        "another file.",
        "このバックアップは壊れています：1 番目のセッションがセッションになっていません。",
        "Копия повреждена: сессия 1 — не сессия.",
    ),
    "backup name": (
        backup_of({"sessions": [{**SESSION, "name": 5}]}),
        "This backup is damaged: session 1 has a name that is not text. Export the backup again, "
        "or choose another file.",
        "このバックアップは壊れています：1 番目のセッションの名前がテキストではありません。",
        "Копия повреждена: сессия 1: название — не текст.",
    ),
    "backup id": (
        backup_of({"sessions": [{**SESSION, "id": None}]}),
        "This backup is damaged: session 1 (“S0”) has no usable id. Export the backup again, or "
        "choose another file.",
        "このバックアップは壊れています：1 番目のセッション（「S0」）に使える ID がありません。",
        "Копия повреждена: сессия 1 («S0»): нет пригодного id.",
    ),
    "backup history": (
        backup_of({"sessions": [{**SESSION, "history": 5}]}),
        "This backup is damaged: session 1 (“S0”) has a conversation that is not a list of "
        "messages. Export the backup again, or choose another file.",
        "このバックアップは壊れています：1 番目のセッション（「S0」）の会話がメッセージの一覧になっていません。",
        "Копия повреждена: сессия 1 («S0»): разговор — не список сообщений.",
    ),
    "backup flag": (
        backup_of({"sessions": [{**SESSION, "pinned": "yes"}]}),
        "This backup is damaged: session 1 (“S0”) has a “pinned” that is neither true nor false. "
        "Export the backup again, or choose another file.",
        "このバックアップは壊れています：1 番目のセッション（「S0」）の「pinned」が true でも false でもありません。",
        "Копия повреждена: сессия 1 («S0»): «pinned» — ни true, ни false.",
    ),
    "backup message": (
        backup_of({"sessions": [{**SESSION, "history": [5]}]}),
        "This backup is damaged: session 1 (“S0”) has a message (1) Margin cannot read: a record "
        "is not an object. Export the backup again, or choose another file.",
        "このバックアップは壊れています：1 番目のセッション（「S0」）に Margin が読めないメッセージ（1 番目）があります：a record is not an "
        "object。",
        "Копия повреждена: сессия 1 («S0»): сообщение 1 не читается Margin: a record is not an object.",
    ),
}


@pytest.mark.parametrize("case", BACKUP_CASES, ids=list(BACKUP_CASES))
def test_a_refused_backup_is_said_as_before_in_english_and_in_japanese_and_russian(case):
    request, english, japanese, russian = BACKUP_CASES[case]
    assert told("en", request) == english
    assert japanese in told("ja", request)
    assert russian in told("ru", request)


def test_what_an_import_did_is_english_as_before_and_said_in_the_language():
    assert imported("en", MIXED_BACKUP) == (
        "Added 3 sessions, added 1 provider. 1 session the backup marks as damaged could not be "
        "restored. Left out 1 provider that is not valid: Provider 2 (“A”): the Base URL is empty. "
        "Enter one, for example https://api.openai.com/v1 or http://localhost:11434/v1. To use “A” "
        "(a.example), choose it in the model menu: a provider from a backup is not used until you pick it."
    )
    assert imported("ja", MIXED_BACKUP).startswith(
        "セッション 3 件を追加、プロバイダー 1 件を追加。バックアップで破損と記録されたセッション 1 件は"
        "復元できませんでした。無効なプロバイダー 1 件は追加しませんでした：2 番目のプロバイダー（「A」）：ベース URL が空です。"
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
