"""A slow-motion replay in a real browser (Debian chromium via playwright) shows one caption, no
finished run's banner and one replay button (it once showed the banner, the summary twice and both
buttons).

The replay drew the page again with st.rerun() at each pass, and Streamlit clears elements left
over from an earlier run only when a run finishes without a rerun: whatever the run before the
replay drew and the replay did not draw again stayed on screen. Now a timer fragment starts each
pass's run and every run finishes. The page is looked at between runs (while one draws, the
elements it has not reached yet are the last run's, as on any Streamlit page). Same server and
skip rules as tests/browser/test_app_browser.py (tests/browser/conftest.py: the session's server, a tab of its own).
"""

from __future__ import annotations

import re
import time

import pytest

from lesson.text import t
from tests.browser.pages import ARTIFACTS, fresh_tab, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MAIN = "[data-testid=stMain]"
SNAPSHOT = """() => {
  const box = document.querySelector('.st-key-replay_box');
  const panel = document.querySelector('.st-key-result_box');
  const visible = e => e.offsetParent !== null;
  const state = document.querySelector('[data-test-script-state]');
  return {
    idle: !!state && state.getAttribute('data-test-script-state') === 'notRunning',
    label: box ? box.innerText : '',
    panel: panel ? panel.innerText : '',
    start: [...document.querySelectorAll('.st-key-replay_start button')].filter(visible).length,
    stop: [...document.querySelectorAll('.st-key-replay_stop button')].filter(visible).length,
  };
}"""


def test_a_replay_in_progress_shows_one_caption_no_banner_and_one_button(lesson_context, server_url):
    tab = fresh_tab(lesson_context, server_url)
    try:
        tab.locator(".st-key-ignore_eos label").click()  # the lesson's example, 8 tokens past EOS
        wait_idle(tab)
        tab.locator(".st-key-run button").click()
        wait_idle(tab)
        done_words = t("zh", "done", num_tokens=8, stop_reason="").split("，")[0]  # "完成：8 个 Token"
        assert done_words in tab.locator(MAIN).inner_text()
        tab.locator(".st-key-replay_start button").click()
        seen, start = {}, time.perf_counter()
        while time.perf_counter() - start < 25:
            snap = tab.evaluate(SNAPSHOT)
            match = re.search(r"第 (\d+) / 8 次前向", snap["label"])
            if match and int(match.group(1)) < 8 and snap["idle"]:  # a pass on screen, between two draws
                shown = int(match.group(1))
                problems = []
                if done_words in snap["panel"]:
                    problems.append("finished banner")
                summary = re.findall(r"下面的图展示的是这次请求", snap["panel"])
                if len(summary) != 1:
                    problems.append(f"{len(summary)} summary captions")
                if (snap["start"], snap["stop"]) != (0, 1):
                    problems.append(f"buttons start={snap['start']} stop={snap['stop']}")
                seen.setdefault(shown, problems)
                if problems:
                    tab.screenshot(path=str(ARTIFACTS / "replay_mid_problem.png"), full_page=False)
            elif seen and not match and snap["idle"]:
                break
            tab.wait_for_timeout(100)
        assert len(seen) >= 3, seen  # the replay was watched over several passes
        assert all(not problems for problems in seen.values()), seen
    finally:
        tab.close()
