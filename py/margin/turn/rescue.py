"""Overflow rescue: a turn the provider refused as too long is retried once with its attached
pages shortened (docs/storage-model.md, "Request-side slimming"). `margin.turn.chat` runs the two
attempts; this module decides what the retry sends and what storage gets after it.

Rules:
1. A rescue is planned only for a `ContextOverflowError` (code "context_overflow") that came
   before any part of an answer, and only when `slimming.trim_for_overflow` can cut something;
   otherwise the turn fails with the provider's overflow sentence ("... Start a new session, or
   choose a model with a larger context.").
2. The retry happens once. If it overflows too, the turn fails with `too_long_even_shortened`
   (code "context_overflow"); any other failure of the retry is reported as itself.
3. Storage gets the shortened attachments ONLY with a successful retry's answer, in the same
   locked write (`apply`); a failed or stopped retry leaves the stored attachments whole.
4. `apply` works on a FRESH read: each shortened attachment replaces the stored record with the
   same `attachment.capturedAt` and `url`, and only when that record is still exactly the one
   the turn read (a summary written meanwhile, for example, wins: the record is left alone).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import MarginError
from ..providers.overflow import ContextOverflowError, too_long_even_shortened
from ..storage.history import Record
from . import slimming


@dataclass(frozen=True)
class Rescue:
    """The retry's records (`records`) and, for each shortened attachment, the stored version it
    replaces (`originals`) and its shortened version (`shortened`)."""

    records: list[Record]
    originals: list[Record]
    shortened: list[Record]


def plan(question: list[Record], failure: MarginError | None, language: str = "en") -> Rescue | None:
    """Rule 1: the rescue for this failure, or None when there is none to try (its notes in the
    model language)."""
    if not isinstance(failure, ContextOverflowError):
        return None
    records, indices = slimming.trim_for_overflow(question, failure.overflow, language)
    if not indices:
        return None
    return Rescue(records, [question[i] for i in indices], [records[i] for i in indices])


def retry_failure(failure: MarginError, model: str) -> MarginError:
    """Rule 2: what the user is told when the retry failed too."""
    if isinstance(failure, ContextOverflowError):
        return ContextOverflowError(too_long_even_shortened(model), failure.overflow)
    return failure


def _key(record: Record) -> tuple[object, object] | None:
    meta = record.fields.get("attachment")
    if not record.is_attachment or not isinstance(meta, dict):
        return None
    return meta.get("capturedAt"), meta.get("url")


def apply(current: list[Record], rescue: Rescue) -> list[Record]:
    """Rule 4: `current` (a fresh read) with the shortened attachments in place of unchanged ones."""
    replacements = {
        key: (original, short)
        for original, short in zip(rescue.originals, rescue.shortened, strict=True)
        if (key := _key(original)) is not None
    }
    out: list[Record] = []
    for record in current:
        key = _key(record)
        found = replacements.get(key) if key is not None else None
        out.append(found[1] if found is not None and found[0] == record else record)
    return out
