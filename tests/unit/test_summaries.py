"""One summary pass of a long attachment, as the panel's port lives it: progress, then exactly one
of done, cancelled or error, and storage changed only by a whole, usable summary."""

import asyncio
import itertools
import json

import pytest
from chat_turns import SETTINGS, HangingResponse, answer, delta, sse
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform
from test_api import Sink

from margin.app.worker import Worker
from margin.page import context as page_context
from margin.page import summaries
from margin.platform.ports import TransportError
from margin.storage.history import Record

URL = "https://news.example.com/long-read"
CAPTURED_AT = 1_790_000_000_000
BODY = "\n\n".join(f"## Part {i}\n\nThe river moved {i * 7} metres in {1900 + i}. " * 20 for i in range(40))
PNG = "data:image/png;base64,iVBORw0KGgo="


def attachment(body=BODY, captured_at=CAPTURED_AT, url=URL, **extra):
    record = page_context.attachment_record(
        {
            "kind": "page",
            "title": "A long read",
            "url": url,
            "body": body,
            "method": "readability",
            "truncated": False,
            "originalChars": len(body),
            "notes": [],
        },
        captured_at=captured_at,
    )
    return record.with_fields(**extra).to_json()


def question(text):
    return {"role": "user", "content": text, "createdAt": 1}


IDENT = {"capturedAt": CAPTURED_AT, "url": URL}


class Pass:
    """One `summaries.summarize` with recorded events."""

    def __init__(self, history=None, responses=(), settings=SETTINGS, **storage):
        self.transport = ScriptedTransport(list(responses))
        stored = {**settings, "history": [attachment()] if history is None else history}
        self.platform = memory_platform(stored, self.transport, **storage)
        self.before = self.history
        self.events = []
        self.stop = asyncio.Event()

    def emit(self, event):
        self.events.append(event)

    def run(self, ident=IDENT):
        asyncio.run(asyncio.wait_for(summaries.summarize(self.platform, ident, self.emit, self.stop), 5))
        return self

    @property
    def history(self):
        return self.platform.local.snapshot().get("history", [])

    @property
    def kinds(self):
        return [e["event"] for e in self.events]

    @property
    def terminal(self):
        return self.events[-1]


SUMMARY = "## Part 0\n\nThe river moved 0 metres in 1900.\n\n## Part 39\n\nIt moved 273 metres in 1939."


# -- done ---------------------------------------------------------------------------------------


def test_a_pass_streams_progress_then_stores_the_summary_on_the_record_and_says_done():
    pieces = [SUMMARY[i : i + 20] for i in range(0, len(SUMMARY), 20)] * 10
    text = "".join(pieces).strip()
    run = Pass(responses=[answer(*pieces)]).run()
    assert run.kinds[-1] == "done" and run.terminal == {"event": "done", "chars": len(text)}
    assert set(run.kinds[:-1]) == {"progress"}
    # Throttled: at most one progress per PROGRESS_STEP characters, growing.
    counts = [e["chars"] for e in run.events[:-1]]
    assert 1 <= len(counts) <= len(text) // summaries.PROGRESS_STEP
    assert counts == sorted(counts) and all(
        b - a >= summaries.PROGRESS_STEP for a, b in itertools.pairwise(counts)
    )
    [record] = run.history
    [before] = run.before
    summary = record["attachment"].pop("summary")
    assert summary == {
        "text": text,
        "model": "llama3.2",
        "chars": len(text),
        "createdAt": summary["createdAt"],
    }
    assert isinstance(summary["createdAt"], int)
    assert record == before  # nothing else changed: content, header, meta


def test_the_request_is_one_instruction_and_the_stored_text():
    run = Pass(responses=[answer(SUMMARY)]).run()
    [body] = run.transport.json_bodies()
    system, user = body["messages"]
    assert system["role"] == "system" and user == {"role": "user", "content": run.before[0]["content"]}
    words = system["content"]
    for needed in ("fact", "number", "name", "heading", "Markdown", f"{summaries.SUMMARY_MAX_CHARS:,}"):
        assert needed in words
    assert f"about {summaries.target_chars(len(BODY)):,} characters" in words


def test_the_target_is_about_a_tenth_within_bounds():
    assert summaries.target_chars(50_000) == 5_000
    assert summaries.target_chars(5_000) == summaries.SUMMARY_MIN_CHARS
    assert summaries.target_chars(2_000_000) == summaries.SUMMARY_MAX_CHARS


