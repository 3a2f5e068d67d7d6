"""Saved prompts: the user's own and the seven built in, their order, their place in the
right-click menu, and the filling of their placeholders.

Rules:
1. One key, `prompts` (margin.storage.keys), holds the list in the user's order. A prompt of the
   user's own is `{id, name, text, menu}`; a built-in one is `{id, builtin: true, hidden, menu}`:
   its name and text are the catalogue's (`BUILTINS`, in the user's language), never copied, so a
   language change or a better translation reaches it. An absent key is the seven built-ins in
   their order, "Summarize" and "Translate" in the menu.
2. Reading never raises (margin.storage.stored_values, rule 1): an entry Margin cannot read is
   left out and the whole stored value parked by the next save; a built-in the stored list lacks
   (one a later version adds) is appended, so each built-in appears exactly once.
3. `prompts.save` takes the whole list, validates EVERYTHING before writing ANYTHING (a name of
   1..NAME_MAX_CHARS characters, a text of 1..TEXT_MAX_CHARS, no repeated id, a built-in only by
   its known id, at most MAX_PROMPTS prompts unless the list does not grow: a list a backup
   made longer can still be saved with one fewer) and writes it in one `set` under the storage
   lock. A prompt without an id gets a
   new one. Bad input is `invalid_prompts` with one sentence naming the prompt; nothing is written.
4. Placeholders: `{{selection}}`, `{{page}}` and `{{language}}` (`PLACEHOLDERS`), filled by `fill`
   with what the caller gives (the selection, the words for the attached page, Margin's language
   by its own name); anything else between braces is left as it is.
5. What the pages get (`prompts.list`) is each prompt resolved: `{id, name, text, builtin, hidden,
   menu}`, built-ins in the words of Margin's language.
6. A save stamps each prompt it changes (a built-in's flags too) with the time, in `promptsEdited`
   ({id: ms}, `edit_stamps`): sync keeps the later of two edits made apart (margin.sync.settings).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from ..base import clock
from ..base.errors import MarginError
from ..i18n import catalogue
from ..platform.ports import Platform
from ..storage.keys import PROMPTS, PROMPTS_EDITED, lock_for
from ..storage.stored_values import Read, park
from .options import model_language, read_options

NAME_MAX_CHARS = 80
TEXT_MAX_CHARS = 20_000
MAX_PROMPTS = 200
# Built-in id -> (name key, text key, in the menu by default, the placeholders its text holds, in
# the order of the message's `$1`, `$2`: the catalogue writes `$page$` where the text says
# `{{page}}`, since a message cannot hold braces); the order is the default order.
BUILTINS: dict[str, tuple[str, str, bool, tuple[str, ...]]] = {
    "summarize": ("py_prompt_summarize_name", "py_prompt_summarize_text", True, ()),
    "summarize_page": ("py_prompt_summarize_page_name", "py_prompt_summarize_page_text", False, ("page",)),
    "explain_simply": ("py_prompt_explain_simply_name", "py_prompt_explain_simply_text", False, ()),
    "tighten": ("py_prompt_tighten_name", "py_prompt_tighten_text", False, ()),
    "translate": ("py_prompt_translate_name", "py_prompt_translate_text", True, ("language",)),
    "fix_grammar": ("py_prompt_fix_grammar_name", "py_prompt_fix_grammar_text", False, ()),
    "key_points": ("py_prompt_key_points_name", "py_prompt_key_points_text", False, ()),
}
PLACEHOLDERS = ("selection", "page", "language")
_PLACEHOLDER = re.compile(r"\{\{\s*(selection|page|language)\s*\}\}")


def default_prompts() -> list[dict[str, Any]]:
    return [{"id": key, "builtin": True, "hidden": False, "menu": spec[2]} for key, spec in BUILTINS.items()]


def _valid_own(entry: dict[str, Any]) -> bool:
    name, text, prompt_id = entry.get("name"), entry.get("text"), entry.get("id")
    return (
        isinstance(prompt_id, str)
        and bool(prompt_id)
        and prompt_id not in BUILTINS
        and isinstance(name, str)
        and 0 < len(name.strip()) <= NAME_MAX_CHARS
        and isinstance(text, str)
        and 0 < len(text.strip()) <= TEXT_MAX_CHARS
    )


def _clean(entry: dict[str, Any]) -> dict[str, Any]:
    if entry.get("builtin") is True:
        return {
            "id": entry["id"],
            "builtin": True,
            "hidden": entry.get("hidden") is True,
            "menu": entry.get("menu") is True,
        }
    return {
        "id": entry["id"],
        "name": entry["name"].strip(),
        "text": entry["text"].strip(),
        "menu": entry.get("menu") is True,
    }


def read_prompts(raw: Any) -> Read:
    """Rule 2: the stored list (absent: `None`) as clean entries, every built-in once."""
    if raw is None:
        return Read(default_prompts())
    if not isinstance(raw, list):
        return Read(default_prompts(), unreadable=raw)
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in raw:
        if not isinstance(entry, dict) or entry.get("id") in seen:
            continue
        builtin = entry.get("builtin") is True and entry.get("id") in BUILTINS
        if builtin or _valid_own(entry):
            kept.append(_clean(entry))
            seen.add(entry["id"])
    complete = len(kept) == len(raw)
    for entry in default_prompts():
        if entry["id"] not in seen:
            kept.append(entry)
    return Read(kept, unreadable=None if complete else raw)


def resolve(prompts: list[dict[str, Any]], words: catalogue.Words) -> list[dict[str, Any]]:
    """Rule 5: each prompt with its name and text, built-ins in `words`' language."""
    resolved = []
    for entry in prompts:
        if entry.get("builtin"):
            name_key, text_key, _, holds = BUILTINS[entry["id"]]
            name, text = words.text(name_key), words.text(text_key, *(f"{{{{{p}}}}}" for p in holds))
        else:
            name, text = entry["name"], entry["text"]
        resolved.append(
            {
                "id": entry["id"],
                "name": name,
                "text": text,
                "builtin": bool(entry.get("builtin")),
                "hidden": entry.get("hidden") is True,
                "menu": entry.get("menu") is True,
            }
        )
    return resolved


