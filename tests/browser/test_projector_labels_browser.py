"""On a 1280x720 projector in classroom mode, no text of any figure of any page is drawn under 14 px: every SVG
figure's smallest label (its font-size x the <img>'s shown width / its viewBox width) and every plotly text
(its computed size). Before: the bottleneck lab's plotly charts at 12 px beside 17.6 px body text; the serving
lab's prefix-cache block figure at 8.6 px. The presenter view and slides.html are measured in
test_classroom_steps_browser.py and test_slides_browser.py.

Same server (tests/browser/conftest.py) and skip rules as test_app_browser.py; a report per page in
tests/artifacts/."""

from __future__ import annotations

import pytest

from tests.browser.pages import ARTIFACTS, open_page, read_on

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LEAST_PX = 14
PAGES = ["/?lang=zh&class=1", "/bottleneck_lab?lang=en&class=1",
         "/serving_lab?lang=zh&class=1&scn=shared-system-prompt&pc=1", "/exercises?lang=en&class=1"]
# [figure, smallest text in CSS px] for every figure shown in the main area
LABELS_JS = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('[data-testid=stMain] img')) {
    if (!img.src.startsWith('data:image/svg+xml') || !img.getBoundingClientRect().width) continue;
    const doc = new DOMParser().parseFromString(await (await fetch(img.src)).text(), 'image/svg+xml');
    const width = parseFloat(doc.documentElement.getAttribute('viewBox').split(/\\s+/)[2]);
    const sizes = [...doc.querySelectorAll('text')].map(t => parseFloat(t.getAttribute('font-size')));
    if (sizes.length) out.push([doc.documentElement.getAttribute('class'),
                                Math.min(...sizes) * img.getBoundingClientRect().width / width]);
  }
  document.querySelectorAll('[data-testid=stMain] .js-plotly-plot').forEach((chart, i) => {
    const sizes = [...chart.querySelectorAll('.main-svg text')]
      .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
      .map(t => parseFloat(getComputedStyle(t).fontSize));
    if (sizes.length) out.push(['plotly chart ' + (i + 1), Math.min(...sizes)]);
  });
  return out;
}"""


def reveal_everything(page) -> None:
    """Streamlit draws an image or a chart once its box comes into view: the main area scrolled through."""
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    for y in range(0, height + 720, 600):
        page.evaluate(f"() => document.querySelector('[data-testid=stMain]').scrollTo(0, {y})")
        page.wait_for_timeout(150)
    page.wait_for_function("() => [...document.querySelectorAll('img')].every(i => i.complete)", timeout=30_000)
    page.wait_for_timeout(800)


@pytest.mark.parametrize("path", PAGES)
def test_no_figure_text_on_any_page_is_under_14_px_at_1280x720_in_classroom_mode(browser, server_url, path):
    page = open_page(browser, server_url + path, 1280, 720)
    try:
        if path.startswith("/?"):
            read_on(page)
        reveal_everything(page)
        labels = page.evaluate(LABELS_JS)
        name = path.strip("/").split("?")[0] or "lesson"
        report = "\n".join(f"{figure}: {px:.1f} px" for figure, px in labels)
        (ARTIFACTS / f"projector_labels_{name}.txt").write_text(report + "\n", encoding="utf-8")
        if name != "exercises":  # the exercises page draws no figure until an exercise is measured
            assert labels, "no figure measured"
        small = [(figure, round(px, 1)) for figure, px in labels if px < LEAST_PX - 0.05]
        assert not small, small
    finally:
        page.context.close()
