"""What `session.list` shows: the order of the sessions, search over the index, previews and
highlights. Reads entries only (margin.sessions.index), never storage.

Rules (numbered as for every sessions module: 1-3 are in margin.sessions.index, 4-5 in
margin.sessions.actions):
6. Search is case- and diacritics-insensitive in every script: both sides are folded by `fold()`
   (NFKD, lowercase + the ß/final-sigma/iota folds, NFKD, marks dropped), then every word of the
   query must occur in the folded name + digest where a word starts (`find_word`: "paris" finds
   "Paris" and "Paris-Match", never "comparison"; "rray" does not find "array"), as people expect
   of a search box. In scripts written without spaces (`SPACELESS`: CJK, kana, Hangul, Thai,
   Khmer, ...) a word may start anywhere, so there it is a substring match; a query word that does
   not start with a letter or digit ("#tag", ".js") matches anywhere too. Highlights mark the
   same matches. A preview is plain text (`plain_text`): the Markdown the answers are written in
   (`**`, headings, bullets, quotes, table bars and rules, links, images, fences, backticks) and
   the "[Page context]" marker of an attachment's header are taken out before the highlights are
   found in it. The list's time and order are when a
   conversation was last used (`IndexEntry.active_at`: its last message), not when it was saved.
   The name is the one the user reads (`searched_name`): an untitled
   session (margin.sessions.entries rule 3) is matched and highlighted as the catalogue's word in
   the language of the moment, never as its stored English sentinel; a row still carries the
   stored name (the panel says it again, in its own language). Where it runs: in the side
   panel's search worker, in JS, over the index the panel read and the digests' IndexedDB copy
   (extension/panel/sessions/search.js and search_engine.js, same fold, same results, the panel handing
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
from ..storage.history import PAGE_CONTEXT_PREFIX
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


# -- where a word starts (extension/panel/sessions/search.js `SPACELESS`, `isWordChar`, `findWord`)

# Scripts written without spaces between words (Thai, Lao, Tibetan, Myanmar, Khmer, Hangul jamo and
# syllables, kana, CJK ideographs and their symbols): a query word may start anywhere in them.
SPACELESS = (
    (0x0E00, 0x0EFF),
    (0x0F00, 0x0FFF),
    (0x1000, 0x109F),
    (0x1100, 0x11FF),
    (0x1780, 0x17FF),
    (0x2E80, 0x2FDF),
    (0x3000, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF65, 0xFFDC),
    (0x20000, 0x3FFFF),
)


def is_spaceless(char: str) -> bool:
    cp = ord(char)
    return any(low <= cp <= high for low, high in SPACELESS)


def is_word_char(char: str) -> bool:
    """A letter or a digit (Unicode categories L and N)."""
    if char.isascii():
        return char.isalnum()
    return unicodedata.category(char)[0] in "LN"


def _starts_word(text: str, at: int) -> bool:
    if at == 0:
        return True
    first, before = text[at], text[at - 1]
    return not is_word_char(before) or not is_word_char(first) or is_spaceless(before) or is_spaceless(first)


def find_word(text: str, word: str, start: int = 0) -> int:
    """The first index >= `start` where `word` occurs in `text` at a word's start (rule 6), or -1."""
    at = text.find(word, start)
    while at >= 0 and not _starts_word(text, at):
        at = text.find(word, at + 1)
    return at


# -- plain text: a preview without the Markdown (extension/panel/sessions/search.js `plainText`) ---

_FENCE_LINE = re.compile(r"[ \t]*(?:`{3,}|~{3,})")
_RULE_LINE = re.compile(
    r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$"
    r"|[ \t]*(?:\*[ \t]*){3,}$|[ \t]*(?:_[ \t]*){3,}$"
)
_LINE_START = re.compile(r"[ \t]*(?:>[ \t]?)*[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+(?:\[[ xX]\][ \t]+)?)?")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)")
_CELL_BAR = re.compile(r"(?<![^ \t|])\|(?![^ \t|])")
_EMPHASIS = re.compile(r"[*_]+")


