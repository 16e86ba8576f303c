"""The first screen at a projector's 1280x720, zh and en: the timeline starts on it, each pass's bar shows its
floor on this machine's measured roofs, the caption reads the short example's two passes against one floor
(never "the machine's noise"), and under the timeline a 1024-token prompt stands beside the example, floor
+ the rest. Same server (tests/browser/conftest.py) and skip rules as test_app_browser.py."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET

import pytest

from lesson.text import t
from tests.browser.pages import open_page
from tests.svg import with_class

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIGURE = """(key) => { const img = document.querySelector(`.st-key-figure-${key} img`);
  return img ? {src: img.src, alt: img.alt, top: img.getBoundingClientRect().top} : null; }"""


def figure(page, key: str, scroll: bool = True) -> dict:
    """The figure's image (its src, alt and top on screen), once drawn; scrolled to it unless `scroll` is off."""
    if scroll:  # Streamlit draws an image once its box comes into view
        page.locator(f".st-key-figure-{key}").scroll_into_view_if_needed()
    page.wait_for_function(f"() => !!document.querySelector('.st-key-figure-{key} img')", timeout=60_000)
    return page.evaluate(FIGURE, key)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_first_screen_shows_the_contrast_against_the_floors(browser, server_url, lang):
    page = open_page(browser, f"{server_url}/?lang={lang}", 1280, 720)
    try:
        top = figure(page, "timeline", scroll=False)  # on the first screen: drawn where it stands
        assert top is not None and top["top"] < 720  # the timeline begins on the first screen
        timeline = ET.fromstring(base64.b64decode(top["src"].split(",", 1)[1]))
        assert len(with_class(timeline, "pass-floor")) == len(with_class(timeline, "pass-time")) > 1
        words = page.locator("[data-testid=stMain]").inner_text()
        assert t(lang, "pf_same_floor", bytes="")[:8] in words  # one floor for both passes of the example
        assert t(lang, "tl_lesson_noise", x="", y="")[:20] not in words
        floors = figure(page, "pass_floors")
        assert floors["alt"].startswith(t(lang, "pf_title")) and "1024" in floors["alt"]
    finally:
        page.context.close()
