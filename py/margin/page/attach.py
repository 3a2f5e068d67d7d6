"""Attach page: read the active web tab into a page-context record (`tab.attach`).

Rules:
1. Only the active web tab (http, https, file) of the last focused window is read, never an
   extension page. Pages Chrome does not let extensions read (the Web Store, an
   error page, a file:// page without file access) and pages with no readable text are refused
   with one sentence that says what to do instead; nothing is stored then.
2. The page script (extension/content/extract.js, injected on demand: no content script runs on
   every page) returns the article's HTML (Mozilla Readability) or the body's HTML, and each
   video's caption tracks; Python makes the text (`margin.page.text`) and the transcript
   (`margin.page.transcripts`, from the caption track `margin.page.captions` picks and fetches).
3. What was read is cached per tab (`margin.page.site_caches`); the cheap probe tells whether the page
   is still the one cached, so attaching it again skips the extraction. The cached payload's
   headings and notes are in the model language it was read in, so the language is part of the
   fingerprint: after a change of language the page is read again.
4. The record is appended under the history lock. The same page already waiting in the trailing
   run of attachments is not attached twice.
5. "Attach again" (`attachment.reattach`) appends a fresh copy of a stored attachment
   (`page_context.fresh_copy`) the same way, without reading any tab.
6. A reply that stored a record says whether the panel should summarize it (`summarize`:
   `options.should_summarize` for its `chars`, and a provider is set up); the panel then opens
   the summary port (margin.page.summaries).
7. "Attach file" (`file.attach`) appends a data file's record (margin.page.data_files) the same way,
   under the lock, unless the same file already waits; a file is never summarized (its view is
   already short, and the whole file is in the sandbox).
8. "Attach tabs" (margin.page.tab_list) sends one `tab.attach {tabId}` per ticked tab: rule 1
   then reads that tab, of any window, instead of the active one, through the same code (its own
   site cache entry, its own record). A tab Chrome discarded is reloaded, and a tab still loading
   waited for, up to `WAKE_SECONDS`; one that has not loaded by then is refused
   (`tab_not_loaded`), as is one no longer showing a web page.
9. A tab showing a PDF is read by the panel (Chrome's viewer cannot be scripted): `tab.attach`
   answers `{pdf: …}` and the panel comes back through the same request with `payload["pdf"]`
   (`read_pdf`; the phases, the text and the refusals are margin.page.pdf's rules).
"""

from __future__ import annotations

import math
import time
from typing import Any
from urllib.parse import urlsplit

from ..base import clock, wire
from ..base.errors import MarginError
from ..i18n import catalogue
from ..platform.ports import Platform, ScriptError, WebTab
from ..settings.options import model_language, read_options, should_summarize
from ..storage.history import HistoryRead, Record, read_history, write_history
from ..storage.keys import PROVIDERS, lock_for
from . import captions, data_files, pdf, transcripts
from . import context as page_context
from . import text as page_text
from .context import trailing_attachments
from .site_caches import site_cache_ctx


def refuse_by_url(url: str) -> None:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "chromewebstore.google.com" or (
        host == "chrome.google.com" and parts.path.startswith("/webstore")
    ):
        raise web_store_refusal()


def script_refusal(error: ScriptError, tab: WebTab) -> MarginError | pdf.PanelReads:
    """Chrome's reason for not running the page script, as a sentence with a way out."""
    message = error.message
    lowered = message.lower()
    if "no tab with id" in lowered or "tab was closed" in lowered:
        return MarginError.said("tab_gone", "py_error_tab_gone")
    if "extensions gallery" in lowered or "webstore" in lowered:
        return web_store_refusal()
    if tab.url.lower().startswith("file:"):
        return MarginError.said("file_access_off", "py_error_file_access_off")
    if pdf.is_pdf_address(tab.url):
        return pdf.read_it(tab, tab.url, tab.title)  # rule 9: the viewer refused the page script
    if "error page" in lowered:
        return MarginError.said("page_not_readable", "py_error_error_page")
    return MarginError.said("page_not_readable", "py_error_tab_refused", message.strip().rstrip("."))


def web_store_refusal() -> MarginError:
    return MarginError.said("page_not_readable", "py_error_web_store")


