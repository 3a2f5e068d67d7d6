"""The saved sessions' index entries as stored, read from a test's extension page.

`savedSessions` is a header of ids, each entry in `sessionEntry_<id>` (docs/storage-model.md, "Saved
sessions"); a profile not migrated yet still holds the older list, which is returned as it is.
"""

from __future__ import annotations

from typing import Any

from harness import Margin

ENTRIES_JS = """async () => {
  const raw = (await chrome.storage.local.get('savedSessions')).savedSessions;
  if (!raw || Array.isArray(raw) || !Array.isArray(raw.ids)) return Array.isArray(raw) ? raw : [];
  const got = await chrome.storage.local.get(raw.ids.map((id) => 'sessionEntry_' + id));
  return raw.ids.map((id) => got['sessionEntry_' + id] ?? null);
}"""


def session_entries(margin: Margin) -> list[Any]:
    """The index entries in their stored order (an entry that is gone reads as None)."""
    return margin._extension_page().evaluate(ENTRIES_JS)
