"""Finding old conversations: search (folded, where words start; scripts without spaces by
substring), previews, highlights, the list's order by last use, and the panel's JS engine agreeing
with Python's on all of it (extension/panel/sessions/search.js, margin.sessions.search)."""

from pathlib import Path

import pytest
from helpers import run_js_module
from platform_memory import memory_platform
from test_sessions import PIXELS, answer, chat, listed, new_session, run, seed, user

from margin.base import clock
from margin.i18n import catalogue
from margin.sessions import actions as sessions
from margin.sessions import search as session_search
from margin.sessions.index import stored_entries
from margin.storage import keys as storage
from margin.storage.keys import UI_LANGUAGE, session_digest_key


@pytest.fixture
def platform():
    return memory_platform()


@pytest.mark.parametrize(
    "query, expected",
    [
        ("CAFE", "Un café à Paris"),
        ("creme brulee", "Crème brûlée recipe"),
        ("привет", "ПРИВЕТ, как дела"),
        ("世界", "你好世界，今天"),
        ("STRASSE", "Die Straße entlang"),
    ],
)
def test_search_folds_case_diacritics_and_scripts(platform, query, expected):
    seed(
        platform,
        "Un café à Paris",
        "Crème brûlée recipe",
        "ПРИВЕТ, как дела",
        "你好世界，今天",
        "Die Straße entlang",
        "nothing here",
    )
    result = listed(platform, query)
    assert [s["name"] for s in result] == [expected]


def test_every_word_must_match_in_name_or_text(platform):
    seed(platform, "apples and pears", "apples only")
    run(sessions.handle_rename(platform, {"id": listed(platform, "only")[0]["id"], "name": "Fruit pears"}))
    assert sorted(s["name"] for s in listed(platform, "apples pears")) == ["Fruit pears", "apples and pears"]
    assert listed(platform, "apples kiwi") == []


def test_highlights_point_at_the_match_in_preview_and_name(platform):
    long_text = "intro " * 100 + "Ein schöner Tag in München"
    seed(platform, long_text)
    [item] = listed(platform, "munchen")
    preview = item["preview"]
    [[start, end]] = item["highlights"]["preview"]
    assert preview[start:end] == "München"
    assert preview.startswith("…")
    assert item["highlights"]["name"] == []  # the name is the start of the text
    seed(platform, "Ärger im Büro")
    [item] = listed(platform, "BURO")
    [[start, end]] = item["highlights"]["name"]
    assert item["name"][start:end] == "Büro"


# -- the panel searches in JS with the same fold and the same results -------------------------------

SEARCH = Path(__file__).resolve().parents[2] / "extension" / "panel" / "sessions" / "search.js"


def run_search_js(tmp_path, script, data):
    from margin.app.contract import render_js

    # The module runs from a copy of its folder, so that "../../generated/contract.js" resolves.
    folder = tmp_path / "panel" / "sessions"
    folder.mkdir(parents=True)
    return run_js_module(
        folder,
        SEARCH,
        "search",
        script,
        data,
        extra_files={"../../generated/contract.js": render_js("margin-test.whl")},
    )


def test_js_fold_equals_python_fold_for_every_assigned_character(tmp_path):
    import unicodedata

    chars = [
        chr(cp)
        for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) != "Cn"
    ]
    expected = [session_search.fold(c) for c in chars]
    got = run_search_js(tmp_path, "console.log(JSON.stringify(input.map(search.fold)));", chars)
    differ = [(hex(ord(c)), e, g) for c, e, g in zip(chars, expected, got, strict=True) if e != g]
    assert differ == []


def test_js_search_returns_what_session_list_returns(tmp_path, platform):
    seed(
        platform,
        "Un café à Paris, " + "notes " * 60 + "encore un CAFÉ",
        "Crème brûlée recipe",
        "ПРИВЕТ, как дела",
        "你好世界，今天",
        "Die Straße entlang",
        "nothing here",
        "Ärger im Büro mit dem Kaffee",
        "A **comparison** of | arrays | in ## Paris\n- [link](https://x.test) `code`",
        "最新のPythonで書く",
    )
    stored = platform.local.snapshot()
    index = stored_entries(stored)
    digests = {e["id"]: stored[session_digest_key(e["id"])] for e in index}
    queries = ["", "cafe", "creme brulee", "привет", "世界", "strasse", "buro", "e", "zz", "un cafe"]
    queries += ["paris", "rray", "arr", "compar", "link", "python", "のpy", "code"]
    expected = [listed(platform, q) for q in queries]
    for rows in expected:
        for row in rows:
            del row["savedAt"]
    got = run_search_js(
        tmp_path,
        """
const dataOf = (e) => search.searchData(e, input.digests[e.id]);
const rows = input.queries.map((q) => search.searchSessions(input.index, q, dataOf).map((r) => {
  delete r.savedAt; return r; }));
console.log(JSON.stringify(rows));""",
        {"index": index, "digests": digests, "queries": queries},
    )
    assert got == expected


