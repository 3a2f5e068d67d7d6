"""The panel's aging rule (extension/panel/slimming.js) agrees with Python's (margin.turn.slimming) on
many generated conversations: the same cards are aged, and the text sent for each attachment is
the same, byte for byte. Node is part of the test environment: without it this fails."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import run_js_module

from margin.app import contract
from margin.i18n import catalogue
from margin.storage.history import PAGE_CONTEXT_PREFIX, parse_history
from margin.turn import slimming

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "extension" / "panel" / "slimming.js"
LIMIT = slimming.AGING_MIN_CHARS

SCRIPT = """
const { render } = await import("../common/i18n.js");
const say = (key, ...subs) => render(input.messages[key], subs);
const out = input.conversations.map((records) => ({
  aged: slimming.agedIndices(records, say),
  sent: records.map((r) => (slimming.isSlimmable(r) ? slimming.sentText(r, say) : null)),
  summarized: records.map((r) => slimming.summaryOf(r) !== null),
}));
console.log(JSON.stringify(out));
"""


def _text(rng: random.Random, length: int) -> str:
    """`length` code points; some are outside the BMP (two UTF-16 units each in JS)."""
    alphabet = "abc de\nf" + "é中" + ("😀" if rng.random() < 0.3 else "")
    return "".join(rng.choice(alphabet) for _ in range(length))


def _attachment(rng: random.Random, index: int) -> dict[str, Any]:
    header = f"{PAGE_CONTEXT_PREFIX} Page: Title {index}\nURL: https://example.com/{index}\nAttached: 2026-01-01 10:00 UTC"
    near = LIMIT - len(header) - 2 + rng.randint(-3, 3)
    body = _text(rng, rng.choice([50, 3000, near, near, 12000]))
    meta: dict[str, Any] = {"kind": "page", "title": f"Title {index}", "url": f"https://example.com/{index}"}
    meta["chars"] = rng.choice([len(body), len(body), True, 1234.5, "many", None])
    if meta["chars"] is None:
        del meta["chars"]
    roll = rng.random()
    if roll < 0.35:
        summary_length = rng.choice([20, LIMIT - 200 + rng.randint(-100, 100), LIMIT])
        meta["summary"] = {
            "text": rng.choice(["", "  \n", "\x1c\x85 "])
            + _text(rng, summary_length)
            + rng.choice(["", " \u3000"]),
            "model": rng.choice(["gpt-4o-mini", "", None, "llama3.2"]),
            "chars": summary_length,
            "createdAt": 1,
        }
        if meta["summary"]["model"] is None:
            del meta["summary"]["model"]
    elif roll < 0.45:
        meta["summary"] = rng.choice([{"text": "  \x1f\u2029 "}, {"text": 5}, "a summary", None, {}])
    text = f"{header}\n\n{body}"
    content: Any = text
    if rng.random() < 0.15:
        content = [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
        ]
    return {"role": "user", "content": content, "attachment": meta, "createdAt": index}


def _record(rng: random.Random, index: int) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return _attachment(rng, index)
    if roll < 0.6:
        return {"role": "user", "content": rng.choice(["q?", "", [{"type": "text", "text": "look"}]])}
    if roll < 0.85:
        return {"role": "assistant", "content": "an answer"}
    return rng.choice(
        [
            {"role": "system", "content": "sys"},
            {"role": "bot", "content": "not a role"},  # unreadable: Python leaves it out
            {"role": "user", "content": 5},  # unreadable
            {"role": "user", "content": [{"text": "no type"}]},  # unreadable
            "not a record",
            {"role": "user", "content": f"{PAGE_CONTEXT_PREFIX} but no attachment object"},
            {"role": "user", "content": "no prefix", "attachment": {"url": "x", "chars": 9000}},
            {"role": "user", "content": f"{PAGE_CONTEXT_PREFIX} x", "attachment": ["not", "an", "object"]},
        ]
    )


def conversations(count: int = 160, seed: int = 9) -> list[list[Any]]:
    rng = random.Random(seed)
    return [[_record(rng, i) for i in range(rng.randint(0, 24))] for _ in range(count)]


def python_view(raw: list[Any], language: str = "en") -> dict[str, Any]:
    """What Python says, with indices mapped back to the raw list the panel paints."""
    raw_index = [i for i, item in enumerate(raw) if parse_history([item]).records]
    records = parse_history(raw).records
    assert len(records) == len(raw_index)
    sent: list[str | None] = [None] * len(raw)
    summarized = [False] * len(raw)
    for position, record in zip(raw_index, records, strict=True):
        if record.is_attachment:
            sent[position] = slimming.sent_text(record, language)
        summarized[position] = record.is_attachment and slimming.summary_of(record) is not None
    return {
        "aged": [raw_index[i] for i in slimming.aged_indices(records, language)],
        "sent": sent,
        "summarized": summarized,
    }


def run_panel_rule(tmp_path: Path, data: list[list[Any]], locale: str = "en") -> list[dict[str, Any]]:
    """The panel's view of `data`, its notes' words from `locale`'s catalogue (through i18n.js's
    substitution, as the panel's `t` does)."""
    (tmp_path / "panel").mkdir()
    extra = {
        "../generated/contract.js": contract.render_js("margin-0-py3-none-any.whl"),
        "../common/i18n.js": (ROOT / "extension" / "common" / "i18n.js").read_text(encoding="utf-8"),
        "../package.json": '{"type": "module"}',
    }
    messages = json.loads(
        (ROOT / "extension" / "_locales" / locale / "messages.json").read_text(encoding="utf-8")
    )
    data_in = {"messages": messages, "conversations": data}
    return run_js_module(tmp_path / "panel", MODULE, "slimming", SCRIPT, data_in, extra_files=extra)


