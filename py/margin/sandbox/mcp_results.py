"""An MCP tool call as a tool round keeps it: which server and tool, and what the tool answered
(margin.tools runs the call; margin.sandbox.tool_loop stores it with the round, under `mcp`).

Rules:
1. A call's `mcp` part is `{server, serverName, tool, result}`: the server's id and name as the
   options page showed them, the tool's own name on that server (the model saw a name made valid
   for every provider: margin.tools.names), and `result`, None until the server answered.
2. A result is `{content, isError, cut}`. `content` is a list of parts: `{type: "text", text}`,
   `{type: "json", text}` (structured content, written out, when no text part of the result
   carries it as the spec asks), `{type: "image", mimeType, data}` (base64 of a PNG, JPEG, GIF
   or WebP). Anything else the server sent (audio, a resource, a link) becomes a text part that
   names it, never its bytes.
3. Bounded: the text parts hold at most RESULT_CHARS characters in all, the images at most
   IMAGE_CHARS of base64 and MAX_PARTS parts. A result larger than that is cut, and `cut` says how
   many characters the server sent (0 when nothing was cut): the panel and the model are both
   told. `clean_mcp` accepts only what `from_server` would keep, so a stored round is never larger
   than a fresh one.
4. What the model is sent back (`result_text`) is text: the parts' text, an image as its type in
   brackets, a tool error marked as one, and a cut result says it was cut. Tool output is
   untrusted input: it is data for the model and the panel, never an instruction Margin follows.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .code_runs import exact_text, unreadable_result

RESULT_CHARS = 100_000
IMAGE_CHARS = 2_000_000
MAX_PARTS = 50
NAME_CHARS = 200
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _described(part: dict[str, Any]) -> str:
    """Rule 2: a part Margin does not show, named."""
    kind = str(part.get("type"))[:40]
    resource = part.get("resource") if isinstance(part.get("resource"), dict) else part
    uri = resource.get("uri") if isinstance(resource, dict) else None
    if kind == "resource" and isinstance(resource, dict) and isinstance(resource.get("text"), str):
        return resource["text"]
    return f"[{kind}{': ' + uri[:500] if isinstance(uri, str) else ''}]"


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)
    except (TypeError, ValueError):
        return "null"


def from_server(result: Any) -> dict[str, Any]:
    """A `tools/call` result as the server sent it (JSON), bounded and shaped (rules 2 and 3)."""
    if not isinstance(result, dict):
        result = {}
    raw = result.get("content") if isinstance(result.get("content"), list) else []
    parts: list[dict[str, Any]] = []
    sent = 0
    text_left, image_left = RESULT_CHARS, IMAGE_CHARS
    cut = False
    pieces: list[tuple[str, Any]] = []
    for part in raw:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            pieces.append(("text", part["text"]))
        elif (
            part.get("type") == "image"
            and part.get("mimeType") in IMAGE_TYPES
            and isinstance(part.get("data"), str)
        ):
            pieces.append(("image", part))
        else:
            pieces.append(("text", _described(part)))
    # Rule 2: a text part is the structured content said as text; it is not said twice.
    said_as_text = any(isinstance(part, dict) and part.get("type") == "text" for part in raw)
    if "structuredContent" in result and not said_as_text:
        pieces.append(("json", _json_text(result["structuredContent"])))
    for kind, value in pieces:
        if len(parts) >= MAX_PARTS:
            cut = True
            sent += len(value) if isinstance(value, str) else len(value["data"])
            continue
        if kind == "image":
            data = value["data"]
            sent += len(data)
            if len(data) > image_left:
                cut = True
                parts.append({"type": "text", "text": f"[image: {value['mimeType']}]"})
                continue
            image_left -= len(data)
            parts.append({"type": "image", "mimeType": value["mimeType"], "data": data})
            continue
        sent += len(value)
        if len(value) > text_left:
            cut = True
            value = value[:text_left]
        text_left -= len(value)
        if value or kind == "json":
            parts.append({"type": kind, "text": value})
    return {"content": parts, "isError": result.get("isError") is True, "cut": sent if cut else 0}


def clean_result(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        raise unreadable_result("a tool result")
    if len(value["content"]) > MAX_PARTS:
        raise unreadable_result("a tool result")
    text_left, image_left = RESULT_CHARS, IMAGE_CHARS
    parts = []
    for part in value["content"]:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "json"):
            text = exact_text(part.get("text"), text_left, "a tool result")
            text_left -= len(text)
            parts.append({"type": kind, "text": text})
        elif kind == "image" and part.get("mimeType") in IMAGE_TYPES:
            data = exact_text(part.get("data"), image_left, "a tool image")
            image_left -= len(data)
            parts.append({"type": "image", "mimeType": part["mimeType"], "data": data})
        else:
            raise unreadable_result("a tool result")
    cut = value.get("cut")
    if not isinstance(cut, int) or isinstance(cut, bool) or cut < 0 or not math.isfinite(cut):
        raise unreadable_result("a tool result")
    return {"content": parts, "isError": value.get("isError") is True, "cut": cut}


def clean_mcp(value: Any) -> dict[str, Any]:
    """Rule 1: a stored call's `mcp` part, as `from_server` and margin.tools would keep it."""
    if not isinstance(value, dict):
        raise unreadable_result("a tool call")
    result = value.get("result")
    return {
        "server": exact_text(value.get("server"), NAME_CHARS, "a server"),
        "serverName": exact_text(value.get("serverName"), NAME_CHARS, "a server"),
        "tool": exact_text(value.get("tool"), NAME_CHARS, "a tool"),
        "result": None if result is None else clean_result(result),
    }


def result_text(result: dict[str, Any]) -> str:
    """Rule 4: what the model reads of a result."""
    pieces = []
    for part in result["content"]:
        if part["type"] == "image":
            pieces.append(f"[image: {part['mimeType']}]")
        else:
            pieces.append(part["text"])
    text = "\n\n".join(pieces) or "(The tool returned nothing.)"
    if result["isError"]:
        text = f"[The tool reported an error]\n{text}"
    if result["cut"]:
        text += (
            f"\n\n[The result was cut: the tool sent {result['cut']} characters; the first ones are above.]"
        )
    return text
