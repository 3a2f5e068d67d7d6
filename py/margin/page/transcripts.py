"""A video's captions, as a transcript with the timestamps the user sees in the player.

Captions arrive as a WebVTT file (an HTML5 `<track>`, or YouTube's `fmt=vtt`), YouTube's timed
text (legacy XML, srv3 XML or json3), or the cues the page script read from a `TextTrack`. They
become `Cue`s (seconds), are cleaned, and are written as lines `[m:ss] text` that the "Seek to
12:34" capsules of later answers understand (extension/panel/timecodes.js). Sans-IO, stdlib only.

Rules:
1. Parsers never guess: `parse_captions` sniffs the format from the first characters and anything
   it cannot read raises `TranscriptError` with a `code` (not_webvtt, unknown_format, bad_xml,
   bad_json, too_large: over `MAX_CAPTION_CHARS`). Inside a file that is readable, one malformed
   cue is skipped, never fatal. Cues come back sorted by start (a stable sort).
2. Cue text is plain text: markup (`<c.yellow>`, `<b>`, `<i>`, `<u>`, `<lang>`, `<ruby>`, inline
   timestamps `<00:01:02.000>`) is stripped, a ruby's `<rt>` reading is left out, entities are
   decoded, lines are joined with a space, a NUL is U+FFFD (the WebVTT parser's preprocessing).
   A voice tag `<v Name>` keeps its text, not the name (a name per cue would double a dialogue's
   size). A cue with no text is still a cue here. A timing line's settings may follow the end
   time with no space between (`00:00:01.000align:end`, as the WebVTT parser reads it).
3. `clean_cues` drops empty cues, collapses whitespace, keeps sound cues (`[Music]` is
   information), merges exact consecutive repeats (extending `end`), and undoes the rolling
   captions of YouTube's automatic transcripts, where each cue repeats the previous cue's last
   line before adding words: there only the new words are kept. A track is taken as rolling when
   at least a third of its cues begin with two or more of the previous cue's last words; otherwise
   a word that happens to end one cue and begin the next is left alone.
4. Timestamps are floored: `0:05`, `12:34`, `1:02:03` (hours only from one hour on).
5. `format_transcript` merges consecutive cues into one line until `paragraph_seconds` have passed
   since the line's start, or a cue ends a sentence at least `_SENTENCE_SECONDS` into the line;
   each line starts with its first cue's timestamp in square brackets.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from html import unescape
from typing import Any

from ..base.errors import MarginError

MAX_CAPTION_CHARS = 20 * 1024 * 1024
_SENTENCE_SECONDS = 10.0
_SENTENCE_END = ".!?…。！？"
_ROLLING_SHARE = 1 / 3
_OVERLAP_WORDS = 80  # how far back a rolling repeat is looked for


@dataclass(frozen=True)
class Cue:
    start: float  # seconds
    end: float
    text: str


class TranscriptError(MarginError, ValueError):
    """Captions that cannot be read at all; `code` says why."""


# -- cue text ------------------------------------------------------------------------------------

_RUBY_TEXT = re.compile(r"<rt(?:[\s.][^>]*)?>.*?(?:</rt\s*>|(?=</ruby)|$)", re.S | re.I)
_TAG = re.compile(r"<[^>]*>")


def _cue_text(raw: str) -> str:
    if "<" in raw:
        raw = _TAG.sub("", _RUBY_TEXT.sub("", raw))
    if "&" in raw:
        raw = unescape(raw)
    return " ".join(raw.split())


# -- WebVTT --------------------------------------------------------------------------------------

_LINES = re.compile(r"\r\n|\r|\n")
_TIMESTAMP = r"(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?"
# The end time may run straight into the cue's settings ("00:00:01.000align:end" is valid: the
# WebVTT parser collects the timestamp, then reads what follows as settings); a time cut short by
# more digits or another fraction ("01.0005", "01.000.5") is not a timing line.
_TIMING = re.compile(rf"^\s*{_TIMESTAMP}\s*-->\s*{_TIMESTAMP}(?![\d.,:])")
_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")


def _seconds(hours: str | None, minutes: str, seconds: str, fraction: str | None) -> float:
    value = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    if fraction:
        value += int(fraction) / 10 ** len(fraction)
    return float(value)


def _check_size(text: str) -> None:
    if len(text) > MAX_CAPTION_CHARS:
        raise TranscriptError.said(
            "too_large", "py_error_captions_too_large", MAX_CAPTION_CHARS // (1024 * 1024)
        )


def _starts_block(line: str, keyword: str) -> bool:
    return line.startswith(keyword) and (len(line) == len(keyword) or line[len(keyword)] in " \t")


def parse_webvtt(text: str) -> list[Cue]:
    """The cues of a WebVTT file (rules 1 and 2)."""
    _check_size(text)
    # The WebVTT parser's preprocessing: every NUL becomes U+FFFD.
    lines = _LINES.split(text.lstrip("\ufeff").replace("\0", "\ufffd"))
    if not _starts_block(lines[0], "WEBVTT"):
        raise TranscriptError.said("not_webvtt", "py_error_captions_not_webvtt")
    cues: list[Cue] = []
    timing: tuple[float, float] | None = None
    payload: list[str] = []

    def flush() -> None:
        if timing is not None:
            cues.append(Cue(timing[0], max(timing[0], timing[1]), _cue_text("\n".join(payload))))

    in_header = True  # the WEBVTT line and its metadata, up to the first blank line
    skipping = False  # inside a NOTE, STYLE or REGION block
    block_start = True
    for line in lines:
        # Only an empty line ends a block: YouTube's automatic captions hold lines of one space.
        if not line:
            flush()
            timing, payload = None, []
            in_header = skipping = False
            block_start = True
            continue
        if in_header and "-->" in line:  # a cue right under the header, no blank line between
            in_header = False
        if in_header or skipping:
            continue
        if block_start and any(_starts_block(line, k) for k in _SKIPPED_BLOCKS):
            skipping = True
            continue
        block_start = False
        if "-->" in line:
            if len(payload) >= 2 and not payload[-2].strip():
                payload.pop()  # blocks parted by a line of spaces: that was the next cue's identifier
            flush()
            match = _TIMING.match(line)
            timing = None
            if match:
                g = match.groups()
                timing = (_seconds(*g[0:4]), _seconds(*g[4:8]))
            payload = []
        elif timing is not None:
            payload.append(line)
        # else: a cue identifier, or the text of a cue whose timing was malformed
    flush()
    cues.sort(key=lambda c: c.start)
    return cues


# -- YouTube's timed text ------------------------------------------------------------------------

_DOCTYPE = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.I)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _not_timed_text() -> TranscriptError:
    return TranscriptError.said("bad_xml", "py_error_captions_not_timed_text")


def parse_timedtext_xml(text: str) -> list[Cue]:
    """YouTube's timed text as XML: legacy `<transcript><text start dur>` (seconds) or srv3
    `<timedtext><body><p t d>` (milliseconds)."""
    _check_size(text)
    if _DOCTYPE.search(text):  # no YouTube file has one: refuse rather than expand entities
        raise _not_timed_text()
    try:
        root = ElementTree.fromstring(text.lstrip("\ufeff \t\r\n"))
    except ElementTree.ParseError:
        raise _not_timed_text() from None
    cues: list[Cue] = []
    # Cue elements are read whole and not looked inside for more: nested ones (no real file has
    # them) would make every level join the text below it again, quadratic in the depth.
    elements = [root]
    while elements:
        element = elements.pop()
        if element.tag not in ("text", "p"):
            elements.extend(reversed(element))
            continue
        attrs = element.attrib
        if "start" in attrs:
            start, duration = _number(attrs["start"]), _number(attrs.get("dur", 0))
        else:
            start, duration = _number(attrs.get("t")), _number(attrs.get("d", 0))
            start = None if start is None else start / 1000
            duration = None if duration is None else duration / 1000
        if start is None:
            continue
        # The legacy format escapes twice (`&amp;#39;`) and may carry `<font>` markup as text.
        body = _HTML_TAG.sub("", unescape("".join(element.itertext())))
        body = " ".join(body.split())
        if body:
            cues.append(Cue(start, start + max(duration or 0.0, 0.0), body))
    cues.sort(key=lambda c: c.start)
    return cues


def parse_json3(text: str) -> list[Cue]:
    """YouTube's `fmt=json3`: `{"events": [{"tStartMs", "dDurationMs", "segs": [{"utf8"}]}]}`."""
    _check_size(text)
    try:
        value = json.loads(text.lstrip("\ufeff"))
    except (ValueError, RecursionError):  # nested deeper than Python's parser goes: not captions
        raise TranscriptError.said("bad_json", "py_error_captions_not_json") from None
    events = value.get("events") if isinstance(value, dict) else None
    if not isinstance(events, list):
        raise TranscriptError.said("bad_json", "py_error_captions_not_youtube")
    cues: list[Cue] = []
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("segs"), list):
            continue
        start = _number(event.get("tStartMs"))
        if start is None:
            continue
        duration = _number(event.get("dDurationMs", 0)) or 0.0
        body = "".join(
            s["utf8"] for s in event["segs"] if isinstance(s, dict) and isinstance(s.get("utf8"), str)
        )
        body = " ".join(body.split())
        if body:
            cues.append(Cue(start / 1000, (start + max(duration, 0.0)) / 1000, body))
    cues.sort(key=lambda c: c.start)
    return cues


