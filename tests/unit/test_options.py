"""The options page's settings: validate everything before writing anything; the active provider."""

import asyncio
import json

import pytest
from helpers import run
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.base.errors import MarginError
from margin.settings import options
from margin.storage.keys import lock_for

OPENAI = {
    "id": "a",
    "type": "openai",
    "name": "OpenAI",
    "baseUrl": "https://api.openai.com/v1",
    "apiKey": "sk-abcdefghijklmnop",
    "model": "gpt-4o-mini",
}
OLLAMA = {
    "id": "b",
    "type": "openai",
    "name": "Ollama",
    "baseUrl": "http://localhost:11434/v1",
    "apiKey": "",
    "model": "llama3.2",
}


def test_get_on_a_fresh_install_gives_the_defaults():
    assert run(options.handle_get(memory_platform(), {})) == {
        "providers": [],
        "activeProviderId": None,
        "uiLanguage": "auto",
        "summarizeAboveChars": 50_000,
        "runPython": "ask",
        "codeTimeLimitSeconds": 30,
    }


def test_save_then_get_round_trips_keys_included():
    platform = memory_platform()
    saved = run(
        options.handle_save(
            platform, {"providers": [OPENAI, OLLAMA], "activeProviderId": "b", "uiLanguage": "zh-CN"}
        )
    )
    assert saved == {
        "providers": [OPENAI, OLLAMA],
        "activeProviderId": "b",
        "uiLanguage": "zh-CN",
        "summarizeAboveChars": 50_000,
        "runPython": "ask",
        "codeTimeLimitSeconds": 30,
    }
    assert run(options.handle_get(platform, {})) == saved
    assert platform.local.snapshot()["providers"][0]["apiKey"] == "sk-abcdefghijklmnop"


def test_a_turn_that_arrives_after_a_save_reads_the_saved_provider():
    # margin.app.worker rule 6: tasks start in arrival order and take the storage lock before any
    # await. In the browser every storage call yields to the event loop; here too.
    platform = memory_platform()
    for name in ("get", "set"):
        call = getattr(platform.local, name)

        async def yielding(*args, _call=call):
            await asyncio.sleep(0)
            return await _call(*args)

        setattr(platform.local, name, yielding)

    async def turn_reads_its_provider():  # as margin.turn.chat does at a turn's start
        async with lock_for(platform.local):
            return options.active_provider_of(await options.read_options(platform))

    async def save_then_turn():
        save = asyncio.create_task(options.handle_save(platform, {"providers": [{**OLLAMA, "name": ""}]}))
        turn = asyncio.create_task(turn_reads_its_provider())
        await save
        return await turn

    assert run(save_then_turn())["model"] == "llama3.2"


def test_save_writes_once_and_all_together():
    platform = memory_platform()
    run(options.handle_save(platform, {"providers": [OPENAI], "activeProviderId": "a", "uiLanguage": "en"}))
    assert platform.local.writes == [{"providers": [OPENAI], "activeProviderId": "a", "uiLanguage": "en"}]


def test_active_provider_defaults_to_the_first():
    platform = memory_platform()
    saved = run(options.handle_save(platform, {"providers": [OLLAMA, OPENAI]}))
    assert saved["activeProviderId"] == "b"
    assert run(options.active_provider(platform))["id"] == "b"


@pytest.mark.parametrize(
    "payload, words",
    [
        (
            {"providers": [OPENAI, {**OLLAMA, "baseUrl": "localhost:11434"}], "activeProviderId": "a"},
            "Provider 2",
        ),
        ({"providers": [OPENAI, {**OLLAMA, "model": ""}]}, "Model"),
        ({"providers": [OPENAI], "activeProviderId": "zzz"}, "active provider"),
        ({"providers": [OPENAI, {**OLLAMA, "id": "a"}]}, "share the id"),
        ({"providers": [OPENAI], "uiLanguage": "Klingon!"}, "language"),
        ({"providers": [OPENAI], "summarizeAboveChars": -1}, "Summarize long pages"),
        ({"providers": [OPENAI], "summarizeAboveChars": 999}, "Summarize long pages"),
        ({"providers": [OPENAI], "summarizeAboveChars": 2_000_001}, "Summarize long pages"),
        ({"providers": [OPENAI], "summarizeAboveChars": 50_000.5}, "Summarize long pages"),
        ({"providers": [OPENAI], "summarizeAboveChars": "50000"}, "Summarize long pages"),
        ({"providers": [OPENAI], "summarizeAboveChars": True}, "Summarize long pages"),
        ({"providers": [OPENAI], "summarizeAboveChars": None}, "Summarize long pages"),
        ({"providers": [OPENAI], "runPython": "always"}, "Let the model run Python"),
        ({"providers": [OPENAI], "runPython": True}, "Let the model run Python"),
        ({"providers": [OPENAI], "codeTimeLimitSeconds": 4}, "Time limit for code"),
        ({"providers": [OPENAI], "codeTimeLimitSeconds": 601}, "Time limit for code"),
        ({"providers": [OPENAI], "codeTimeLimitSeconds": 30.5}, "Time limit for code"),
        ({"providers": "nope"}, "providers"),
    ],
)
def test_invalid_input_writes_nothing_and_names_the_problem(payload, words):
    platform = memory_platform({"providers": [OLLAMA], "activeProviderId": "b"})
    with pytest.raises(MarginError) as caught:
        run(options.handle_save(platform, payload))
    assert caught.value.code == "invalid_options"
    assert words in caught.value.message
    assert platform.local.writes == []


