"""The reading loop's bounds (margin.providers.streaming rule 4): an endless line is
"stream_garbage" and an answer past ANSWER_LIMIT bytes is "answer_too_long"; both keep what
arrived, and no piece past the limit is handed out."""

import json

import pytest
from helpers import run
from platform_memory import ScriptedResponse

from margin.base.errors import ProviderError
from margin.providers import openai
from margin.providers.streaming import SSEChatStream

PROVIDER = {"type": "openai", "baseUrl": "http://localhost:11434/v1", "apiKey": "", "model": "m"}


def delta(text):
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}) + "\n\n"


def read_all(chunks, **limits):
    stream = SSEChatStream(ScriptedResponse(chunks=chunks), PROVIDER, openai.StreamParser("m"), **limits)
    handed: list[str] = []

    async def go():
        while (pieces := await stream.read()) is not None:
            handed.extend(pieces)

    with pytest.raises(ProviderError) as caught:
        run(go())
    return caught.value, "".join(handed), stream


def test_an_answer_past_the_limit_is_cut_there_and_reported_once():
    error, handed, stream = read_all([delta("abcd") * 5, delta("tail"), "data: [DONE]\n\n"], answer_limit=10)
    assert error.code == "answer_too_long"
    assert error.message.startswith("The answer was cut at ")
    assert handed == "abcdabcdab"
    assert error.partial_text == handed == stream.text
    assert run(stream.read()) is None


def test_the_cut_never_splits_a_character():
    error, handed, _ = read_all([delta("ééé"), "data: [DONE]\n\n"], answer_limit=5)
    assert handed == "éé"  # 4 bytes: a third é would make 6
    assert error.partial_text == "éé"


def test_an_answer_exactly_at_the_limit_is_whole():
    stream = SSEChatStream(
        ScriptedResponse(chunks=[delta("abcde"), "data: [DONE]\n\n"]),
        PROVIDER,
        openai.StreamParser("m"),
        answer_limit=5,
    )

    async def go():
        out = []
        while (pieces := await stream.read()) is not None:
            out.extend(pieces)
        return out

    assert "".join(run(go())) == "abcde"


def test_an_endless_line_is_stream_garbage_and_keeps_the_text_before_it():
    chunks = [delta("Kept "), delta("words") + "data: " + "x" * 400, *(["x" * 400] * 5)]
    stream = SSEChatStream(
        ScriptedResponse(chunks=chunks), PROVIDER, openai.StreamParser("m"), line_limit=1000
    )

    async def go():
        while await stream.read() is not None:
            pass

    with pytest.raises(ProviderError) as caught:
        run(go())
    assert caught.value.code == "stream_garbage"
    assert "localhost:11434 sent a stream line longer than" in caught.value.message
    assert caught.value.partial_text == "Kept words"
