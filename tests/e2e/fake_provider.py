"""A fake OpenAI-compatible provider on 127.0.0.1 that the end-to-end tests script and inspect.

Concept: the extension talks to this server exactly as it would to api.openai.com (Chat Completions,
SSE streaming, `/v1/models`), so a test can assert what went over the wire and make the provider
misbehave in the ways real providers do.

Rules:
1. Every request is recorded (method, path, headers, parsed JSON body) before it is answered, in a
   thread-safe list; `requests` returns a copy.
2. Behaviour is scripted per test with a FIFO queue (`script(...)`): each request to
   `/v1/chat/completions` (and, when a behaviour says so, `/v1/models`) takes the next behaviour.
   An empty queue answers deterministically: "You said: <last user text>".
3. Realistic failures: provider error bodies as OpenAI sends them; a wrong API key (when
   `api_key` is set) and an unknown model (when `models` is set) fail as OpenAI fails, without
   scripting.
4. Nothing here can hang a test run: a hang is bounded, every wait watches the stop event, and a
   client that goes away mid-stream is noted (`RecordedRequest.client_gone`) and not reported as
   an error.
5. Every response carries `Access-Control-Allow-Origin: *`.
6. A context window (`limit_context(max_chars)`): a chat request whose body is longer than
   `max_chars` bytes is answered with OpenAI's 400 `context_length_exceeded`, its numbers counted
   at `CHARS_PER_TOKEN` (N = max_chars / 4, M = body bytes / 4), and takes no scripted behaviour,
   so "the first request overflows, the trimmed retry fits and gets the scripted reply" is one
   line of set-up. `always=True` overflows every chat request (the numbers still say M > N): the
   rescue's retry fails too. Overflowed requests are marked `RecordedRequest.overflowed`.
7. Summarization requests (the one-pass summary of an attachment, `margin.page.summaries`) are told
   apart from turns by `summary_marker` (default `SUMMARY_MARKER`: the instruction's wording,
   "compress a web page" / "write a summary", or the verb "summarize", in any message's text;
   turns never carry it: a summarized attachment's note says "this is a summary").
   They take their behaviours from a queue of their own (`script_summary(...)`), so a test scripts
   a turn and a summary without caring which request comes first; an empty summary queue answers
   `DEFAULT_SUMMARY`. `turn_requests` / `summary_requests` and `wait_for_requests(kind=...)` count
   each kind; `chat_requests` is both.
8. Anthropic-shaped requests (`/v1/messages`, or `/v1/models` with `anthropic-version`) are
   recorded the same way and answered by `fake_anthropic` with the same behaviours.
9. Responses API requests (`/v1/responses`) are answered by `fake_responses`, likewise.
10. A `fake_tool_calls.ToolCall` behaviour streams a function call (run_python) instead of text.

The behaviours and error bodies are in fake_behaviours.py, what is recorded of a request in
fake_requests.py.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import fake_gemini
import fake_tool_calls
from fake_behaviours import (
    BAD_KEY_BODY,
    DEFAULT_SUMMARY,
    SUMMARY_MARKER,
    Behaviour,
    ContextLimit,
    Cut,
    Garbage,
    Hang,
    HttpError,
    Reply,
    context_overflow_body,
    model_not_found_body,
)
from fake_requests import RecordedRequest, is_summary_request, last_user_text, split_text


class _ClientGone(Exception):
    pass


# --- The server -----------------------------------------------------------------------------


class FakeProvider:
    """Start with `with FakeProvider() as server:` (or start()/stop())."""

    def __init__(self, *, api_key: str | None = None, models: list[str] | None = None):
        # When set, a request whose `Authorization: Bearer` differs gets OpenAI's 401.
        self.api_key = api_key
        # When set, a chat request for another model gets OpenAI's 404; /v1/models lists these.
        self.models = models
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._queue: list[Behaviour] = []
        self._summary_queue: list[Behaviour] = []
        # Rule 6: None = an unlimited context window.
        self.context_limit: ContextLimit | None = None
        # Rule 7: how a summarization request is recognised.
        self.summary_marker: re.Pattern[str] = SUMMARY_MARKER
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._new_request = threading.Condition(self._lock)

    # lifecycle

    def start(self) -> FakeProvider:
        provider = self

        class Handler(_Handler):
            fake = provider

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-provider",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake provider is not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # scripting

    def script(
        self, *behaviours: Behaviour, reply: str | None = None, chunks: int = 4, delay: float = 0.0
    ) -> None:
        """Queue behaviours for the next requests; `reply=` is a shortcut for one Reply."""
        queued: list[Behaviour] = list(behaviours)
        if reply is not None:
            queued.append(Reply(reply, chunks=chunks, delay=delay))
        with self._lock:
            self._queue.extend(queued)

    def script_summary(
        self, *behaviours: Behaviour, reply: str | None = None, chunks: int = 4, delay: float = 0.0
    ) -> None:
        """Queue behaviours for the next summarization requests (rule 7), as `script` does."""
        queued: list[Behaviour] = list(behaviours)
        if reply is not None:
            queued.append(Reply(reply, chunks=chunks, delay=delay))
        with self._lock:
            self._summary_queue.extend(queued)

    def limit_context(self, max_chars: int | None, *, always: bool = False) -> None:
        """Rule 6: overflow chat requests longer than `max_chars` bytes (every one with
        `always`); None lifts the limit."""
        self.context_limit = None if max_chars is None else ContextLimit(max_chars, always)

    def pending(self) -> int:
        with self._lock:
            return len(self._queue) + len(self._summary_queue)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._summary_queue.clear()
            self._requests.clear()
        self.context_limit = None

    def _next_behaviour(self, path: str, *, summary: bool = False) -> Behaviour | None:
        is_models = path.rstrip("/").endswith("/models")
        with self._lock:
            queue = self._summary_queue if summary else self._queue
            if queue and (not is_models or getattr(queue[0], "applies_to_models", False)):
                return queue.pop(0)
        return None

    # inspection

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Every chat completion: turns and summarization requests."""
        return [r for r in self.requests if r.is_chat]

    @property
    def turn_requests(self) -> list[RecordedRequest]:
        """Chat completions that are not summarization requests (rule 7)."""
        return [r for r in self.requests if r.is_chat and not r.is_summary]

    @property
    def summary_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_chat and r.is_summary]

    def _record(self, request: RecordedRequest) -> None:
        with self._new_request:
            self._requests.append(request)
            self._new_request.notify_all()

    def wait_for_chat_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least `count` chat requests arrived; raise on timeout."""
        return self.wait_for_requests(count, kind="chat", timeout=timeout)

    def wait_for_requests(
        self, count: int, *, kind: str = "chat", timeout: float = 10.0
    ) -> list[RecordedRequest]:
        """Block until at least `count` requests of `kind` ("chat": every chat completion,
        "turn", "summary") arrived, and return them; raise on timeout."""
        wanted = {
            "chat": lambda r: r.is_chat,
            "turn": lambda r: r.is_chat and not r.is_summary,
            "summary": lambda r: r.is_chat and r.is_summary,
        }[kind]
        deadline = time.monotonic() + timeout
        with self._new_request:
            while True:
                found = [r for r in self._requests if wanted(r)]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"the fake provider got {len(found)} {kind} request(s), expected {count}: "
                        f"{[(r.method, r.path, r.is_summary) for r in self._requests]}"
                    )
                self._new_request.wait(left)

    def expect_no_more_requests(self, count: int, *, kind: str = "chat", seconds: float = 1.0) -> None:
        """Wait `seconds` and check that no request of `kind` came after the first `count`."""
        self.sleep(seconds)
        found = self.wait_for_requests(0, kind=kind, timeout=0)
        if len(found) != count:
            raise AssertionError(
                f"expected exactly {count} {kind} request(s), the fake provider got {len(found)}"
            )

    def sleep(self, seconds: float) -> bool:
        """Wait `seconds`; False when the server is stopping."""
        return not self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProvider
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # plumbing

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError) as error:
            raise _ClientGone() from error

    def _send_json(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for name, text in (headers or {}).items():
            self.send_header(name, text)
        self._cors()
        self.end_headers()
        self._write(data)
        self.close_connection = True

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self._cors()
        self.end_headers()
        self.close_connection = True
        # Flush the headers now: a client waits for them before reading the body.
        self._write(b"")

    def _chunk(self, data: bytes) -> None:
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def _event(self, value: Any) -> None:
        payload = value if isinstance(value, str) else json.dumps(value)
        self._chunk(f"data: {payload}\n\n".encode())

    def _end_stream(self) -> None:
        self._write(b"0\r\n\r\n")

    # entry points

    def do_OPTIONS(self) -> None:
        self._record(b"")
        self.send_response(204)
        self._cors()
        self.send_header("Content-Length", "0")
        self.end_headers()
        self._recorded.finished.set()

    def do_GET(self) -> None:
        self._handle(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self._handle(raw)

    def _record(self, raw: bytes) -> RecordedRequest:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._recorded = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw_body=raw,
            at=time.monotonic(),
        )
        if self._recorded.is_chat:
            self._recorded.is_summary = is_summary_request(body, self.fake.summary_marker)
        self.fake._record(self._recorded)
        return self._recorded

    def _handle(self, raw: bytes) -> None:
        recorded = self._record(raw)
        try:
            self._respond(recorded)
        except _ClientGone:
            recorded.client_gone.set()
        finally:
            recorded.finished.set()

    def _respond(self, request: RecordedRequest) -> None:
        import fake_anthropic  # imported here: it imports this module's behaviours
        import fake_responses  # the same

        if fake_anthropic.is_anthropic(request):
            fake_anthropic.respond(self, request)
            return
        fake = self.fake
        if fake_gemini.handles(request.path):
            fake_gemini.respond(self, request)
            return
        if fake_responses.handles(request.path):
            fake_responses.respond(self, request)
            return
        path = request.path.split("?", 1)[0].rstrip("/")
        if not (path.endswith("/chat/completions") or path.endswith("/models")):
            self._send_json(
                404,
                {"error": {"message": f"Unknown path {path}", "type": "invalid_request_error", "code": None}},
            )
            return
        if fake.api_key is not None and request.headers.get("authorization") != f"Bearer {fake.api_key}":
            self._send_json(401, BAD_KEY_BODY)
            return
        limit = fake.context_limit
        if limit is not None and request.is_chat and limit.overflows(len(request.raw_body)):
            request.overflowed = True
            self._send_json(
                400,
                context_overflow_body(limit.limit_tokens, limit.requested_tokens(len(request.raw_body))),
            )
            return
        behaviour = fake._next_behaviour(path, summary=request.is_summary)
        if isinstance(behaviour, HttpError):
            self._send_json(behaviour.status, behaviour.body, behaviour.headers)
            return
        if isinstance(behaviour, Hang):
            fake.sleep(behaviour.seconds)
            self.close_connection = True
            return
        if path.endswith("/models"):
            if self.command != "GET":
                self._send_json(
                    405, {"error": {"message": "Use GET", "type": "invalid_request_error", "code": None}}
                )
                return
            names = fake.models or ["fake-model"]
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": n, "object": "model", "created": 1700000000, "owned_by": "fake"} for n in names
                    ],
                },
            )
            return
        if self.command != "POST" or not isinstance(request.body, dict):
            self._send_json(
                400,
                {
                    "error": {
                        "message": "We could not parse the JSON body of your request.",
                        "type": "invalid_request_error",
                        "code": None,
                    }
                },
            )
            return
        model = request.body.get("model")
        if fake.models is not None and model not in fake.models:
            self._send_json(404, model_not_found_body(str(model)))
            return
        if behaviour is None:
            behaviour = (
                Reply(DEFAULT_SUMMARY)
                if request.is_summary
                else Reply(f"You said: {last_user_text(request.body)}")
            )
        if not request.body.get("stream"):
            self._plain_reply(request, behaviour)
            return
        self._stream(request, behaviour)

    def _plain_reply(self, request: RecordedRequest, behaviour: Behaviour) -> None:
        if isinstance(behaviour, Garbage):
            body = b"{not json"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self._cors()
            self.end_headers()
            self._write(body)
            return
        text = behaviour.text if isinstance(behaviour, (Reply, Cut)) else ""
        # A slow answer is slow without streaming too: all of it arrives after the whole delay.
        if isinstance(behaviour, Reply):
            slow = behaviour.first_delay + behaviour.delay * max(
                0, len(split_text(text, behaviour.chunks)) - 1
            )
            if slow and not self.fake.sleep(slow):
                return
        self._send_json(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.body.get("model"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
                "usage": _usage(request.body, text),
            },
        )

    def _stream(self, request: RecordedRequest, behaviour: Behaviour) -> None:
        body = request.body
        model = body.get("model")
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        self._start_stream()
        if isinstance(behaviour, Garbage):
            self._event(chunk({"role": "assistant", "content": ""}))
            self._event("{not json")
            self._event('{"choices": [{"delta": {"content": oops}}]')
            self._event("[DONE]")
            self._end_stream()
            return
        if isinstance(behaviour, Cut):
            self._event(chunk({"role": "assistant", "content": ""}))
            for piece in split_text(behaviour.text, behaviour.chunks):
                self._event(chunk({"content": piece}))
            if behaviour.pause and not self.fake.sleep(behaviour.pause):
                return
            # Close without the terminating chunk: the body is incomplete, as when a proxy drops it.
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(behaviour, fake_tool_calls.ToolCall):  # rule 10
            fake_tool_calls.stream(self, request, behaviour)
            return
        assert isinstance(behaviour, Reply)
        self._event(chunk({"role": "assistant", "content": ""}))
        if behaviour.first_delay and not self.fake.sleep(behaviour.first_delay):
            return
        for i, piece in enumerate(split_text(behaviour.text, behaviour.chunks)):
            if i and behaviour.delay and not self.fake.sleep(behaviour.delay):
                return
            self._event(chunk({"content": piece}))
        self._event(chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._event(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": _usage(body, behaviour.text),
                }
            )
        self._event("[DONE]")
        self._end_stream()


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = max(1, len(text) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
