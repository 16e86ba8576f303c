"""The slide kit: every figure of a run as SVG and PNG, names that never collide, and an offline slides.html."""

from __future__ import annotations

import base64
import io
import re
import shutil
import subprocess
import zipfile
from html.parser import HTMLParser
from xml.etree import ElementTree

import pytest

from lesson.diagrams import DIAGRAMS
from lesson.slides import (
    LESSON_FIGURES, PNG_WIDTH, Slide, lesson_slides, plain_text, rasterizable, run_set_tag, safe_name,
    serving_slides, serving_stem, slide_kit, slides_html, unique_names,
)
from lesson.style import FONT_STACK, classroom_style
from lesson.text import LANGUAGES
from tests.factories import client_run, make_run, make_trace

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
TRACE = make_trace(prompt=HOSTILE + "法国的首都是")
RUNS = [make_run(policy=p, scenario="long-prompt-during-chats") for p in ("prefill-first", "chunked")]


@pytest.fixture(scope="module")
def cairo():
    """CairoSVG and the system's cairo library; without them the PNG tests skip (the app says why)."""
    try:
        import cairosvg
    except (ImportError, OSError) as err:
        pytest.skip(f"CairoSVG cannot load the cairo library: {err}")
    return cairosvg


def fake_png(svg: str, width: int) -> bytes:
    """A PNG header of the asked width: the zip's structure tested without the renderer."""
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + width.to_bytes(4, "big") + (100).to_bytes(4, "big") + b"\x08\x06"


def all_slides(lang: str = "zh"):
    style = classroom_style()
    return (lesson_slides(TRACE, lang=lang, run_name="run3", style=style)
            + serving_slides(RUNS, lang=lang, tag=run_set_tag([r.to_json() for r in RUNS]), style=style))


def test_lesson_slides_cover_every_figure_of_the_page_named_by_run_figure_and_language():
    slides = lesson_slides(TRACE, lang="en", run_name="run3")
    assert [s.name for s in slides] == [f"run3_{figure}_en" for figure, *_ in LESSON_FIGURES]
    assert set(DIAGRAMS) <= {figure for figure, *_ in LESSON_FIGURES}
    animation = next(s for s in slides if s.name == "run3_animation_en")
    assert "<animate" in animation.svg and "<animate" not in animation.png_source  # the PNG draws a still
    assert all(s.title and s.caption and s.notes and s.alt for s in slides)


def test_serving_names_carry_scenario_run_set_policy_and_figure():
    tag = run_set_tag([r.to_json() for r in RUNS])
    names = [s.name for s in serving_slides(RUNS, lang="zh", tag=tag)]
    assert names[0] == f"serving_long-prompt-during-chats_{tag}_metrics_zh"
    assert f"serving_long-prompt-during-chats_{tag}_chunked_gantt_zh" in names
    assert len(names) == len(set(names)) == 1 + 3 * len(RUNS)
    other = make_run(policy="chunked", scenario="burst-16")
    assert serving_stem(other, "gantt", "abc") != serving_stem(RUNS[1], "gantt", "abc")  # the defect: same name
    assert serving_stem(RUNS[1], "gantt", "abc") != serving_stem(RUNS[1], "gantt", "abd")
    observed = serving_slides([client_run()], lang="en", tag="t")  # no iterations: its Gantt alone
    assert [s.name.split("_")[-2] for s in observed] == ["metrics", "gantt"]


def test_file_name_pieces_are_safe_and_names_are_made_unique():
    assert safe_name("../../etc/passwd 名字") == "etc-passwd"
    assert safe_name("a/b:c") == "a-b-c" and safe_name("<>") == "x"
    assert unique_names(["a", "a", "a-2", "b"]) == ["a", "a-2", "a-2-2", "b"]
    assert run_set_tag(["x"]) != run_set_tag(["y"]) and len(run_set_tag(["x"])) == 6


def test_zip_names_are_unique_and_each_figure_has_an_svg_and_a_png():
    slides = all_slides()
    doubled = slides + [slides[0]]  # the same figure twice still gets two names
    archive = zipfile.ZipFile(io.BytesIO(slide_kit(doubled, lang="zh", title="t", rasterize=fake_png)))
    names = archive.namelist()
    assert len(names) == len(set(names)) == 2 * len(doubled) + 1 and "slides.html" in names
    stems = {n.rsplit(".", 1)[0] for n in names if n != "slides.html"}
    assert len(stems) == len(doubled) and all(stem.endswith("_zh") or stem.endswith("_zh-2") for stem in stems)
    for slide in slides:
        assert archive.read(f"{slide.name}.svg").decode("utf-8") == slide.svg  # the page's figure, byte for byte


def test_the_same_figures_make_the_same_zip():
    slides = lesson_slides(TRACE, lang="en", run_name="run1")
    first = slide_kit(slides, lang="en", title="t", rasterize=fake_png)
    assert first == slide_kit(slides, lang="en", title="t", rasterize=fake_png)


@pytest.mark.slow
@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_file_in_the_zip_opens(cairo, lang):
    from PIL import Image

    archive = zipfile.ZipFile(io.BytesIO(slide_kit(all_slides(lang), lang=lang, title="t")))
    for name in archive.namelist():
        data = archive.read(name)
        if name.endswith(".svg"):
            assert ElementTree.fromstring(data).tag.endswith("svg")
        elif name.endswith(".png"):
            image = Image.open(io.BytesIO(data))
            image.load()  # decodes every pixel
            assert image.size[0] == PNG_WIDTH and image.size[1] > 100
        else:
            assert name == "slides.html" and data.decode("utf-8").startswith("<!DOCTYPE html>")


