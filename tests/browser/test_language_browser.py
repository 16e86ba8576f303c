"""The page's language in a real browser, at a projector's 1280x720 and 1024x768.

- After a switch to English, a reload, a page opened from the sidebar's navigation and a reload there
  are all English (the `lang` query left the address bar once read: a reload was all Chinese).
- Right after the switch, a choice box says its value in English (the gallery picker still read
  "本课示例（中文）…" until the visitor left the page and came back).

Same server (tests/browser/conftest.py) and skip rules as test_app_browser.py.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.pages import ARTIFACTS, PROJECTORS, open_page, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TITLE_EN = "Prefill and Decode"
PICKED = "() => (document.querySelector('.st-key-rec_pick_lesson input') || {}).value || ''"


def title(page) -> str:
    return page.locator("h1").first.inner_text()


@pytest.mark.parametrize("width,height", PROJECTORS)
def test_the_language_survives_a_reload_and_another_page(browser, server_url, width, height):
    page = open_page(browser, server_url, width, height)
    try:
        page.locator(".st-key-lang label", has_text="English").click()
        wait_idle(page)
        assert title(page).startswith(TITLE_EN) and "lang=en" in page.url
        page.reload(wait_until="domcontentloaded")
        wait_idle(page, first=True)
        assert title(page).startswith(TITLE_EN), page.url  # it was all Chinese again
        page.locator("[data-testid=stSidebarNav] a[href$='bottleneck_lab']").click()
        wait_idle(page)
        page.wait_for_function("() => location.search.includes('lang=en')", timeout=30_000)
        assert "bottleneck_lab" in page.url
        page.reload(wait_until="domcontentloaded")
        wait_idle(page, first=True)
        nav = page.locator("[data-testid=stSidebarNav]").inner_text()
        assert "Bottleneck lab" in nav or "bottleneck lab" in nav.lower(), nav
        assert "瓶颈实验室" not in nav
    finally:
        page.context.close()


def pick_option(page, key: str, text: str, tries: int = 3) -> None:
    """Open the select box `key` and click its option holding `text`. A rerun of the page while the list
    is open (the run settling, a fragment) closes it: open it again, a few times at most."""
    for _ in range(tries):
        page.locator(f".st-key-{key} input").click()
        option = page.locator("[role=option]", has_text=text).first
        try:
            option.wait_for(state="visible", timeout=10_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            wait_idle(page)
            continue
        option.click()
        return
    raise AssertionError(f"the select box {key} never showed an option with {text!r}")


@pytest.mark.parametrize("width,height", PROJECTORS)
def test_a_choice_box_says_its_value_in_the_new_language_at_once(browser, server_url, width, height):
    page = open_page(browser, server_url, width, height)
    try:
        page.locator("summary", has_text="打开录制的运行").click()
        wait_idle(page)
        pick_option(page, "rec_pick_lesson", "本课示例")
        wait_idle(page)
        assert "本课示例" in page.evaluate(PICKED)
        page.locator(".st-key-lang label", has_text="English").click()
        wait_idle(page)
        picked = page.evaluate(PICKED)
        assert "the lesson's example" in picked and "本课示例" not in picked, picked
    finally:
        page.screenshot(path=str(ARTIFACTS / f"language_picker_{width}x{height}.png"))
        page.context.close()
