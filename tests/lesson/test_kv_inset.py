"""KV growth with a long prompt shows the growth: +2 KiB a Decode step is invisible on a 2 MiB axis, so the
bytes each pass added after the Prefill are drawn again under the plot on an axis of their own (every
number measured from the trace); a short prompt, whose growth the main axis shows, gets no zoom."""

from __future__ import annotations

import pytest

from lesson.answer import truncate_trace
from lesson.diagrams.kv_growth import render_kv_growth
from lesson.style import classroom_style
from lesson.text import t
from tests.factories import make_trace
from tests.svg import all_text, parse, with_class


def long_trace():
    return make_trace(tuple(f"p{i}" for i in range(1024)), ("a", "b", "c", "d"))


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("classroom", [False, True])
def test_a_long_prompts_decode_growth_is_zoomed_on_its_own_axis(lang, classroom):
    trace = long_trace()
    style = classroom_style() if classroom else None
    root = parse(render_kv_growth(trace, lang=lang, style=style))
    bars = with_class(root, "inset-bar")
    prefill_bytes = trace.steps[0].kv_bytes
    assert [int(b.get("data-added-bytes")) for b in bars] == [s.kv_bytes - prefill_bytes for s in trace.steps]
    heights = [float(b.get("height")) for b in bars]
    assert heights[0] == 0 and heights[-1] > 50 and heights == sorted(heights)  # the growth, visible
    main = with_class(root, "kv-bar")
    assert t(lang, "kv_inset_title")[:10] in all_text(root) and len(main) == len(bars)
    assert float(root.get("height")) > max(float(b.get("y")) + float(b.get("height")) for b in bars)


def test_a_short_prompt_needs_no_zoom_and_stepping_keeps_the_zooms_axis():
    assert not with_class(parse(render_kv_growth(make_trace())), "kv-inset")
    trace = long_trace()
    whole = parse(render_kv_growth(trace))
    part = parse(render_kv_growth(truncate_trace(trace, 2), full=trace))
    ticks = [[e.text for e in with_class(inset, "tick-label")] for inset in
             (with_class(whole, "kv-inset")[0], with_class(part, "kv-inset")[0])]
    assert ticks[0] == ticks[1]  # the axis of the whole run at every step
