"""`code.save_run {index, createdAt, run}`: a finished code run kept with its answer
(margin.sandbox.code_runs, rule 6).

The run's format is margin.sandbox.code_runs, below storage (the readers of stored records check
runs with it); this request writes `history`, so it lives here, above storage.

Rules:
1. The run is cleaned first (`clean_run`); the answer is named by its index and its `createdAt`.
2. Under the history lock, the record at `index` must be the assistant record with that
   `createdAt`; anything else is `run_answer_gone` and nothing is written.
3. A new run of a block replaces the old one (`with_run`).
"""

from __future__ import annotations

from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform
from ..sandbox.code_runs import check_address, clean_run, with_run
from ..storage.history import read_history, write_history
from ..storage.keys import lock_for


def run_answer_gone() -> MarginError:
    return MarginError.said("run_answer_gone", "py_error_run_answer_gone")


async def save_run(platform: Platform, index: Any, created_at: Any, run: Any) -> dict[str, Any]:
    kept = clean_run(run)
    check_address(index, created_at)
    async with lock_for(platform.local):
        read = await read_history(platform.local)
        records = read.records
        record = records[int(index)] if int(index) < len(records) else None
        if record is None or record.role != "assistant" or record.fields.get("createdAt") != created_at:
            raise run_answer_gone()
        runs = with_run(list(record.fields.get("runs", [])), kept)
        records = [*records[: int(index)], record.with_fields(runs=runs), *records[int(index) + 1 :]]
        await write_history(platform.local, records, read)
    return {"saved": True, "runs": len(runs)}


async def handle_save_run(platform: Platform, payload: dict) -> dict[str, Any]:
    """`code.save_run {index, createdAt, run}`."""
    return await save_run(platform, payload.get("index"), payload.get("createdAt"), payload.get("run"))
