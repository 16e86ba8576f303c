"""A presenter's clicker (or keyboard) drives classroom mode and the presenter view, as reveal.js does:
Space, Enter, → and Page Down are "next", ←, Page Up and Backspace "back", B or . blanks the screen, Esc
leaves the presenter view; a switch that merely holds the focus after a click is never toggled by them
(Space turned classroom mode off); stepping past the last pass stands at the run's end and says what comes
next; a click on the page's text then a key draws no frame across the main area.

Same server (tests/browser/conftest.py) and skip rules as test_app_browser.py; screenshots in tests/artifacts/.
"""

from __future__ import annotations

import pytest

from tests.browser.pages import ARTIFACTS, CLASS_POSITION, IDLE, open_stepping_page, press, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LINK = "/?lang=zh&eos=1&out=3&class=1"  # a run of 3 passes in classroom mode
PRESENTER_POSITION = "() => (document.querySelector('.st-key-presenter-position') || {}).innerText || ''"
CLASSROOM_ON = "() => !!document.querySelector('.st-key-classroom input:checked')"
BLANK_SHOWN = "() => !!document.getElementById('pd-blank')"
END_WORDS = "讲完了"  # the run's end, in the sidebar's note and the presenter view's
# the lesson's text (a paragraph of the body: the kicker above the title lies under a phone's header bar)
PAGE_TEXT = "[data-testid=stMain] [data-testid=stMarkdownContainer] p"


def test_space_enter_and_page_keys_step_and_never_toggle_the_switch_that_holds_the_focus(browser, server_url):
    page = open_stepping_page(browser, server_url + LINK, 1280, 720)
    try:
        switch = page.locator(".st-key-classroom label")
        for _ in range(2):  # off and on again: the switch now holds the focus, as after a lecturer's click
            switch.click()
            wait_idle(page)
        page.wait_for_function(f"() => ({CLASS_POSITION})().includes('第 1 /') && ({IDLE})()", timeout=60_000)
        assert page.evaluate("() => !!document.activeElement.closest('.st-key-classroom')")
        press(page, "Space", CLASS_POSITION, "第 2 / 3")
        assert page.evaluate(CLASSROOM_ON), "Space toggled the focused classroom switch"
        press(page, "Enter", CLASS_POSITION, "第 3 / 3")
        press(page, "PageDown", CLASS_POSITION, "3 次前向都已显示")  # past the last pass: the run's end
        sidebar = page.locator("[data-testid=stSidebar]").inner_text()
        assert "下一步（再按一次 →）" in sidebar and "拉长到" in sidebar  # it says what comes next, runs nothing
        page.screenshot(path=str(ARTIFACTS / "clicker_end_1280x720.png"))
        press(page, "Backspace", CLASS_POSITION, "第 3 / 3")  # ← goes back to the last pass
        press(page, "PageUp", CLASS_POSITION, "第 2 / 3")
        press(page, "ArrowLeft", CLASS_POSITION, "第 1 / 3")
        assert page.evaluate(CLASSROOM_ON)
    finally:
        page.context.close()


def test_a_click_on_the_text_then_a_key_draws_no_frame_across_the_main_area(browser, server_url):
    page = open_stepping_page(browser, server_url + LINK, 1280, 720)
    try:
        page.locator(PAGE_TEXT).filter(has_text="Decode").first.click()
        press(page, "ArrowRight", CLASS_POSITION, "第 2 / 3")
        main = "document.querySelector('[data-testid=stMain]')"
        # Streamlit's keyboard focus of the main area: a shadow on its sticky ::before, from y≈62 down
        assert page.evaluate(f"() => {main}.matches(':focus-visible')")  # the case the frame was drawn in
        frame = page.evaluate(f"() => getComputedStyle({main}, '::before').boxShadow")
        assert frame == "none", frame
        page.screenshot(path=str(ARTIFACTS / "clicker_no_frame_1280x720.png"))
    finally:
        page.context.close()


def test_in_the_presenter_view_b_blanks_any_key_returns_the_end_says_what_is_next_and_esc_leaves(browser,
                                                                                                server_url):
    page = open_stepping_page(browser, server_url + LINK, 1280, 720)
    try:
        page.locator(".st-key-presenter label").click()
        wait_idle(page)
        page.wait_for_function(f"() => ({PRESENTER_POSITION})().includes('第 1 / 3') && ({IDLE})()", timeout=60_000)
        page.keyboard.press("b")
        page.wait_for_function(BLANK_SHOWN, timeout=5_000)
        page.screenshot(path=str(ARTIFACTS / "clicker_blank_1280x720.png"))
        assert page.evaluate("() => document.elementFromPoint(640, 360).id") == "pd-blank"  # the whole screen
        page.keyboard.press("PageDown")  # any key brings the screen back, and does only that
        page.wait_for_function(f"() => !({BLANK_SHOWN})()", timeout=5_000)
        page.wait_for_timeout(800)
        assert "第 1 / 3" in page.evaluate(PRESENTER_POSITION)
        page.keyboard.press(".")
        page.wait_for_function(BLANK_SHOWN, timeout=5_000)
        page.keyboard.press(".")
        page.wait_for_function(f"() => !({BLANK_SHOWN})()", timeout=5_000)
        press(page, "End", PRESENTER_POSITION, "第 3 / 3")
        press(page, "Space", PRESENTER_POSITION, END_WORDS)  # past the last pass: the end, nothing started
        assert "拉长到" in page.evaluate(PRESENTER_POSITION)
        page.screenshot(path=str(ARTIFACTS / "clicker_presenter_end_1280x720.png"))
        press(page, "ArrowLeft", PRESENTER_POSITION, "第 3 / 3")
        page.keyboard.press("Escape")
        page.wait_for_function(f"() => !!document.querySelector('.st-key-class_next') && ({IDLE})()", timeout=60_000)
        wait_idle(page)
        assert not page.locator(".st-key-presenter-figure").count() and page.evaluate(CLASSROOM_ON)
    finally:
        page.context.close()


def test_on_a_phone_the_clicker_keys_step_too(browser, server_url):
    page = open_stepping_page(browser, server_url + LINK, 390, 844)
    try:
        page.locator(PAGE_TEXT).filter(has_text="Decode").first.click()
        press(page, "Space", CLASS_POSITION, "第 2 / 3")
        press(page, "Backspace", CLASS_POSITION, "第 1 / 3")
        page.screenshot(path=str(ARTIFACTS / "clicker_390x844.png"))
    finally:
        page.context.close()