def placeholders_in(text: str) -> set[str]:
    return {match.group(1) for match in _PLACEHOLDER.finditer(text)}


def fill(text: str, values: dict[str, str]) -> str:
    """Rule 4: each placeholder `values` names becomes its value; the others stay as written."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def language_name(words: catalogue.Words) -> str:
    """Margin's language by its own name ("日本語"), what `{{language}}` becomes."""
    return words.text("language_name")


async def stored_prompts(platform: Platform) -> Read:
    stored = await platform.local.get([PROMPTS])
    return read_prompts(stored.get(PROMPTS))


async def words_of_user(platform: Platform) -> catalogue.Words:
    language = model_language(await read_options(platform), platform.browser_language)
    return await catalogue.ensure(platform, language)


async def resolved_prompts(platform: Platform) -> list[dict[str, Any]]:
    return resolve((await stored_prompts(platform)).value, await words_of_user(platform))


async def find_prompt(platform: Platform, prompt_id: Any) -> dict[str, Any] | None:
    """The resolved prompt `prompt_id` names, hidden or not; None when there is none."""
    return next((p for p in await resolved_prompts(platform) if p["id"] == prompt_id), None)


def _refused(key: str, *args: Any) -> MarginError:
    return MarginError.said("invalid_prompts", key, *args)


def validate(raw: Any, before: int | None = None) -> list[dict[str, Any]]:
    """Rule 3: the list a save writes, or `invalid_prompts` naming the first prompt at fault.
    `before`, how many prompts are stored now, bounds a save from the options page (None: a list
    another machine already keeps, margin.sync.settings, is not bounded again)."""
    if not isinstance(raw, list):
        raise _refused("py_error_prompts_missing")
    if before is not None and len(raw) > max(MAX_PROMPTS, before):
        raise _refused("py_error_prompts_too_many", MAX_PROMPTS)
    checked: list[dict[str, Any]] = []
    seen: set[str] = set()
    for position, entry in enumerate(raw, 1):
        if not isinstance(entry, dict):
            raise _refused("py_error_prompt_unreadable", position)
        prompt_id = entry.get("id")
        if entry.get("builtin") is True:
            if prompt_id not in BUILTINS:
                raise _refused("py_error_prompt_unreadable", position)
        else:
            if prompt_id in (None, ""):
                prompt_id = f"p_{uuid.uuid4().hex[:12]}"
            name, text = entry.get("name"), entry.get("text")
            if not isinstance(name, str) or not name.strip():
                raise _refused("py_error_prompt_name_missing", position)
            if len(name.strip()) > NAME_MAX_CHARS:
                raise _refused("py_error_prompt_name_long", name.strip()[:40], NAME_MAX_CHARS)
            if not isinstance(text, str) or not text.strip():
                raise _refused("py_error_prompt_text_missing", name.strip())
            if len(text.strip()) > TEXT_MAX_CHARS:
                raise _refused("py_error_prompt_text_long", name.strip(), TEXT_MAX_CHARS)
            if not isinstance(prompt_id, str) or prompt_id in BUILTINS:
                raise _refused("py_error_prompt_unreadable", position)
        if prompt_id in seen:
            raise _refused("py_error_prompt_unreadable", position)
        seen.add(prompt_id)
        checked.append(_clean({**entry, "id": prompt_id}))
    return read_prompts(checked).value  # the built-ins it left out come back at the end


def edit_stamps(
    before: list[dict[str, Any]], after: list[dict[str, Any]], stamps: Any, now: int
) -> dict[str, int]:
    """Rule 6: the stamps of `after`'s prompts: `now` where one differs from `before`, else as was."""
    old = {p["id"]: p for p in before}
    known = stamps if isinstance(stamps, dict) else {}
    kept = {p["id"]: known[p["id"]] for p in after if isinstance(known.get(p["id"]), int)}
    return {**kept, **{p["id"]: now for p in after if old.get(p["id"]) != p}}


# -- handlers -------------------------------------------------------------------------------


async def handle_list(platform: Platform, payload: dict) -> dict[str, Any]:
    """`prompts.list`: every prompt resolved (rule 5), hidden ones included, in the user's order."""
    return {"prompts": await resolved_prompts(platform)}


async def handle_save(platform: Platform, payload: dict) -> dict[str, Any]:
    """`prompts.save {prompts}`: validate all, then write the list in one `set` (rule 3)."""
    async with lock_for(platform.local):
        words = await words_of_user(platform)
        before = await stored_prompts(platform)
        prompts = validate(payload.get("prompts"), len(before.value))
        stamps = (await platform.local.get([PROMPTS_EDITED])).get(PROMPTS_EDITED)
        edited = edit_stamps(before.value, prompts, stamps, clock.now_ms())
        await platform.local.set({PROMPTS: prompts, PROMPTS_EDITED: edited, **park(PROMPTS, before)})
    return {"prompts": resolve(prompts, words)}