def _drop_emphasis(line: str) -> str:
    """Emphasis markers go; a run of * or _ stays between two letters or digits (snake_case, 2*3;
    not in a script without spaces, where words touch) and between two blanks (2 * 3)."""

    def keep_or_drop(match: re.Match[str]) -> str:
        start, end = match.span()
        before = line[start - 1] if start > 0 else ""
        after = line[end] if end < len(line) else ""
        words = all(c and is_word_char(c) and not is_spaceless(c) for c in (before, after))
        blanks = before in ("", " ", "\t") and after in ("", " ", "\t")
        return match.group() if words or blanks else ""

    return _EMPHASIS.sub(keep_or_drop, line)


def _plain_line(line: str) -> str:
    if _FENCE_LINE.match(line) or _RULE_LINE.match(line):
        return ""
    # An attachment's header reads as what it says ("Page: Title"), without the model's marker.
    line = line.removeprefix(f"{PAGE_CONTEXT_PREFIX} ")
    line = _LINE_START.sub("", line, count=1)
    line = _CELL_BAR.sub(" ", _LINK.sub(r"\1", _IMAGE.sub(r"\1", line))).replace("`", "")
    return _drop_emphasis(line)


def plain_text(text: str) -> str:
    """Rule 6: `text` as a preview shows it: its Markdown taken out, on one line, spaces collapsed."""
    plain = _one_line("\n".join(_plain_line(line) for line in text.split("\n")))
    return re.sub(" {2,}", " ", plain).strip(" ")


def searched_name(entry: IndexEntry) -> str:
    """Rule 6: the name search matches and highlights, the one the user reads (`shown_name`, said
    in the language `catalogue.ensure` last loaded). extension/sessions/search.js `searchedName`
    is the same rule, given the word by the panel."""
    name = shown_name(entry)
    return say(name) if isinstance(name, Sentence) else name


def matches(entry: IndexEntry, words: list[str], digest: str) -> bool:
    haystack = fold(searched_name(entry)) + "\n" + fold(digest)
    return all(find_word(haystack, word) >= 0 for word in words)


def _ranges(text: str, words: list[str]) -> list[list[int]]:
    """Where the words occur in `text`, as merged [start, end) ranges of `text`'s own indexes."""
    folded, origin = fold_with_map(text)
    spans: list[tuple[int, int]] = []
    for word in words:
        start = find_word(folded, word)
        while start >= 0:
            spans.append((origin[start], origin[start + len(word) - 1] + 1))
            start = find_word(folded, word, start + len(word))
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
    found = [p for p in (find_word(folded, w) for w in words) if p >= 0]
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


PREVIEW_WINDOW = 2 * PREVIEW_LENGTH  # the raw text read around a match: Markdown can take half


def preview_for(digest: str, words: list[str]) -> tuple[str, list[list[int]]]:
    offset = _first_match_offset(digest, words) if words else None
    if offset is None:
        return plain_text(digest[:PREVIEW_LENGTH]), []
    start = max(0, offset - 40)
    if start > 0:
        space = digest.find(" ", start, offset)
        start = space + 1 if space >= 0 else start
    excerpt = plain_text(digest[start : start + PREVIEW_WINDOW])
    cut = len(excerpt) > PREVIEW_LENGTH
    if cut:
        excerpt = excerpt[:PREVIEW_LENGTH].rstrip(" ")
    prefix = "…" if start > 0 else ""
    suffix = "…" if cut or start + PREVIEW_WINDOW < len(digest) else ""
    preview = prefix + excerpt + suffix
    return preview, _ranges(preview, words)


# -- the list ----------------------------------------------------------------------------------


def sort_entries(entries: list[IndexEntry]) -> list[IndexEntry]:
    """Pinned first, then the most recently used (rule 6: `active_at`)."""
    return sorted(entries, key=lambda e: (not e.pinned, -e.active_at, e.id))


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
                "activeAt": entry.active_at,
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
