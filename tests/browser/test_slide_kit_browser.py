"""The slide kit from the running app: the lesson page's button downloads a zip whose every file opens
(each SVG parses, each PNG decodes 1920 px wide) and whose slides.html works from the disk."""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree

import pytest

from lesson.slides import PNG_WIDTH
from lesson.text import t

pytestmark = pytest.mark.browser


def test_the_lesson_pages_zip_holds_every_figure_and_opens(page, tmp_path):
    from PIL import Image

    button = page.locator(".st-key-kit_download").get_by_role("button", name=t("zh", "kit_download"), exact=True)
    button.scroll_into_view_if_needed()
    with page.expect_download(timeout=120_000) as download:  # the zip is drawn when clicked: seconds
        button.click()
    assert download.value.suggested_filename.endswith("_slides_zh.zip")
    archive = zipfile.ZipFile(io.BytesIO(open(download.value.path(), "rb").read()))
    names = archive.namelist()
    svgs, pngs = [n for n in names if n.endswith(".svg")], [n for n in names if n.endswith(".png")]
    assert len(svgs) == len(pngs) >= 7 and "slides.html" in names and len(names) == len(set(names))
    for name in svgs:
        assert ElementTree.fromstring(archive.read(name)).tag.endswith("svg") and name.endswith("_zh.svg")
    for name in pngs:
        image = Image.open(io.BytesIO(archive.read(name)))
        image.load()
        assert image.size[0] == PNG_WIDTH, name
    slides = tmp_path / "slides.html"
    slides.write_bytes(archive.read("slides.html"))
    deck = page.context.new_page()
    deck.goto(slides.as_uri(), wait_until="load")
    deck.keyboard.press("ArrowRight")
    assert deck.eval_on_selector_all(".slide", "els => els.filter(e => e.offsetParent).map(e => e.id)") == ["slide-2"]
    deck.close()
