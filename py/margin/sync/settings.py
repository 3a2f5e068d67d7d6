"""What of the user's settings syncs, and its merge: one encrypted object for them all.

Invariants (docs/storage-model.md, "Sync"):
1. What syncs is the user's choices of OPTION_DEFAULTS (margin.storage.keys): the providers, each
   reduced to the fields the user chose (SYNCED_PROVIDER_FIELDS: never `apiKey`, nor what a
   machine learned about its server), the active provider, the language, the summary threshold,
   "Let the model run Python" and its time limit; the saved prompts (margin.settings.prompts),
   each with when it was last edited (`editedAt`, from `promptsEdited`); the MCP servers
   (margin.tools.servers), each reduced to SYNCED_SERVER_FIELDS: its address, name and tools with
   their "offered" and "Always allow" flags, never its Authorization header (a secret, as an API
   key is), nor this machine's id for it. Its hash (`digest`) tells a change.
2. Merge, from the base's hash B, this device's L and the server's R: the same is no change; one
   side changed: that side's; both changed: this device's (the last to sync wins, as a name does);
   a device's first sync (no B) takes the folder's, so turning sync on never overwrites the
   settings of the machines already syncing.
3. Settings that arrive are saved through `options.save`'s own checks (margin.settings.options),
   each provider with this machine's API key for the same id (none for a new one: the user types
   it here), and this machine's providers the incoming list lacks kept after it: providers are a
   union, so no configuration (nor its key) is lost, and one removed on one machine stays on the
   others. Only while this device's settings are still as the plan read them, under the lock. A
   refusal (a key the user did not allow over plain http here, say) skips them, changing nothing.
4. Prompts (by id) and servers (by address) merge item by item (margin.sync.merge.merge_items),
   against the base's hash of each item (`item_hashes`): one side's change travels; an edit
   beats a delete; a prompt edited on both sides keeps the later edit (`editedAt`, built-ins'
   hidden and menu flags too), a server changed on both this device's version. A server that
   arrives keeps this machine's Authorization header for the same address (none for a new one:
   the user types it on each machine) and this machine's id for it. Prompts arrive through
   `prompts.validate`, servers through `servers.servers_from_backup` (what Margin cannot read is
   left out): all checked before anything is written.
"""

from __future__ import annotations

import secrets
from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform
from ..settings import options, prompts
from ..storage.keys import MCP_SERVERS, OPTION_DEFAULTS, PROMPTS, PROMPTS_EDITED, PROVIDERS, lock_for
from ..storage.stored_values import canonical_hash, park
from ..tools import servers
from .merge import item_hash, merge_items

SYNCED_PROVIDER_FIELDS = (
    "id",
    "type",
    "name",
    "baseUrl",
    "model",
    "systemPrompt",
    "prices",
    "allowPlainHttpKey",
)
SYNCED_SERVER_FIELDS = ("url", "name", "tools")
# The lists merged item by item (rule 4), and the field that names an item.
LISTS = {PROMPTS: "id", MCP_SERVERS: "url"}