def no_text_refusal() -> MarginError:
    return MarginError.said("page_has_no_text", "py_error_no_text")


async def run_page_script(platform: Platform, tab: WebTab, function: str, *args: Any) -> Any:
    try:
        return await platform.tabs.run(tab.id, function, *args)
    except ScriptError as error:
        raise script_refusal(error, tab) from None


def fingerprint_of(probe: Any) -> list[Any]:
    if not isinstance(probe, dict):
        return []
    return [probe.get("url"), probe.get("title"), probe.get("textLength"), probe.get("videoCount")]


def _video_src(video: dict[str, Any], page_url: str) -> str:
    src = video.get("src")
    # MediaSource players (YouTube) show a blob: URL that means nothing after a reload.
    if isinstance(src, str) and urlsplit(src).scheme in ("http", "https", "file"):
        return src
    return page_url


def _duration(video: dict[str, Any], cues: list[transcripts.Cue]) -> float | None:
    duration = video.get("duration")
    if (
        isinstance(duration, (int, float))
        and not isinstance(duration, bool)
        and 0 < duration < math.inf  # a live stream reports Infinity; NaN fails both
    ):
        return float(duration)
    return transcripts.transcript_duration(cues) or None


# -- the payload ---------------------------------------------------------------------------------


async def page_payload(
    platform: Platform,
    tab: WebTab,
    extraction: dict[str, Any],
    *,
    preferred_languages: list[str],
    language: str = "en",
) -> dict[str, Any]:
    """Everything the record needs from one extraction (what the site cache keeps); a caption file
    the page names is read through the page in `tab` (margin.page.captions, rule 2)."""
    url = str(extraction.get("url") or "")
    title = str(extraction.get("title") or "").strip()
    method = "readability" if extraction.get("method") == "readability" else "fallback"
    text = page_text.page_text(str(extraction.get("html") or ""), method=method, title=title)
    words = catalogue.words(language)
    transcript = await captions.find_transcript(platform, tab, extraction, preferred_languages, words)
    found = transcript.found
    notes: list[str] = []
    if found is None:
        if transcript.tracks_named:
            notes.append(words.text("py_note_captions_unreadable"))
        elif extraction.get("videos") or extraction.get("youtube"):
            notes.append(words.text("py_note_no_captions"))
        if not text.text.strip():
            raise no_text_refusal()
        if text.truncated:
            notes.append(page_context.truncation_note(len(text.text), text.original_chars, language=language))
        return {
            "kind": "page",
            "title": title,
            "url": url,
            "body": text.text,
            "method": method,
            "truncated": text.truncated,
            "originalChars": text.original_chars,
            "notes": notes,
        }

    cues = found["cues"]
    video = found["video"]
    duration = _duration(video, cues)
    lines = transcripts.format_transcript(cues)
    length = words.text("py_transcript_length", transcripts.format_timestamp(duration)) if duration else ""
    body = f"## {words.text('py_transcript_heading', found['label'], length)}\n\n{lines}"
    if text.text.strip():
        body += f"\n\n## {words.text('py_page_text_heading')}\n\n" + text.text
    capped = page_text.cap_text(body)
    if capped.truncated:
        notes.append(page_context.truncation_note(len(capped.text), capped.original_chars, language=language))
    return {
        "kind": "video",
        "title": title,
        "url": url,
        "body": capped.text,
        "method": method,
        "truncated": capped.truncated,
        "originalChars": capped.original_chars,
        "notes": notes,
        "video": {
            "src": _video_src(video, url),
            "index": int(video.get("index") or 0),
            "duration": duration,
            "title": video.get("title") or None,
            "transcript": {
                "source": found["source"],
                "label": found["label"],
                "lang": found["lang"],
                "cues": len(cues),
            },
        },
    }


def preferred_languages(extraction: dict[str, Any], language: str) -> list[str]:
    """Captions in Margin's language (`options.model_language`), then the page's, then English."""
    return [lang.lower() for lang in (language, str(extraction.get("lang") or ""), "en") if lang]


# -- the request ---------------------------------------------------------------------------------


