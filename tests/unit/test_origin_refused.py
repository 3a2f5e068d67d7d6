"""A local server's 403 that is its CORS check refusing the extension's origin reads as that, with
the fix; a remote server's 403 stays a rejected key."""

from margin.providers import http_error


def provider(base_url, api_key=""):
    return {"id": "p", "type": "openai", "baseUrl": base_url, "apiKey": api_key, "model": "m"}


def test_ollama_refusing_the_origin_says_how_to_start_it():
    error = http_error(403, "", {}, provider("http://localhost:11434/v1"))
    assert error.code == "origin_refused"
    assert error.message == (
        "Ollama at localhost:11434 refused Margin's requests (403). Start it with "
        "OLLAMA_ORIGINS=chrome-extension://* (for example: OLLAMA_ORIGINS=chrome-extension://* "
        "ollama serve), then try again."
    )


def test_the_ollama_port_counts_on_any_host():
    error = http_error(403, "", {}, provider("http://gpu-box:11434/v1"))
    assert error.code == "origin_refused"
    assert "OLLAMA_ORIGINS=chrome-extension://*" in error.message


def test_another_local_server_is_told_to_allow_the_extension_origin():
    for base_url in ("http://127.0.0.1:1234/v1", "http://[::1]:8080/v1", "http://studio.local:1234/v1"):
        error = http_error(403, "Forbidden", {}, provider(base_url, "sk-local"))
        assert error.code == "origin_refused", base_url
        assert "chrome-extension://" in error.message
        assert "CORS" in error.message
        assert "OLLAMA_ORIGINS" not in error.message


def test_a_local_403_without_a_key_is_the_origin_whatever_the_body():
    body = '{"error": {"message": "nope"}}'
    assert http_error(403, body, {}, provider("http://localhost:8080/v1")).code == "origin_refused"


def test_a_local_403_with_a_key_and_a_reason_is_still_a_bad_key():
    body = '{"error": {"message": "invalid api key"}}'
    error = http_error(403, body, {}, provider("http://localhost:8080/v1", "sk-wrong"))
    assert error.code == "bad_key"


def test_a_remote_403_stays_a_rejected_key():
    error = http_error(403, "", {}, provider("https://api.openai.com/v1"))
    assert error.code == "bad_key"
    assert error.message.startswith("The provider rejected the API key (403).")
    assert http_error(403, "Forbidden", {}, provider("https://api.openai.com/v1", "sk")).code == "bad_key"


def test_a_local_401_stays_a_rejected_key():
    assert http_error(401, "", {}, provider("http://localhost:11434/v1")).code == "bad_key"