def synced(
    values: dict[str, Any],
    prompt_list: list[dict[str, Any]] | None = None,
    stamps: Any = None,
    server_list: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Rule 1: the part of the settings that syncs."""
    chosen = {key: values.get(key) for key in OPTION_DEFAULTS if key != PROVIDERS}
    chosen[PROVIDERS] = [
        {field: p[field] for field in SYNCED_PROVIDER_FIELDS if field in p}
        for p in values.get(PROVIDERS) or []
    ]
    known = stamps if isinstance(stamps, dict) else {}
    chosen[PROMPTS] = [
        {**p, "editedAt": known[p["id"]] if isinstance(known.get(p["id"]), int) else 0}
        for p in prompt_list or []
    ]
    chosen[MCP_SERVERS] = [{f: s[f] for f in SYNCED_SERVER_FIELDS} for s in server_list or []]
    return chosen


def digest(values: dict[str, Any]) -> str:
    return canonical_hash(values)


def item_hashes(values: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Rule 4's base: each prompt's and each server's hash, by list and name."""
    return {name: {item[key]: item_hash(item) for item in values[name]} for name, key in LISTS.items()}


async def read_synced(platform: Platform) -> dict[str, Any]:
    stamps = (await platform.local.get([PROMPTS_EDITED])).get(PROMPTS_EDITED)
    return synced(
        await options.read_options(platform),
        (await prompts.stored_prompts(platform)).value,
        stamps,
        await servers.read_servers(platform.local),
    )


def decide(base: str | None, here: str, there: str | None) -> str:
    """Rule 2: "push", "pull" or "" (nothing to do)."""
    if there is None:
        return "push"
    if here == there:
        return ""
    if base is None:
        return "pull"
    if there == base:
        return "push"
    if here == base:
        return "pull"
    return "push"


def _items(incoming: dict[str, Any], name: str) -> list[dict[str, Any]]:
    listed = incoming.get(name)
    key = LISTS[name]
    items = (
        [i for i in listed if isinstance(i, dict) and isinstance(i.get(key), str)]
        if isinstance(listed, list)
        else []
    )
    return list({i[key]: i for i in reversed(items)}.values())[::-1]  # one item a name, the first


def _later_edit(here: dict[str, Any], there: dict[str, Any]) -> dict[str, Any]:
    def when(prompt: dict[str, Any]) -> tuple[int, str]:
        stamp = prompt.get("editedAt")
        return (stamp if isinstance(stamp, int) else 0, item_hash(prompt))

    return there if when(there) > when(here) else here


def merge(
    base: dict[str, dict[str, str]], here: dict[str, Any], incoming: Any, action: str
) -> dict[str, Any] | None:
    """Rules 2 and 4: what both sides should hold (None: what arrived is not settings)."""
    if not isinstance(incoming, dict) or not isinstance(incoming.get(PROVIDERS), list):
        return None
    chosen = incoming if action == "pull" else here
    merged = {key: value for key, value in chosen.items() if key not in LISTS}
    for name, key in LISTS.items():
        merged[name] = merge_items(
            base.get(name, {}),
            here[name],
            _items(incoming, name),
            key,
            _later_edit if name == PROMPTS else lambda mine, theirs: mine,
            there_first=action == "pull",
        )
    return merged


def _servers_here(arrived: list[dict[str, Any]], ours: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rule 4: the servers that arrived, each with this machine's header and id for its address."""
    by_url = {s["url"]: s for s in ours}
    written = []
    for server in arrived:
        mine = by_url.get(server["url"])
        own = {
            "id": mine["id"] if mine else "mcp-" + secrets.token_hex(8),
            "authorization": mine["authorization"] if mine else "",
            "protocolVersion": mine["protocolVersion"] if mine else "",
        }
        written.append({**server, **own})
    return servers.servers_from_backup(written)[: servers.MAX_SERVERS]


async def apply(platform: Platform, incoming: dict[str, Any], seen: str) -> bool:
    """Rules 3 and 4. False when skipped (changed here meanwhile, or refused)."""
    async with lock_for(platform.local):
        here = await read_synced(platform)
        if digest(here) != seen:
            return False
        writes: dict[str, Any] = {}
        try:
            if incoming[PROMPTS] != here[PROMPTS]:
                writes[PROMPTS] = prompts.validate(incoming[PROMPTS])
                writes.update(park(PROMPTS, await prompts.stored_prompts(platform)))
                writes[PROMPTS_EDITED] = {
                    p["id"]: p["editedAt"] for p in incoming[PROMPTS] if isinstance(p.get("editedAt"), int)
                }
            if incoming[MCP_SERVERS] != here[MCP_SERVERS]:
                writes[MCP_SERVERS] = _servers_here(
                    incoming[MCP_SERVERS], await servers.read_servers(platform.local)
                )
            chosen = {key: value for key, value in incoming.items() if key not in LISTS}
            if chosen != {key: value for key, value in here.items() if key not in LISTS}:
                values = await options.read_options(platform)
                keys = {p.get("id"): p.get("apiKey", "") for p in values[PROVIDERS]}
                providers = [
                    {**p, "apiKey": keys.get(p.get("id"), "")}
                    for p in chosen[PROVIDERS]
                    if isinstance(p, dict)
                ]
                arrived = {p.get("id") for p in providers}
                providers += [p for p in values[PROVIDERS] if p.get("id") not in arrived]
                await options.save_while_locked(platform, {**chosen, PROVIDERS: providers})
        except MarginError:
            return False
        if writes:
            await platform.local.set(writes)
    return True
