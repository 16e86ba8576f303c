"""Every wait says how long it has lasted (app_support/wait_clock.js, as ui.wait_clock fills it in): a spinner or
a progress bar while the page's script runs (a compiled engine mode's compile took 63 s under a bar whose text
did not move), and the slide kit's zip while its button waits for it (5.5 s with only a pressed button). The
classroom's position bar is no wait, a bar left after its run neither, and the count goes once the wait does.

The script runs in a bare page holding the elements Streamlit draws (its test ids and key classes): no app
server, so the seconds are the test's own to hold."""

from __future__ import annotations

import pytest

from app_support import ui
from lesson.text import t

pytestmark = [pytest.mark.browser]

PAGE = """<div data-test-script-state="running">
  <div class="st-key-kit_download"><button disabled>zip</button></div>
  <div data-testid="stSpinner">正在测第 3 / 3 种引擎模式：compiled……</div>
  <div class="st-key-class_position"><div data-testid="stProgress">课堂步进：第 2 / 3</div></div>
</div>"""
ELAPSED = "(sel) => { const l = document.querySelector(sel + ' .pd-wait-elapsed'); return l ? l.textContent : null; }"


def wait_page(browser, lang: str):
    page = browser.new_page()
    page.set_content(PAGE)
    script = ui.WAIT_CLOCK_JS.replace("__WAIT_WORDS__", f'{{"elapsed": "{t(lang, "wait_elapsed")}", '
                                                        f'"kit": "{t(lang, "wait_kit")}"}}')
    script = script.replace("__NOT_WAITS__", '["class_position", "presenter-position"]')
    page.add_script_tag(content=script.replace("__KIT_BUTTONS__", '["kit_download", "kit_download_serving"]'))
    return page


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_spinner_and_the_slide_kits_zip_count_their_seconds_and_stop_when_the_wait_ends(browser, lang):
    page = wait_page(browser, lang)
    try:
        page.wait_for_timeout(300)
        assert page.evaluate(ELAPSED, "[data-testid=stSpinner]") is None  # under a second: nothing yet
        page.wait_for_timeout(2_200)
        two = t(lang, "wait_elapsed").replace("{s}", "2")
        assert page.evaluate(ELAPSED, "[data-testid=stSpinner]") == two
        assert page.evaluate(ELAPSED, ".st-key-kit_download") == t(lang, "wait_kit").replace("{s}", "2")
        assert page.evaluate(ELAPSED, ".st-key-class_position") is None  # the classroom's step is no wait
        page.evaluate("() => { document.querySelector('.st-key-kit_download button').disabled = false; "
                      "document.querySelector('[data-test-script-state]').setAttribute('data-test-script-state', "
                      "'notRunning'); }")
        page.wait_for_timeout(400)
        assert page.evaluate(ELAPSED, ".st-key-kit_download") is None  # the zip came
        assert page.evaluate(ELAPSED, "[data-testid=stSpinner]") is None  # the run ended: a bar left is no wait
    finally:
        page.close()
