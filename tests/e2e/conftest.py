"""Fixtures for end-to-end tests: one ``jupyter lab`` server per session, Chromium per module.

- ``jupyter_server`` (session): a ``JupyterServer`` (see ``e2e_helpers``) on 127.0.0.1, a fresh
  temporary root, configuration and settings; stopped (kernels included) at the end.
- ``notebook7_server`` (session): the same server, checked to serve Notebook 7 too.
- ``browser`` (module): a Playwright (sync API) Chromium ``Browser``. Module scope on purpose:
  while Playwright's sync API is started, the main thread reports its asyncio loop as running, so
  ``asyncio.run`` and pytest-asyncio tests fail. Stopping it after each e2e module keeps the rest
  of the suite sound; for the same reason an e2e module must not hold async tests.
- ``page`` (function): a ``Page`` in a fresh browser context. When the test fails, a screenshot,
  the page's console and the server log's tail go to ``test-results/``. At the end every kernel
  of the server is shut down.
- ``jupyter_app`` (function, parametrized): ``"lab"`` then ``"notebook"``, for a test to run in
  JupyterLab and in Notebook 7 (``open_notebook(..., app=jupyter_app)``).
- ``notebook_name`` (function): a notebook file name unique to the test.

Playwright's ``expect`` waits up to ``EXPECT_TIMEOUT_MS`` here (its own default is 5 s).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Page,
    Playwright,
    expect,
    sync_playwright,
)

from e2e_helpers import (
    APPS,
    CHROMIUM_ARGS,
    App,
    JupyterServer,
    find_chromium,
    start_jupyter_server,
    stop_jupyter_server,
)

EXPECT_TIMEOUT_MS = 15_000

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def _failed(item: pytest.Item) -> bool:
    return any(report.failed for report in item.stash.get(_REPORTS, {}).values())


def _artifact_stem(item: pytest.Item) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_")


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    server = start_jupyter_server(tmp_path_factory.mktemp("jupyter"))
    try:
        yield server
    finally:
        stop_jupyter_server(server)


@pytest.fixture(scope="session")
def notebook7_server(jupyter_server: JupyterServer) -> JupyterServer:
    if not jupyter_server.serves("tree"):
        pytest.fail("the server does not serve Notebook 7 (/tree): is `notebook>=7` installed?")
    return jupyter_server


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as instance:
        yield instance


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    # Playwright gives each launch a fresh temporary user-data dir.
    browser = playwright.chromium.launch(
        executable_path=find_chromium(), headless=True, args=list(CHROMIUM_ARGS)
    )
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def page(
    browser: Browser, jupyter_server: JupyterServer, request: pytest.FixtureRequest
) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    console: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        console.append(f"[{message.type}] {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: console.append(f"[pageerror] {error}"))
    try:
        yield page
    finally:
        if _failed(request.node):
            out = Path(request.config.rootpath) / "test-results"
            out.mkdir(exist_ok=True)
            stem = _artifact_stem(request.node)
            try:
                page.screenshot(path=str(out / f"{stem}.png"), full_page=True)
            except Exception as error:  # the page may be gone; keep the other artifacts
                console.append(f"[e2e] screenshot failed: {error}")
            (out / f"{stem}.console.txt").write_text("\n".join(console) + "\n")
            (out / f"{stem}.server.txt").write_text(jupyter_server.log_tail(200) + "\n")
        context.close()
        jupyter_server.shutdown_all_kernels()


@pytest.fixture(params=APPS)
def jupyter_app(request: pytest.FixtureRequest) -> App:
    app: App = request.param
    if app == "notebook":
        request.getfixturevalue("notebook7_server")
    return app


@pytest.fixture
def notebook_name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", request.node.name).strip("-") + ".ipynb"
