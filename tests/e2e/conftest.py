"""Fixtures for the end-to-end tests: the built extension in Chromium, a fake provider, a `Margin` driver.

Fixtures:
- `dist_dir` (session): `$MARGIN_DIST`, or `python3 build.py` run once, giving `dist/margin`.
- `playwright_instance` (session): the sync Playwright driver.
- `launched` (function): a fresh Chromium profile with the extension loaded (isolates
  chrome.storage and the worker's memory); its console is piped to the `browser` logger and shown
  in the report of a failing test, with a screenshot of every open page in tests/artifacts/. A test
  after which a page had an uncaught exception fails (mark it `allow_page_errors` to allow it), and
  so does one after which a page of Margin's reported a CSP violation (never allowed).
- `browser_context`, `extension_id`: shortcuts into `launched`.
- `fake_provider` (function): a started `FakeProvider` that checks the API key of `provider_config`.
- `provider_config`: `{"baseUrl", "apiKey", "model", "name"}` pointing at `fake_provider`.
- `margin` (function): a `harness.Margin` driver (open_panel, open_options, configure_provider,
  send, wait_answer, wait_alert, storage_get/set, history, stop_service_worker, worker_running).
- `configured_margin`: `margin` with the fake provider saved as the active one through the service
  worker's `options.save` (the options page's own form is tested in test_options_e2e.py).

- `module_provider`, `module_browser` (module): one keyless `FakeProvider` and one browser for a
  whole test module, for the modules that run code: the code sandbox boots its own Pyodide once
  per browser (~15 s). `sandbox_margin` (function): a `Margin` on them with that provider saved,
  an empty history, "Let the model run Python" on "ask" and a 30 s time limit; it closes the
  test's pages afterwards.

Tests whose fake server must not check the key set up their own provider config.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_provider import FakeProvider
from harness import Launched, Margin, launch

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
API_KEY = "sk-test-margin-0123456789"


@pytest.fixture(scope="session")
def dist_dir() -> Path:
    if os.environ.get("MARGIN_DIST"):
        path = Path(os.environ["MARGIN_DIST"]).resolve()
    else:
        build = subprocess.run([sys.executable, "build.py"], cwd=REPO, capture_output=True, text=True)
        if build.returncode != 0:
            pytest.fail(f"python3 build.py failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}")
        path = REPO / "dist" / "margin"
    if not (path / "manifest.json").is_file():
        pytest.fail(f"no built extension at {path}")
    return path


@pytest.fixture(scope="session")
def playwright_instance():
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture
def launched(request, playwright_instance, dist_dir):
    browser = launch(playwright_instance, dist_dir)
    request.node._margin_launched = browser
    yield browser
    browser.close()
    # An uncaught exception in the panel or the options page is a bug even when the test passed.
    if browser.page_errors and not request.node.get_closest_marker("allow_page_errors"):
        pytest.fail("uncaught error(s) in Margin's pages:\n" + "\n".join(browser.page_errors), pytrace=False)
    # The panel and every other page of Margin's run with zero CSP violations (harness rule 5).
    if browser.csp_violations:
        pytest.fail(
            "CSP violation(s) in Margin's pages:\n" + "\n".join(browser.csp_violations), pytrace=False
        )


def pytest_configure(config):
    config.addinivalue_line("markers", "allow_page_errors: the test expects uncaught errors in a page")


@pytest.fixture
def browser_context(launched: Launched):
    return launched.context


@pytest.fixture
def extension_id(launched: Launched) -> str:
    return launched.extension_id


@pytest.fixture
def margin(launched: Launched) -> Margin:
    return Margin(launched)


@pytest.fixture
def fake_provider():
    with FakeProvider(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def provider_config(fake_provider: FakeProvider) -> dict:
    return {
        "name": "Fake provider",
        "baseUrl": fake_provider.base_url,
        "apiKey": API_KEY,
        "model": "fake-model",
    }


@pytest.fixture
def configured_margin(margin: Margin, provider_config: dict) -> Margin:
    margin.save_provider(
        base_url=provider_config["baseUrl"],
        api_key=provider_config["apiKey"],
        model=provider_config["model"],
        name=provider_config["name"],
    )
    return margin


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    browser: Launched | None = getattr(item, "_margin_launched", None)
    if browser is None or report.when not in ("setup", "call") or not report.failed:
        return
    report.sections.append(("browser console", "\n".join(browser.console_lines[-300:]) or "(nothing logged)"))
    try:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", item.nodeid.split("::", 1)[-1])
        shots = []
        for n, page in enumerate(browser.context.pages):
            if page.is_closed() or page.url.endswith("manifest.json"):
                continue
            path = ARTIFACTS / f"{name}-{n}.png"
            page.screenshot(path=str(path), full_page=True, timeout=5_000)
            shots.append(f"{page.url} -> {path}")
        if shots:
            report.sections.append(("screenshots", "\n".join(shots)))
    except Exception as error:  # a screenshot must never hide the real failure
        report.sections.append(("screenshots", f"could not take them: {error}"))


@pytest.fixture(scope="module")
def module_provider() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


@pytest.fixture(scope="module")
def module_browser(playwright_instance, dist_dir) -> Iterator[Launched]:
    launched = launch(playwright_instance, dist_dir)
    yield launched
    launched.close()
    if launched.csp_violations:  # harness rule 5, for the module's tests together
        pytest.fail(
            "CSP violation(s) in Margin's pages:\n" + "\n".join(launched.csp_violations), pytrace=False
        )


@pytest.fixture
def sandbox_margin(module_browser: Launched, module_provider: FakeProvider) -> Iterator[Margin]:
    margin = Margin(module_browser)
    margin.save_provider(base_url=module_provider.base_url, api_key="")
    margin.storage_set({"history": [], "runPython": "ask", "codeTimeLimitSeconds": 30})
    margin.storage_set({"unsavedAnswers": []}, area="session")
    module_provider.reset()
    yield margin
    for page in list(module_browser.context.pages):
        if not page.url.endswith("manifest.json"):
            page.close()
