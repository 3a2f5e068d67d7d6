"""The fake provider itself, driven by plain HTTP (no browser): what it answers and what it records."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time

import pytest
from fake_behaviours import (
    CHARS_PER_TOKEN,
    DEFAULT_SUMMARY,
    SUMMARY_MARKER,
    Cut,
    Garbage,
    Hang,
    bad_key,
    context_overflow,
    model_not_found,
    rate_limited,
    server_error,
    slow_stream,
    slow_summary,
)
from fake_provider import FakeProvider
from fake_requests import is_summary_request, split_text


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


def post(server: FakeProvider, body: dict, headers: dict | None = None, timeout: float = 5.0):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    conn.request(
        "POST",
        "/v1/chat/completions",
        body=json.dumps(body),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test", **(headers or {})},
    )
    return conn, conn.getresponse()


def sse_events(raw: bytes) -> list[str]:
    return [line[len("data: ") :] for line in raw.decode().split("\n") if line.startswith("data: ")]


def stream_text(events: list[str]) -> str:
    text = ""
    for event in events:
        if event == "[DONE]":
            break
        for choice in json.loads(event)["choices"]:
            text += choice["delta"].get("content") or ""
    return text


BODY = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hello there"}]}


def test_default_stream_echoes_the_last_user_text_and_ends_with_done(server):
    conn, response = post(server, {**BODY, "stream_options": {"include_usage": True}})
    assert response.status == 200
    assert response.getheader("Content-Type").startswith("text/event-stream")
    assert response.getheader("Access-Control-Allow-Origin") == "*"
    events = sse_events(response.read())
    conn.close()
    first = json.loads(events[0])
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert stream_text(events) == "You said: hello there"
    assert events[-1] == "[DONE]"
    finishes = [json.loads(e)["choices"][0]["finish_reason"] for e in events[:-1] if json.loads(e)["choices"]]
    assert finishes[-1] == "stop"
    usage = json.loads(events[-2])
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0


def test_no_usage_chunk_unless_asked(server):
    conn, response = post(server, BODY)
    events = sse_events(response.read())
    conn.close()
    assert all("usage" not in json.loads(e) for e in events[:-1])


def test_scripted_reply_is_split_into_chunks_in_order(server):
    server.script(reply="**bold** and more text", chunks=5)
    conn, response = post(server, BODY)
    events = sse_events(response.read())
    conn.close()
    contents = [json.loads(e)["choices"][0]["delta"].get("content") for e in events[1:-2]]
    assert len(contents) == 5
    assert "".join(contents) == "**bold** and more text"


def test_queue_is_fifo_and_falls_back_to_echo(server):
    server.script(reply="first")
    server.script(reply="second")
    texts = []
    for _ in range(3):
        conn, response = post(server, BODY)
        texts.append(stream_text(sse_events(response.read())))
        conn.close()
    assert texts == ["first", "second", "You said: hello there"]


def test_non_streaming_reply(server):
    server.script(reply="plain answer")
    conn, response = post(server, {**BODY, "stream": False})
    value = json.loads(response.read())
    conn.close()
    assert value["choices"][0]["message"] == {"role": "assistant", "content": "plain answer"}
    assert value["usage"]["total_tokens"] > 0


def test_records_method_path_headers_and_body(server):
    conn, response = post(server, BODY, headers={"X-Extra": "1"})
    response.read()
    conn.close()
    (request,) = server.chat_requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["x-extra"] == "1"
    assert request.body == BODY
    assert request.finished.wait(2)


def test_models_lists_the_configured_models():
    with FakeProvider(models=["a", "b"]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request("GET", "/v1/models")
        value = json.loads(conn.getresponse().read())
        conn.close()
    assert [m["id"] for m in value["data"]] == ["a", "b"]


@pytest.mark.parametrize(
    "behaviour, status, code",
    [
        (bad_key(), 401, "invalid_api_key"),
        (model_not_found("nope"), 404, "model_not_found"),
        (rate_limited(7), 429, "rate_limit_exceeded"),
        (server_error(), 500, None),
    ],
)
def test_scripted_http_errors_carry_real_provider_bodies(server, behaviour, status, code):
    server.script(behaviour)
    conn, response = post(server, BODY)
    value = json.loads(response.read())
    conn.close()
    assert response.status == status
    assert value["error"]["code"] == code
    assert value["error"]["message"]
    if status == 429:
        assert response.getheader("Retry-After") == "7"
    assert response.getheader("Access-Control-Allow-Origin") == "*"


def test_wrong_key_and_unknown_model_fail_without_scripting():
    with FakeProvider(api_key="sk-right", models=["fake-model"]) as server:
        conn, response = post(server, BODY, headers={"Authorization": "Bearer sk-wrong"})
        assert response.status == 401 and json.loads(response.read())["error"]["code"] == "invalid_api_key"
        conn.close()
        conn, response = post(
            server, {**BODY, "model": "other"}, headers={"Authorization": "Bearer sk-right"}
        )
        assert response.status == 404 and json.loads(response.read())["error"]["code"] == "model_not_found"
        conn.close()
        conn, response = post(server, BODY, headers={"Authorization": "Bearer sk-right"})
        assert response.status == 200
        response.read()
        conn.close()


def test_garbage_stream_has_events_that_are_not_json(server):
    server.script(Garbage())
    conn, response = post(server, BODY)
    events = sse_events(response.read())
    conn.close()
    assert "{not json" in events


def test_cut_stream_ends_without_done_and_without_the_end_of_the_body(server):
    server.script(Cut("partial answer", chunks=2))
    conn, response = post(server, BODY)
    with pytest.raises(http.client.IncompleteRead) as caught:
        response.read()
    conn.close()
    events = sse_events(caught.value.partial)
    assert "[DONE]" not in events
    assert stream_text(events) == "partial answer"


def test_hang_sends_nothing_and_is_bounded(server):
    server.script(Hang(seconds=0.5))
    started = time.monotonic()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        post(server, BODY, timeout=5)
    assert 0.4 < time.monotonic() - started < 3


def test_slow_stream_notices_a_client_that_goes_away(server):
    server.script(slow_stream(chunks=50, delay=0.05))
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    data = json.dumps(BODY).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
    )
    received = sock.recv(4096)
    assert b"200" in received
    while b"data:" not in received:  # close mid-stream: once the first event has arrived
        chunk = sock.recv(4096)
        assert chunk, "the stream ended before its first event"
        received += chunk
    sock.close()
    (request,) = server.chat_requests
    assert request.finished.wait(5)
    assert request.client_gone.is_set()


def test_wait_for_chat_requests_times_out_with_what_it_saw(server):
    with pytest.raises(AssertionError, match="got 0 chat request"):
        server.wait_for_chat_requests(1, timeout=0.2)


def test_split_text_keeps_every_character():
    for text, n in [("abcdefghij", 3), ("ab", 5), ("", 4), ("x" * 100, 7)]:
        pieces = split_text(text, n)
        assert "".join(pieces) == text
        assert len(pieces) <= max(1, n)


def test_stop_returns_quickly_even_while_a_stream_is_sleeping():
    server = FakeProvider().start()
    server.script(slow_stream(chunks=100, delay=1.0))
    conn, _ = post(server, BODY)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 3
    conn.close()


# --- context overflow (rule 6) ---------------------------------------------------------------

OVERFLOW_MESSAGE = re.compile(
    r"^This model's maximum context length is (\d+) tokens\. However, your messages resulted in "
    r"(\d+) tokens\. Please reduce the length of the messages\.$"
)


def body_of_size(size: int) -> dict:
    """A streaming chat body whose JSON is exactly `size` bytes."""
    body = {**BODY, "messages": [{"role": "user", "content": ""}]}
    padding = size - len(json.dumps(body).encode())
    assert padding >= 0
    body["messages"][0]["content"] = "x" * padding
    assert len(json.dumps(body).encode()) == size
    return body


def test_a_body_over_the_limit_gets_openais_overflow_error_with_the_numbers(server):
    server.limit_context(4000)
    conn, response = post(server, body_of_size(10_001))
    value = json.loads(response.read())
    conn.close()
    assert response.status == 400
    assert response.getheader("Access-Control-Allow-Origin") == "*"
    error = value["error"]
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        "messages",
        "context_length_exceeded",
    )
    limit, requested = map(int, OVERFLOW_MESSAGE.match(error["message"]).groups())
    assert limit == 4000 // CHARS_PER_TOKEN == 1000
    assert requested == 2501  # 10,001 bytes at four characters a token, rounded up
    (request,) = server.chat_requests
    assert request.overflowed


def test_the_first_request_overflows_and_the_trimmed_retry_gets_the_scripted_reply(server):
    server.limit_context(4000)
    server.script(reply="fits now")
    conn, response = post(server, body_of_size(6000))
    assert response.status == 400
    response.read()
    conn.close()
    assert server.pending() == 1, "an overflowed request must not take the scripted reply"
    conn, response = post(server, body_of_size(4000))  # at the limit: fits
    assert response.status == 200
    assert stream_text(sse_events(response.read())) == "fits now"
    conn.close()
    assert [r.overflowed for r in server.chat_requests] == [True, False]
    assert [len(r.raw_body) for r in server.chat_requests] == [6000, 4000]


def test_always_overflows_even_a_small_retry_and_still_names_a_limit_below_the_request(server):
    server.limit_context(4000, always=True)
    sizes = [20_000, 200]
    for size in sizes:
        conn, response = post(server, body_of_size(size))
        assert response.status == 400
        limit, requested = map(
            int, OVERFLOW_MESSAGE.match(json.loads(response.read())["error"]["message"]).groups()
        )
        conn.close()
        assert limit == 1000 and requested > limit
    assert [r.overflowed for r in server.chat_requests] == [True, True]
    server.limit_context(None)
    conn, response = post(server, body_of_size(20_000))
    assert response.status == 200
    response.read()
    conn.close()


def test_the_limit_does_not_touch_the_models_list(server):
    server.limit_context(10, always=True)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/v1/models")
    assert conn.getresponse().status == 200
    conn.close()


def test_a_scripted_overflow_has_fixed_numbers(server):
    server.script(context_overflow(8192, 9000))
    conn, response = post(server, BODY)
    value = json.loads(response.read())
    conn.close()
    assert response.status == 400 and value["error"]["code"] == "context_length_exceeded"
    assert OVERFLOW_MESSAGE.match(value["error"]["message"]).groups() == ("8192", "9000")


# --- summarization requests (rule 7) ---------------------------------------------------------

PAGE = "[Page context] Page: Rivers\nURL: https://example.com/\n\nRivers carve canyons."
SUMMARY_BODY = {
    "model": "fake-model",
    "stream": True,
    "messages": [
        {"role": "system", "content": "You compress a web page so that later questions can be answered."},
        {"role": "user", "content": PAGE},
    ],
}


@pytest.mark.parametrize(
    "text, is_summary",
    [
        ("You compress a web page so that later questions about it can be answered.", True),
        ("Write a summary of about 4,000 characters, never more than 6,000, as Markdown:", True),
        ("Summarize this page.", True),
        ("Please summarise the attached text", True),
        ("You are summarizing a web page.", True),
        ("What does the page say?", False),
        # A turn whose attachment was summarized carries the note, never the verb.
        ("[Page context] Page: x\nNote: this is a summary of its 9,000 characters.\n\nIn short", False),
        ("A summary, please", False),
    ],
)
def test_a_summarization_request_is_told_apart_by_its_instruction(text, is_summary):
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
    assert is_summary_request(body) is is_summary
    assert not SUMMARY_MARKER.search(DEFAULT_SUMMARY)


def test_summaries_and_turns_have_their_own_queues_and_counts(server):
    server.script(reply="the turn's answer")
    server.script_summary(reply="the page in short")
    conn, response = post(server, SUMMARY_BODY)
    assert stream_text(sse_events(response.read())) == "the page in short"
    conn.close()
    conn, response = post(server, BODY)
    assert stream_text(sse_events(response.read())) == "the turn's answer"
    conn.close()
    conn, response = post(server, SUMMARY_BODY)  # unscripted: the default summary
    assert stream_text(sse_events(response.read())) == DEFAULT_SUMMARY
    conn.close()
    assert [r.is_summary for r in server.chat_requests] == [True, False, True]
    assert len(server.turn_requests) == 1 and server.turn_requests[0].body == BODY
    assert len(server.summary_requests) == 2
    assert len(server.wait_for_requests(2, kind="summary", timeout=0.1)) == 2
    with pytest.raises(AssertionError, match="got 1 turn request"):
        server.wait_for_requests(2, kind="turn", timeout=0.1)
    server.expect_no_more_requests(3, seconds=0.05)
    with pytest.raises(AssertionError, match="exactly 2 chat"):
        server.expect_no_more_requests(2, seconds=0.05)


def test_the_summary_marker_can_be_changed_for_another_instruction(server):
    server.summary_marker = re.compile(r"compress this page", re.IGNORECASE)
    conn, response = post(
        server, {**BODY, "messages": [{"role": "user", "content": "Compress this page: ..."}]}
    )
    assert stream_text(sse_events(response.read())) == DEFAULT_SUMMARY
    conn.close()
    assert server.summary_requests and not server.turn_requests


def test_a_slow_summary_streams_many_small_pieces_with_a_delay_and_notices_a_cancel(server):
    server.script_summary(slow_summary(chunks=30, delay=0.05))
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    data = json.dumps(SUMMARY_BODY).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
    )
    started = time.monotonic()
    received = b""
    while received.count(b"Point ") < 3:  # progress: pieces arrive one by one
        chunk = sock.recv(4096)
        assert chunk, "the stream ended early"
        received += chunk
    assert b"[DONE]" not in received
    assert time.monotonic() - started >= 0.08
    sock.close()  # the user cancelled
    (request,) = server.summary_requests
    assert request.finished.wait(5) and request.client_gone.is_set()


def test_a_slow_summary_whole_is_its_points_in_order(server):
    server.script_summary(slow_summary(chunks=5, delay=0.01))
    conn, response = post(server, SUMMARY_BODY)
    events = sse_events(response.read())
    conn.close()
    contents = [json.loads(e)["choices"][0]["delta"].get("content") for e in events[1:-2]]
    assert len(contents) == 5 and all(contents)
    assert stream_text(events) == " ".join(f"Point {i} of the page." for i in range(1, 6))


def test_a_slow_reply_without_streaming_takes_its_whole_delay(server):
    server.script_summary(slow_summary(chunks=5, delay=0.1))
    started = time.monotonic()
    conn, response = post(server, {**SUMMARY_BODY, "stream": False})
    value = json.loads(response.read())
    conn.close()
    assert time.monotonic() - started >= 0.35
    assert value["choices"][0]["message"]["content"].startswith("Point 1 of the page.")
