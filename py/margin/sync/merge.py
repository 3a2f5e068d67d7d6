"""The merge rules of sync: pure, one session at a time, from three versions (docs/storage-model.md,
"Sync: merge rules").

For each session id: the base B (the manifest this device last agreed with), the local L (its
index entry, or None when it is not saved here) and the remote R (the server's record, maybe a
tombstone). A side "changed" what differs from B. Rules:
1. A body changed on one side only travels to the other. The same body on both sides is no change.
2. A body changed on both sides (different hashes): the later saved (`savedAt`; equal times: the
   larger hash) stays the session; the other is kept as a new session named "<name> (conflict
   copy)" whose id is derived from the session's and the loser's hash, so a sync run again after
   a crash makes the same copy, never a second one.
3. Name (with `named`) and pin merge apart from the body: the changed side's value wins; both
   changed: this device's (the last to sync wins, which converges because every sync commits on
   top of the manifest it read).
4. A delete on one side and any change on the other keeps the changed session (nothing is lost).
   A delete with no change on the other side deletes it there too; the tombstone stays in the
   manifest.
5. A session deleted here but still in its undo window is not deleted yet: it counts as unchanged.
The outcome is a `Plan`: what to upload, download, delete or rename here, and the records of the
manifest to commit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..storage.stored_values import canonical_hash
from .manifest import Local, Meta, Record, Records

CONFLICT_ID_LENGTH = 16


@dataclass(frozen=True)
class Push:
    """Upload this device's session `source` as session `sid` (with `meta`)."""

    sid: str
    source: str
    meta: Meta


@dataclass(frozen=True)
class Pull:
    """Download `record` and save it here as session `sid`. `copy`: the conflict copy of the
    server's version, which must be named by the manifest before the session's own record stops
    naming those files (the engine moves it first)."""

    sid: str
    record: Record
    copy: bool = False


@dataclass
class Plan:
    pushes: list[Push] = field(default_factory=list)
    pulls: list[Pull] = field(default_factory=list)
    metas: dict[str, Meta] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    # The manifest to commit; a pushed session's record gets its files once uploaded.
    records: Records = field(default_factory=dict)
    # The local view each action was planned from (the engine re-checks it before writing).
    seen: dict[str, Local | None] = field(default_factory=dict)

    @property
    def changes_here(self) -> int:
        return len(self.pulls) + len(self.metas) + len(self.deletes)


def conflict_id(sid: str, loser_hash: str) -> str:
    return hashlib.sha256(f"{sid}:{loser_hash}".encode()).hexdigest()[:CONFLICT_ID_LENGTH]


def _body_changed(base: Record | None, hash_: str) -> bool:
    return base is None or base.deleted or base.body_hash != hash_


def _merge_meta(base: Record | None, local: Meta, remote: Meta) -> Meta:
    """Rule 3, field by field."""
    b = base.meta if base is not None and not base.deleted else None
    name_local = b is None or (local.name, local.named) != (b.name, b.named)
    name_remote = b is not None and (remote.name, remote.named) != (b.name, b.named)
    pin_local = b is None or local.pinned != b.pinned
    pin_remote = b is not None and remote.pinned != b.pinned
    name, named = (remote.name, remote.named) if name_remote and not name_local else (local.name, local.named)
    pinned = remote.pinned if pin_remote and not pin_local else local.pinned
    return Meta(name, named, pinned)


def _local_record(local: Local, meta: Meta) -> Record:
    """The record a push will commit (its files are filled in after the upload)."""
    return Record(
        (), 0, local.body_hash, local.saved_at, local.created_at, meta.name, meta.named, meta.pinned
    )


def plan(
    base: Records,
    local: dict[str, Local],
    remote: Records,
    *,
    pending: set[str],
    now: int,
    copy_name: Callable[[str], str],
) -> Plan:
    """The merge of every session id (rules 1-5). `pending`: ids deleted here within the undo
    window; `copy_name(name)` the name of a conflict copy."""
    result = Plan()
    for sid in sorted(set(base) | set(local) | set(remote)):
        b, r = base.get(sid), remote.get(sid)
        lo = local.get(sid)
        result.seen[sid] = lo
        if sid in pending and lo is None:
            if r is not None:
                result.records[sid] = r
            continue
        _one(result, sid, b, lo, r, local, remote, now, copy_name)
    return result