def test_save_without_ui_language_keeps_the_stored_one():
    platform = memory_platform({"uiLanguage": "zh"})
    saved = run(options.handle_save(platform, {"providers": [OPENAI], "activeProviderId": "a"}))
    assert saved["uiLanguage"] == "zh"
    assert platform.local.snapshot()["uiLanguage"] == "zh"


@pytest.mark.parametrize("threshold", [0, 1_000, 20_000, 50_000, 100_000, 2_000_000])
def test_summarize_above_chars_is_saved_with_the_rest_in_one_write(threshold):
    platform = memory_platform()
    saved = run(options.handle_save(platform, {"providers": [OPENAI], "summarizeAboveChars": threshold}))
    assert saved["summarizeAboveChars"] == threshold
    assert platform.local.writes == [
        {"providers": [OPENAI], "activeProviderId": "a", "summarizeAboveChars": threshold}
    ]
    assert run(options.handle_get(platform, {}))["summarizeAboveChars"] == threshold


def test_save_without_summarize_above_chars_keeps_the_stored_one():
    platform = memory_platform({"summarizeAboveChars": 0})
    saved = run(options.handle_save(platform, {"providers": [OPENAI]}))
    assert saved["summarizeAboveChars"] == 0
    assert "summarizeAboveChars" not in platform.local.writes[0]


@pytest.mark.parametrize("stored", [-5, "lots", True, None, 12.5, 10])
def test_a_damaged_stored_threshold_reads_as_the_default(stored):
    platform = memory_platform({"summarizeAboveChars": stored})
    assert run(options.handle_get(platform, {}))["summarizeAboveChars"] == 50_000


@pytest.mark.parametrize(
    "threshold, chars, expected",
    [
        (50_000, 50_001, True),
        (50_000, 50_000, False),
        (0, 1_000_000, False),
        (20_000, 20_001, True),
        (20_000, None, False),
        (20_000, True, False),
    ],
)
def test_should_summarize_is_strictly_above_and_off_at_zero(threshold, chars, expected):
    assert options.should_summarize({"summarizeAboveChars": threshold}, chars) is expected


def test_no_provider_is_a_plain_sentence_pointing_at_options():
    with pytest.raises(MarginError) as caught:
        run(options.active_provider(memory_platform()))
    assert caught.value.code == "no_provider"
    assert "Options" in caught.value.message


def test_a_stale_active_id_falls_back_to_the_first_provider():
    platform = memory_platform({"providers": [OLLAMA, OPENAI], "activeProviderId": "deleted"})
    assert run(options.active_provider(platform))["id"] == "b"
    assert run(options.handle_get(platform, {}))["activeProviderId"] == "b"


def test_learned_usage_support_survives_a_save_of_the_same_provider():
    platform = memory_platform({"providers": [OLLAMA], "activeProviderId": "b"})
    run(options.mark_usage_unsupported(platform, "b"))
    assert platform.local.snapshot()["providers"][0]["supportsUsage"] is False
    saved = run(options.handle_save(platform, {"providers": [{**OLLAMA, "name": "Renamed"}]}))
    assert saved["providers"][0]["supportsUsage"] is False
    # A new address is a new server: ask again.
    saved = run(
        options.handle_save(platform, {"providers": [{**OLLAMA, "baseUrl": "http://gpu-box:11434/v1"}]})
    )
    assert "supportsUsage" not in saved["providers"][0]


def test_mask_key():
    assert options.mask_key("sk-abcdefghijklmnop") == "sk-…mnop"
    assert options.mask_key("short") == "••••••••"
    assert options.mask_key("") == ""
    assert options.mask_key(None) == ""


def test_handle_test_reports_a_sentence_for_an_incomplete_form_and_for_a_live_server():
    result = run(options.handle_test(memory_platform(), {"provider": {**OLLAMA, "model": ""}}))
    assert result["ok"] is False and "Model" in result["message"]
    transport = ScriptedTransport(
        [
            ScriptedResponse(
                chunks=['{"choices":[{"message":{"content":"OK"}}]}'],
                headers={"content-type": "application/json"},
            )
        ]
    )
    result = run(options.handle_test(memory_platform(transport=transport), {"provider": OLLAMA}))
    assert result == {"ok": True, "message": "Connected to localhost:11434: model llama3.2 answered."}


