"""What the browser says during a test, collected for its log: every page's and worker's console
(`console_lines`, and the `browser` logger), uncaught page errors, and Content-Security-Policy
violations in Margin's pages.

harness.launch() installs `CSP_LISTENER_JS` in every page before any of its scripts runs; only
Margin's own pages (chrome-extension:) report, each violation as one console error starting with
`CSP_REPORT_PREFIX`, which `pipe_console` collects (harness rule 5). Margin's pages run with none
(docs/security.md).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from playwright.sync_api import BrowserContext, ConsoleMessage, Page, Worker

log = logging.getLogger("browser")

CSP_REPORT_PREFIX = "Margin test: CSP violation"
CSP_LISTENER_JS = f"""(() => {{
    if (location.protocol !== "chrome-extension:") return;
    document.addEventListener("securitypolicyviolation", (event) => {{
        console.error("{CSP_REPORT_PREFIX}: " + JSON.stringify({{
            directive: event.violatedDirective, blocked: event.blockedURI, sample: event.sample,
            source: event.sourceFile, line: event.lineNumber, column: event.columnNumber,
            page: location.pathname,
        }}));
    }});
}})();"""


def pipe_console(context: BrowserContext, lines: list[str], page_errors: list[str], csp: list[str]) -> None:
    started = time.monotonic()

    def note(source: str, level: str, text: str) -> None:
        line = f"[{time.monotonic() - started:7.2f}s] {source} {level}: {text}"
        lines.append(line)
        if text.startswith(CSP_REPORT_PREFIX):
            csp.append(text)
        log.log(logging.ERROR if level in ("error", "pageerror") else logging.INFO, line)

    def short(url: str) -> str:
        return re.sub(r"^chrome-extension://[a-p]{32}", "ext:", url)

    def on_page(page: Page) -> None:
        page.on("console", lambda m: note(f"page {short(page.url)}", m.type, console_text(m)))

        def on_error(error: Any) -> None:
            text = f"{short(page.url)}: {error}\n{getattr(error, 'stack', '') or ''}".rstrip()
            page_errors.append(text)
            note("page", "pageerror", text)

        page.on("pageerror", on_error)
        page.on("crash", lambda _: note(f"page {short(page.url)}", "error", "page crashed"))

    def on_worker(worker: Worker) -> None:
        note(f"worker {short(worker.url)}", "info", "started")
        worker.on("console", lambda m: note(f"worker {short(worker.url)}", m.type, console_text(m)))
        worker.on("close", lambda _: note(f"worker {short(worker.url)}", "info", "stopped"))

    context.on("page", on_page)
    context.on("serviceworker", on_worker)
    for page in context.pages:
        on_page(page)
    for worker in context.service_workers:
        on_worker(worker)


def console_text(message: ConsoleMessage) -> str:
    text = message.text
    location = message.location or {}
    if message.type in ("error", "warning") and location.get("url"):
        text += f"  ({location['url'].rsplit('/', 1)[-1]}:{location.get('lineNumber')})"
    return text
