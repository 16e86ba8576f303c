"""Streamlit's own English on a Chinese page, in Chinese (app_support/streamlit_words.js): the file uploader's
"Upload" button, and what a screen reader says for Streamlit's buttons ("Help for 模型", "Increment",
"Copy to clipboard", "Fullscreen"); an English page keeps Streamlit's words. What no page can reach is
listed in docs/app.md.

Same server (tests/browser/conftest.py) and skip rules as test_app_browser.py."""

from __future__ import annotations

import re

import pytest

from tests.browser.pages import PlaywrightTimeout, open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LABELS = """() => [...document.querySelectorAll('[aria-label], [title]')]
  .flatMap(e => [e.getAttribute('aria-label'), e.getAttribute('title')]).filter(Boolean)"""
UPLOAD_BUTTON = "() => (document.querySelector('[data-testid=stFileUploader] button') || {}).innerText || ''"
STREAMLITS_ENGLISH = re.compile(r"^(Help for |Copy to clipboard|Increment|Decrement|Fullscreen|Collapse sidebar)")


def test_a_chinese_page_says_streamlits_button_words_in_chinese_and_an_english_page_keeps_them(browser, server_url):
    page = open_page(browser, server_url + "/serving_lab?lang=zh", 1280, 720)
    try:
        page.wait_for_function(f"() => ({UPLOAD_BUTTON})().includes('上传') && ({LABELS})().includes('加一')",
                               timeout=30_000)
        english = f"() => ({LABELS})().filter(l => /{STREAMLITS_ENGLISH.pattern}/.test(l))"
        try:  # a control Streamlit draws late (the link box's copy button) is translated on its next frame
            page.wait_for_function(f"() => ({english})().length === 0", timeout=10_000)
        except PlaywrightTimeout:
            pytest.fail(f"Streamlit's English left on a Chinese page: {page.evaluate(english)}")
        labels = page.evaluate(LABELS)
        assert "“模型”的说明" in labels and "加一" in labels and "减一" in labels, labels
        assert "Upload" not in page.evaluate(UPLOAD_BUTTON)
    finally:
        page.context.close()
    page = open_page(browser, server_url + "/serving_lab?lang=en", 1280, 720)
    try:
        page.wait_for_function(f"() => ({LABELS})().includes('Increment') && !!({UPLOAD_BUTTON})()", timeout=30_000)
        labels = page.evaluate(LABELS)
        assert "Help for Model" in labels and "Increment" in labels, labels
        assert "Upload" in page.evaluate(UPLOAD_BUTTON)
    finally:
        page.context.close()
