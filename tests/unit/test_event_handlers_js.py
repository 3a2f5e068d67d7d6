"""extension/panel/event_handlers.js in node: event-handler attributes leave HTML text before any
parse (a parse of one is a CSP violation report in Chromium, even in an inert document), read as
the HTML tokenizer reads start tags; everything else stays byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_js_module

MODULE = Path(__file__).resolve().parents[2] / "extension" / "panel" / "event_handlers.js"
SCRIPT = "console.log(JSON.stringify(input.map((html) => globalThis.marginWithoutEventHandlers(html))));"

CASES = [
    ('<img src=x onerror="window.__pwned=1">', "<img src=x >"),
    ("<img/onerror=alert(1) src=x>", "<img/ src=x>"),  # `/` parts attributes too
    ("<img src=\"a>b\" onerror=x alt='q'>", "<img src=\"a>b\"  alt='q'>"),  # `>` inside a quoted value
    ('<img src="x"onerror="y">', '<img src="x">'),  # no space after a quoted value
    ("<a href=x ONCLICK = 'z' title=t>k</a>", "<a href=x  title=t>k</a>"),  # any case, spaces around =
    ('<details open ontoggle="x">d</details>', "<details open >d</details>"),
    ('<svg onload="x"><circle r="5"/></svg>', '<svg ><circle r="5"/></svg>'),
    ("<img src=x onerror>", "<img src=x >"),  # a handler with no value
    ("<img src=x onerror='unterminated", "<img src=x "),  # to the end of the text, as the tokenizer
]
UNCHANGED = [
    "<p>on and on <b>onward</b>, turn it on=off</p>",  # text is text
    "a < b onerror=1 and 3 <4 onload=2",  # `<` not followed by a letter opens no tag
    '<a href="https://e.com/?on=1" title="on=1">x</a>',  # inside values
    "<code>&lt;img onerror=1&gt;</code>",  # escaped markup in code
    "",
    "plain text",
]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    inputs = [html for html, _ in CASES] + UNCHANGED
    return run_js_module(tmp_path_factory.mktemp("handlers"), MODULE, "handlers", SCRIPT, inputs)


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)))
def test_event_handler_attributes_are_taken_out(results, index, case):
    assert results[index] == case[1]


@pytest.mark.parametrize(("index", "html"), list(enumerate(UNCHANGED)))
def test_everything_else_is_kept_byte_for_byte(results, index, html):
    assert results[len(CASES) + index] == html
