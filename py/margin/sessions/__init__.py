"""Saved sessions: the index and its entries, migrations of older layouts, search, export, requests."""
