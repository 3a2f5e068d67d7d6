"""What the fake providers record of a request (`RecordedRequest`, tests/e2e/fake_provider.py rule
1) and read of a chat request's body: the last user text, every message's text, whether it asks
for a summary (rule 7); and `split_text`, the pieces a reply streams in.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from fake_behaviours import SUMMARY_MARKER


@dataclass
class RecordedRequest:
    method: str
    path: str
    # Header names lower-cased.
    headers: dict[str, str]
    # The parsed JSON body, or None when there was no body or it was not JSON (see raw_body).
    body: Any
    raw_body: bytes
    at: float
    # Set when the client closed the connection before the response was complete (a Stop).
    client_gone: threading.Event = field(default_factory=threading.Event, repr=False)
    # Set when the response finished (completely, or the client went away).
    finished: threading.Event = field(default_factory=threading.Event, repr=False)
    # A chat completion that asks for a summary (rule 7); False for every other request.
    is_summary: bool = False
    # Answered with the context-overflow error of `limit_context` (rule 6).
    overflowed: bool = False

    @property
    def is_chat(self) -> bool:
        path = self.path.split("?", 1)[0].rstrip("/")
        return self.method == "POST" and path.endswith(("/chat/completions", "/messages", "/responses"))


def split_text(text: str, chunks: int) -> list[str]:
    """`text` in `chunks` contiguous pieces (fewer when the text is shorter), none empty."""
    chunks = max(1, min(chunks, len(text))) if text else 1
    size, extra = divmod(len(text), chunks)
    pieces, start = [], 0
    for i in range(chunks):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return [p for p in pieces if p] or [""]


def last_user_text(body: Any) -> str:
    try:
        messages = body["messages"]
    except (TypeError, KeyError):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "\n".join(
                    p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
                )
    return ""


def message_texts(body: Any) -> list[str]:
    """The text of every message of a chat request body (parts joined), in order."""
    try:
        messages = body["messages"]
    except (TypeError, KeyError):
        return []
    texts = []
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = "\n".join(
                p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
            )
        if isinstance(content, str):
            texts.append(content)
    return texts


def is_summary_request(body: Any, marker: re.Pattern[str] = SUMMARY_MARKER) -> bool:
    return any(marker.search(text) for text in message_texts(body))