def parse_captions(text: str) -> list[Cue]:
    """Any caption format Margin reads, told apart by its first characters."""
    _check_size(text)
    head = text.lstrip("\ufeff \t\r\n")
    if _starts_block(_LINES.split(head[:64], 1)[0], "WEBVTT"):
        return parse_webvtt(head)
    if head.startswith("{"):
        return parse_json3(head)
    if head.startswith("<"):
        return parse_timedtext_xml(head)
    raise TranscriptError.said("unknown_format", "py_error_captions_format")


def cues_from_json(value: Any) -> list[Cue]:
    """The cues the page script read from a text track: `[{start, end, text}]`; items that are not
    such a cue are skipped, a missing `end` is the start."""
    if not isinstance(value, list):
        return []
    cues: list[Cue] = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        start = _number(item.get("start"))
        if start is None:
            continue
        end = _number(item.get("end"))
        body = _cue_text(item["text"])
        if body:
            cues.append(Cue(start, start if end is None else max(start, end), body))
    cues.sort(key=lambda c: c.start)
    return cues


# -- cleaning ------------------------------------------------------------------------------------


def _overlap(previous: list[str], words: list[str]) -> int:
    """How many of `words`' first words are the last words of `previous` (the longest such run)."""
    previous = previous[-_OVERLAP_WORDS:]
    if not previous or not words:
        return 0
    first = words[0]
    for index, word in enumerate(previous):  # earliest first: the longest run
        if word == first:
            run = len(previous) - index
            if run <= len(words) and previous[index:] == words[:run]:
                return run
    return 0


