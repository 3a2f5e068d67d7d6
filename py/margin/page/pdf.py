"""A PDF in a tab: how `tab.attach` reads it, what the model gets, and every refusal (sans-IO but
for the site cache, which margin.page.attach hands over).

Chrome's PDF viewer is an extension frame no page script can read, so Margin reads the PDF's bytes
itself, in the side panel's PDF worker (extension/panel/pdf/worker.js, Mozilla's pdf.js: measured
against pypdf in Pyodide in docs/performance.md, "PDF"). The worker's text comes back to Python,
which owns the record, the header, the cache and the sentences, like any page.

Rules:
1. One request, `tab.attach`, for every phase (Attach page and Attach tabs alike). On a tab that
   shows a PDF it answers `{pdf: {tabId, url, title, maxBytes, maxChars}}` ("read it", `PanelReads`)
   instead of storing anything. The panel then comes back with `payload["pdf"]`:
   - `{url, digest, bytes}` (the SHA-256 of the bytes it fetched): a site-cache hit stores the
     record at once (`fromCache`); a miss answers `{pdf: {..., extract: true}}`;
   - `{url, digest, bytes, title, pageCount, pagesRead, pages}` (one text per page, from page 1):
     the record is stored and cached;
   - `{url, problem, detail?}`: the reader's failure, said in one sentence (`refusal`); nothing
     is stored.
2. A tab shows a PDF when its document is one (`contentType` says pdf: the viewer), or when it
   shows a PDF's raw bytes as text (a PDF served with a wrong Content-Type: its text begins with
   "%PDF-"), or when Chrome refuses the page script on an http(s) address ending in .pdf. An HTML
   page at an address ending in .pdf is a page; bytes that are not a PDF are `not_pdf`.
3. `MAX_PDF_BYTES` (50 MB) bounds what is downloaded; the worker stops reading pages once it
   holds `MAX_PAGE_CHARS` (then the record says how many pages were read, like a cut page).
4. The text: "— page N —" (in the model language) before each page that has text, so the model
   can cite pages; characters that fonts map to CJK compatibility forms (Kangxi radicals
   U+2F00–U+2FDF, CJK radicals, compatibility ideographs) NFKC-folded to the characters people
   type, so none of them reaches the model; capped like a page (margin.page.text.cap_text).
5. The record is a page-context record of kind "pdf" (`Attached PDF: <title>`), its `attachment`
   also holding `pages` and `bytes`; header, aging, summaries and site cache as for a web page.
   The fingerprint of its cache entry is the bytes' digest and the model language.
6. Refusals, each one sentence that says what to do: `pdf_encrypted`, `pdf_no_text` (a scan:
   use Screenshot), `pdf_damaged`, `pdf_too_big` (states the limit), `pdf_not_pdf`,
   `pdf_unreachable` (the download failed; its HTTP status when there is one). Cancel is the
   panel's alone: nothing reaches Python, nothing is stored.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import unquote, urlsplit

from ..base.errors import MarginError
from ..i18n import catalogue
from ..platform.ports import WebTab
from . import context as page_context
from . import text as page_text

MAX_PDF_BYTES = 50 * 1024 * 1024
# Rule 4: the blocks whose characters NFKC maps back to unified ideographs.
_COMPAT = re.compile("[\u2e80-\u2fdf\uf900-\ufaff\U0002f800-\U0002fa1f]+")
_PROBLEMS = {
    "encrypted": ("pdf_encrypted", "py_error_pdf_encrypted"),
    "no_text": ("pdf_no_text", "py_error_pdf_no_text"),
    "damaged": ("pdf_damaged", "py_error_pdf_damaged"),
    "not_pdf": ("pdf_not_pdf", "py_error_pdf_not_pdf"),
}


class PanelReads(Exception):
    """Rule 1: not a failure: the panel must read the PDF (or its text) and ask again."""

    def __init__(self, reply: dict[str, Any]):
        super().__init__("the panel reads this PDF")
        self.reply = reply


def is_pdf_address(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and parts.path.lower().endswith(".pdf")


def shows_pdf(probe: Any) -> bool:
    """Rule 2, from the page script's probe."""
    if not isinstance(probe, dict):
        return False
    content_type = str(probe.get("contentType") or "").lower()
    return content_type.endswith("/pdf") or content_type.endswith("/x-pdf") or bool(probe.get("pdfText"))


def _file_name(url: str) -> str:
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    return name or page_text.site_of(url)


