"""Shared by every test, unit and end-to-end.

- Puts the Python package (py/) on sys.path.
- Runs the unit tests before the end-to-end ones, whatever order they were named in: they are the
  fast feedback, and Playwright's sync API keeps an event loop running in the main thread while
  its (session-wide) browser fixture lives, which would make every later `asyncio.run()` fail.
- Starts every test with Python's sentences in English: the user's language is per process
  (margin.i18n.catalogue, rule 5), and one test's setting must not leak into the next.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

E2E_DIR = Path(__file__).resolve().parent / "e2e"


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: E2E_DIR in Path(str(item.fspath)).parents)


@pytest.fixture(autouse=True)
def sentences_in_english(monkeypatch):
    from margin.i18n import catalogue

    monkeypatch.setattr(catalogue, "_spoken", "en")