def test_js_word_starts_equal_python_for_every_assigned_character(tmp_path):
    import unicodedata

    chars = [
        chr(cp)
        for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) != "Cn"
    ]
    expected = [[session_search.is_word_char(c), session_search.is_spaceless(c)] for c in chars]
    got = run_search_js(
        tmp_path,
        "console.log(JSON.stringify(input.map((c) => [search.isWordChar(c.codePointAt(0)), "
        "search.isSpaceless(c.codePointAt(0))])));",
        chars,
    )
    differ = [(hex(ord(c)), e, g) for c, e, g in zip(chars, expected, got, strict=True) if e != g]
    assert differ == []


MARKDOWN_TEXTS = {
    "**three** reasons, _really_": "three reasons, really",
    "## Results\n\n| City | Visitors |\n|---|:---:|\n| Paris | 3 |": "Results City Visitors Paris 3",
    "> a quote\n- [x] done\n* item with `code`\n+ plus": "a quote done item with code plus",
    "See [the docs](https://example.com/a_b) and ![a chart](data:x)": "See the docs and a chart",
    "```python\nprint(2*3)\n```\n---\n***": "print(2*3)",
    "snake_case and 2 * 3 and __init__ and **Note:** ok": "snake_case and 2 * 3 and init and Note: ok",
    "a ||  b | c|d": "a b c|d",
    "#hashtag and # Heading": "#hashtag and # Heading",
    "中文**粗体**文字": "中文粗体文字",
    "[Page context] Page: Pricing - Example\nwhat does it cost?": "Page: Pricing - Example what does it cost?",
}


def test_previews_are_plain_text_in_python_and_in_js(tmp_path):
    for markdown, plain in MARKDOWN_TEXTS.items():
        assert session_search.plain_text(markdown) == plain, markdown
    got = run_search_js(
        tmp_path, "console.log(JSON.stringify(input.map(search.plainText)));", list(MARKDOWN_TEXTS)
    )
    assert got == list(MARKDOWN_TEXTS.values())


def test_a_query_matches_where_words_start_and_in_scripts_without_spaces_anywhere(platform):
    seed(
        platform,
        "A comparison of two arrays",
        "Weekend in PARIS, then Paris-Match",
        "東京タワーの夜景",
        "서울에서 만나요",
        "ไปเที่ยวกรุงเทพ",
        "最新のPythonで書く",
    )
    names = lambda q: sorted(s["name"] for s in listed(platform, q))  # noqa: E731
    assert names("paris") == ["Weekend in PARIS, then Paris-Match"]
    assert names("rray") == [] and names("arison") == [] and names("arr") == ["A comparison of two arrays"]
    assert names("match") == ["Weekend in PARIS, then Paris-Match"]  # after a hyphen: a word's start
    assert names("タワー") == ["東京タワーの夜景"] and names("夜景") == ["東京タワーの夜景"]
    assert names("에서") == ["서울에서 만나요"]
    assert names("เที่ยว") == ["ไปเที่ยวกรุงเทพ"]
    assert names("python") == ["最新のPythonで書く"]  # a Latin word right after kana starts there
    [row] = listed(platform, "paris")
    shown = row["name"]
    assert [shown[a:b] for a, b in row["highlights"]["name"]] == ["PARIS", "Paris"]


def test_previews_show_no_markdown_and_highlight_in_the_plain_text(platform):
    chat(
        platform,
        user("Give me **three** reasons"),
        answer("| Reason | Weight |\n|---|---|\n| **Speed** | high |"),
    )
    new_session(platform)
    [row] = listed(platform)
    assert row["preview"] == "Give me three reasons Reason Weight Speed high"
    [row] = listed(platform, "spe")
    assert "**" not in row["preview"] and "|" not in row["preview"]
    assert [row["preview"][a:b] for a, b in row["highlights"]["preview"]] == ["Spe"]


def test_the_list_shows_and_sorts_by_the_last_message_not_the_save(platform, monkeypatch):
    day = 86_400_000
    now = iter(range(10 * day, 20 * day, day))
    monkeypatch.setattr(clock, "now_ms", lambda: next(now))
    chat(platform, user("old talk"), {**answer("yes"), "createdAt": 5 * day})
    old = new_session(platform)  # put away now, last used on day 5
    chat(platform, user("newer talk"), {**answer("yes"), "createdAt": 7 * day})
    newer = new_session(platform)
    chat(platform, user("no times"), answer("yes"))
    untimed = new_session(platform)
    rows = listed(platform)
    assert [r["id"] for r in rows] == [untimed, newer, old]
    assert {r["id"]: r["activeAt"] for r in rows}[old] == 5 * day
    assert {r["id"]: r["activeAt"] for r in rows}[newer] == 7 * day
    stored = platform.local.snapshot()
    assert stored[storage.session_entry_key(old)]["activeAt"] == 5 * day
    assert "activeAt" not in stored[storage.session_entry_key(untimed)]  # nothing to say: derived


