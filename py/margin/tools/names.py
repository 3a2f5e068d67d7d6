"""The names the model sees for the user's MCP tools: valid for every provider, unique in a turn.

Rules:
1. A name matches NAME_PATTERN (`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`): what OpenAI, Anthropic and
   the Responses API accept (`^[a-zA-Z0-9_-]{1,64}$`), starting with a letter as Gemini wants.
   A tool's own name keeps its letters, digits, `_` and `-`; every other character becomes `_`;
   a name that does not start with a letter gets `t_` before it; it is cut to 64 characters.
2. Unique: names are given in order (the servers as stored, each server's tools as listed). A
   name already given, or `run_python`, is tried again as `<server>_<tool>` (the server's name
   made valid the same way, at most 20 characters), then with `_2`, `_3`... at its end, cut so
   the whole stays within 64 characters. The same servers and tools always give the same names.
3. Names are made again for each turn from what is stored: the stored call keeps the name the
   model used, and the server and tool it meant (margin.sandbox.mcp_results rule 1).
"""

from __future__ import annotations

import re

from ..sandbox.tool_loop import RUN_PYTHON

NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,63}$")
MAX_CHARS = 64
SERVER_CHARS = 20
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")


def valid_name(text: str, limit: int = MAX_CHARS) -> str:
    """Rule 1."""
    name = _NOT_ALLOWED.sub("_", text) or "tool"
    if not name[0].isascii() or not name[0].isalpha():
        name = "t_" + name
    return name[:limit]


def unique_names(tools: list[tuple[str, str]]) -> list[str]:
    """Rule 2: for each (server name, tool name), in order, the name the model sees."""
    given: set[str] = {RUN_PYTHON}
    names = []
    for server, tool in tools:
        name = valid_name(tool)
        if name in given:
            name = valid_name(f"{valid_name(server, SERVER_CHARS)}_{tool}")
        number = 2
        base = name
        while name in given:
            suffix = f"_{number}"
            name = base[: MAX_CHARS - len(suffix)] + suffix
            number += 1
        given.add(name)
        names.append(name)
    return names
