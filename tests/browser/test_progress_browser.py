"""Progress that is true, in a real browser at a projector's 1280x720 and 1024x768 (issue: "已写出 1 / 200 个回答
Token · 还需约 1844 秒" on a run that finished 5 s later): the serving lab's bar counts the answer tokens
written, never goes back within a policy, says no time left before a tenth of them is written, and ends
saying it is done. Sampled from the page every 50 ms while the lab runs the example workload (three short
requests, every policy); no seconds are compared (the estimate's accuracy is tests/lesson's, on a
simulated clock).

Same server (tests/browser/conftest.py) and skip rules as test_app_browser.py.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from lesson.text import t
from tests.browser.pages import PROJECTORS, open_page, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BAR_TEXT = "() => (document.querySelector('[data-testid=stProgress]') || {}).innerText || ''"
COUNT = {"en": re.compile(r"\((\d+) of (\d+)\).*: (\d+) of (\d+) answer tokens written"),
         "zh": re.compile(r"（第 (\d+) / (\d+) 种）：已写出 (\d+) / (\d+) 个回答 Token")}
LEFT = {"en": "left", "zh": "还需约"}


def workload(tag: int) -> str:
    """Three short chats, their lengths set by `tag`: no other test's run (a page, or the worker's queue,
    would hand back that measurement at once, with no progress to see)."""
    return "\n".join(json.dumps({"arrival_ms": 20 * i, "prompt": prompt, "max_new_tokens": 10 + i + tag % 7,
                                  "ignore_eos": True}, ensure_ascii=False)
                      for i, prompt in enumerate(("法国的首都是", "The capital of Germany is", "日本的首都是")))


def samples_until_done(page, lang: str, timeout_s: float = 300.0) -> list[str]:
    head, tail = t(lang, "sl_done", n="§").split("§")  # "Done: {n} policies, the same workload."
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = page.evaluate(BAR_TEXT).strip()
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        if text.startswith(head) and text.endswith(tail):
            return seen
        page.wait_for_timeout(50)
    raise AssertionError(f"the lab did not finish in {timeout_s:.0f} s; the bar said {seen[-5:]}")


@pytest.mark.parametrize("width,height", PROJECTORS)
def test_the_serving_labs_bar_counts_tokens_and_guesses_no_time_early(browser, server_url, width, height):
    lang = "en" if width == 1280 else "zh"
    page = open_page(browser, f"{server_url}/serving_lab?lang={lang}", width, height)
    try:
        page.locator(".st-key-sl_source label", has_text=t(lang, "sl_source_jsonl")).click()
        wait_idle(page)
        box = page.locator(".st-key-sl_jsonl textarea")  # a workload of its own: nothing measured before
        box.fill(workload(width))
        box.press("Tab")  # a text area's value is sent when it loses focus
        wait_idle(page)
        page.locator(".st-key-sl_run button").click()
        seen = samples_until_done(page, lang)
    finally:
        page.context.close()
    counts = [(int(m[1]), int(m[3]), int(m[4]), text) for text in seen if (m := COUNT[lang].search(text))]
    assert counts, seen  # the bar said how many tokens were written
    for (policy_a, done_a, _, _), (policy_b, done_b, _, _) in zip(counts, counts[1:]):
        assert policy_b > policy_a or done_b >= done_a, seen  # never back within a policy
    for _, done, total, text in counts:
        assert done <= total, text
        if LEFT[lang] in text:
            assert done >= total / 10, text  # a time left only once it rests on a tenth of the tokens
