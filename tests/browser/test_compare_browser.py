"""Classroom tools in a real browser (Debian chromium via playwright): a slider moved with the
keyboard agrees with the token split, the animation pauses and steps, the slow-motion replay
paces itself, two runs compare on the same axes, a right-to-left prompt is right-aligned.

Same server and skip/require rules as tests/browser/test_app_browser.py (tests/browser/conftest.py:
the session's server, a tab of its own). Screenshots go to tests/artifacts/, and to docs/screenshots/ with
UPDATE_SCREENSHOTS=1.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import time
import urllib.parse

import pytest

from lesson.text import t
from tests.browser.pages import ARTIFACTS, SCREENSHOTS, fresh_tab, read_on, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MAIN = "[data-testid=stMain]"


def svg_of(tab, alt_start: str) -> str:
    """The SVG source of the figure image whose alt text starts with `alt_start`."""
    src = tab.evaluate("(start) => { const i = [...document.querySelectorAll('img')]"
                       ".find(i => (i.alt || '').startsWith(start)); return i ? i.src : ''; }", alt_start)
    assert src.startswith("data:image/svg+xml"), (alt_start, src[:80])
    head, data = src.split(",", 1)
    return base64.b64decode(data).decode() if head.endswith(";base64") else urllib.parse.unquote(data)


def caption_split(tab) -> int:
    match = re.search(r"切分（(\d+) 个 Token", tab.locator(MAIN).inner_text())
    assert match, "no token split caption"
    return int(match.group(1))


def pick(tab, widget: str, option: str | int) -> None:
    """Choose an option of a select box / multiselect (a react-aria combobox): open its list, click."""
    for _ in range(3):
        tab.locator(f"{widget} [role=combobox]").click()
        tab.wait_for_timeout(300)
        options = tab.locator("[role=option]")
        choice = options.nth(option) if isinstance(option, int) else options.filter(has_text=option)
        try:
            choice.first.click(timeout=3000)
            wait_idle(tab)
            return
        except Exception:  # noqa: BLE001 - the list closed under a rerun: open it again
            tab.keyboard.press("Escape")
    raise AssertionError(f"could not pick {option!r} in {widget}")


def screenshot(tab, locator, name: str) -> None:
    path = ARTIFACTS / f"{name}.png"
    locator.screenshot(path=str(path))
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SCREENSHOTS / f"{name}.png")


def test_a_slider_moved_with_the_keyboard_agrees_with_the_token_split(lesson_context, server_url):
    """Keys pressed while the page is still running never leave the slider at one value
    and the token split (and the next Run) at another."""
    tab = fresh_tab(lesson_context, server_url)
    try:
        slider = tab.locator(".st-key-prompt_len input[type=range]")
        natural = caption_split(tab)  # the lesson's example: 4 tokens
        slider.focus()
        for presses in (10, 20):
            for _ in range(presses):
                tab.keyboard.press("ArrowRight", delay=30)
                tab.wait_for_timeout(40)  # slower than a key repeat, faster than the page's rerun
            wait_idle(tab)
        for key in ("PageUp", "End", "Home", "ArrowUp", "PageUp"):
            tab.keyboard.press(key)
            wait_idle(tab)
            value = int(slider.input_value())
            assert caption_split(tab) == max(value, natural), (key, value)
        value = int(slider.input_value())
        assert value > natural
        tab.locator(".st-key-run button").click()
        wait_idle(tab)
        assert re.search(rf"提示词 {value} 个 Token", tab.locator(MAIN).inner_text())
    finally:
        tab.close()


def test_the_animation_pauses_and_steps(lesson_context, server_url):
    tab = fresh_tab(lesson_context, server_url)
    try:
        alt = t("zh", "alt_animation").split("{")[0]
        tab.locator(".st-key-ignore_eos label").click()  # all 8 passes
        wait_idle(tab)
        tab.locator(".st-key-run button").click()
        wait_idle(tab)
        read_on(tab)  # the animation's section, below the first screen
        assert "<animate" in svg_of(tab, alt)
        tab.locator(".st-key-anim_play_pause button").click()  # pause: the whole run, still
        wait_idle(tab)
        still = svg_of(tab, alt)
        assert "<animate" not in still and 'class="caption done"' in still
        tab.locator(".st-key-anim_step_8 input[type=range]").focus()
        tab.keyboard.press("Home")
        wait_idle(tab)
        assert 'class="caption step-0"' in svg_of(tab, alt)
        tab.keyboard.press("ArrowRight")
        wait_idle(tab)
        assert 'class="caption step-1"' in svg_of(tab, alt)
        assert "2 / 8" in tab.locator(".st-key-anim_step_8 [data-testid=stSliderThumbValue]").inner_text()
        tab.locator(".st-key-anim_play_pause button").click()  # play: on from pass 2, then looping
        wait_idle(tab)
        playing = svg_of(tab, alt)
        assert "<animate" in playing and 'begin="-3s"' in playing
        # Chromium honours the negative begin: drawn on its own (only to read its state), 0.6 s in,
        # passes 1 and 2 are up and pass 3 (due 1.6 s after pass 2) is not yet
        probe = tab.context.new_page()
        try:
            probe.set_content(f"<html><body>{playing}</body></html>")
            probe.wait_for_timeout(600)
            opacity = probe.evaluate("() => [...document.querySelectorAll('g[data-start-s]')]"
                                     ".map(g => parseFloat(getComputedStyle(g).opacity))")
        finally:
            probe.close()
        assert opacity[0] == 1 and opacity[1] > 0.9 and opacity[2] == 0, opacity
    finally:
        tab.close()


def test_the_replay_paces_the_tokens_and_says_it_is_a_replay(lesson_context, server_url):
    tab = fresh_tab(lesson_context, server_url)
    try:
        tab.locator(".st-key-ignore_eos label").click()
        wait_idle(tab)
        tab.locator(".st-key-output_len input[type=range]").focus()
        tab.keyboard.press("Home")
        for _ in range(3):
            tab.keyboard.press("ArrowRight")  # 4 tokens
        wait_idle(tab)
        tab.locator(".st-key-run button").click()
        wait_idle(tab)
        pick(tab, ".st-key-replay_pace", t("zh", "replay_pace_s1"))
        wait_idle(tab)
        box = ".st-key-replay_box"
        tab.locator(".st-key-replay_start button").click()
        seen, start, done = {}, time.perf_counter(), t("zh", "replay_done", total=4)
        while time.perf_counter() - start < 30:  # until the page says the replay is over (a rerun on a busy machine
            # can leave the box empty for a moment: that is not the end)
            text, main = tab.evaluate(f"() => [(document.querySelector('{box}') || {{}}).innerText || '', "
                                      f"(document.querySelector('{MAIN}') || {{}}).innerText || '']")
            match = re.search(r"第 (\d+) / 4 次前向", text)
            if match:
                seen.setdefault(int(match.group(1)), time.perf_counter() - start)
                assert "不是新的测量" in text
            if done in main:
                break
            tab.wait_for_timeout(50)
        assert list(seen) == [1, 2, 3, 4], seen  # every pass shown, one after another, each said to be a replay
        # the pace itself (about a second a pass, plus the page's drawing time) is load's to move: recorded for
        # bench/browser_timing.py, never compared here (the schedule: tests/app/test_app_classroom.py)
        gaps = [seen[k + 1] - seen[k] for k in (1, 2, 3)]
        (ARTIFACTS / "replay_seconds.txt").write_text(" ".join(f"{gap:.2f}" for gap in gaps) + "\n")
        wait_idle(tab)
        assert t("zh", "replay_done", total=4) in tab.locator(MAIN).inner_text()
    finally:
        tab.close()


def test_two_pinned_runs_are_drawn_on_the_same_axes(lesson_context, server_url):
    tab = fresh_tab(lesson_context, server_url)
    try:
        tab.locator(".st-key-ignore_eos label").click()
        wait_idle(tab)
        tab.locator(".st-key-run button").click()  # run A: the lesson's 4-token example, 8 tokens
        wait_idle(tab)
        tab.locator(".st-key-prompt_len input[type=range]").focus()
        tab.keyboard.press("End")  # run B: the same example stretched to 1024 tokens
        wait_idle(tab)
        tab.locator(".st-key-run button").click()
        wait_idle(tab)
        read_on(tab)  # the comparison's section, below the first screen
        for index in (1, 0):  # newest first in the list: run A (second), then run B (now first)
            pick(tab, ".st-key-compare_pins", index)
            tab.keyboard.press("Escape")
        images = tab.evaluate(
            "() => [...document.querySelectorAll('img')].filter(i => /^运行 [AB]（/.test(i.alt))"
            ".map(i => [i.alt.slice(0, 4), i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width])")
        assert len(images) == 6, images
        timeline_a, timeline_b = (svg_of(tab, f"运行 {run}（与另一次运行共用坐标轴）：时间线") for run in "AB")
        ticks = [re.findall(r'class="tick-label"[^>]*>([^<]*)<', svg) for svg in (timeline_a, timeline_b)]
        assert ticks[0] == ticks[1] and len(ticks[0]) >= 2
        for a, b in ((0, 1), (2, 3), (4, 5)):  # timeline, latency, KV: each pair drawn to one width and scale
            assert images[a][0] == "运行 A" and images[b][0] == "运行 B", images
            assert images[a][1] == images[b][1] and images[a][3] == images[b][3], images
        tab.locator("#compare").scroll_into_view_if_needed()
        tab.wait_for_timeout(500)
        height = tab.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
                              "[data-testid=stAppViewContainer], body')].map(e => e.scrollHeight))")
        tab.set_viewport_size({"width": 1440, "height": int(min(height + 40, 30000))})  # Streamlit scrolls inside
        tab.wait_for_timeout(800)
        top = tab.locator("#compare").bounding_box()["y"]
        last = tab.locator(".st-key-download_svg_compare_kv_growth_b").bounding_box()
        path = ARTIFACTS / "app_compare.png"
        tab.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": top - 20, "width": 1440,
                                             "height": last["y"] + last["height"] - top + 40})
        if os.environ.get("UPDATE_SCREENSHOTS") == "1":
            shutil.copyfile(path, SCREENSHOTS / "app_compare.png")
    finally:
        tab.close()


def test_a_right_to_left_prompt_is_right_aligned(lesson_context, server_url):
    from PIL import Image

    tab = fresh_tab(lesson_context, server_url)
    try:
        box = tab.locator(".st-key-prompt textarea")
        assert box.evaluate("e => getComputedStyle(e).unicodeBidi") == "plaintext"
        ink = {}
        for name, prompt in (("rtl", "عاصمة فرنسا هي"), ("ltr", "The capital of France is")):
            box.fill(prompt)
            tab.wait_for_timeout(200)
            path = ARTIFACTS / f"prompt_{name}.png"
            box.screenshot(path=str(path))
            image = Image.open(path).convert("L")
            width, height = image.size
            # inside the border, above the resize grip in the bottom corner: the first line of text
            dark = [x for x in range(6, width - 6) for y in range(4, height // 2, 2) if image.getpixel((x, y)) < 120]
            ink[name] = (min(dark) / width, max(dark) / width)
        assert ink["rtl"][1] > 0.85 and ink["rtl"][0] > 0.5, ink  # hugging the right edge
        assert ink["ltr"][0] < 0.15 and ink["ltr"][1] < 0.5, ink  # hugging the left edge
    finally:
        tab.close()


def test_the_length_sketch_follows_the_slider_while_it_is_dragged(lesson_context, server_url):
    """The sketch follows the slider, not only its release (0.6-1.5 s later). While the mouse is still
    down, the page's script redraws it from the thumb's number; after release the page's own
    figure (with its SVG download) is back, drawn for the same lengths."""
    tab = fresh_tab(lesson_context, server_url)
    try:
        read_on(tab)  # the sketch's section, below the first screen
        tab.wait_for_function("() => [...document.querySelectorAll('img')].every(i => i.complete)", timeout=30_000)
        thumb = tab.locator(".st-key-demo_prompt_len [data-testid=stSliderThumbValue]")
        where = ("() => { const r = document.querySelector('.st-key-demo_prompt_len input[type=range]')"
                 ".parentElement.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; }")
        tab.locator(".st-key-demo_prompt_len input[type=range]").wait_for(state="attached")  # not its skeleton
        box = None
        for _ in range(20):  # scroll it to the middle, until the page stops moving under it
            tab.evaluate("() => document.querySelector('.st-key-demo_prompt_len')"
                         ".scrollIntoView({block: 'center', behavior: 'instant'})")
            tab.wait_for_timeout(250)
            now = tab.evaluate(where)
            if now == box and 100 < now["y"] < 900:
                break
            box = now
        x, y = box["x"] + box["w"] / 2, box["y"] + box["h"] / 2  # the thumb: the range input's parent
        tab.mouse.move(x, y)
        tab.mouse.down()
        seen = []
        for i in range(1, 6):
            tab.mouse.move(x + 30 * i, y, steps=3)
            tab.wait_for_timeout(80)
            live = tab.evaluate("() => { const b = document.querySelector('.pd-sketch-live');"
                                " return b && !b.hidden ? b.querySelector('svg').getAttribute('aria-label') : null; }")
            number = int(thumb.inner_text())
            assert live is not None and f"提示词 {number} 个位置" in live, (number, live)
            seen.append(number)
        tab.mouse.up()
        wait_idle(tab)
        assert len(set(seen)) == 5 and seen == sorted(seen), seen  # a new picture at every move
        hidden = tab.evaluate("() => { const b = document.querySelector('.pd-sketch-live'); return !b || b.hidden; }")
        alt = tab.locator(".st-key-sketch_figure img").get_attribute("alt")
        assert hidden and f"提示词 {seen[-1]} 个位置" in alt, alt
    finally:
        tab.close()
