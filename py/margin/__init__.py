"""Margin's backend: the storage model of docs/storage-model.md, in Python.

One subpackage per concept. Only `margin.platform.browser` touches the browser; everything else
is plain data in, plain data out, with I/O through the seams in `margin.platform.ports`.

Layers, lowest first. A module imports from its own layer and the layers above it in this list,
never from one below it, and no import (even one inside a function) closes a cycle
(tests/unit/test_py_layers.py reads this list and checks both):
- base/       what every concept says and sends: errors, sentences, finite JSON, SSE, the clock, Stop
- platform/   the seams to the outside world (ports) and their browser implementation (browser)
- i18n/       the catalogue: the words of the extension's _locales, loaded once per language
- sandbox/    the run_python tool: code runs kept with answers, tool rounds, a turn's calls
- storage/    chrome.storage's keys, reading what it holds, and the one flat history
- images/     images in records: data URLs, Pillow, originals, the bound, figures, screenshots
- providers/  each provider's wire, stream, tool calls and usage; errors, overflow, plain http
- tools/      the user's MCP servers: the protocol, a session, the stored servers, a turn's calls
- settings/   the options page's settings: providers, language, thresholds, saved prompts
- page/       what the user attaches: a tab's page, its video and captions, a data file
- sessions/   saved sessions: the index, its entries and migrations, search, export
- backup/     a whole backup as one streamed file: reading, checking, importing, exporting
- sync/       saved sessions on every machine: encrypted objects, a manifest, merges, WebDAV
- turn/       a chat turn and what it needs: slimming, rescue, agent turns, unsaved answers
- app/        the running worker, the message API and the JS contract
"""

__version__ = "0.1.0"
