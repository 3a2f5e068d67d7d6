"""Puts the Python package (py/) on sys.path for every test, unit and end-to-end."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))
