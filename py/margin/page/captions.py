"""Captions for an attached video: which track to read, and fetching it.

Rules:
1. Tracks the page itself holds (`<track>` cues the page script read) come first; only when a
   track has none is its file fetched. On YouTube, captions people wrote come before automatic
   ones; within each, the reader's preferred languages decide (`margin.settings.options.model_language`).
2. Caption files are fetched by the worker, which the page's CORS rules do not bind: only http(s),
   with a timeout and a size cap. A track that cannot be had is skipped, never an error: the page
   text is attached anyway.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..i18n.catalogue import Words
from ..platform.ports import HttpRequest, Platform, TransportError
from . import transcripts

CAPTION_TIMEOUT = 20.0
CAPTION_MAX_BYTES = 20 * 1024 * 1024
TRACK_KINDS = ("captions", "subtitles", "")


async def fetch_text(platform: Platform, url: str) -> str | None:
    """GET a caption file; None when it cannot be had (the page text is attached anyway)."""
    if urlsplit(url).scheme not in ("http", "https"):
        return None
    try:
        response = await platform.transport.open(
            HttpRequest("GET", url, {}, None, timeout=CAPTION_TIMEOUT, follow_redirects=True)
        )
    except TransportError:
        return None
    chunks: list[str] = []
    size = 0
    try:
        if response.status != 200:
            return None
        while (chunk := await response.read_chunk()) is not None:
            chunks.append(chunk)
            size += len(chunk)
            if size > CAPTION_MAX_BYTES:
                return None
    except TransportError:
        return None
    finally:
        await response.aclose()
    return "".join(chunks)


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


async def _cues_of_track(platform: Platform, track: dict[str, Any]) -> list[transcripts.Cue]:
    cues = transcripts.clean_cues(transcripts.cues_from_json(track.get("cues"))) if track.get("cues") else []
    if cues:
        return cues
    src = track.get("src")
    if not isinstance(src, str):
        return []
    text = await fetch_text(platform, src)
    if not text:
        return []
    try:
        return transcripts.clean_cues(transcripts.parse_captions(text))
    except transcripts.TranscriptError:
        return []


async def find_transcript(
    platform: Platform, extraction: dict[str, Any], preferred: list[str], words: Words
) -> dict[str, Any] | None:
    """The first video's best caption track that yields cues: {video, cues, source, label, lang};
    a track with no name is labelled in the model language (`words`)."""
    unnamed = words.text("py_transcript_unnamed")
    videos = [v for v in extraction.get("videos") or [] if isinstance(v, dict)]
    youtube = extraction.get("youtube")
    if isinstance(youtube, dict):
        for track in _youtube_candidates(youtube, preferred):
            text = await fetch_text(platform, _youtube_caption_url(track["baseUrl"]))
            try:
                cues = transcripts.clean_cues(transcripts.parse_captions(text)) if text else []
            except transcripts.TranscriptError:
                cues = []
            if cues:
                video = videos[0] if videos else {"index": 0}
                label = str(track.get("name") or track.get("languageCode") or unnamed)
                if track.get("kind") == "asr":
                    label = words.text("py_transcript_automatic", label)
                return {
                    "video": video,
                    "cues": cues,
                    "source": "youtube",
                    "label": label,
                    "lang": track.get("languageCode") or "",
                }
    for video in videos:
        for track in _track_candidates(video, preferred):
            cues = await _cues_of_track(platform, track)
            if cues:
                return {
                    "video": video,
                    "cues": cues,
                    "source": "track",
                    "label": str(track.get("label") or track.get("srclang") or unnamed),
                    "lang": track.get("srclang") or "",
                }
    return None
