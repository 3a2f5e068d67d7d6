"""A saved prompt picked in the message box ("/"), filled from the page the user is on.

Rules:
1. `prompts.fill {id}` answers `{text, attachPage}`: the prompt's text (margin.settings.prompts)
   with `{{language}}` as Margin's language by its own name, `{{selection}}` as the text selected
   in the active web tab, and `{{page}}` as the words for the attached page; `attachPage` tells
   the panel to attach the active tab, as "Attach page" does (its own request, its own errors).
2. The selection is read only when the text asks for it. A tab Margin cannot read (a chrome://
   page, no web tab, nothing selected) fills `{{selection}}` with nothing: the text is still the
   user's to edit, and the panel says nothing was selected (`selectionMissing`).
3. A prompt that is gone (deleted in the options page meanwhile) is `prompt_gone`, one sentence.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import MarginError
from ..platform.ports import Platform, ScriptError
from ..settings import prompts

PAGE_WORDS_KEY = "py_prompt_page_ref"


async def active_selection(platform: Platform) -> str:
    """Rule 2: the active web tab's selected text, or "" when there is none to read."""
    tab = await platform.tabs.active_web_tab()
    if tab is None:
        return ""
    try:
        selected = await platform.tabs.run(tab.id, "__marginSelection")
    except ScriptError:
        return ""
    return selected.strip() if isinstance(selected, str) else ""


async def handle_fill(platform: Platform, payload: dict) -> dict[str, Any]:
    """`prompts.fill {id}`: rule 1."""
    prompt = await prompts.find_prompt(platform, payload.get("id"))
    if prompt is None:
        raise MarginError.said("prompt_gone", "py_error_prompt_gone")
    words = await prompts.words_of_user(platform)
    wanted = prompts.placeholders_in(prompt["text"])
    values = {"language": prompts.language_name(words), "page": words.text(PAGE_WORDS_KEY)}
    selection = await active_selection(platform) if "selection" in wanted else ""
    values["selection"] = selection
    return {
        "text": prompts.fill(prompt["text"], values),
        "attachPage": "page" in wanted,
        "selectionMissing": "selection" in wanted and not selection,
    }
