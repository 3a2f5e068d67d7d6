"""An answer's versions: what Regenerate and Edit & resend replaced, kept on the answer record.

Concept. `history` stays one flat list of records, one send one bubble (margin.storage.history).
An answer record may carry `versions`: its OTHER versions, in the order they were made, and
`versionAt`: where the shown one stands among them all (0-based; absent = last). The record's
`content` (and its own fields: model, usage, runs, toolRounds, ...) is always the shown version,
so what every old reader, the request builder and the session digest see is the shown answer.

Rules (docs/storage-model.md, "An answer's versions"):
1. A version is `{content, ...the answer's fields}` (no role; never `versions` or `versionAt`),
   plus `question` (the user record it answered, when that is not the question shown before the
   answer) and `later` (the records that followed that question and answer when another version
   took their place, when there were any). All versions are `all_versions(answer)`: the stored
   list with the shown one put back at `versionAt`.
2. Regenerate: the answer being replaced and all its versions become the PENDING versions of its
   question (the question record's `versions`, its only use there) until the new answer is stored;
   `settle` then moves them onto the new answer, which is the last version ("3 of 3"). A turn that
   stores no answer leaves them on the question: nothing is lost, and choosing a version there
   puts it back as the answer.
3. Edit & resend: the edited question's answer (with all its versions) becomes the pending
   versions of the NEW question, each version that answered the old question carrying it as its
   `question`, the shown one also carrying the turns that followed it (`later`). A question that
   had no answer and nothing after it leaves no version (nothing was answered). Attachments that
   wait for the next question (after the last question and its answer) keep waiting: the edited
   question is the next one.
4. Choosing a version (`choose`) makes it the stored answer: its `question` becomes the question
   shown, its `later` the records after it; the version it replaces takes the shown question (when
   another one comes in) and the records after the pair (but the waiting attachments) with it.
   Versions keep their order; no version is ever dropped.
5. Pixels inside versions are never destroyed: `walk_contents` and `map_contents` reach every
   content list a record holds, its versions' included, so the originals' collector counts their
   references and a session body inlines them (margin.images.originals rules 3 and 4).
6. Reading (margin.storage.stored_values rule 3): a `versions` value that is not a list is dropped,
   a version that cannot be read is left out, a `versionAt` out of range is dropped; the answer
   always stays, and the raw list is parked.
7. Depth: chrome.storage keeps 100 levels of nesting; a change that would nest `history` deeper than
   `MAX_DEPTH` (versions inside the turns kept with versions, many times over) is refused with a
   sentence (`versions_too_deep`), and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..base.errors import MarginError

VERSIONS = "versions"
VERSION_AT = "versionAt"
QUESTION = "question"
LATER = "later"
# Fields a version never carries; the list and position live on the answer only.
_NOT_IN_A_VERSION = ("role", VERSIONS, VERSION_AT)
# chrome.storage keeps 100 levels (docs/storage-model.md, "Reading stored values"); room is left.
MAX_DEPTH = 90


def _plain(record_json: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record_json.items() if k not in _NOT_IN_A_VERSION}


def version_of(answer: Any, *, question: Any = None, later: list[Any] | None = None) -> dict[str, Any]:
    """The version an answer record (or None: no answer, "") becomes (rule 1)."""
    version: dict[str, Any] = _plain(answer.to_json()) if answer is not None else {"content": ""}
    if question is not None:
        version[QUESTION] = question_json(question)
    if later:
        version[LATER] = [r.to_json() for r in later]
    return version


def question_json(question: Any) -> dict[str, Any]:
    """A question as a version keeps it: the record without pending versions."""
    return {k: v for k, v in question.to_json().items() if k not in (VERSIONS, VERSION_AT)}


def stored_versions(record: Any) -> list[dict[str, Any]]:
    value = record.fields.get(VERSIONS)
    return list(value) if isinstance(value, list) else []


def all_versions(answer: Any) -> tuple[list[dict[str, Any]], int]:
    """Every version of `answer` in order, the shown one included, and its position (rule 1)."""
    others = stored_versions(answer)
    at = answer.fields.get(VERSION_AT)
    at = at if isinstance(at, int) and 0 <= at <= len(others) else len(others)
    return [*others[:at], version_of(answer), *others[at:]], at


def without_versions(record: Any) -> Any:
    fields = {k: v for k, v in record.fields.items() if k not in (VERSIONS, VERSION_AT)}
    return type(record)(record.role, record.content, fields)  # a margin.storage.history Record


def with_pending(question: Any, pending: list[dict[str, Any]]) -> Any:
    """The question carrying `pending` versions for its coming answer (rule 2)."""
    plain = without_versions(question)
    return plain.with_fields(**{VERSIONS: pending}) if pending else plain


def settle(question: Any, answer: Any) -> tuple[Any, Any]:
    """Rule 2: the question's pending versions moved onto its new answer, shown last."""
    pending = stored_versions(question)
    if not pending:
        return question, answer
    shown = without_versions(answer)
    return without_versions(question), shown.with_fields(**{VERSIONS: pending, VERSION_AT: len(pending)})


def waiting_from(records: list[Any]) -> int:
    """Where the attachments that wait for the next question start (after the last bubble)."""
    end = len(records)
    while end > 0 and records[end - 1].is_attachment:
        end -= 1
    return end


def _answer_after(records: list[Any], index: int) -> Any:
    after = index + 1
    if after < len(records) and records[after].role == "assistant":
        return records[after]
    return None


