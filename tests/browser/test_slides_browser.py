"""slides.html in chromium, opened from a file with no server: the arrow keys step the slides, every figure
loads from the page itself, no request leaves it, and a hostile prompt stays text."""

from __future__ import annotations

import pytest

from lesson.slides import lesson_slides, slides_html
from lesson.style import classroom_style
from tests.browser.pages import ARTIFACTS
from tests.factories import make_trace

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


@pytest.fixture(scope="module")
def deck(browser, tmp_path_factory):
    """slides.html of a run whose prompt is hostile, open in a 1280x720 tab: (page, requests, dialogs)."""
    trace = make_trace(prompt=HOSTILE + "法国的首都是")
    slides = lesson_slides(trace, lang="zh", run_name="run1", style=classroom_style())
    path = tmp_path_factory.mktemp("slides") / "slides.html"
    path.write_text(slides_html(slides, lang="zh", title="第十九课", subtitle=HOSTILE), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    requests, dialogs = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri(), wait_until="load")
    yield page, requests, dialogs, len(slides)
    page.close()


def shown(page) -> list[str]:
    """The ids of the slides on screen."""
    return page.eval_on_selector_all(".slide", "els => els.filter(e => e.offsetParent !== null).map(e => e.id)")


def test_arrow_keys_step_through_the_slides(deck):
    page, _, _, num_figures = deck
    assert shown(page) == ["slide-1"]
    page.keyboard.press("ArrowRight")
    assert shown(page) == ["slide-2"] and page.evaluate("location.hash") == "#2"
    page.keyboard.press("ArrowRight")
    assert shown(page) == ["slide-3"]
    page.keyboard.press("ArrowLeft")
    assert shown(page) == ["slide-2"]
    page.keyboard.press("End")
    assert shown(page) == [f"slide-{num_figures + 1}"]
    page.keyboard.press("Home")
    assert shown(page) == ["slide-1"]


def test_notes_show_on_n_and_every_figure_loads_from_the_page(deck):
    page, requests, _, num_figures = deck
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert not page.is_visible("#slide-2 .notes")
    page.keyboard.press("n")
    assert page.is_visible("#slide-2 .notes")
    page.keyboard.press("n")
    widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
    assert len(widths) == num_figures and all(w > 0 for w in widths)  # each SVG decoded from its data URI
    assert all(url.startswith(("file:", "data:")) for url in requests)  # nothing asked of any network


def test_a_hostile_prompt_stays_text(deck):
    page, _, dialogs, _ = deck
    page.keyboard.press("Home")
    assert page.inner_text("#slide-1 .subtitle") == HOSTILE
    assert page.evaluate("document.scripts.length") == 1 and dialogs == []


# Every slide's smallest label as drawn: the SVG's smallest font-size x the scale its <img> draws it at
# (object-fit: contain, so the smaller of the box's width and height over the viewBox's).
SLIDE_LABELS_JS = """() => {
  const out = [];
  for (const img of document.querySelectorAll('.slide figure img')) {
    const slide = img.closest('.slide');
    slide.classList.add('current');
    // decoded here: the page's own policy (no connections) lets no fetch() read even a data: URI
    const bytes = Uint8Array.from(atob(img.src.split(',', 2)[1]), c => c.charCodeAt(0));
    const doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes), 'image/svg+xml');
    const [, , w, h] = doc.documentElement.getAttribute('viewBox').split(/\\s+/).map(Number);
    const box = img.getBoundingClientRect();
    const scale = Math.min(box.width / w, box.height / h);
    const sizes = [...doc.querySelectorAll('text')].map(t => parseFloat(t.getAttribute('font-size')));
    out.push([slide.dataset.name, Math.min(...sizes) * scale]);
    slide.classList.remove('current');
  }
  return out;
}"""


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_slide_is_fitted_to_the_screen_with_no_label_under_14_px_at_1280x720(browser, tmp_path, lang):
    """Figures stayed 820 px wide with 11 px labels on a 1280x720 projector: slides.html draws them for a
    landscape screen in the classroom's type and fills the screen with them."""
    trace = make_trace(prompt="法国的首都是", output_pieces=("巴黎", "。", "</s>"))
    slides = lesson_slides(trace, lang=lang, run_name="run1")  # the normal page's style: the zip's own files
    path = tmp_path / "slides.html"
    path.write_text(slides_html(slides, lang=lang, title="第十九课"), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(path.as_uri(), wait_until="load")
        labels = page.evaluate(SLIDE_LABELS_JS)
        assert len(labels) == len(slides)
        small = [(name, round(px, 1)) for name, px in labels if px < 14]
        assert not small, small
        page.keyboard.press("ArrowRight")
        page.screenshot(path=str(ARTIFACTS / f"slides_1280x720_{lang}.png"))
    finally:
        page.close()
