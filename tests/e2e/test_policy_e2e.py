"""Keys, redirects and order, in the browser: what a new user meets (issue 11, finding 10).

- Save on the options page, then at once a send from the panel, with the service worker stopped:
  the turn uses the provider just saved (requests are handled in the order they arrived).
- An API key for a plain-http Base URL on another machine is refused on Save with one sentence,
  and saved once "Send the API key over plain HTTP" is ticked.
- A provider that answers with a redirect is refused: nothing reaches the redirect's target.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from conftest import API_KEY
from fake_provider import FakeProvider
from harness import Margin, poll


def _provider_ids(margin: Margin) -> list[dict]:
    return margin.storage_get(["providers"]).get("providers", [])


def test_a_save_then_a_send_on_a_cold_worker_answers_with_the_saved_provider(
    margin: Margin, fake_provider: FakeProvider
):
    options = margin.open_options()
    panel = margin.open_panel()
    for round_ in range(3):
        model = f"fake-model-{round_}"
        margin.fill_provider_form(options, base_url=fake_provider.base_url, api_key=API_KEY, model=model)
        options.get_by_role("textbox", name="Name", exact=True).focus()  # the model list request ends
        options.wait_for_timeout(300)
        margin.stop_service_worker()
        assert not margin.worker_running()

        # As a user does: Save, then straight to the panel and send.
        options.get_by_role("button", name="Save", exact=True).click()
        margin.send(panel, f"Question {round_}")
        margin.wait_answer(panel)

        sent = fake_provider.wait_for_chat_requests(round_ + 1)[-1]
        assert sent.body["model"] == model, f"round {round_}: the turn used {sent.body['model']}"
        assert [p["model"] for p in _provider_ids(margin)] == [model]
        options.get_by_role("status").filter(has_text="Saved").wait_for(state="visible")


def test_a_key_over_plain_http_to_another_machine_is_refused_until_confirmed(margin: Margin):
    options = margin.open_options()
    margin.fill_provider_form(options, base_url="http://10.0.0.5:8080/v1", api_key=API_KEY, model="m")
    box = options.get_by_role("checkbox", name="Send the API key over plain HTTP")
    assert box.is_visible() and not box.is_checked()
    options.get_by_role("button", name="Save", exact=True).click()
    alert = margin.wait_alert(options)
    assert "the API key would be sent over plain http:// to 10.0.0.5" in alert, alert
    assert "Send the API key over plain HTTP" in alert
    assert _provider_ids(margin) == []

    box.check()
    options.get_by_role("button", name="Save", exact=True).click()
    poll(lambda: _provider_ids(margin), timeout=20, message="the confirmed provider was not saved")
    (saved,) = _provider_ids(margin)
    assert saved["allowPlainHttpKey"] is True and saved["baseUrl"] == "http://10.0.0.5:8080/v1"

    # An https:// Base URL shows no box; a local http:// server needs no tick.
    options.get_by_role("textbox", name="Base URL", exact=True).fill("https://api.example.com/v1")
    assert not box.is_visible()
    options.get_by_role("button", name="Add provider").click()
    margin.fill_provider_form(
        options, base_url="http://localhost:11434/v1", api_key=API_KEY, model="m", name="Local"
    )
    options.get_by_role("button", name="Save", exact=True).click()
    poll(lambda: len(_provider_ids(margin)) == 2, timeout=20, message="the local provider was not saved")


class _Redirector:
    """Answers every request with a 307 to `target`, recording what it was sent."""

    def __init__(self, target: str):
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):
                pass

            def _redirect(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.paths.append(f"{self.command} {self.path}")
                self.send_response(307)
                self.send_header("Location", target + self.path.removeprefix("/v1"))
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET = _redirect

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_redirecting_provider_is_refused_and_nothing_reaches_the_target(
    margin: Margin, fake_provider: FakeProvider
):
    redirector = _Redirector(fake_provider.base_url)
    try:
        margin.save_provider(base_url=redirector.base_url, api_key=API_KEY)
        panel = margin.open_panel()
        margin.send(panel, "Where does this go?")
        alert = margin.wait_alert(panel)
        assert "answered with a redirect" in alert, alert
        assert "Margin does not follow redirects with your conversation" in alert
        assert redirector.paths == ["POST /v1/chat/completions"]
        fake_provider.expect_no_more_requests(0, kind="chat", seconds=0.5)
        assert fake_provider.requests == []
        # The question is kept (stored before the request went out), with no answer.
        assert [r["role"] for r in margin.history()] == ["user"]
    finally:
        redirector.close()
