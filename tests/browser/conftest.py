"""A Streamlit server and a browser page on it, one of each per test module.

Without chromium or the playwright package (the session's `chromium` fixture) every test that
uses them skips at setup, and fails instead under PREFILL_DECODE_REQUIRE_BROWSER=1."""

from __future__ import annotations

import contextlib

import pytest

from bench.app_server import streamlit_server
from tests.browser.pages import ARTIFACTS, CHROMIUM_FLAGS, wait_idle
from tests.factories import HAS_DEFAULT_MODEL


@pytest.fixture(scope="module")
def server_url(chromium):
    """A streamlit server for this module only; always terminated."""
    if not HAS_DEFAULT_MODEL:
        pytest.skip("the embedded default model is not built yet")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(streamlit_server(ARTIFACTS / "streamlit_server.log"))
        except RuntimeError:
            pytest.fail("streamlit did not start; see tests/artifacts/streamlit_server.log")
        yield server.url


@pytest.fixture(scope="module")
def page(chromium, server_url):
    """The lesson page in a 1440x1000 tab; every alert/confirm that fires is kept in `page.dialogs`."""
    path, sync_api = chromium
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(path), args=CHROMIUM_FLAGS, headless=True)
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
        page = context.new_page()
        page.dialogs = []  # every alert/confirm that fires (there must be none)
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
        page.goto(server_url, wait_until="domcontentloaded")
        wait_idle(page, first=True)
        yield page
        browser.close()


@pytest.fixture(scope="module")
def browser(chromium, server_url):
    """One headless chromium per test module, for modules that open pages at several window sizes."""
    path, sync_api = chromium
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(path), args=CHROMIUM_FLAGS, headless=True)
        yield browser
        browser.close()
