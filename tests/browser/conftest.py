"""One Streamlit server and one headless chromium for the whole test session; a tab (a page, its own
browser context) per test module or per test.

The browser tests only read the server (each tab is a Streamlit session of its own, and every setting
comes from the URL or the page's widgets), so they share one: the app, its engine worker and its caches
start once, not once per module. Without chromium or the playwright package (the session's `chromium`
fixture) every test that uses them skips at setup, and fails instead under PREFILL_DECODE_REQUIRE_BROWSER=1."""

from __future__ import annotations

import contextlib
import os

import pytest

from bench.app_server import streamlit_server
from tests.browser.pages import ARTIFACTS, CHROMIUM_FLAGS, read_on, wait_idle, watch
from tests.conftest import PRIORITY
from tests.factories import HAS_DEFAULT_MODEL


BOOST = -5  # the browser lane's nice value, less its test process's own, where the system allows it (root)


@pytest.fixture(scope="session")
def critical_path():
    """The browser lane is the suite's longest unit and its CPU is mostly chromium's and the server's; under
    `pytest -n N` it shares two cores with the other test processes. Where the system allows it, this test
    process (and so the server, its engine worker and chromium, which inherit it when they start) runs at a
    higher priority, so the longest unit is not the one that waits; elsewhere nothing changes.
    tests/conftest.py puts the process back once it moves on to another unit."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, max(-20, PRIORITY + BOOST))
    except PermissionError:
        pass


@pytest.fixture(scope="session")
def server_url(chromium, critical_path):
    """The app's streamlit server for the whole session; always terminated."""
    if not HAS_DEFAULT_MODEL:
        pytest.skip("the embedded default model is not built yet")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(streamlit_server(ARTIFACTS / "streamlit_server.log"))
        except RuntimeError:
            pytest.fail("streamlit did not start; see tests/artifacts/streamlit_server.log")
        yield server.url


@pytest.fixture(scope="session")
def browser(chromium, critical_path):
    """One headless chromium for the session (playwright's sync API runs one at a time per thread, so
    every module takes its tabs from this one); tests open contexts or pages in it and close them."""
    path, sync_api = chromium
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(path), args=CHROMIUM_FLAGS, headless=True)
        watch(browser)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def lesson_context(browser):
    """A 1440x1000 browser context of its own, one per module, with no tab open: a module whose every test
    opens a session of its own (`pages.fresh_tab`) asks for this, not for `page`, so no tab it never
    looks at runs the lesson page."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
    yield context
    context.close()


@pytest.fixture(scope="module")
def page(lesson_context, server_url):
    """The whole lesson page (its reader has read on below the first screen) in a 1440x1000 tab of the
    module's context; every alert/confirm that fires is kept in `page.dialogs`."""
    page = lesson_context.new_page()
    page.dialogs = []  # every alert/confirm that fires (there must be none)
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(server_url, wait_until="domcontentloaded")
    wait_idle(page, first=True)
    read_on(page)
    return page