def test_the_system_prompt_is_saved_trimmed():
    platform = memory_platform()
    run(
        options.handle_save(
            platform, {"providers": [{**OPENAI, "systemPrompt": " Be kind. "}], "activeProviderId": "a"}
        )
    )
    (stored,) = run(options.handle_get(platform, {}))["providers"]
    assert stored["systemPrompt"] == "Be kind."


def test_a_too_long_system_prompt_writes_nothing():
    platform = memory_platform()
    with pytest.raises(MarginError) as caught:
        run(options.handle_save(platform, {"providers": [{**OPENAI, "systemPrompt": "x" * 20_001}]}))
    assert caught.value.code == "invalid_options"
    assert "System prompt" in caught.value.message
    assert run(options.handle_get(platform, {}))["providers"] == []


def saved_two():
    platform = memory_platform()
    run(options.handle_save(platform, {"providers": [OPENAI, OLLAMA], "activeProviderId": "a"}))
    return platform


def test_activate_switches_the_active_provider_only():
    platform = saved_two()
    value = run(options.handle_activate(platform, {"id": "b"}))
    assert value == {"activeProviderId": "b", "name": "Ollama", "model": "llama3.2"}
    settings = run(options.handle_get(platform, {}))
    assert settings["activeProviderId"] == "b"
    assert [p["id"] for p in settings["providers"]] == ["a", "b"]
    assert run(options.active_provider(platform))["model"] == "llama3.2"


@pytest.mark.parametrize("bad", [None, "", "zzz", 3])
def test_activate_an_unknown_provider_is_a_sentence_and_changes_nothing(bad):
    platform = saved_two()
    with pytest.raises(MarginError) as caught:
        run(options.handle_activate(platform, {"id": bad}))
    assert caught.value.code == "invalid_options"
    assert "no longer saved" in caught.value.message
    assert run(options.handle_get(platform, {}))["activeProviderId"] == "a"


def models_body(*ids):
    return ScriptedResponse(
        chunks=[json.dumps({"data": [{"id": i} for i in ids]})], headers={"content-type": "application/json"}
    )


def test_models_lists_the_providers_models_even_before_a_model_is_typed():
    transport = ScriptedTransport([models_body("llama3.2", "qwen2.5")])
    result = run(
        options.handle_models(memory_platform(transport=transport), {"provider": {**OLLAMA, "model": ""}})
    )
    assert result == {"models": ["llama3.2", "qwen2.5"]}
    assert transport.requests[0].url == "http://localhost:11434/v1/models"


def test_models_failure_is_a_sentence_not_an_error():
    transport = ScriptedTransport([ScriptedResponse(status=404, chunks=["{}"], headers={})])
    result = run(options.handle_models(memory_platform(transport=transport), {"provider": OLLAMA}))
    assert result["models"] == []
    assert "list of models" in result["message"]
    assert "type the model" in result["message"]


def test_models_for_an_unreachable_server_says_how_to_fix_it():
    result = run(options.handle_models(memory_platform(), {"provider": OLLAMA}))
    assert result["models"] == []
    assert "could not reach" in result["message"]


def test_models_with_an_incomplete_form_names_the_field():
    result = run(options.handle_models(memory_platform(), {"provider": {**OLLAMA, "baseUrl": ""}}))
    assert result["models"] == []
    assert "Base URL" in result["message"]


def test_the_contract_lists_every_provider_type_with_its_default_base_url():
    from margin.app.contract import for_js
    from margin.providers import PROVIDER_TYPES

    types = for_js("margin.whl")["providerTypes"]
    assert [t["type"] for t in types] == list(PROVIDER_TYPES)
    openai_type = next(t for t in types if t["type"] == "openai")
    assert openai_type["defaultBaseUrl"] == "https://api.openai.com/v1"
    assert openai_type["label"].startswith("OpenAI-compatible")


def test_prices_are_saved_only_as_given():
    platform = memory_platform()
    priced = {**OPENAI, "prices": {"input": 2.5, "cachedInput": None, "output": 10}}
    run(
        options.handle_save(
            platform, {"providers": [priced, {**OLLAMA, "prices": {}}], "activeProviderId": "a"}
        )
    )
    first, second = run(options.handle_get(platform, {}))["providers"]
    assert first["prices"] == {"input": 2.5, "output": 10.0}
    assert "prices" not in second


@pytest.mark.parametrize(
    "bad", [{"input": -1}, {"output": float("nan")}, {"input": "cheap"}, {"output": True}, "1"]
)
def test_a_bad_price_writes_nothing_and_names_the_field(bad):
    platform = memory_platform()
    with pytest.raises(MarginError) as caught:
        run(options.handle_save(platform, {"providers": [{**OPENAI, "prices": bad}]}))
    assert caught.value.code == "invalid_options"
    assert "price" in caught.value.message
    assert run(options.handle_get(platform, {}))["providers"] == []