def regenerate_pending(question: Any, answer: Any) -> Any:
    """Rule 2: the question with the replaced answer's versions pending."""
    if answer is None:
        return question
    versions, _ = all_versions(answer)
    return with_pending(question, [*stored_versions(question), *versions])


def edit_pending(records: list[Any], index: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """Rule 3: the pending versions the edited question's replacement carries, and the
    attachments that keep waiting for the next question."""
    question = records[index]
    answer = _answer_after(records, index)
    end = max(waiting_from(records), index + 1)
    later = records[index + (2 if answer is not None else 1) : end]
    versions = stored_versions(question)
    if answer is not None:
        answered, at = all_versions(answer)
        shown = len(versions) + at
        versions += answered
        if later:
            versions[shown] = {**versions[shown], LATER: [r.to_json() for r in later]}
    elif later:
        versions.append(version_of(None, later=later))
    asked = question_json(question)
    pending = [v if QUESTION in v else {**v, QUESTION: asked} for v in versions]
    return pending, records[end:]


def choose(records: list[Any], index: int, target: int) -> list[Any]:
    """Rule 4: the conversation with version `target` of the answer at `index` shown (or of the
    pending versions of the unanswered question at `index`). ValueError when there is none."""
    record = records[index]
    if record.role == "assistant" and index > 0 and records[index - 1].is_question:
        at_question, answer = index - 1, record
    elif record.is_question and stored_versions(record) and _answer_after(records, index) is None:
        at_question, answer = index, None
    else:
        raise ValueError("no versions here")
    question = records[at_question]
    end = max(waiting_from(records), at_question + (2 if answer is not None else 1))
    later = records[at_question + (2 if answer is not None else 1) : end]
    pending = stored_versions(question)
    if answer is not None:
        shown_list, at = all_versions(answer)
        versions, shown = [*pending, *shown_list], len(pending) + at
    else:
        versions, shown = list(pending), -1
        if later:
            versions.append(version_of(None))
            shown = len(versions) - 1
    if not 0 <= target < len(versions):
        raise ValueError("no such version")
    if target == shown:
        return records
    asked = question_json(question)
    if shown >= 0:
        versions[shown] = {**versions[shown], **({LATER: [r.to_json() for r in later]} if later else {})}
    chosen = versions[target]
    Record = type(record)  # margin.storage.history's, which imports this module
    new_question = Record.from_json(chosen[QUESTION]) if QUESTION in chosen else without_versions(question)
    new_asked = question_json(new_question)
    others: list[dict[str, Any]] = []
    for i, version in enumerate(versions):
        if i == target:
            continue
        answered = version.get(QUESTION, asked)
        plain = {k: v for k, v in version.items() if k != QUESTION}
        others.append(plain if answered == new_asked else {**plain, QUESTION: answered})
    body = {k: v for k, v in chosen.items() if k not in (QUESTION, LATER)}
    new_answer = Record.from_json({**body, "role": "assistant", VERSIONS: others, VERSION_AT: target})
    restored = [Record.from_json(r) for r in chosen.get(LATER, [])]
    return [*records[:at_question], new_question, new_answer, *restored, *records[end:]]


# -- rule 5: every content list a record holds -------------------------------------------------------


def walk_contents(record: Any) -> Iterator[list[Any]]:
    """Every content list (of parts) inside a raw stored record, its versions' included."""
    if not isinstance(record, dict):
        return
    if isinstance(record.get("content"), list):
        yield record["content"]
    versions = record.get(VERSIONS)
    for version in versions if isinstance(versions, list) else []:
        if not isinstance(version, dict):
            continue
        if isinstance(version.get("content"), list):
            yield version["content"]
        yield from walk_contents(version.get(QUESTION))
        later = version.get(LATER)
        for nested in later if isinstance(later, list) else []:
            yield from walk_contents(nested)


def map_contents(record: Any, change: Callable[[list[Any]], list[Any]]) -> Any:
    """The raw record with `change` applied to every content list it holds (rule 5); the same
    object when nothing changed (the input is never mutated)."""
    if not isinstance(record, dict):
        return record
    out = record
    content = record.get("content")
    if isinstance(content, list) and (changed := change(content)) is not content:
        out = {**out, "content": changed}
    versions = record.get(VERSIONS)
    if isinstance(versions, list):
        mapped = [_map_version(v, change) for v in versions]
        if any(a is not b for a, b in zip(mapped, versions, strict=True)):
            out = {**out, VERSIONS: mapped}
    return out


def _map_version(version: Any, change: Callable[[list[Any]], list[Any]]) -> Any:
    if not isinstance(version, dict):
        return version
    out = version
    content = version.get("content")
    if isinstance(content, list) and (changed := change(content)) is not content:
        out = {**out, "content": changed}
    if QUESTION in version and (question := map_contents(version[QUESTION], change)) is not version[QUESTION]:
        out = {**out, QUESTION: question}
    later = version.get(LATER)
    if isinstance(later, list):
        mapped = [map_contents(r, change) for r in later]
        if any(a is not b for a, b in zip(mapped, later, strict=True)):
            out = {**out, LATER: mapped}
    return out


# -- rule 7 ------------------------------------------------------------------------------------------


def depth(value: Any) -> int:
    """Levels of nesting of a JSON value, as chrome.storage counts them (a scalar is 0)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item)
    return deepest


def check_depth(records: list[Any]) -> None:
    """Rule 7: refuse a conversation chrome.storage could not keep whole."""
    if depth([r.to_json() for r in records]) > MAX_DEPTH:
        raise MarginError.said("versions_too_deep", "py_error_versions_too_deep")
