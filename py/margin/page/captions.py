"""Captions for an attached video: which track to read, and fetching it.

Rules:
1. Tracks the page itself holds (`<track>` cues the page script read) come first; only when a
   track has none is its file fetched. On YouTube, captions people wrote come before automatic
   ones; within each, the reader's preferred languages decide (`margin.settings.options.model_language`).
2. A caption file is read through the page, never by the worker: Margin never reads, through a
   page, what that page could not read itself (docs/security.md, "What a page names"). The page
   script's `__marginReadAsPage` fetches it for the page's origin, so the browser applies CORS,
   its private-network rules and both after every redirect, exactly as for the page; the
   worker's own fetch (which `<all_urls>` frees from CORS) is never used for a URL a page wrote.
   YouTube's timed text is read by youtube.com's own page, as the player reads it.
3. A track that cannot be had (refused, an error status, too large, timed out, empty, not
   captions at all) is skipped, never an error: the page text is attached anyway, and the result
   says whether the page named any track (`Transcript.tracks_named`) so the card can say the
   captions were empty or unreadable rather than missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..base import wire
from ..i18n.catalogue import Words
from ..platform.ports import Platform, ScriptError, WebTab
from . import transcripts

CAPTION_TIMEOUT = 20.0
CAPTION_MAX_BYTES = 20 * 1024 * 1024
TRACK_KINDS = ("captions", "subtitles", "")


async def fetch_text(platform: Platform, tab: WebTab, url: str) -> str | None:
    """A caption file's text, read by the page in `tab` (rule 2); None when the page could not
    read it or it is over the cap (the page text is attached anyway)."""
    if urlsplit(url).scheme not in ("http", "https"):
        return None
    try:
        answer = await platform.tabs.run(
            tab.id, "__marginReadAsPage", url, CAPTION_MAX_BYTES, int(CAPTION_TIMEOUT * 1000)
        )
    except ScriptError:
        return None
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        return None
    text = answer.get("text")
    return wire.well_formed(text) if isinstance(text, str) and len(text) <= CAPTION_MAX_BYTES else None


def _language_rank(lang: str, preferred: list[str]) -> int:
    lang = (lang or "").lower()
    for rank, want in enumerate(preferred):
        if want and (lang == want or lang.split("-")[0] == want.split("-")[0]):
            return rank
    return len(preferred)


def _track_candidates(video: dict[str, Any], preferred: list[str]) -> list[dict[str, Any]]:
    tracks = [
        t for t in video.get("tracks") or [] if isinstance(t, dict) and (t.get("kind") or "") in TRACK_KINDS
    ]
    return sorted(
        tracks, key=lambda t: (_language_rank(t.get("srclang", ""), preferred), not t.get("isDefault"))
    )


def _youtube_candidates(youtube: dict[str, Any], preferred: list[str]) -> list[dict[str, Any]]:
    tracks = [
        t
        for t in youtube.get("captionTracks") or []
        if isinstance(t, dict) and isinstance(t.get("baseUrl"), str)
    ]
    # Captions people wrote before automatic ones, then by language.
    return sorted(
        tracks, key=lambda t: (t.get("kind") == "asr", _language_rank(t.get("languageCode", ""), preferred))
    )


def _youtube_caption_url(base_url: str) -> str:
    return base_url if "fmt=" in base_url else base_url + ("&" if "?" in base_url else "?") + "fmt=vtt"


def _readable_cues(text: str | None) -> list[transcripts.Cue]:
    """The cues of a caption file; [] for none, an empty file or one that is not captions."""
    if not text:
        return []
    try:
        return transcripts.clean_cues(transcripts.parse_captions(text))
    except transcripts.TranscriptError:
        return []


async def _cues_of_track(platform: Platform, tab: WebTab, track: dict[str, Any]) -> list[transcripts.Cue]:
    cues = transcripts.clean_cues(transcripts.cues_from_json(track.get("cues"))) if track.get("cues") else []
    if cues:
        return cues
    src = track.get("src")
    if not isinstance(src, str):
        return []
    return _readable_cues(await fetch_text(platform, tab, src))


@dataclass(frozen=True)
class Transcript:
    """What the captions search found: `found` ({video, cues, source, label, lang}) or None, and
    whether the page named any caption track at all (rule 3)."""

    found: dict[str, Any] | None
    tracks_named: bool


async def find_transcript(
    platform: Platform, tab: WebTab, extraction: dict[str, Any], preferred: list[str], words: Words
) -> Transcript:
    """The first video's best caption track that yields cues; a track with no name is labelled in
    the model language (`words`)."""
    unnamed = words.text("py_transcript_unnamed")
    videos = [v for v in extraction.get("videos") or [] if isinstance(v, dict)]
    youtube = extraction.get("youtube")
    youtube_tracks = _youtube_candidates(youtube, preferred) if isinstance(youtube, dict) else []
    for track in youtube_tracks:
        cues = _readable_cues(await fetch_text(platform, tab, _youtube_caption_url(track["baseUrl"])))
        if cues:
            video = videos[0] if videos else {"index": 0}
            label = str(track.get("name") or track.get("languageCode") or unnamed)
            if track.get("kind") == "asr":
                label = words.text("py_transcript_automatic", label)
            found = {
                "video": video,
                "cues": cues,
                "source": "youtube",
                "label": label,
                "lang": track.get("languageCode") or "",
            }
            return Transcript(found, tracks_named=True)
    tracks_named = bool(youtube_tracks)
    for video in videos:
        for track in _track_candidates(video, preferred):
            tracks_named = True
            cues = await _cues_of_track(platform, tab, track)
            if cues:
                found = {
                    "video": video,
                    "cues": cues,
                    "source": "track",
                    "label": str(track.get("label") or track.get("srclang") or unnamed),
                    "lang": track.get("srclang") or "",
                }
                return Transcript(found, tracks_named=True)
    return Transcript(None, tracks_named=tracks_named)