def read_it(tab: WebTab, url: str, title: str, *, extract: bool = False) -> PanelReads:
    """Rule 1's answer: what the panel needs to read the PDF. A tab still titled by its address
    (the viewer has not read the document's title yet) is named by its file."""
    title = " ".join(title.split())
    if not title or title in url:
        title = _file_name(url)
    return PanelReads(
        {
            "pdf": {
                "tabId": tab.id,
                "url": url,
                "title": title,
                "maxBytes": MAX_PDF_BYTES,
                "maxChars": page_text.MAX_PAGE_CHARS,
                "extract": extract,
            }
        }
    )


def _megabytes(size: int, language: str) -> str:
    return catalogue.words(language).number(max(1, round(size / (1024 * 1024))))


def refusal(request: dict[str, Any], language: str) -> MarginError:
    """Rule 6: the reader's failure as one sentence."""
    problem = request.get("problem")
    if problem == "too_big":
        size = request.get("bytes")
        limit = _megabytes(MAX_PDF_BYTES, language)
        if isinstance(size, int) and not isinstance(size, bool) and size > MAX_PDF_BYTES:
            return MarginError.said("pdf_too_big", "py_error_pdf_too_big", _megabytes(size, language), limit)
        return MarginError.said("pdf_too_big", "py_error_pdf_too_big_unknown", limit)
    if problem == "unreachable":
        status = request.get("status")
        if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
            return MarginError.said("pdf_unreachable", "py_error_pdf_status", status)
        return MarginError.said("pdf_unreachable", "py_error_pdf_unreachable")
    code, key = _PROBLEMS.get(str(problem), _PROBLEMS["damaged"])
    return MarginError.said(code, key)


def fold_compatibility(text: str) -> str:
    """Rule 4: CJK compatibility forms NFKC-folded; everything else kept as it is."""
    return _COMPAT.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)


def _count(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def check_text_request(request: dict[str, Any]) -> tuple[list[str], int, int, int]:
    """The worker's text: (pages, pageCount, pagesRead, bytes), checked."""
    pages = request.get("pages")
    if not isinstance(pages, list) or not all(isinstance(p, str) for p in pages):
        raise MarginError.said("bad_payload", "py_error_pdf_damaged")
    count = max(_count(request.get("pageCount"), len(pages)), len(pages))
    read = min(_count(request.get("pagesRead"), len(pages)), count) or len(pages)
    return pages, count, read, _count(request.get("bytes"))


def marker(number: int, words: catalogue.Words) -> str:
    """Rule 4: the line before page `number`'s text, "— page 3 —" in the model language."""
    return f"— {words.text('py_pdf_page', words.number(number))} —"


def pdf_payload(url: str, title: str, request: dict[str, Any], *, language: str = "en") -> dict[str, Any]:
    """Rules 4 and 5: the site-cache payload (margin.page.attach.page_payload's shape) of a PDF."""
    pages, count, read, size = check_text_request(request)
    words = catalogue.words(language)
    parts = []
    for number, page in enumerate(pages, start=1):
        page = fold_compatibility(page).strip()
        if page:
            parts.append(f"{marker(number, words)}\n\n{page}")
    if not parts:
        raise MarginError.said("pdf_no_text", "py_error_pdf_no_text")
    capped = page_text.cap_text("\n\n".join(parts))
    notes = [words.text("py_note_pdf_pages", words.number(count), marker(1, words))]
    if read < count:
        notes.append(words.text("py_note_pdf_pages_read", words.number(read), words.number(count)))
    if capped.truncated:
        notes.append(page_context.truncation_note(len(capped.text), capped.original_chars, language=language))
    return {
        "kind": "pdf",
        "title": " ".join(fold_compatibility(title).split()) or _file_name(url),
        "url": url,
        "body": capped.text,
        "method": "pdf.js",
        "truncated": capped.truncated or read < count,
        "originalChars": capped.original_chars,
        "notes": notes,
        "pdf": {"pages": count, "pagesRead": read, "bytes": size},
    }


def fingerprint(request: dict[str, Any], language: str) -> list[Any]:
    """Rule 5: the cache entry's fingerprint: the bytes' digest, their size, the model language."""
    digest = request.get("digest")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise MarginError.said("bad_payload", "py_error_pdf_damaged")
    return ["pdf", digest, _count(request.get("bytes")), catalogue.locale_of(language)]
