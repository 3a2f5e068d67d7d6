"""axe-core in Margin's pages: the pinned checker (package-lock.json), injected by the tests only.

`violations(page)` runs axe-core on the page as it is and returns one line per violation
(rule, impact, the first offending elements), so a failing assertion says what to fix.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]


@cache
def axe_source() -> str:
    path = os.environ.get("MARGIN_AXE")
    if not path:
        sys.path.insert(0, str(REPO))
        from buildsteps.toolchain import axe_script

        path = str(axe_script(REPO))
    return Path(path).read_text(encoding="utf-8")


RUN_AXE = """async () => {
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) =>
        `${v.id} (${v.impact}): ${v.help}; ` +
        v.nodes.slice(0, 3).map((n) => n.target.join(" ") + (n.failureSummary ? ` [${n.failureSummary.replace(/\\s+/g, " ")}]` : "")).join(" | "));
}"""


def violations(page: Page) -> list[str]:
    """axe-core's violations on `page` (injected over CDP: the page's CSP allows only its own scripts)."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(axe_source() + "\n;undefined")
    return page.evaluate(RUN_AXE)