def clean_cues(cues: list[Cue]) -> list[Cue]:
    """Cues as a reader wants them (rule 3)."""
    ordered = sorted((c for c in cues if c.text and c.text.strip()), key=lambda c: c.start)
    words = [c.text.split() for c in ordered]
    overlaps = [_overlap(words[i - 1], words[i]) if i else 0 for i in range(len(words))]
    rolling = len(words) >= 3 and sum(1 for n in overlaps if n >= 2) >= _ROLLING_SHARE * (len(words) - 1)
    cleaned: list[Cue] = []
    for index, (cue, cue_words, overlap) in enumerate(zip(ordered, words, overlaps, strict=True)):
        repeat = overlap == len(cue_words) if rolling else (index > 0 and cue_words == words[index - 1])
        if repeat and cleaned:
            previous = cleaned[-1]
            cleaned[-1] = Cue(previous.start, max(previous.end, cue.end), previous.text)
            continue
        cleaned.append(Cue(cue.start, cue.end, " ".join(cue_words[overlap:] if rolling else cue_words)))
    return cleaned


# -- writing -------------------------------------------------------------------------------------


def format_timestamp(seconds: float) -> str:
    """`0:05`, `12:34`, `1:02:03` (floored; anything negative or not a number is `0:00`)."""
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        seconds = 0
    total = math.floor(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_transcript(
    cues: list[Cue], *, paragraph_seconds: float = 30.0, max_chars: int | None = None
) -> str:
    """Lines `[m:ss] text` (rule 5), "" for no cues. With `max_chars`, only the whole lines that
    fit are kept (a first line longer than that is cut at a space)."""
    lines: list[str] = []
    line_start = 0.0
    words: list[str] = []

    def flush() -> None:
        if words:
            lines.append(f"[{format_timestamp(line_start)}] {' '.join(words)}")
            words.clear()

    for cue in cues:
        text = " ".join(cue.text.split())
        if not text:
            continue
        if words and cue.start - line_start >= paragraph_seconds:
            flush()
        if not words:
            line_start = cue.start
        words.append(text)
        if text[-1] in _SENTENCE_END and cue.end - line_start >= _SENTENCE_SECONDS:
            flush()
    flush()
    if max_chars is None:
        return "\n".join(lines)
    kept: list[str] = []
    used = 0
    for line in lines:
        used += len(line) + (1 if kept else 0)
        if used > max_chars:
            break
        kept.append(line)
    if not kept and lines and max_chars > 0:
        cut = lines[0].rfind(" ", 0, max_chars + 1)
        return lines[0][: cut if cut > 0 else max_chars]
    return "\n".join(kept)


def transcript_duration(cues: list[Cue]) -> float:
    """When the last cue ends (0.0 for none)."""
    return max((c.end for c in cues), default=0.0)
