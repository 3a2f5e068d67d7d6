"""The agent turn (docs/storage-model.md, "Agent providers"): with a provider that keeps the
conversation (`openai-responses`), a turn sends only what is new since the provider's last answer.

Rules:
1. `build_agent_turn(records)` = (the `responseId` of the last answer that has one, everything
   after that answer): the question's trailing page-context run and the question itself, plus any
   answer without a `responseId` (stopped, or from another provider) and what came with it. With
   no such answer it is (None, all records): the full history.
   Given the active provider's id, that answer counts only when its `responseProviderId` is
   that id: an answer whose response another provider stored means (None, all records), the
   full history without a notice (the other provider's response id would only be refused).
   An answer stored without `responseProviderId` (before it existed) is chained as before.
2. Regenerate and Edit need nothing special: the records before the question decide which earlier
   response the new one branches from.
3. A provider that has forgotten the conversation (`conversation_forgotten`) is sent the full
   history once, without `previous_response_id`, and `on_replay` is called first so the user is
   told; a second failure is the turn's error.
4. Within a turn's tool loop (margin.sandbox.tool_loop), the answer being written is the last record,
   `toolRounds` only and no `responseId`: each request of the loop continues the previous
   answer's response with the question and the rounds so far (`function_call` and
   `function_call_output` items), and the final response, which holds them all, is the one
   the answer stores.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..base.errors import ProviderError
from ..platform.ports import Transport
from ..storage.history import Record

AGENT_PROVIDER_TYPES = ("openai-responses",)
FORGOTTEN = "conversation_forgotten"
# What the user is told (rule 3), in the words of the turn's language (margin.i18n.catalogue).
REPLAY_NOTICE_KEY = "py_replay_notice"


def is_agent_provider(provider: dict[str, Any]) -> bool:
    return provider.get("type") in AGENT_PROVIDER_TYPES


def build_agent_turn(
    records: list[Record], provider_id: str | None = None
) -> tuple[str | None, list[Record]]:
    """Rule 1."""
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        response_id = record.fields.get("responseId")
        if record.role == "assistant" and isinstance(response_id, str) and response_id:
            made_by = record.fields.get("responseProviderId")
            if provider_id is not None and made_by is not None and made_by != provider_id:
                return None, list(records)
            return response_id, records[index + 1 :]
    return None, list(records)


async def open_agent_stream(
    module: ModuleType,
    transport: Transport,
    provider: dict[str, Any],
    records: list[Record],
    on_replay: Callable[[], None],
    tools: Any = None,
) -> Any:
    """Rules 1, 3 and 4: the stream of the new turn, replayed in full once if the provider forgot."""
    previous, new_records = build_agent_turn(records, provider.get("id"))
    if previous is None:
        return await module.open_stream(transport, provider, records, tools=tools)
    try:
        return await module.open_stream(
            transport, provider, new_records, previous_response_id=previous, tools=tools
        )
    except ProviderError as error:
        if error.code != FORGOTTEN:
            raise
    on_replay()
    return await module.open_stream(transport, provider, records, tools=tools)
