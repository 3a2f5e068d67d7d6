"""Explain: select text on a page, right-click, "Explain with Margin".

Rules:
1. The service worker's context-menu listener opens the side panel (it must, synchronously, to
   keep the click's user gesture) and queues the request here: `explainRequest` in
   `chrome.storage.session` = `{id, selection, pageUrl, title, at}`. Only a user's click fires it.
2. The side panel, open or just opened, sees the request (it reads the key on load and follows
   storage.onChanged) and starts an ordinary turn `{action: "explain", requestId}`; so the answer
   streams like any other, and Stop, Regenerate and Edit work on it.
3. The turn takes the request once (`take_request`): the selection and the page it came from
   become an attachment record, followed by the question (`EXPLAIN_QUESTION_KEY`, in the model
   language). A request already taken, replaced by a newer one, or older than
   `REQUEST_MAX_AGE_MS` is refused with a sentence; two open panels therefore never answer the
   same click twice.
4. Chrome's PDF viewer gives the menu and the selection (Chromium 156, tried by hand: the click's
   `srcUrl` is the viewer's stream, chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/…, and
   `pageUrl`/`frameUrl` the PDF's address). There, or on an address ending in .pdf, the selection
   is a PDF's text: its CJK compatibility forms are folded as an attached PDF's are
   (margin.page.pdf, rule 4; Chrome's own viewer already gives the unified characters, other
   viewers need not). A click there that brought no text is still queued, so the panel opens and
   says what to do instead (`py_error_pdf_selection`: attach the whole PDF).
5. A saved prompt in the menu (margin.settings.prompts, worker/prompt_menu.js) runs as Explain
   does: the request carries its `promptId`, and the question is the prompt's text instead of
   `EXPLAIN_QUESTION_KEY`, its `{{selection}}` and `{{page}}` the words for the selection card
   above it and its page, `{{language}}` Margin's language. A prompt deleted since is `prompt_gone`.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..base import clock
from ..base.errors import MarginError
from ..i18n import catalogue
from ..page import pdf
from ..page.context import selection_record
from ..platform.ports import Platform
from ..settings import prompts
from ..settings.options import model_language, read_options
from ..storage.history import Record, user_record
from ..storage.keys import EXPLAIN_REQUEST

# The question, in the words of the model language (margin.i18n.catalogue).
EXPLAIN_QUESTION_KEY = "py_explain_question"
# What a menu prompt's placeholders become: the card above the question holds the selection (rule 5).
SELECTION_WORDS_KEY = "py_prompt_selection_ref"
PAGE_WORDS_KEY = "py_prompt_page_ref"
REQUEST_MAX_AGE_MS = 5 * 60 * 1000
QUEUED_SELECTION_MAX_CHARS = 200_000
# Chrome's PDF viewer is this component extension's frame (rule 4).
PDF_VIEWER_ORIGIN = "chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/"


def _in_pdf_viewer(info: dict[str, Any]) -> bool:
    viewer = any(
        isinstance(info.get(key), str) and info[key].startswith(PDF_VIEWER_ORIGIN)
        for key in ("srcUrl", "frameUrl")
    )
    page = info.get("pageUrl")
    return viewer or (isinstance(page, str) and pdf.is_pdf_address(page))


async def queue(platform: Platform, info: dict[str, Any]) -> dict[str, Any]:
    """The context menu was clicked on a selection: remember what to explain."""
    selection = info.get("selectionText")
    in_pdf = _in_pdf_viewer(info)
    if not isinstance(selection, str) or not selection.strip():
        if not in_pdf:
            raise MarginError.said("nothing_selected", "py_error_nothing_selected")
        selection = ""  # rule 4: the panel says what to do
    if in_pdf:
        selection = pdf.fold_compatibility(selection)
    page_url = info.get("pageUrl") if isinstance(info.get("pageUrl"), str) else ""
    title = info.get("title") if isinstance(info.get("title"), str) else ""
    request = {
        "id": uuid.uuid4().hex,
        "selection": selection[:QUEUED_SELECTION_MAX_CHARS],
        "pageUrl": page_url,
        "title": title,
        "at": clock.now_ms(),
    }
    if isinstance(info.get("promptId"), str):  # rule 5
        request["promptId"] = info["promptId"]
    await platform.session.set({EXPLAIN_REQUEST: request})
    return request


def _gone() -> MarginError:
    return MarginError.said("explain_gone", "py_error_explain_gone")


async def take_request(platform: Platform, request_id: Any) -> list[Record]:
    """The records an explain turn stores: the selection's attachment, then the question."""
    stored = await platform.session.get([EXPLAIN_REQUEST])
    request = stored.get(EXPLAIN_REQUEST)
    if (
        not isinstance(request, dict)
        or request.get("id") != request_id
        or not isinstance(request.get("selection"), str)
    ):
        raise _gone()
    await platform.session.remove([EXPLAIN_REQUEST])
    at = request.get("at")
    fresh = (
        isinstance(at, (int, float))
        and not isinstance(at, bool)
        and 0 <= clock.now_ms() - at <= REQUEST_MAX_AGE_MS
    )
    if not fresh:  # a stale request, or one whose time is not a time, is as gone as a missing one
        raise _gone()
    if not request["selection"].strip():  # rule 4: a click in the PDF viewer that brought no text
        raise MarginError.said("nothing_selected", "py_error_pdf_selection")
    language = model_language(await read_options(platform), platform.browser_language)
    words = await catalogue.ensure(platform, language)
    now = clock.now_ms()
    attachment = selection_record(
        request["selection"],
        title=str(request.get("title") or ""),
        url=str(request.get("pageUrl") or ""),
        captured_at=now,
        language=language,
    )
    return [attachment, user_record(await _question(platform, request, words), createdAt=now)]


async def _question(platform: Platform, request: dict[str, Any], words: catalogue.Words) -> str:
    """Explain's question, or the saved prompt's text filled (rule 5)."""
    if "promptId" not in request:
        return words.text(EXPLAIN_QUESTION_KEY)
    prompt = await prompts.find_prompt(platform, request["promptId"])
    if prompt is None:
        raise MarginError.said("prompt_gone", "py_error_prompt_gone")
    values = {
        "selection": words.text(SELECTION_WORDS_KEY),
        "page": words.text(PAGE_WORDS_KEY),
        "language": prompts.language_name(words),
    }
    return prompts.fill(prompt["text"], values)
