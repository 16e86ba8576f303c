"""While the classroom steps through a run, the timeline keeps one height: the wait legend's line is
reserved from the first pass when a later pass of the run draws a wait (it used to appear at that pass
and push the notes down 22 px: the presenter view's figure changed height mid-run)."""

import dataclasses
import re

from lesson.answer import truncate_trace
from lesson.diagrams.timeline import render_timeline
from lesson.style import classroom_style
from tests.factories import make_trace


def with_wait_before(trace, index: int, wait_ms: float):
    """`trace` with its passes back to back from 0 ms (no wait anywhere), then a visible wait (the engine
    queued, the page drew) before pass `index`."""
    steps, clock = [], 0.0
    for i, step in enumerate(trace.steps):
        clock += wait_ms if i == index else 0.0
        steps.append(dataclasses.replace(step, start_ms=clock, end_ms=clock + step.duration_ms, consumer_ms=0.0,
                                         lock_wait_ms=0.0))
        clock += step.duration_ms
    return dataclasses.replace(trace, steps=tuple(steps))


def height(svg: str) -> float:
    return float(re.search(r'<svg[^>]* height="([\d.]+)"', svg).group(1))


def test_the_wait_legend_is_there_from_the_first_pass_when_a_later_pass_waits():
    whole = with_wait_before(make_trace(output_pieces=("巴黎", "。", "</s>", "The")), 3, 40.0)
    for style in (None, classroom_style(width=1280)):
        svgs = [render_timeline(truncate_trace(whole, k), lang="zh", full=whole, style=style)
                for k in range(1, len(whole.steps) + 1)]
        assert len({height(svg) for svg in svgs}) == 1
        assert all('class="legend' in svg for svg in svgs)


def test_a_run_with_no_visible_wait_draws_no_legend_at_any_step():
    whole = with_wait_before(make_trace(output_pieces=("巴黎", "。")), 99, 0.0)
    stepped = [render_timeline(truncate_trace(whole, k), lang="en", full=whole) for k in (1, 2)]
    assert not any('class="legend' in svg for svg in [render_timeline(whole, lang="en"), *stepped])
    assert len({height(svg) for svg in stepped}) == 1
