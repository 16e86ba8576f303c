"""The presenter's smaller defects, in the pure layer: the blocks figure's fold reads as passes left out (not
one pass of N positions), no wrapped line starts with a closing mark (。), the deck subtitle's time is a
date and time, the first figure's title is not its section's heading again, and a link with too many
values is refused as a whole (one message, nothing measured)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from lesson.answer import truncate_trace
from lesson.diagrams import render_animation, render_blocks
from lesson.layout import NO_LINE_START, wrap_text
from lesson.links import MAX_PARAMS, Field, read_query
from lesson.slides import stamp_words
from lesson.style import classroom_style
from lesson.text import t
from tests.factories import make_long_trace, make_trace


def _texts(svg: str, class_: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(el.itertext()) for el in root.iter() if class_ in (el.get("class") or "").split()]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("style", [None, classroom_style()], ids=["page", "classroom"])
def test_the_blocks_fold_says_how_many_passes_it_folds_not_one_pass_of_n_positions(lang, style):
    trace = make_long_trace(16, 23)  # 23 passes: the middle Decode passes fold
    svg = render_blocks(trace, lang=lang, style=style)
    root = ET.fromstring(svg)
    gap = [g for g in root.iter() if "gap" in (g.get("class") or "").split() and g.get("data-pass", "").count("-")]
    assert len(gap) == 1
    first, last = (int(k) for k in gap[0].get("data-pass").split("-"))
    folded = last - first + 1
    new = _texts(svg, "new-count")
    assert f"+{folded}" not in new  # "+15" over one column read as one Decode pass of 15 positions
    assert t(lang, "blocks_folded_each") in new
    assert _texts(svg, "fold-label") == [t(lang, "blocks_folded", n=folded)]
    assert [g for g in root.iter() if g.get("class") == "fold-mark"]  # the break mark


def test_a_wrapped_line_never_starts_with_a_closing_mark():
    assert wrap_text("一二三。", 3 * 16, 16) == ("一二", "三。")  # was ("一二三", "。")
    sentence = t("zh", "prefill_2").replace("[[1]](#references)", "")
    for width in range(60, 400, 7):
        lines = wrap_text(sentence, width, 16)
        assert "".join(lines) == sentence.replace(" ", "") or "".join(lines).replace(" ", "") == sentence.replace(
            " ", "")
        assert not any(line[0] in NO_LINE_START for line in lines), (width, lines)


def test_the_deck_subtitle_says_a_date_and_a_time():
    assert stamp_words("20261201-192528") == "2026-12-01 19:25:28"
    assert stamp_words("recorded") == "recorded"


def test_the_first_figures_title_is_not_its_sections_heading():
    for lang in ("zh", "en"):
        assert t(lang, "timeline_title") != t(lang, "sec_timeline")


def test_a_link_with_too_many_values_is_refused_as_a_whole():
    fields = (Field("out", "output_len", "int", 1, 128),)
    read = read_query(fields, {"out": "5", **{f"x{i}": "1" for i in range(MAX_PARAMS + 6)}})
    assert read.refused and not read.values and [p.key for p in read.problems] == ["link_too_many"]
    assert not read_query(fields, {"out": "5"}).refused


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_animations_still_frame_names_the_pass_the_presenter_stands_on(lang):
    """The presenter view draws the animation as its still frame at the step (app_support.presenter):
    at 3 / 3 the closing caption, at 1 / 3 Prefill's, never a loop that starts again at Prefill."""
    whole = make_trace(output_pieces=("巴黎", "。", "</s>"))
    total = len(whole.steps)
    last = render_animation(whole, lang=lang, full=whole, still=True, style=classroom_style(width=1280))
    assert "<animate" not in last and 'class="caption done"' in last
    first = render_animation(truncate_trace(whole, 1), lang=lang, full=whole, still=True,
                             style=classroom_style(width=1280))
    assert 'class="caption step-0"' in first and total == 3


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_presenters_review_map_is_landscape_and_fills_a_1280x720_window(lang):
    """Folded for the 820-unit column it came out 1280x1199 units in the presenter view: 630 of about
    930 px wide at 1280x720 (its box: 930x590 px), labels about 10 px; then the English map, with its
    two-line headings, 1280x1117 units: 676 px wide, labels 11.1 px, and 1280x1014 units: 12.2 px. A 1280x720
    projector draws every label at 14 px or more now; at 1024x768 the box is about 736x638 px and its width
    decides: 12 px (the browser test measures both)."""
    import re

    from lesson.diagrams import render_review_map

    svg = render_review_map(make_trace(), lang=lang, style=classroom_style(width=1280))
    width, height = (float(re.search(f'{k}="([0-9.]+)"', svg).group(1)) for k in ("width", "height"))
    for box_w, box_h, least_px in ((930, 590, 14), (736, 638, 12)):
        scale = min(box_w / width, box_h / height)
        assert classroom_style().small_size * scale >= least_px, (width, height, scale)
    assert width * min(930 / width, 590 / height) >= 730 and height < 1000
