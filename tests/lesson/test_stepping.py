"""Classroom stepping keeps every figure's axes: a prefix of a run drawn with `full=` the
whole run has the same scales, slots and ticks at every step."""

import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from lesson.answer import truncate_trace
from lesson.charts.run import latency_figure
from lesson.diagrams import DIAGRAMS, render_blocks, render_kv_growth, render_latency, render_timeline
from tests.factories import make_trace

OUTPUT = tuple(f"t{i}" for i in range(10))


@pytest.fixture(scope="module")
def run():
    """Prefill 3 ms, Decode passes of 2 ms, the last one slow (22 ms): the tallest bar comes last."""
    trace = make_trace(output_pieces=OUTPUT)
    last = trace.steps[-1]
    return replace(trace, steps=trace.steps[:-1] + (replace(last, end_ms=last.end_ms + 20),))


def prefixes(trace):
    return [truncate_trace(trace, k) for k in range(1, len(trace.steps) + 1)]


def with_class(svg: str, *classes: str) -> list[ET.Element]:
    return [el for el in ET.fromstring(svg).iter() if set(classes) <= set(el.get("class", "").split())]


def tick_labels(svg: str) -> list[str]:
    return [el.text for el in with_class(svg, "tick-label")]


def y_tick_labels(svg: str) -> list[tuple[str, str]]:
    """(y, label) of the y axis ticks (anchored at the end, left of the plot)."""
    return [(el.get("y"), el.text) for el in with_class(svg, "tick-label") if el.get("text-anchor") == "end"]


def test_timeline_time_axis_and_prefill_bar_stay_put(run):
    first, last = render_timeline(prefixes(run)[0], full=run), render_timeline(run, full=run)
    assert tick_labels(first) == tick_labels(last)
    bar = [(el.get("x"), el.get("width")) for el in with_class(first, "pass-time", "prefill")]
    assert bar == [(el.get("x"), el.get("width")) for el in with_class(last, "pass-time", "prefill")]
    assert ET.fromstring(first).get("width") == ET.fromstring(last).get("width")
    # Without the whole run the axis follows the prefix: what the classroom saw before.
    assert tick_labels(render_timeline(prefixes(run)[0])) != tick_labels(last)


def test_latency_y_axis_and_bar_slots_are_the_whole_runs(run):
    svgs = [render_latency(p, full=run) for p in prefixes(run)]
    assert len({tuple(y_tick_labels(svg)) for svg in svgs}) == 1
    slots = {}
    for svg in svgs:
        for el in with_class(svg, "latency-bar"):
            slots.setdefault(el.get("data-step"), set()).add((el.get("x"), el.get("width")))
    assert len(slots) == len(run.steps) and all(len(xs) == 1 for xs in slots.values())


def test_kv_y_axis_and_bar_slots_are_the_whole_runs(run):
    svgs = [render_kv_growth(p, full=run) for p in prefixes(run)]
    assert len({tuple(y_tick_labels(svg)) for svg in svgs}) == 1
    slots = {}
    for svg in svgs:
        for group in with_class(svg, "kv-bar"):
            strip = next(el for el in group.iter() if el.get("class") == "phase-strip")
            slots.setdefault(group.get("data-step"), set()).add((strip.get("x"), strip.get("width")))
    assert len(slots) == len(run.steps) and all(len(xs) == 1 for xs in slots.values())


def test_kv_y_axis_is_fixed_past_max_bars_too():
    long_run = make_trace(output_pieces=tuple(f"t{i}" for i in range(60)))
    assert len({tuple(y_tick_labels(render_kv_growth(p, full=long_run))) for p in prefixes(long_run)[::7]}) == 1


def test_blocks_rows_and_width_are_the_whole_runs(run):
    svgs = [render_blocks(p, full=run) for p in prefixes(run)]
    rows = {tuple((el.get("y"), el.text.split()[0]) for el in with_class(svg, "position-label")) for svg in svgs}
    assert len(rows) == 1
    assert len({ET.fromstring(svg).get("width") for svg in svgs}) == 1
    prefill = {tuple((el.get("x"), el.get("y")) for el in with_class(svg, "pos", "prefill")) for svg in svgs}
    assert len(prefill) == 1
    # A token not yet generated is never named on the position axis.
    assert "t5" not in " ".join(el.text for el in with_class(svgs[2], "position-label"))


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_the_last_step_looks_like_the_whole_run(run, name):
    """With full= the trace itself, every figure is the ordinary one (no jump at the end); a timeline
    (and the animation) whose middle passes fold keeps room for the MAX_ROWS rows a part of it takes."""
    from lesson.diagrams.timeline import MAX_ROWS

    short = truncate_trace(run, MAX_ROWS) if name in ("timeline", "animation") else run
    short = replace(short, stop_reason="length", output_text="".join(short.output_pieces))
    assert DIAGRAMS[name](short, lang="en", full=short) == DIAGRAMS[name](short, lang="en")


def test_plotly_axes_are_fixed_to_the_whole_run(run):
    first, last = prefixes(run)[0], run
    a, b = latency_figure(first, "en", full=run).layout, latency_figure(last, "en", full=run).layout
    assert a.yaxis.range == b.yaxis.range and a.yaxis.range is not None
    assert a.xaxis.categoryarray == b.xaxis.categoryarray and len(a.xaxis.categoryarray) == len(run.steps)
    assert latency_figure(first, "en").layout.yaxis.range is None  # default: plotly's own scaling


def test_a_prefix_leaves_out_the_special_tokens_the_finished_answer_skipped():
    """Classroom mode printed a literal </s> in the answer and the timeline's title; normal mode
    (the tokenizer's decoding, special tokens skipped) never does. Bytes of a character stay."""
    from lesson.answer import answer_text

    pieces = ("巴黎", "。", "</s>", "<0xE5>", "Paris", "</s>", "<b>")
    trace = replace(make_trace(output_pieces=pieces), output_text="巴黎。Paris<b>")  # as decode(skip_special)
    assert answer_text(trace) == "巴黎。Paris<b>"
    shown = [answer_text(truncate_trace(trace, k)) for k in range(1, len(pieces) + 1)]
    assert shown == ["巴黎", "巴黎。", "巴黎。", "巴黎。<0xE5>", "巴黎。<0xE5>Paris", "巴黎。<0xE5>Paris",
                     "巴黎。Paris<b>"]
    title = ET.fromstring(render_timeline(truncate_trace(trace, 3), lang="en")).find(
        ".//{http://www.w3.org/2000/svg}text[@class='subtitle']")
    assert "</s>" not in title.text and "巴黎。" in title.text
    streaming = replace(trace, stop_reason=None, output_text="", steps=trace.steps[:2])
    assert answer_text(streaming) == "巴黎。"


@pytest.mark.parametrize("classroom", [False, True], ids=["normal", "classroom"])
@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_every_figure_keeps_its_size_at_every_step(run, name, classroom):
    """The blocks grew 502 -> 603 px and the latency chart 615 -> 783 px from pass 1 to 12 (classroom), the
    timeline and the animation too in the replay: everything under them moved. Each keeps the whole run's room."""
    from lesson.style import DEFAULT_STYLE, classroom_style

    style = classroom_style() if classroom else DEFAULT_STYLE
    sizes = {(root.get("width"), root.get("height"), root.get("viewBox"))
             for root in (ET.fromstring(DIAGRAMS[name](prefix, lang="zh", full=run, style=style))
                          for prefix in prefixes(run))}
    assert len(sizes) == 1, sizes