async def read_tab(platform: Platform, tab: WebTab, language: str) -> tuple[dict[str, Any], bool]:
    """The payload for `tab`, from the site cache when the page is unchanged; (payload, from_cache)."""
    async with site_cache_ctx(platform) as cache:
        probe = await run_page_script(platform, tab, "__marginProbe")
        # The payload's headings and notes are in the model language: a hit needs the same one.
        fingerprint = [*fingerprint_of(probe), catalogue.locale_of(language)]
        url = str(probe.get("url") or tab.url) if isinstance(probe, dict) else tab.url
        if pdf.shows_pdf(probe):  # rule 9
            raise pdf.read_it(tab, url, str(probe.get("title") or tab.title))
        cached = await cache.get(tab.id, url, fingerprint)
        if cached is not None:
            return cached, True
        extraction = wire.well_formed(await run_page_script(platform, tab, "__marginExtract"))
        if not isinstance(extraction, dict) or not extraction.get("ok"):
            reason = extraction.get("reason") if isinstance(extraction, dict) else None
            if reason == "pdf":
                raise pdf.read_it(tab, url, tab.title)  # rule 9
            if reason == "no_text":
                raise no_text_refusal()
            detail = extraction.get("detail") if isinstance(extraction, dict) else None
            if detail:
                raise MarginError.said("page_not_readable", "py_error_page_unreadable_detail", detail)
            raise MarginError.said("page_not_readable", "py_error_page_unreadable")
        payload = await page_payload(
            platform,
            tab,
            extraction,
            preferred_languages=preferred_languages(extraction, language),
            language=language,
        )
        await cache.put(tab.id, url, fingerprint, payload)
        return payload, False


async def read_pdf(
    platform: Platform, tab: WebTab, request: dict[str, Any], language: str
) -> tuple[dict[str, Any], bool]:
    """Rule 9: the panel's answer about the PDF in `tab` (margin.page.pdf, rule 1); (payload,
    from_cache), or `pdf.PanelReads` when the panel must extract the text."""
    url = request.get("url")
    if not isinstance(url, str) or urlsplit(url).scheme.lower() not in ("http", "https", "file"):
        raise MarginError.said("bad_payload", "py_error_tab_request")
    if request.get("problem") is not None:
        raise pdf.refusal(request, language)
    fingerprint = pdf.fingerprint(request, language)
    title = str(request.get("title") or tab.title)
    async with site_cache_ctx(platform) as cache:
        if request.get("pages") is None:
            cached = await cache.get(tab.id, url, fingerprint)
            if cached is not None:
                return cached, True
            raise pdf.read_it(tab, url, title, extract=True)
        payload = pdf.pdf_payload(url, title, request, language=language)
        await cache.put(tab.id, url, fingerprint, payload)
        return payload, False


def _summarize(settings: dict[str, Any], record: Record, stored: bool) -> bool:
    """Rule 6."""
    if record.fields["attachment"].get("kind") == "file":
        return False  # rule 7
    chars = record.fields["attachment"]["chars"]
    return stored and bool(settings[PROVIDERS]) and should_summarize(settings, chars)


async def _append_unless_waiting(platform: Platform, read: HistoryRead, record: Record) -> Record | None:
    """Rule 4 (the caller holds the lock): append `record` to `read`; or, when the same page
    already waits, return that record and write nothing."""
    for waiting in trailing_attachments(read.records):
        if page_context.same_attachment(record, waiting):
            return waiting
    await write_history(platform.local, [*read.records, record], read)
    return None


# Rule 8: how long a discarded or loading tab may take to load before it is refused.
WAKE_SECONDS = 20


