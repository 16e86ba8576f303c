"""Classroom mode and the presenter view at a projector's 1280x720 and 1024x768.

- The presenter view's animation stands on the pass its controls name (it looped from Prefill whatever
  the step: "第 3 / 3 次前向" over a figure showing only Prefill).
- After a click on a figure in the sidebar's list, ← steps back a pass (it chose the figure above).
- The link to this view carries the presenter view, its figure and the step shown (a step redraws the view alone).
- The review map's labels are drawn at 14 px or more in the presenter view at 1280x720 (12 at 1024x768), zh and en.
- Without the presenter view, the timeline is on screen while stepping, its top at the window's top
  (it started at y≈498: only its first pass was visible).

Same server (tests/browser/conftest.py) and skip rules as test_app_browser.py; screenshots in tests/artifacts/.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.browser.pages import (
    ARTIFACTS, CLASS_POSITION, IDLE, PROJECTORS, open_page, open_stepping_page, press, wait_idle,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LINK = "/?lang=zh&eos=1&out=3&class=1"  # a run of 3 passes in classroom mode
PRESENTER_POSITION = "() => (document.querySelector('.st-key-presenter-position') || {}).innerText || ''"
FIGURE_SVG = """async () => { const img = document.querySelector('.st-key-presenter-figure img');
  return await (await fetch(img.src)).text(); }"""


@pytest.mark.parametrize("width,height", PROJECTORS)
def test_the_presenter_views_animation_follows_the_step_and_the_keys_keep_their_meaning(browser, server_url,
                                                                                       width, height):
    page = open_stepping_page(browser, server_url + LINK, width, height)
    try:
        page.locator(".st-key-presenter label").click()
        wait_idle(page)
        radios = page.locator(".st-key-presenter_figure [role=radiogroup] label")
        radios.nth(4).click()  # the animation, clicked in the sidebar's list: the focus is on the radio group
        page.wait_for_function(f"() => document.querySelector('.st-key-presenter-figure img') && ({IDLE})()",
                               timeout=60_000)
        page.wait_for_timeout(300)
        press(page, "End", PRESENTER_POSITION, "第 3 / 3")
        svg = page.evaluate(FIGURE_SVG)
        assert "lesson-diagram animation" in svg and "<animate" not in svg and 'class="caption done"' in svg
        press(page, "ArrowLeft", PRESENTER_POSITION, "第 2 / 3")  # it chose the figure above instead
        svg = page.evaluate(FIGURE_SVG)
        assert "lesson-diagram animation" in svg and 'class="caption step-1"' in svg  # the pass the header names
        page.screenshot(path=str(ARTIFACTS / f"presenter_animation_{width}x{height}.png"))
        query = sidebar_link(page)
        assert query["pres"] == "1" and query["fig"] == "4" and query["class"] == "1", query
        # the step shown: End and ← redrew the presenter's fragment alone, and the link said the step of the
        # page's last whole run (the click on the list, at pass 1) until the fragment drew the link itself
        assert query["step"] == "2", query
        press(page, "ArrowRight", PRESENTER_POSITION, "第 3 / 3")
        assert sidebar_link(page)["step"] == "3"
    finally:
        page.context.close()


def sidebar_link(page) -> dict:
    """The query of the sidebar's "link to this view" (its box opened if a redraw closed it)."""
    box = page.locator("[data-testid=stSidebar] [data-testid=stExpander]", has_text="链接")
    if not box.locator("[data-testid=stCode]").is_visible():
        box.locator("summary").click()
        page.wait_for_timeout(500)
    return dict(parse_qsl(urlsplit(box.locator("[data-testid=stCode]").last.inner_text().strip()).query))


# The presenter's figure as drawn: its smallest label's font size x the image's width on screen / its viewBox's
REVIEW_LABEL_PX = """async () => { const img = document.querySelector('.st-key-presenter-figure img');
  const doc = new DOMParser().parseFromString(await (await fetch(img.src)).text(), 'image/svg+xml');
  const sizes = [...doc.querySelectorAll('text')].map(t => parseFloat(t.getAttribute('font-size')));
  const r = img.getBoundingClientRect(), box = doc.documentElement.getAttribute('viewBox').split(/\\s+/);
  return {px: Math.min(...sizes) * r.width / parseFloat(box[2]), width: r.width, height: r.height,
          review: doc.documentElement.getAttribute('class')}; }"""


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("width,height", PROJECTORS)
def test_the_presenters_review_map_labels_are_drawn_at_14_px_or_more_at_1280(browser, server_url, lang, width,
                                                                            height):
    """The English map's two-line headings made it 1280x1117 units: drawn 676 px wide at 1280x720, labels
    11.1 px (zh 13.4 px), then 12.2 px. A link opens the presenter view on it (fig 5: the review map). At
    1024x768 the view's 736 px width decides: 12 px."""
    page = open_page(browser, f"{server_url}/?lang={lang}&eos=1&out=3&class=1&pres=1&fig=5", width, height)
    try:
        # the figure as the presenter sees it: the view's CSS in effect (it fits the figure to the window)
        page.wait_for_function(f"() => {{ const img = document.querySelector('.st-key-presenter-figure img');"
                               f" return !!img && getComputedStyle(img).maxHeight !== 'none' && ({IDLE})(); }}",
                               timeout=120_000)
        wait_idle(page)
        drawn = page.evaluate(REVIEW_LABEL_PX)
        (ARTIFACTS / f"presenter_review_{lang}_{width}x{height}.txt").write_text(f"{drawn}\n", encoding="utf-8")
        shot = ARTIFACTS / f"presenter_review_{lang}_{width}x{height}.png"
        page.screenshot(path=str(shot))
        assert "review-map" in drawn["review"], drawn
        least_px = 14.0 if width >= 1280 else 12.0
        assert drawn["px"] >= least_px, (drawn, str(shot), page.locator("[data-testid=stMain]").inner_text()[:300])
    finally:
        page.context.close()


@pytest.mark.parametrize("width,height", PROJECTORS)
def test_without_the_presenter_view_the_timeline_is_on_screen_while_stepping(browser, server_url, width, height):
    page = open_stepping_page(browser, server_url + LINK, width, height)
    try:
        for step in (2, 3):
            press(page, "ArrowRight", CLASS_POSITION, f"第 {step} /")
            page.wait_for_timeout(500)
            box = page.evaluate("() => { const r = document.querySelector('.st-key-figure-timeline img')"
                                ".getBoundingClientRect(); return [r.top, r.bottom, innerHeight]; }")
            # its top on screen and nine tenths of it (the rows of every pass; at 1280x720 it is 763 px tall,
            # its last caption lines below): it started at y≈498 and only the first pass was visible
            visible = min(box[1], box[2]) - max(box[0], 0)
            assert box[0] >= -1 and visible >= 0.9 * (box[1] - box[0]), (step, box)
        page.screenshot(path=str(ARTIFACTS / f"classroom_step_{width}x{height}.png"))
    finally:
        page.context.close()