def test_the_panel_ages_and_sends_exactly_what_python_does(tmp_path):
    data = conversations()
    expected = [python_view(raw) for raw in data]
    # The generator reaches every case that matters, or the agreement would prove little.
    assert sum(len(view["aged"]) for view in expected) >= 20
    assert sum(any(view["summarized"]) for view in expected) >= 20
    assert any(any(view["summarized"][i] for i in view["aged"]) for view in expected)
    got = run_panel_rule(tmp_path, data)
    for raw, mine, theirs in zip(data, got, expected, strict=True):
        assert mine == theirs, f"panel and Python disagree on {[type(r).__name__ for r in raw]}"


def test_the_edges_agree(tmp_path):
    """2 against 3 questions, one character under and at the limit, the newest never aged."""

    def page(index: int, body_length: int) -> dict[str, Any]:
        header = f"{PAGE_CONTEXT_PREFIX} Page: t\nURL: https://e.com/{index}\nAttached: x"
        body = "😀" * (body_length - len(header) - 2)
        return {
            "role": "user",
            "content": f"{header}\n\n{body}",
            "attachment": {"url": f"https://e.com/{index}"},
        }

    q = {"role": "user", "content": "q"}
    a = {"role": "assistant", "content": "a"}
    cases = [
        [page(0, LIMIT), q, a, q, a, page(1, 10)],  # 2 questions after: not aged
        [page(0, LIMIT), q, a, q, a, q, a, page(1, 10)],  # 3: aged
        [page(0, LIMIT - 1), q, a, q, a, q, a, page(1, 10)],  # one under the limit: not aged
        [page(0, LIMIT), q, a, q, a, q, a],  # the newest attachment: never aged
    ]
    got = run_panel_rule(tmp_path, cases)
    assert [view["aged"] for view in got] == [[], [0], [], []]
    assert got == [python_view(raw) for raw in cases]


@pytest.mark.parametrize("locale", ["ja", "ru"])
def test_the_summary_note_is_in_the_model_language_and_the_same_in_both(tmp_path, locale):
    data = conversations(count=60, seed=4)
    expected = [python_view(raw, locale) for raw in data]
    start = catalogue.words(locale).text("py_summary_note", "", "")[:8]
    notes = [s for view in expected for s in view["sent"] if s and f"\n{start}" in s]
    assert len(notes) >= 5, "summaries are sent, with their note in the model language"
    assert run_panel_rule(tmp_path, data, locale) == expected
