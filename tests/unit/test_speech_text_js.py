"""What "Read aloud" says (extension/panel/speech_text.js, in node): code blocks and tables said as
one word each, Markdown marks not said, long text cut where a voice can pause, the answer's
language told by its script."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_js_module

MODULE = Path(__file__).resolve().parents[2] / "extension" / "panel" / "speech_text.js"
SCRIPT = """
const words = { codeBlock: 'code block', table: 'table' };
console.log(JSON.stringify({
  text: input.text.map((markdown) => speech.speechText(markdown, words)),
  chunks: input.chunks.map(([text, max]) => speech.speechChunks(text, max)),
  language: input.language.map(([text, fallback]) => speech.speechLanguage(text, fallback)),
}));
"""

TEXT = [
    (
        "# Result\n\nRun **this**:\n\n```python\nprint('a' * 3)\nx = [1, 2]\n```\n\nThen *check* it.",
        "Result\nRun this:\ncode block.\nThen check it.",
    ),
    (
        "Compare:\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\n\nDone.",
        "Compare:\ntable.\nDone.",
    ),
    (
        "- See [the docs](https://example.com/x) and ![a chart](data:image/png;base64,AAAA)\n"
        "1. Use `pip install`\n> quoted ~~old~~ words",
        "See the docs and a chart\nUse pip install\nquoted old words",
    ),
    ("~~~\nunclosed code to the end", "code block."),
    ("snake_case_name and 2 * 3 * 4 stay", "snake_case_name and 2 * 3 * 4 stay"),
    ("Line <b>bold</b>\n\n---\n\nafter", "Line bold\nafter"),
]
CHUNKS = [
    ("One. Two.\nThree", 100, ["One. Two.", "Three"]),
    (
        "First sentence here. Second sentence is longer than that.",
        30,
        ["First sentence here.", "Second sentence is longer", "than that."],
    ),
    ("x" * 25, 10, ["x" * 10, "x" * 10, "x" * 5]),
]
LANGUAGE = [
    ("これは日本語の答えです。", "en", "ja"),
    ("这是中文的回答。", "en", "zh-CN"),
    ("한국어 답변입니다.", "en", "ko"),
    ("Это ответ по-русски.", "en", "ru"),
    ("Una respuesta en español.", "es", "es"),
    ("An answer in English.", "ja", "en"),  # Margin speaks Japanese, the answer is not: no Japanese voice
    ("```\n```", "pt-BR", "pt-BR"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    data = {
        "text": [markdown for markdown, _ in TEXT],
        "chunks": [[text, size] for text, size, _ in CHUNKS],
        "language": [[text, fallback] for text, fallback, _ in LANGUAGE],
    }
    return run_js_module(tmp_path_factory.mktemp("speech"), MODULE, "speech", SCRIPT, data)


@pytest.mark.parametrize(("index", "case"), list(enumerate(TEXT)))
def test_the_words_said_for_an_answer(results, index, case):
    assert results["text"][index] == case[1]


@pytest.mark.parametrize(("index", "case"), list(enumerate(CHUNKS)))
def test_long_text_is_cut_where_a_voice_can_pause(results, index, case):
    assert results["chunks"][index] == case[2]


@pytest.mark.parametrize(("index", "case"), list(enumerate(LANGUAGE)))
def test_the_language_read_in_follows_the_answers_script(results, index, case):
    assert results["language"][index] == case[2]