def test_an_entry_saved_before_active_at_reads_as_it_was_and_is_taken_at_its_save(platform):
    seed(platform, "from an older Margin")
    [sid] = [r["id"] for r in listed(platform)]
    key = storage.session_entry_key(sid)
    entry = {k: v for k, v in platform.local.snapshot()[key].items() if k != "activeAt"}
    entry["createdAt"], entry["savedAt"] = 100_000, 123_456
    run(platform.local.set({key: entry}))
    [row] = listed(platform)
    assert row["activeAt"] == 123_456 and row["savedAt"] == 123_456
    assert platform.local.snapshot()[key] == entry  # read as it is: no rewrite, no migration


def test_an_untitled_session_is_searched_by_the_word_the_user_reads_in_python_and_in_js(tmp_path):
    """margin.sessions.search rule 6: an unnamed session stored as "Untitled session" is found and
    highlighted by the catalogue's word in the language of the moment, not by the stored English;
    one the user named so keeps its words. JS is handed the word (the panel's t()) and agrees."""
    queries = ["без назв", "untitled", "сессия", "untitled session", ""]
    results = {}
    for language in ("ru", "en"):
        platform = memory_platform({UI_LANGUAGE: language})
        chat(platform, user("", image=PIXELS))  # nothing to name it by
        new_session(platform)
        chat(platform, user("", image=PIXELS), answer("a picture"))
        sid = new_session(platform)
        run(sessions.handle_rename(platform, {"id": sid, "name": "Untitled session"}))  # the user's words
        stored = platform.local.snapshot()
        index = stored_entries(stored)
        assert sorted((e["name"], e.get("named", False)) for e in index) == [
            ("Untitled session", False),
            ("Untitled session", True),
        ]
        digests = {e["id"]: stored[session_digest_key(e["id"])] for e in index}
        expected = [listed(platform, q) for q in queries]
        for rows in expected:
            for row in rows:
                del row["savedAt"]
        word = catalogue.words(language).text("py_session_untitled")
        (tmp_path / language).mkdir()
        got = run_search_js(
            tmp_path / language,
            """
const dataOf = (e) => search.searchData(e, input.digests[e.id], input.word);
const rows = input.queries.map((q) => search.searchSessions(input.index, q, dataOf).map((r) => {
  delete r.savedAt; return r; }));
console.log(JSON.stringify(rows));""",
            {"index": index, "digests": digests, "queries": queries, "word": word},
        )
        assert got == expected
        results[language] = {q: rows for q, rows in zip(queries, expected, strict=True)}

    ru, en = results["ru"], results["en"]
    [untitled] = ru["без назв"]
    assert (untitled["name"], untitled["named"]) == ("Untitled session", False)  # stored as it was
    shown = "Сессия без названия"
    assert [shown[start:end] for start, end in untitled["highlights"]["name"]] == ["без", "назв"]
    assert [r["named"] for r in ru["untitled"]] == [True]  # only the one the user named so
    assert [r["named"] for r in ru["сессия"]] == [False]
    assert ru["untitled session"][0]["highlights"]["name"] == [[0, 8], [9, 16]]
    assert sorted(r["named"] for r in en["untitled"]) == [False, True]  # English reads the sentinel
    assert all(r["highlights"]["name"] == [[0, 8]] for r in en["untitled"])
    assert en["без назв"] == [] and en["сессия"] == []
    assert all(r["highlights"]["name"] == [] for r in ru[""])


# -- the open conversation: the list's first row (extension/panel/sessions/current.js) -------------


def test_the_current_conversations_digest_and_name_are_what_a_save_would_store(tmp_path):
    from margin.sessions.entries import default_name, text_digest
    from margin.storage.history import parse_history

    page = {
        "role": "user",
        "content": "[Page context] Example page\nhttps://example.com\n\nThe whole page text, not searched.",
        "attachment": {"kind": "page", "title": "Example page"},
    }
    conversations = [
        [page, user("What does **this** page say about a very long subject that needs a shorter name?")],
        [
            user("", image=PIXELS),
            answer(
                "A picture",
            ),
            {**answer("x"), "createdAt": 5},
        ],
        [page],
        [user("a\nb", image=PIXELS), answer("")],
    ]
    expected = []
    for raw in conversations:
        records = parse_history(raw).records
        expected.append([text_digest(records), default_name(records)])
    folder = tmp_path / "panel" / "sessions"
    folder.mkdir(parents=True)
    from margin.app.contract import render_js

    got = run_js_module(
        folder,
        SEARCH.parent / "current.js",
        "current",
        "console.log(JSON.stringify(input.map((r) => [current.textDigest(r), current.defaultName(r)])));",
        conversations,
        extra_files={"../../generated/contract.js": render_js("margin-test.whl")},
    )
    assert got == expected
    assert expected[2][1] == "Example page" and expected[1][1] == "Untitled session"
