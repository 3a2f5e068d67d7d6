"""Errors the user may see: a machine code plus a plain sentence that says what to do next.

Rule: every failure that crosses the message boundary is a `MarginError`; the API module turns it
into `{ok: false, error: {code, message}}`. Anything else is a bug and is reported as `internal`.
"""

from __future__ import annotations


class MarginError(Exception):
    """A failure with a stable `code` (for code and tests) and a `message` (for people)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message}


class StorageError(MarginError):
    """chrome.storage refused a read or write (quota, a corrupt database, a closed context)."""


class ProviderError(MarginError):
    """The model provider failed: HTTP status, network, timeout or a malformed stream."""