def test_image_parts_of_the_record_survive_and_are_not_sent():
    record = attachment()
    record["content"] = [
        {"type": "text", "text": record["content"]},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    run = Pass(history=[question("hi"), record], responses=[answer(SUMMARY)]).run()
    assert run.terminal["event"] == "done"
    assert run.history[1]["content"] == record["content"]
    assert PNG not in run.transport.requests[0].body


def test_the_newest_record_with_the_pair_is_the_one_summarized():
    older, newer = attachment(), attachment()
    run = Pass(history=[older, question("q"), newer], responses=[answer(SUMMARY)]).run()
    assert run.terminal["event"] == "done"
    assert "summary" not in run.history[0]["attachment"] and "summary" in run.history[2]["attachment"]


# -- failed -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response, code",
    [
        (ScriptedResponse(status=500, chunks=['{"error": {"message": "overloaded"}}']), "provider_down"),
        (TransportError("connect", "refused"), "unreachable"),
        (
            ScriptedResponse(chunks=["<html>not a stream</html>"], headers={"content-type": "text/html"}),
            "bad_stream",
        ),
        (ScriptedResponse(chunks=[sse(delta("half a summ"))]), "stream_cut"),  # no end of stream
        (ScriptedResponse(chunks=["data: {not json\n\n", sse("[DONE]")]), "bad_stream"),  # garbage
        (answer("   "), "summary_empty"),
        (answer(BODY + " and more"), "summary_not_shorter"),
        (ScriptedResponse(chunks=[sse(delta(SUMMARY), delta("", "length"), "[DONE]")]), "summary_cut"),
    ],
)
def test_a_failed_pass_is_one_error_and_leaves_the_record_exactly_as_it_was(response, code):
    run = Pass(responses=[response]).run()
    assert run.kinds.count("error") == 1 and run.kinds[-1] == "error"
    assert set(run.kinds[:-1]) <= {"progress"}
    error = run.terminal["error"]
    assert error["code"] == code and error["message"]
    assert run.history == run.before
    assert run.platform.local.writes == []


def test_without_a_provider_nothing_is_sent():
    run = Pass(settings={"providers": []}).run()
    assert run.terminal["error"]["code"] == "no_provider"
    assert run.transport.requests == [] and run.history == run.before


@pytest.mark.parametrize(
    "ident", [{}, {"capturedAt": "1", "url": URL}, {"capturedAt": True, "url": URL}, None]
)
def test_a_request_that_names_no_record_is_refused(ident):
    run = Pass().run(ident)
    assert run.events == [{"event": "error", "error": run.terminal["error"]}]
    assert run.terminal["error"]["code"] == "bad_payload" and run.transport.requests == []


def test_a_record_that_is_not_there_is_refused_before_anything_is_sent():
    run = Pass().run({"capturedAt": CAPTURED_AT + 1, "url": URL})
    assert run.terminal["error"]["code"] == "attachment_gone" and run.transport.requests == []


# -- cancelled ----------------------------------------------------------------------------------


def test_cancel_mid_stream_is_prompt_and_changes_nothing():
    hanging = HangingResponse(sse(delta("x" * 600)))
    run = Pass(responses=[hanging])

    async def go():
        task = asyncio.ensure_future(summaries.summarize(run.platform, IDENT, run.emit, run.stop))
        while not run.events:
            await asyncio.sleep(0.01)
        run.stop.set()
        await asyncio.wait_for(task, 1)

    asyncio.run(go())
    assert run.kinds == ["progress", "cancelled"] and run.events[0]["chars"] == 600
    assert hanging.closed
    assert run.history == run.before and run.platform.local.writes == []


def test_a_stop_before_the_pass_sends_nothing():
    run = Pass(responses=[answer(SUMMARY)])
    run.stop.set()
    run.run()
    assert run.kinds == ["cancelled"] and run.transport.requests == [] and run.history == run.before


def test_a_stop_after_the_whole_answer_arrived_still_writes_nothing():
    run = Pass(responses=[answer(SUMMARY)])
    original = summaries.usable_summary

    def stop_then_check(*args):
        run.stop.set()  # the panel's Cancel lands while the answer is checked
        return original(*args)

    summaries.usable_summary = stop_then_check
    try:
        run.run()
    finally:
        summaries.usable_summary = original
    assert run.kinds == ["cancelled"] and run.history == run.before


def test_a_closed_port_stops_the_pass():
    run = Pass(responses=[answer(*(["y" * 300] * 5))])

    def broken(event):
        run.events.append(event)
        raise RuntimeError("port gone")

    asyncio.run(asyncio.wait_for(summaries.summarize(run.platform, IDENT, broken, run.stop), 5))
    assert run.kinds == ["progress"]  # the failed emit was the last one tried
    assert run.stop.is_set() and run.history == run.before


# -- never twice --------------------------------------------------------------------------------


