"""Corrupt attached data files (a record of kind "file", py/margin/page/data_files.py): the `file`
field (the whole text for the sandbox) and the card's `attachment` holding what no attach wrote.

Each case plants one corruption (the stored-values corpus, plus values that are almost right: a
size that is negative, a name that is a number, a text that is a list, an attachment whose name
is not text) in a file record of the open conversation and of a saved session, then runs a turn
with the run_python tool offered (its description lists the conversation's files) and the
everyday actions. No action may fail as "internal", the request must go out, and nothing stored
is lost (a field the reader drops is parked with the raw history before the next write).
"""

from __future__ import annotations

import asyncio

import pytest
from platform_memory import ScriptedTransport, memory_platform

from margin.page import data_files

from .profiles import CORPUS, PROVIDER, SAVE_REWRITES, corrupted, internal_failures, save_as_s1
from .test_tool_rounds import ACTIONS, reply, stored

GOOD = data_files.file_record("sales.csv", "text/csv", "a,b\n1,2\n", captured_at=1_700_000_000_000)
GOOD_FILE = GOOD.fields["file"]
ALMOST = {
    "negative_size": ("file", {**GOOD_FILE, "size": -1}),
    "name_a_number": ("file", {**GOOD_FILE, "name": 7}),
    "text_a_list": ("file", {**GOOD_FILE, "text": ["a,b"]}),
    "no_media_type": ("file", {k: v for k, v in GOOD_FILE.items() if k != "mediaType"}),
    "attachment_name_not_text": ("attachment", {**GOOD.fields["attachment"], "name": {"x": 1}}),
    "attachment_size_text": ("attachment", {**GOOD.fields["attachment"], "size": "big"}),
}


def corruption(name: str):
    return ALMOST[name] if name in ALMOST else ("file", corrupted(name))


def file_record(field: str, value):
    return {"role": "user", "content": GOOD.text, **GOOD.fields, field: value}


def users_profile(field: str, value):
    transport = ScriptedTransport([reply()])
    platform = memory_platform(
        {"providers": [PROVIDER], "activeProviderId": "p1", "runPython": "auto"}, transport
    )
    saved = [file_record(field, value), {"role": "user", "content": "the saved chat", "createdAt": 2}]
    save_as_s1(platform, saved)
    asyncio.run(platform.local.set({"history": [file_record(field, value)]}))
    return platform, transport


@pytest.mark.parametrize("name", [*CORPUS["values"], *ALMOST])
def test_corrupt_data_file_records_reach_no_crash_and_lose_nothing(name, ledger):
    platform, transport = users_profile(*corruption(name))
    before = stored(platform)
    internal = internal_failures(platform, "sum column b", ACTIONS)
    assert not internal, f"failed as internal: {internal}"
    assert transport.requests, "the turn sent no request"
    ledger.settle(before, stored(platform), replaced=SAVE_REWRITES)
