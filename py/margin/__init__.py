"""Margin's backend: the storage model of docs/storage-model.md, in Python.

Every module is one concept; only `margin.platform` touches the browser. Everything else is
plain data in, plain data out, with I/O through the seams in `margin.ports`.
"""

__version__ = "0.1.0"
