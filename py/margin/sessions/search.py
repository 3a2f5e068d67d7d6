"""What `session.list` shows: the order of the sessions, search over the index, previews and
highlights. Reads entries only (margin.sessions.index), never storage.

Rules (numbered as for every sessions module: 1-3 are in margin.sessions.index, 4-5 in
margin.sessions.actions):
6. Search is case- and diacritics-insensitive in every script: both sides are folded by `fold()`
   (NFKD, lowercase + the ß/final-sigma/iota folds, NFKD, marks dropped), then every word of the
   query must occur as a substring of the folded name + digest (substring matching also serves
   CJK, which has no spaces). The name is the one the user reads (`searched_name`): an untitled
   session (margin.sessions.entries rule 3) is matched and highlighted as the catalogue's word in
   the language of the moment, never as its stored English sentinel; a row still carries the
   stored name (the panel says it again, in its own language). Where it runs: in the side
   panel's search worker, in JS, over the index the panel read and the digests' IndexedDB copy
   (extension/sessions/search.js and search_engine.js, same fold, same results, the panel handing
   over its untitled word; tests compare both with this module): Python here takes seconds per
   query over 1,000 full digests, the panel answers each keystroke in milliseconds. This Python
   search serves `session.list {query}` (whose handler loads the user's language first) and the
   tests; tests keep the two in step.
   The digests come by address (`sessionDigest_<id>`, margin.sessions.index rule 3); without a
   query the list needs none: each preview is the entry's `digestHead`.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from ..base.sentences import Sentence, say
from .index import DIGEST_HEAD, IndexEntry, shown_name

PREVIEW_LENGTH = DIGEST_HEAD


# -- fold ----------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _mark_table() -> dict[int, None]:
    return {cp: None for cp in range(0x110000) if unicodedata.category(chr(cp)).startswith("M")}


# Case folds that lowercasing alone misses; JS's toLowerCase() agrees with str.lower() otherwise.
_EXTRA_FOLDS = str.maketrans({"ß": "ss", "ς": "σ", "\u0345": "ι"})


def fold(text: str) -> str:
    """Case- and diacritics-insensitive form: NFKD, lowercase + the few extra case folds (ß -> ss,
    final sigma, iota subscript), NFKD again, then every combining mark (category M) dropped.

    Defined so that JS computes the very same string with String.prototype.normalize and
    toLowerCase (extension/sessions/search.js `fold`; tests/unit/test_sessions.py compares the two
    over every code point). It is character-wise: fold(a + b) == fold(a) + fold(b), which
    `fold_with_map` relies on.
    """
    if text.isascii():
        return text.lower()
    lowered = unicodedata.normalize("NFKD", text).lower().translate(_EXTRA_FOLDS)
    return unicodedata.normalize("NFKD", lowered).translate(_mark_table())


def fold_with_map(text: str) -> tuple[str, list[int]]:
    """`fold(text)` and, for each folded character, the index of the character it came from."""
    pieces: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        piece = fold(char)
        pieces.append(piece)
        origin.extend([index] * len(piece))
    return "".join(pieces), origin


# -- matching, previews, highlights ----------------------------------------------------------


def query_words(query: str) -> list[str]:
    return fold(query or "").split()


def searched_name(entry: IndexEntry) -> str:
    """Rule 6: the name search matches and highlights, the one the user reads (`shown_name`, said
    in the language `catalogue.ensure` last loaded). extension/sessions/search.js `searchedName`
    is the same rule, given the word by the panel."""
    name = shown_name(entry)
    return say(name) if isinstance(name, Sentence) else name


def matches(entry: IndexEntry, words: list[str], digest: str) -> bool:
    haystack = fold(searched_name(entry)) + "\n" + fold(digest)
    return all(word in haystack for word in words)


def _ranges(text: str, words: list[str]) -> list[list[int]]:
    """Where the words occur in `text`, as merged [start, end) ranges of `text`'s own indexes."""
    folded, origin = fold_with_map(text)
    spans: list[tuple[int, int]] = []
    for word in words:
        start = folded.find(word)
        while start >= 0:
            spans.append((origin[start], origin[start + len(word) - 1] + 1))
            start = folded.find(word, start + len(word))
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _one_line(text: str) -> str:
    return re.sub(r"\s", " ", text)  # one character for one: highlight offsets stay valid


def _first_match_offset(digest: str, words: list[str]) -> int | None:
    """The index in `digest` of the earliest occurrence of any word, or None."""
    folded = fold(digest)
    found = [p for p in (folded.find(w) for w in words) if p >= 0]
    if not found:
        return None
    target = min(found)
    if len(folded) == len(digest) and digest.isascii():
        return target
    # fold is character-wise: walk chunks to the one holding the match, then characters.
    position = 0
    chunk_size = 2048
    for chunk_start in range(0, len(digest), chunk_size):
        chunk = digest[chunk_start : chunk_start + chunk_size]
        folded_chunk = fold(chunk)
        if position + len(folded_chunk) > target:
            _, origin = fold_with_map(chunk)
            return chunk_start + origin[target - position]
        position += len(folded_chunk)
    return None


def preview_for(digest: str, words: list[str]) -> tuple[str, list[list[int]]]:
    offset = _first_match_offset(digest, words) if words else None
    if offset is None:
        return _one_line(digest[:PREVIEW_LENGTH]).strip(), []
    start = max(0, offset - 40)
    if start > 0:
        space = digest.find(" ", start, offset)
        start = space + 1 if space >= 0 else start
    excerpt = _one_line(digest[start : start + PREVIEW_LENGTH])
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + PREVIEW_LENGTH < len(digest) else ""
    preview = prefix + excerpt + suffix
    return preview, _ranges(preview, words)


# -- the list ----------------------------------------------------------------------------------


def sort_entries(entries: list[IndexEntry]) -> list[IndexEntry]:
    """Pinned first, then the most recently saved (or created)."""
    return sorted(entries, key=lambda e: (not e.pinned, -e.last_active, e.id))


def list_view(
    entries: list[IndexEntry], query: str = "", digests: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The rows for `query`; `digests` (id -> digest) is needed only when the query has words.
    `name` is the stored name; `highlights.name` are ranges of the name the user reads
    (`searched_name`)."""
    words = query_words(query)
    text = (lambda e: (digests or {}).get(e.id, "")) if words else (lambda e: e.digest_head)
    shown = [e for e in entries if matches(e, words, text(e))] if words else entries
    result = []
    for entry in sort_entries(shown):
        preview, preview_ranges = preview_for(text(entry), words)
        result.append(
            {
                "id": entry.id,
                "name": entry.name,
                "named": entry.named,
                "createdAt": entry.created_at,
                "savedAt": entry.saved_at,
                "pinned": entry.pinned,
                "preview": preview,
                "damaged": bool(entry.damaged),
                "damagedReason": entry.damaged,
                "highlights": {
                    "name": _ranges(searched_name(entry), words) if words else [],
                    "preview": preview_ranges,
                },
            }
        )
    return result