def test_cjk_labels_are_drawn_with_a_cjk_font(cairo):
    """Chinese drawn with a font that lacks the glyphs is one box per character, all alike; with the figures'
    font stack (Noto Sans CJK SC first: fonts-noto-cjk) two titles of different characters differ."""
    from PIL import Image, ImageChops

    fonts = shutil.which("fc-list") and subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True,
                                                        text=True, check=False).stdout
    if not (fonts or "").strip():
        pytest.skip("no Chinese font installed (Debian: fonts-noto-cjk, `make browser-deps`)")

    def title_png(text: str) -> Image.Image:
        svg = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 40" width="200" height="40">'
               f'<text x="5" y="30" font-size="28" font-family="{FONT_STACK}">{text}</text></svg>')
        return Image.open(io.BytesIO(cairo.svg2png(bytestring=svg.encode(), output_width=200))).getchannel("A")

    paris, capital = title_png("巴黎"), title_png("首都")
    assert paris.getbbox() is not None  # something was drawn
    assert ImageChops.difference(paris, capital).getbbox() is not None


def test_a_halo_label_is_drawn_under_its_text_for_cairo():
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><g><text fill="#000" paint-order="stroke" '
           'stroke="#fff" stroke-width="4" x="1" y="5">TTFT <tspan>3 ms</tspan></text></g></svg>')
    root = ElementTree.fromstring(rasterizable(svg))
    halo, text = root[0]
    assert halo.get("fill") == "none" and halo.get("stroke") == "#fff" and halo.get("paint-order") is None
    assert text.get("stroke") == "none" and text.get("fill") == "#000"
    assert "".join(halo.itertext()) == "".join(text.itertext()) == "TTFT 3 ms"


def test_a_halo_label_keeps_its_text_visible_in_the_png(cairo):
    from PIL import Image

    svg = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 120 40" width="120" height="40">'
           '<rect width="120" height="40" fill="#ffffff"/><text fill="#000000" paint-order="stroke" stroke="#ffffff" '
           'stroke-width="6" x="5" y="30" font-size="28" font-family="DejaVu Sans">TTFT</text></svg>')
    dark = Image.open(io.BytesIO(cairo.svg2png(bytestring=rasterizable(svg).encode(), output_width=120)))
    assert dark.convert("L").getextrema()[0] < 64  # before: the white halo covered the black text entirely


class _Parsed(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.texts, self.scripts, self.in_script = [], [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.in_script = tag == "script"

    def handle_endtag(self, tag):
        self.in_script = False

    def handle_data(self, data):
        (self.scripts if self.in_script else self.texts).append(data)


def parsed(document: str) -> _Parsed:
    parser = _Parsed()
    parser.feed(document)
    return parser


@pytest.mark.parametrize("lang", LANGUAGES)
def test_slides_html_is_offline_and_inlines_every_figure(lang):
    slides = all_slides(lang)
    document = slides_html(slides, lang=lang, title="t")
    assert not re.search(r"https?://", document)  # no network reference, not even an xmlns
    page = parsed(document)
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert len(images) == len(slides)
    for slide, attrs in zip(slides, images):
        assert base64.b64decode(attrs["src"].split(",", 1)[1]).decode("utf-8") == slide.screen_source
    assert [attrs for tag, attrs in page.tags if tag in ("link", "iframe", "object", "embed")] == []
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    assert scripts == [{}] and "ArrowRight" in "".join(page.scripts) and "ArrowLeft" in "".join(page.scripts)
    sections = [attrs for tag, attrs in page.tags if tag == "section"]
    assert len(sections) == len(slides) + 1  # a title slide, then one per figure


def test_user_text_in_slides_html_stays_text():
    slide = Slide("run1_timeline_zh", "<svg xmlns='http://www.w3.org/2000/svg'/>", HOSTILE, HOSTILE, HOSTILE, HOSTILE)
    document = slides_html([slide], lang="zh", title=HOSTILE, subtitle=HOSTILE)
    page = parsed(document)
    assert [tag for tag, _ in page.tags].count("script") == 1  # only the page's own
    assert not any(tag == "img" and "onerror" in attrs for tag, attrs in page.tags)
    assert sum(HOSTILE in text for text in page.texts) >= 4  # title, heading, caption, notes: shown as typed
    alt = next(attrs["alt"] for tag, attrs in page.tags if tag == "img")
    assert alt == HOSTILE


def test_lesson_markdown_becomes_plain_text():
    markdown = "**TTFT** is [[2]](#references) and *this* [a link](https://x.y)"
    assert plain_text(markdown) == "TTFT is [2] and this a link"


def test_without_a_renderer_the_zip_holds_the_svgs_and_the_slides():
    slides = lesson_slides(TRACE, lang="zh", run_name="run2")
    names = zipfile.ZipFile(io.BytesIO(slide_kit(slides, lang="zh", title="t", rasterize=None))).namelist()
    assert sorted(names) == sorted([f"{s.name}.svg" for s in slides] + ["slides.html"])
