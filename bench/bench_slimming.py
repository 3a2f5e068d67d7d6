"""Request-side slimming figures of issue 9: what aging saves over a long conversation with pages
attached, and how much of each request the provider's prompt cache can reuse.

Concept: one measurement function in the style of `bench/run.py` that needs no browser (it is
listed in `BROWSERLESS_METRICS`, so run.py calls it with no `Bench` and launches no Chromium for
it) and returns a list of dicts with `Result`'s fields. Run alone:
`python3 bench/run.py --only slimming_requests` (or `python3 bench/bench_slimming.py`).

1. The conversation: `TURNS` questions and answers; before the questions of `ATTACHED_AT` a page
   of `PAGE_CHARS` characters is attached (a record built by `margin.page.context`, as
   "Attach page" builds it). Deterministic texts, no randomness.
2. Each turn's request is built by the Python core as a turn builds it:
   `slimming.age_stale_attachments` (with aging) or the stored records as they are (without),
   then `figures.prepare_history_for_model` and `providers.openai.build_chat_request`. Request
   bytes are the UTF-8 length of the body.
3. Reported: the total request bytes of all turns with aging ÷ without (one ratio); the share of
   requests whose messages (their wire JSON) are a byte-identical prefix of the next request's
   messages, over all turns and excluding the one-time breaks (a break is a turn at which an
   attachment turns cold: `slimming.aged_indices` grows). Target: 100 % excluding the breaks.
4. Every figure is checked against the rule it measures (each page is sent whole until it turns
   cold, then as its stub; the newest page is never aged), so a broken product gives an error,
   not a figure.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "py"))

from bench_result import result

from margin.images import figures
from margin.page.context import attachment_record
from margin.providers import openai, streaming
from margin.storage.history import Record, user_record
from margin.turn import slimming

TURNS = 30
ATTACHED_AT = (1, 10, 20)
PAGE_CHARS = 50_000
PROVIDER = {"type": "openai", "baseUrl": "https://api.openai.com/v1", "apiKey": "sk-bench", "model": "gpt-4o"}
# 2026-01-01 00:00 UTC; each turn is a minute later.
START_MS = 1_767_225_600_000


def page_body(number: int, chars: int = PAGE_CHARS) -> str:
    """A Markdown article of exactly `chars` characters (rule 1)."""
    paragraphs = [f"# Field notes, part {number}"]
    i = 0
    while sum(len(p) + 2 for p in paragraphs) < chars:
        i += 1
        paragraphs.append(
            f"Paragraph {i} of part {number}: the survey crew measured the riverbank again, noted how "
            "far the water had cut into the clay since the last visit, and photographed each marker."
        )
    return "\n\n".join(paragraphs)[:chars]


def page_record(number: int, captured_at: int) -> Record:
    payload = {
        "kind": "page",
        "title": f"Field notes, part {number}",
        "url": f"https://notes.example.org/part-{number}",
        "body": page_body(number),
        "method": "readability",
        "truncated": False,
        "originalChars": PAGE_CHARS,
        "notes": [],
    }
    return attachment_record(payload, captured_at=captured_at)


def question(turn: int) -> Record:
    return user_record(
        f"Question {turn}: what changed at the markers since the previous visit, and which ones should "
        "the crew check first next time?",
        createdAt=START_MS + turn * 60_000 + 1,
    )


def answer(turn: int) -> Record:
    return Record(
        "assistant",
        f"Answer {turn}: the notes say the bank moved at three markers. **Marker A** lost about "
        "a hand's width of clay, marker B is unchanged, and marker C is close to the water now.\n\n"
        "- Check C first: it may be gone by the next visit\n"
        "- Then A, and photograph it from the same spot\n\n"
        "The rest can wait for the usual round.",
        {"createdAt": START_MS + turn * 60_000 + 30_000},
    )


def turn_requests(*, aging: bool) -> list[tuple[list[Record], str]]:
    """Rule 2: for each turn, the stored records at the time of its request and the request body."""
    records: list[Record] = []
    requests: list[tuple[list[Record], str]] = []
    for turn in range(1, TURNS + 1):
        if turn in ATTACHED_AT:
            records.append(page_record(ATTACHED_AT.index(turn) + 1, START_MS + turn * 60_000))
        records.append(question(turn))
        sent = slimming.age_stale_attachments(records) if aging else list(records)
        body = openai.build_chat_request(PROVIDER, figures.prepare_history_for_model(sent), stream=True).body
        assert body is not None
        requests.append((list(records), body))
        records.append(answer(turn))
    return requests


def wire_messages(body: str) -> str:
    """The messages of a request body as they are on the wire (streaming.dumps is deterministic)."""
    return streaming.dumps(json.loads(body)["messages"])


def extends(before: str, after: str) -> bool:
    """`before`'s messages are a byte-identical prefix of `after`'s (the list's `]` aside)."""
    return wire_messages(after).encode().startswith(wire_messages(before)[:-1].encode())


def _check_pages(requests: list[tuple[list[Record], str]], *, aging: bool) -> None:
    """Rule 4: each page whole until it turns cold, then its stub; the newest page always whole."""
    for records, body in requests:
        sent = [m["content"] for m in json.loads(body)["messages"]]
        attachments = [i for i, r in enumerate(records) if r.is_attachment]
        cold = set(slimming.aged_indices(records)) if aging else set()
        if aging and attachments and attachments[-1] in cold:
            raise RuntimeError("the newest page was aged")
        for i in attachments:
            expected = slimming.stub_text(records[i]) if i in cold else records[i].text
            if sent[i] != expected:
                raise RuntimeError(f"page {i} was not sent {'as its stub' if i in cold else 'whole'}")
    if aging and not slimming.aged_indices(requests[-1][0]):
        raise RuntimeError("no page turned cold in the whole conversation")


def slimming_requests(bench: Any = None) -> list[dict[str, Any]]:
    aged = turn_requests(aging=True)
    whole = turn_requests(aging=False)
    _check_pages(aged, aging=True)
    _check_pages(whole, aging=False)
    aged_bytes = sum(len(body.encode()) for _, body in aged)
    whole_bytes = sum(len(body.encode()) for _, body in whole)

    pairs = list(itertools.pairwise(aged))
    extended = [extends(a[1], b[1]) for a, b in pairs]
    breaks = [len(slimming.aged_indices(b[0])) > len(slimming.aged_indices(a[0])) for a, b in pairs]
    after_breaks = [ok for ok, is_break in zip(extended, breaks, strict=True) if not is_break]
    whole_extended = sum(extends(a[1], b[1]) for a, b in itertools.pairwise(whole))
    setting = f"{TURNS} turns, {len(ATTACHED_AT)} pages of {PAGE_CHARS // 1000} K characters at turns " + (
        ", ".join(str(t) for t in ATTACHED_AT)
    )
    return [
        result(
            "request bytes with aging ÷ without",
            round(aged_bytes / whole_bytes, 4),
            "x",
            note=f"{setting}: {aged_bytes / 1e6:.2f} MB against {whole_bytes / 1e6:.2f} MB sent in all",
        ),
        result(
            "requests whose messages are a byte-identical prefix of the next (all)",
            round(100 * sum(extended) / len(extended), 2),
            "%",
            note=f"{sum(extended)} of {len(extended)}; {sum(breaks)} one-time break(s) when a page turns "
            f"cold (without aging: {whole_extended} of {len(extended)})",
        ),
        result(
            "the same, excluding the one-time breaks",
            round(100 * sum(after_breaks) / len(after_breaks), 2),
            "%",
            target=100.0,
            compare="at_least",
            note=f"{sum(after_breaks)} of {len(after_breaks)}",
        ),
    ]


METRICS = [slimming_requests]
# Measured in CPython alone: run.py launches no browser for these.
BROWSERLESS_METRICS = [slimming_requests]


if __name__ == "__main__":
    from run import Result, table

    print(table([Result(**row) for row in slimming_requests()]))
