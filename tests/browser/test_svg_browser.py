"""Real-browser check: the exported SVGs render in Debian chromium, not blank.

Screenshots go to tests/artifacts/ (gitignored); a curated set (zh and en:
timeline, blocks, kv_growth, latency, review_map) is copied to
docs/screenshots/diagrams/ for the README. Never downloads a browser.
"""

import os
import shutil
from pathlib import Path

import pytest

from lesson.diagrams import DIAGRAMS, render_blocks_schematic
from lesson.export import XML_DECLARATION
from tests.factories import ROOT, make_long_trace

ARTIFACTS = ROOT / "tests" / "artifacts" / "diagrams"
DOCS = ROOT / "docs" / "screenshots" / "diagrams"
UPDATE_DOCS = os.environ.get("UPDATE_SCREENSHOTS") == "1"  # refresh the README's pictures on request only
CURATED = ("timeline", "blocks", "kv_growth", "latency", "review_map")

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(browser):
    """A tab of the session's chromium (skips, or fails in CI, without chromium or playwright: see conftest)."""
    page = browser.new_page(device_scale_factor=1)
    yield page
    page.close()


@pytest.fixture(scope="module")
def lesson_trace(default_lm):
    """The lesson's example, really run on the embedded model (so the README shows real numbers)."""
    from engine.contract.results import GenerationConfig
    from engine.runtime.generation import generate

    return generate(default_lm, "法国的首都是", GenerationConfig(max_new_tokens=8))


def _shoot(page, svg: str, name: str, wait_ms: int = 0) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    svg_path = ARTIFACTS / f"{name}.svg"
    svg_path.write_text(XML_DECLARATION + svg, encoding="utf-8")
    page.goto(svg_path.as_uri())
    if wait_ms:
        page.wait_for_timeout(wait_ms)
    png = ARTIFACTS / f"{name}.png"
    page.locator("svg").screenshot(path=str(png))
    return png


def _spread(png: Path) -> float:
    from PIL import Image, ImageStat

    return ImageStat.Stat(Image.open(png).convert("L")).stddev[0]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_diagrams_render_in_chromium(page, lang, lesson_trace):
    trace = lesson_trace
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, render in DIAGRAMS.items():
        png = _shoot(page, render(trace, lang=lang), f"{name}_{lang}")
        assert _spread(png) > 20, f"{png.name} looks blank"
        if name in CURATED and UPDATE_DOCS:
            shutil.copyfile(png, DOCS / png.name)
    png = _shoot(page, render_blocks_schematic(12, 6, lang=lang), f"blocks_schematic_{lang}")
    assert _spread(png) > 20


def test_long_request_renders(page):
    trace = make_long_trace(4096, 512)
    for name in ("timeline", "blocks", "kv_growth", "latency"):
        assert _spread(_shoot(page, DIAGRAMS[name](trace, lang="en"), f"{name}_long_en")) > 20


def test_animation_plays_by_itself(page, lesson_trace):
    from PIL import Image, ImageChops

    svg = DIAGRAMS["animation"](lesson_trace, lang="zh")
    early = _shoot(page, svg, "animation_early_zh", wait_ms=500)
    late = _shoot(page, svg, "animation_late_zh", wait_ms=5000)
    diff = ImageChops.difference(Image.open(early).convert("L"), Image.open(late).convert("L"))
    assert diff.getbbox() is not None, "the animation did not change the picture"