async def chosen_tab(platform: Platform, payload: dict) -> WebTab:
    """Rule 8: the tab `payload["tabId"]` names, awake and loaded; else the active web tab."""
    tab_id = payload.get("tabId")
    if tab_id is None:
        tab = await platform.tabs.active_web_tab()
        if tab is None:
            raise MarginError.said("no_web_tab", "py_error_no_web_tab")
        return tab
    if not isinstance(tab_id, int) or isinstance(tab_id, bool) or tab_id < 0:
        raise MarginError.said("bad_payload", "py_error_tab_request")
    tab = await platform.tabs.get(tab_id)
    if tab is not None and (tab.discarded or tab.loading):
        tab = await platform.tabs.wake(tab_id, WAKE_SECONDS)
    if tab is None:
        raise MarginError.said("tab_gone", "py_error_tab_gone")
    if urlsplit(tab.url).scheme.lower() not in ("http", "https", "file"):
        raise MarginError.said("no_web_tab", "py_error_tab_not_web")
    if tab.discarded or tab.loading:
        name = tab.title or tab.url
        raise MarginError.said("tab_not_loaded", "py_error_tab_not_loaded", name, WAKE_SECONDS)
    return tab


async def handle_attach(platform: Platform, payload: dict) -> dict[str, Any]:
    """`tab.attach {tabId?, pdf?}`: the tab's text (or transcript, or PDF: rule 9) becomes an
    attachment record."""
    started = time.perf_counter()
    tab = await chosen_tab(platform, payload)
    refuse_by_url(tab.url)
    settings = await read_options(platform)
    language = model_language(settings, platform.browser_language)
    await catalogue.ensure(platform, language)
    try:
        if isinstance(payload.get("pdf"), dict):
            page, from_cache = await read_pdf(platform, tab, payload["pdf"], language)
        else:
            page, from_cache = await read_tab(platform, tab, language)
    except pdf.PanelReads as reads:
        return reads.reply  # rule 9: the panel reads the PDF, then asks again
    read_ms = round((time.perf_counter() - started) * 1000, 1)
    record = page_context.attachment_record(
        page,
        captured_at=clock.now_ms(),
        tab={"id": tab.id, "windowId": tab.window_id},
        language=language,
    )
    async with lock_for(platform.local):
        waiting = await _append_unless_waiting(platform, await read_history(platform.local), record)
    return {
        "attachment": page_context.card(record),
        "fromCache": from_cache,
        "duplicate": waiting is not None,
        "readMs": read_ms,
        "summarize": _summarize(settings, record, waiting is None),
    }


async def handle_attach_file(platform: Platform, payload: dict) -> dict[str, Any]:
    """`file.attach {name, text}`: a data file the user chose becomes an attachment record (rule 7)."""
    name, media_type, text = data_files.check_request(payload)
    settings = await read_options(platform)
    language = model_language(settings, platform.browser_language)
    await catalogue.ensure(platform, language)
    record = data_files.file_record(name, media_type, text, captured_at=clock.now_ms(), language=language)
    async with lock_for(platform.local):
        waiting = await _append_unless_waiting(platform, await read_history(platform.local), record)
    return {
        "attachment": data_files.card(waiting or record),
        "duplicate": waiting is not None,
        "summarize": False,
    }


async def handle_reattach(platform: Platform, payload: dict) -> dict[str, Any]:
    """`attachment.reattach {capturedAt, url}`: a fresh copy of a stored attachment, appended (rule 5)."""
    captured_at, url = page_context.identity_of(payload)
    settings = await read_options(platform)
    async with lock_for(platform.local):
        read = await read_history(platform.local)
        index = page_context.find_attachment(read.records, captured_at, url)
        if index is None:
            raise MarginError.said("attachment_gone", "py_error_attachment_gone")
        copy = page_context.fresh_copy(read.records[index], clock.now_ms())
        waiting = await _append_unless_waiting(platform, read, copy)
    return {
        "attachment": page_context.card(waiting or copy),
        "duplicate": waiting is not None,
        "summarize": _summarize(settings, copy, waiting is None),
    }


async def handle_remove(platform: Platform, payload: dict) -> dict[str, Any]:
    """`attachment.remove {index, url}`: take back an attachment no question has answered yet."""
    index, url = payload.get("index"), payload.get("url")
    async with lock_for(platform.local):
        read = await read_history(platform.local)
        records = read.records
        waiting_from = len(records) - len(trailing_attachments(records))
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not waiting_from <= index < len(records)
            or records[index].fields["attachment"].get("url") != url
        ):
            raise MarginError.said("attachment_answered", "py_error_attachment_answered")
        await write_history(platform.local, records[:index] + records[index + 1 :], read)
    return {}
