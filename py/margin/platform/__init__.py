"""The platform, laid out like micropip's `_compat`: the interface (`ports`, the seams the core reaches the
outside world through) and the browser implementation (`browser`, the only importer of `js` and
`pyodide`). The in-memory twin for CPython lives with the tests (tests/support/platform_memory.py),
outside the wheel."""
