"""A Google Gemini provider, set up in the options page, answers in the panel: the request is
`streamGenerateContent?alt=sse` with the key in `x-goog-api-key` (never in the URL), the body is
Gemini's `contents`/`parts`, and Google's errors (a 400 bad key, a 429 with RetryInfo, a cut
stream) read as the sentences every provider shares."""

from __future__ import annotations

import re
from itertools import pairwise
from urllib.parse import parse_qs, urlsplit

import pytest
from fake_behaviours import Cut, HttpError
from fake_gemini import BAD_KEY_BODY, DEFAULT_MODEL
from fake_provider import FakeProvider
from harness import Margin

API_KEY = "AIza-test-margin-0123456789"


def gemini_base_url(fake: FakeProvider) -> str:
    return f"http://127.0.0.1:{fake.port}/v1beta"


def configure_gemini(margin: Margin, fake: FakeProvider) -> str:
    """Through the options page when its "Provider type" offers Google Gemini; otherwise through
    the worker's `options.save` (an options page without the choice). Returns which way."""
    page = margin.open_options()
    kind = page.get_by_role("combobox", name="Provider type")
    kind.wait_for(state="visible")
    offered = kind.evaluate("e => [...e.options].some(o => /gemini/i.test(o.value + ' ' + o.textContent))")
    if offered:
        margin.configure_provider(
            base_url=gemini_base_url(fake),
            api_key=API_KEY,
            model=DEFAULT_MODEL,
            name="Gemini",
            provider_type="gemini",
            page=page,
        )
        page.close()
        return "options page"
    page.close()
    provider = {
        "id": "gemini",
        "type": "gemini",
        "name": "Gemini",
        "baseUrl": gemini_base_url(fake),
        "apiKey": API_KEY,
        "model": DEFAULT_MODEL,
    }
    reply = margin.send_message(
        {"type": "options.save", "payload": {"providers": [provider], "activeProviderId": "gemini"}}
    )
    assert isinstance(reply, dict) and reply.get("ok"), reply
    return "storage"


def gemini_turns(fake: FakeProvider) -> list:
    return [r for r in fake.requests if r.method == "POST" and ":streamGenerateContent" in r.path]


def test_a_gemini_turn_goes_out_in_gemini_shape_with_the_key_in_a_header(margin: Margin):
    with FakeProvider(api_key=API_KEY) as fake:
        configure_gemini(margin, fake)
        stored = margin.storage_get(["providers"])["providers"]
        assert [p["type"] for p in stored] == ["gemini"]

        page = margin.open_panel()
        margin.send(page, "Hello Gemini")
        answer = margin.wait_answer(page)
        assert "You said: Hello Gemini" in answer

        (turn,) = gemini_turns(fake)
        url = urlsplit(turn.path)
        assert url.path == f"/v1beta/models/{DEFAULT_MODEL}:streamGenerateContent"
        assert parse_qs(url.query) == {"alt": ["sse"]}
        assert API_KEY not in turn.path
        assert turn.headers.get("x-goog-api-key") == API_KEY
        assert "authorization" not in turn.headers
        assert turn.headers.get("content-type", "").startswith("application/json")
        body = turn.body
        assert set(body) <= {"contents", "systemInstruction", "generationConfig", "tools", "toolConfig"}
        # The run_python tool (on by default, "ask each time") in Gemini's own shape.
        (declaration,) = body["tools"][0]["functionDeclarations"]
        assert declaration["name"] == "run_python" and declaration["parameters"]["required"] == ["code"]
        assert body["contents"][-1]["role"] == "user"
        assert any(p.get("text") == "Hello Gemini" for p in body["contents"][-1]["parts"])
        roles = [c["role"] for c in body["contents"]]
        assert set(roles) <= {"user", "model"}
        assert all(a != b for a, b in pairwise(roles)), roles
        for content in body["contents"]:
            assert set(content) == {"role", "parts"}
            assert all(set(part) <= {"text", "inline_data"} for part in content["parts"])

        history = margin.history()
        assert history[-1]["role"] == "assistant"
        assert history[-1]["model"] == DEFAULT_MODEL


RATE_LIMIT_BODY = {
    "error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37.5s"}],
    }
}
ERROR_CASES = {
    "bad_key": (HttpError(400, BAD_KEY_BODY), re.compile(r"rejected the API key \(400\).*options")),
    "rate_limited": (HttpError(429, RATE_LIMIT_BODY), re.compile(r"\(429\)\. Wait 38 seconds and try again")),
    "cut_stream": (
        Cut("The answer starts", chunks=2, pause=0.5),
        re.compile(r"broke before the answer was finished"),
    ),
}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_gemini_errors_read_as_the_shared_sentences_in_the_panel(margin: Margin, case):
    behaviour, expected = ERROR_CASES[case]
    with FakeProvider(api_key=API_KEY) as fake:
        configure_gemini(margin, fake)
        fake.script(behaviour)
        page = margin.open_panel()
        margin.send(page, f"Question for {case}")
        sentence = margin.wait_alert(page)
        margin.wait_idle(page)
        assert expected.search(sentence), sentence
        assert len(gemini_turns(fake)) == 1
        question, *answer = margin.history()
        assert (question["role"], question["content"]) == ("user", f"Question for {case}")
        if case == "cut_stream":  # what arrived before the cut is kept, marked incomplete
            ((kept,),) = (answer,)
            assert kept["role"] == "assistant" and kept["incomplete"] is True
            assert kept["content"].startswith("The answer")
        else:
            assert answer == []
