"""`answer.choose_version {index, createdAt, count, version}`: "Previous version" / "Next version".

The versions themselves (what they hold, how Regenerate and Edit make them, how choosing one
rearranges the conversation) are margin.storage.versions; this request writes `history`, so it
lives here, beside the turn whose rules it keeps.

Rules:
1. The record is named by its index in `history` and its `createdAt`, and `count` is how many
   versions the panel showed: the answer (or the unanswered question holding pending versions)
   must still be that record with that many versions, else `version_gone` and nothing is written.
2. While a turn runs, nothing is chosen (`turn_in_progress`): the turn stores its answer into the
   conversation it asked about (margin.turn.chat rule 5), so a switch meanwhile would be lost or
   make the answer land after another question.
3. Under the history lock, one write: the chosen version becomes the stored answer (its content is
   what the next request sends), the others stay, in order (margin.storage.versions rule 4); a
   conversation chrome.storage could not keep whole is refused (`versions_too_deep`).
4. Choosing the version already shown writes nothing.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform
from ..storage import versions
from ..storage.history import read_history, write_history
from ..storage.keys import lock_for, turn_running


def version_gone() -> MarginError:
    return MarginError.said("version_gone", "py_error_version_gone")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(record: Any) -> int:
    if record.role == "assistant":
        return len(versions.all_versions(record)[0])
    return len(versions.stored_versions(record))


async def choose_version(
    platform: Platform, index: Any, created_at: Any, count: Any, version: Any
) -> dict[str, Any]:
    if not (_whole(index) and _whole(count) and _whole(version)):
        raise MarginError.said("bad_payload", "py_error_which_version")
    if turn_running():  # rule 2
        raise MarginError.said("turn_in_progress", "py_error_turn_in_progress")
    async with lock_for(platform.local):
        read = await read_history(platform.local)
        records = read.records
        record = records[index] if index < len(records) else None
        if record is None or record.fields.get("createdAt") != created_at or _count(record) != count:
            raise version_gone()  # rule 1
        try:
            chosen = versions.choose(records, index, version)
        except ValueError:
            raise version_gone() from None
        if chosen is records:  # rule 4
            return {"chosen": version, "changed": False}
        versions.check_depth(chosen)
        await write_history(platform.local, chosen, read)
    return {"chosen": version, "changed": True}


async def handle_choose_version(platform: Platform, payload: dict) -> dict[str, Any]:
    """`answer.choose_version {index, createdAt, count, version}`."""
    return await choose_version(
        platform, payload.get("index"), payload.get("createdAt"), payload.get("count"), payload.get("version")
    )