def _one(
    result: Plan,
    sid: str,
    b: Record | None,
    lo: Local | None,
    r: Record | None,
    local: dict[str, Local],
    remote: Records,
    now: int,
    copy_name: Callable[[str], str],
) -> None:
    live_r = r if r is not None and not r.deleted else None
    if lo is None and live_r is None:
        kept = r or (b.tombstone(now) if b is not None and not b.deleted else b)
        if kept is not None:
            result.records[sid] = kept
        return
    if lo is None:
        assert live_r is not None
        if b is not None and not b.deleted and not _remote_changed(b, live_r):
            result.records[sid] = live_r.tombstone(now)  # rule 4: deleted here, unchanged there
        else:
            result.pulls.append(Pull(sid, live_r))  # created there, or changed there (beats a delete)
            result.records[sid] = live_r
        return
    if live_r is None:
        local_changed = b is None or b.deleted or _local_changed(b, lo)
        if r is not None and not local_changed:
            result.deletes.append(sid)  # rule 4: deleted there, unchanged here
            result.records[sid] = r
        else:
            result.pushes.append(Push(sid, sid, lo.meta))
            result.records[sid] = _local_record(lo, lo.meta)
        return
    meta = _merge_meta(b, lo.meta, live_r.meta)
    local_changed = _body_changed(b, lo.body_hash)
    remote_changed = _body_changed(b, live_r.body_hash)
    same_body = lo.body_hash == live_r.body_hash
    if same_body or (local_changed and not remote_changed):
        if meta != lo.meta:
            result.metas[sid] = meta
        if same_body:
            result.records[sid] = live_r.with_meta(meta)
        else:
            result.pushes.append(Push(sid, sid, meta))
            result.records[sid] = _local_record(lo, meta)
        return
    if remote_changed and not local_changed:
        result.pulls.append(Pull(sid, live_r.with_meta(meta)))
        result.records[sid] = live_r.with_meta(meta)
        return
    # Rule 2: both changed.
    local_wins = (lo.saved_at, lo.body_hash) > (live_r.saved_at, live_r.body_hash)
    if local_wins:
        result.pushes.append(Push(sid, sid, meta))
        result.records[sid] = _local_record(lo, meta)
        if meta != lo.meta:
            result.metas[sid] = meta
        copy = conflict_id(sid, live_r.body_hash)
        if copy not in local and copy not in remote:
            copy_record = replace(live_r, name=copy_name(live_r.name), named=True, pinned=False)
            result.pulls.append(Pull(copy, copy_record, copy=True))
            result.records[copy] = copy_record
    else:
        copy = conflict_id(sid, lo.body_hash)
        if copy not in local and copy not in remote:
            copy_meta = Meta(copy_name(lo.meta.name), True, False)
            result.pushes.append(Push(copy, sid, copy_meta))
            result.records[copy] = _local_record(lo, copy_meta)
        result.pulls.append(Pull(sid, live_r.with_meta(meta)))
        result.records[sid] = live_r.with_meta(meta)


def _local_changed(b: Record, lo: Local) -> bool:
    return lo.body_hash != b.body_hash or lo.meta != b.meta


def _remote_changed(b: Record, r: Record) -> bool:
    return r.body_hash != b.body_hash or r.meta != b.meta


# -- the settings' lists: saved prompts by id, MCP servers by address (margin.sync.settings) -------


def item_hash(item: dict) -> str:
    return canonical_hash(item)


def merge_items(
    base: dict[str, str],
    here: list[dict],
    there: list[dict],
    key: str,
    both_changed: Callable[[dict, dict], dict],
    *,
    there_first: bool = False,
) -> list[dict]:
    """Rules 1 and 4 for the items of a list, by `key`, against the base's hashes (`item_hash`):
    an item changed on one side only is that side's; changed on both (or made on both with no
    base), `both_changed(here's, there's)`; a delete against an unchanged item deletes it, against
    a change keeps the change. The merged list is in this device's order (`there_first`: the
    server's), the items only the other side has after them."""
    mine = {item[key]: item for item in here}
    theirs = {item[key]: item for item in there}
    order = [*theirs, *mine] if there_first else [*mine, *theirs]
    merged = []
    for name in dict.fromkeys(order):
        one, other, was = mine.get(name), theirs.get(name), base.get(name)
        if one is not None and other is not None:
            one_hash, other_hash = item_hash(one), item_hash(other)
            if one_hash == other_hash or other_hash == was:
                merged.append(one)
            elif one_hash == was:
                merged.append(other)
            else:
                merged.append(both_changed(one, other))
            continue
        only = one if one is not None else other
        assert only is not None
        if was is None or item_hash(only) != was:
            merged.append(only)  # made on that side, or changed there and deleted on the other
    return merged
