"""The timeline's narrow layout (a phone's 358 px column, lesson.style.phone_style): as wide as the column,
no label under 12 units, the time panel and its axis first (right under the title), then the table
without its phase column; every pass in both, in both languages, stepping or not."""

from __future__ import annotations

import pytest

from lesson.answer import truncate_trace
from lesson.diagrams.timeline import render_timeline
from lesson.style import PHONE_MIN_FONT, PHONE_WIDTH, classroom_style, phone_style
from tests.factories import make_trace
from tests.svg import SVG, parse, with_class


def _trace(num_tokens: int):
    return make_trace(("法国", "的", "首都", "是"), tuple(f"o{i}" for i in range(num_tokens)))


def _top(el) -> float:
    return float(el.get("y"))


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("num_tokens", [1, 3, 8, 40])
def test_the_phone_timeline_fits_the_column_and_its_axis_comes_before_the_table(lang, num_tokens):
    trace = _trace(num_tokens)
    root = parse(render_timeline(trace, lang=lang, style=phone_style()))
    assert float(root.get("viewBox").split()[2]) == PHONE_WIDTH
    sizes = [float(t.get("font-size")) for t in root.iter(f"{SVG}text")]
    assert min(sizes) >= PHONE_MIN_FONT
    ticks = with_class(root, "tick-label")
    chips = with_class(root, "chip")
    assert ticks and chips
    axis_bottom = max(_top(t) for t in ticks)  # above every chip of the table:
    assert axis_bottom < min(float(c.find(f"{SVG}rect").get("y")) for c in chips)
    assert axis_bottom < 420  # on a phone's first screen under the title: the 30 rows' worth at most
    assert not with_class(root, "phase-badge")  # no phase column: the colours say it
    for el in root.iter():  # nothing past the column's right edge
        if el.tag == f"{SVG}rect" and el.get("width"):
            assert float(el.get("x", 0)) + float(el.get("width")) <= PHONE_WIDTH + 0.01, el.attrib
    bars = with_class(root, "pass-time")
    assert len(bars) == len(with_class(root, "row"))  # each row's pass (or gap) has its time bar


def test_stepping_on_a_phone_keeps_the_axis_and_the_size():
    """A prefix of the run drawn against the whole run (classroom stepping): the figure never moves."""
    whole = _trace(12)
    drawn = [parse(render_timeline(truncate_trace(whole, k), lang="zh", style=phone_style(), full=whole))
             for k in (1, 5, 12)]
    assert len({root.get("viewBox") for root in drawn}) == 1
    assert len({tuple(_top(t) for t in with_class(root, "tick-label")) for root in drawn}) == 1


def test_the_classroom_layout_keeps_its_phase_column():
    root = parse(render_timeline(_trace(3), lang="zh", style=classroom_style()))
    assert with_class(root, "phase-badge")