def test_a_record_with_a_summary_is_refused_and_nothing_is_sent():
    summarized = attachment()
    summarized["attachment"]["summary"] = {"text": "Short.", "model": "m", "chars": 6, "createdAt": 1}
    run = Pass(history=[summarized], responses=[answer(SUMMARY)]).run()
    assert run.terminal["error"]["code"] == "already_summarized"
    assert run.transport.requests == [] and run.history == run.before


def test_a_second_port_for_a_record_being_summarized_is_refused():
    hanging = HangingResponse(sse(delta("z" * 300)))
    first = Pass(responses=[hanging, answer(SUMMARY)])
    second_events = []

    async def go():
        task = asyncio.ensure_future(summaries.summarize(first.platform, IDENT, first.emit, first.stop))
        while not first.events:
            await asyncio.sleep(0.01)
        await summaries.summarize(first.platform, IDENT, second_events.append, asyncio.Event())
        first.stop.set()
        await asyncio.wait_for(task, 1)

    asyncio.run(go())
    assert [e["event"] for e in second_events] == ["error"]
    assert second_events[0]["error"]["code"] == "summary_in_progress"
    assert len(first.transport.requests) == 1
    assert first.kinds[-1] == "cancelled" and first.history == first.before
    # Once the first pass ended, the record can be summarized again (it has no summary).
    first.stop = asyncio.Event()
    first.events = []
    first.run()
    assert first.terminal["event"] == "done"


def test_a_summary_written_meanwhile_is_kept_and_the_pass_is_refused():
    run = Pass()

    def respond(request):
        stored = run.platform.local.snapshot()["history"]
        stored[0]["attachment"]["summary"] = {"text": "Other.", "model": "m", "chars": 6, "createdAt": 2}
        run.platform.local._data["history"] = json.dumps(stored)
        return answer(SUMMARY)

    run.transport.queue = [respond]
    run.run()
    assert run.terminal["error"]["code"] == "already_summarized"
    assert run.history[0]["attachment"]["summary"]["text"] == "Other."


# -- storage changed or refused -----------------------------------------------------------------


def test_a_record_removed_meanwhile_is_not_written_back():
    run = Pass(history=[question("q"), attachment()])

    def respond(request):
        run.platform.local._data["history"] = json.dumps([question("q")])  # the user removed the page
        return answer(SUMMARY)

    run.transport.queue = [respond]
    run.run()
    assert run.terminal["error"]["code"] == "attachment_gone"
    assert run.history == [question("q")] and run.platform.local.writes == []


def test_records_added_meanwhile_are_kept_and_the_summary_lands_on_its_record():
    run = Pass(history=[attachment()])

    def respond(request):
        stored = [*run.platform.local.snapshot()["history"], question("meanwhile")]
        run.platform.local._data["history"] = json.dumps(stored)
        return answer(SUMMARY)

    run.transport.queue = [respond]
    run.run()
    assert run.terminal["event"] == "done"
    assert (
        run.history[1] == question("meanwhile") and run.history[0]["attachment"]["summary"]["text"] == SUMMARY
    )


@pytest.mark.parametrize("storage", [{"fail_after_writes": 0}, {"quota_bytes": 10}])
def test_storage_refusing_the_write_is_an_error_and_changes_nothing(storage):
    run = Pass(responses=[answer(SUMMARY)], **storage)  # the seeded data is over the quota already
    run.run()
    assert run.terminal["event"] == "error"
    assert run.terminal["error"]["code"] in ("storage_full", "storage_failed")
    run.platform.local.revive()
    assert run.history == run.before


# -- the worker's port --------------------------------------------------------------------------


def test_the_worker_runs_a_pass_on_its_port_and_an_early_cancel_sends_nothing():
    platform = memory_platform({**SETTINGS, "history": [attachment()]}, ScriptedTransport([answer(SUMMARY)]))
    sink = Sink()
    worker = Worker(platform, sink)
    worker.stop_summary("early")
    asyncio.run(worker.run_summary_json("early", json.dumps(IDENT)))
    assert [event for _, event in sink.events] == [{"event": "cancelled"}]
    assert platform.transport.requests == [] and worker._turn_stops == {} and worker._early_stops == set()

    asyncio.run(worker.run_summary_json("s", json.dumps(IDENT)))
    assert [event["event"] for port, event in sink.events if port == "s"][-1] == "done"
    assert Record.from_json(platform.local.snapshot()["history"][0]).fields["attachment"]["summary"]


def test_the_worker_reports_a_start_that_is_not_json():
    sink = Sink()
    asyncio.run(Worker(memory_platform(), sink).run_summary_json("s", "{nope"))
    [(port, event)] = sink.events
    assert port == "s" and event["event"] == "error"
