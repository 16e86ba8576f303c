"""lesson.layout: pure geometry and grouping."""

import pytest

from lesson.diagrams.latency import spread_apart
from lesson.layout import (
    LinearScale, Slot, byte_ticks, clip_text, fit_chips, group_layers, nice_ticks, plan_slots, sample_indices,
    spans_from_lengths, split_runs, text_width, wrap_text,
)
from lesson.style import CLASSROOM_MIN_FONT, CLASSROOM_WIDTH, DEFAULT_STYLE, FONT_STACK, classroom_style
from lesson.text import table_for


def test_cjk_is_wider_than_latin():
    assert text_width("首都", 10) == 20
    assert text_width("ab", 10) < 15


def test_wrap_keeps_every_character_and_fits():
    zh = "计算形态、性能瓶颈、体验指标和服务调度，一页回顾"
    lines = wrap_text(zh, 80, 10)
    assert "".join(lines) == zh and all(text_width(line, 10) <= 80 for line in lines)
    en = "shape of computation and the waits users feel"
    assert " ".join(wrap_text(en, 90, 10)) == en


def test_scale_and_ticks():
    scale = LinearScale(0, 10, 100, 200)
    assert (scale(0), scale(5), scale(10)) == (100, 150, 200)
    assert nice_ticks(0, 1234, 4) == (0, 500, 1000, 1500)
    assert byte_ticks(12_288)[-1] >= 12_288 and all(t % 1024 == 0 for t in byte_ticks(12_288))


@pytest.mark.parametrize("num", [1, 5, 9, 10, 513])
def test_plan_slots_covers_every_item_once(num):
    slots = plan_slots(num, 9, 4, 2)
    covered = [i for s in slots for i in range(s.first, s.last + 1)]
    assert covered == list(range(num))
    assert len(slots) <= 9 or num <= 9
    if num > 9:
        assert [s.kind for s in slots].count("gap") == 1


def test_plan_slots_never_hides_a_single_item():
    assert all(s.kind == "pass" for s in plan_slots(8, 7, 4, 3))  # gap of 1: just show it


@pytest.mark.parametrize("start,stop", [(0, 4), (0, 16), (0, 17), (0, 4096), (4099, 4606)])
def test_split_runs_are_contiguous_and_complete(start, stop):
    runs = split_runs(start, stop, 16, 6)
    assert runs[0].start == start and runs[-1].stop == stop
    assert all(a.stop == b.start for a, b in zip(runs, runs[1:]))
    assert len(runs) <= max(16, 11)
    if stop - start <= 16:
        assert all(r.count == 1 for r in runs)


def test_split_runs_use_round_sizes():
    assert [r.count for r in split_runs(0, 4096, 16, 6)] == [1000, 1000, 1000, 1000, 96]


def test_fit_chips():
    assert fit_chips([10, 10], 100, 2, 30) == (2, 0)
    head, tail = fit_chips([30] * 100, 300, 4, 50)
    assert head + tail < 100 and head >= tail >= 1
    assert head * 34 + tail * 34 + 54 <= 300


def test_sample_indices_and_layer_groups():
    picks = sample_indices(513, 48)
    assert picks[0] == 0 and picks[-1] == 512 and len(picks) <= 48 and list(picks) == sorted(set(picks))
    assert sample_indices(5, 48) == (0, 1, 2, 3, 4)
    groups = group_layers(32, 12)
    assert sum(g.count for g in groups) == 32 and len(groups) <= 12
    assert [g.count for g in group_layers(4, 12)] == [1, 1, 1, 1]


def test_schematic_spans():
    spans = spans_from_lengths(4, 3)
    assert [(s.phase, s.context_before, s.context_after) for s in spans] == [
        ("prefill", 0, 4), ("decode", 4, 5), ("decode", 5, 6)]
    with pytest.raises(ValueError):
        spans_from_lengths(0, 3)


def test_slot_last():
    assert Slot("gap", 4, 507).last == 510


# ---------------------------------------------------------------------------
# The latency chart and the timeline's waits: notes for metrics that say less than they seem
# ---------------------------------------------------------------------------

def _svg_with_class(svg: str, *classes: str) -> list:
    import xml.etree.ElementTree as ET

    return [el for el in ET.fromstring(svg).iter() if set(classes) <= set(el.get("class", "").split())]


def _page_drawn_trace():
    """Three passes; the page held the loop 2.5 ms after Prefill, and 0.25 ms queued for the lock."""
    import dataclasses

    from tests.factories import make_trace

    trace = make_trace(("a", "b"), ("x", "y", "z"))
    times = [(1.5, 4.0, 0.0, 0.5), (7.0, 9.0, 2.5, 0.25), (9.5, 11.0, 0.0, 0.0)]
    steps = tuple(dataclasses.replace(s, start_ms=a, end_ms=b, consumer_ms=c, lock_wait_ms=w)
                  for s, (a, b, c, w) in zip(trace.steps, times))
    return dataclasses.replace(trace, steps=steps)


def test_spread_apart_keeps_order_and_gap():
    assert spread_apart([10.0, 11.0, 50.0], 5) == [10.0, 15.0, 50.0]
    assert spread_apart([30.0, 30.0, 30.0], 4) == [30.0, 34.0, 38.0]
    assert spread_apart([40.0, 12.0], 5) == [40.0, 12.0]


def test_latency_bars_stack_pass_page_and_waiting_up_to_each_wait():
    from lesson.diagrams import render_latency

    trace = _page_drawn_trace()
    svg = render_latency(trace, lang="en")
    stacks = _svg_with_class(svg, "latency-stack")
    # each stack's total is that token's wait: TTFT, then its ITL (4.0, then 9 - 4, then 11 - 9)
    assert [float(s.get("data-total-ms")) for s in stacks] == [4.0, 5.0, 2.0]
    assert [float(b.get("data-ms")) for b in _svg_with_class(svg, "latency-bar")] == [2.5, 2.0, 1.5]
    assert [float(b.get("data-ms")) for b in _svg_with_class(svg, "latency-page")] == [2.5]
    assert [float(b.get("data-ms")) for b in _svg_with_class(svg, "latency-waiting")] == [1.5, 0.5, 0.5]
    assert {el.get("fill") for el in _svg_with_class(svg, "latency-page")} == {DEFAULT_STYLE.page}
    assert _svg_with_class(svg, "legend-item", "page") and _svg_with_class(svg, "legend-item", "waiting")
    words = " ".join("".join(el.itertext()) for el in _svg_with_class(svg, "note"))
    assert "p50 3.5 ms" in words and "max 5.0 ms" in words and "2.5 ms is page drawing" in words
    assert {el.get("class").split()[0] for el in _svg_with_class(svg, "tpot") + _svg_with_class(svg, "p99")} == {
        "tpot", "p99"}


def test_latency_figure_stacks_the_same_parts():
    from lesson.charts.run import latency_figure

    fig = latency_figure(_page_drawn_trace(), "en")
    assert fig.layout.barmode == "stack"
    passes, page, waiting = (list(fig.data[i].y) for i in range(3))
    assert passes == [2.5, 2.0, 1.5] and page == [0.0, 2.5, 0.0] and waiting == [1.5, 0.5, 0.5]


def test_timeline_waits_have_their_own_colour_and_legend():
    from lesson.diagrams import render_timeline

    svg = render_timeline(_page_drawn_trace(), lang="en")
    waits = _svg_with_class(svg, "wait")
    assert waits and {w.get("fill") for w in waits} == {DEFAULT_STYLE.waiting} != {DEFAULT_STYLE.cached}
    assert [float(w.get("data-ms")) for w in waits] == [1.5, 3.0, 0.5]  # the time before each pass
    assert [float(p.get("data-ms")) for p in _svg_with_class(svg, "page-drawing")] == [2.5]
    legend = {el.get("class").split()[1] for el in _svg_with_class(svg, "legend-item")}
    assert legend == {"waiting", "page"}
    assert len({DEFAULT_STYLE.waiting, DEFAULT_STYLE.page, DEFAULT_STYLE.cached, DEFAULT_STYLE.prefill,
                DEFAULT_STYLE.decode}) == 5  # one colour per meaning


# --- classroom sizing ---

def test_clip_text_fits_and_marks_the_cut():
    assert clip_text("short", 500, 20) == "short"
    cut = clip_text("法国的首都是巴黎，德国的首都是柏林", 100, 20)
    assert cut.endswith("…") and text_width(cut, 20) <= 100 and len(cut) < 17


def test_classroom_style_sets_every_size_to_at_least_the_minimum():
    style = classroom_style()
    assert style.fitted and not DEFAULT_STYLE.fitted and style.max_width == CLASSROOM_WIDTH
    sizes = (style.tiny_size, style.small_size, style.font_size, style.title_size)
    assert min(sizes) >= CLASSROOM_MIN_FONT >= 20.5 and sizes == tuple(sorted(sizes))
    assert classroom_style(600, 18).max_width == 600 and classroom_style(600, 18).tiny_size == 18


def test_legend_rows_wrap_only_when_fitted():
    from lesson.diagrams._common import legend_rows

    captions = ["Prefill forward pass", "Decode forward pass", "waiting (tokenizing, queue, bookkeeping)"]
    assert legend_rows(DEFAULT_STYLE, captions, 32, 300) == [3]
    rows = legend_rows(classroom_style(), captions, 32, 788)
    assert sum(rows) == 3 and len(rows) == 2


def test_pass_ticks_thin_out_for_big_type():
    from lesson.diagrams._common import pass_tick

    table = table_for("en")
    named = [pass_tick(i, "prefill" if i == 0 else "decode", i, 12, table) for i in range(12)]
    assert all(named)
    fewer = [pass_tick(i, "prefill" if i == 0 else "decode", i, 12, table, max_named=6, max_ticks=4) for i in range(12)]
    shown = [t for t in fewer if t]
    assert shown[-1] == "12" and 2 <= len(shown) <= 5


def test_the_font_stack_has_colour_emoji():
    assert "'Noto Color Emoji'" in FONT_STACK and FONT_STACK.rstrip().endswith("sans-serif")


def test_wide_figures_go_one_per_row_and_keep_their_labels_readable():
    """Two Gantts (or two compared runs' figures) side by side in the app's widest column were drawn
    with 6-7 px labels: such figures go one per row; a narrow one may still share a row."""
    from lesson.diagrams import render_kv_growth, render_latency, render_timeline
    from lesson.diagrams.batch_composition import render_batch_composition
    from lesson.diagrams.kv_blocks import render_kv_blocks
    from lesson.diagrams.serving_gantt import render_serving_gantt
    from lesson.layout import MAIN_COLUMN_PX, MIN_LABEL_PX, figure_size, figures_per_row
    from tests.factories import make_run, make_trace

    runs = [make_run(policy=p) for p in ("one-at-a-time", "prefill-first", "chunked", "disaggregated")]
    trace = make_trace()
    for render in (render_serving_gantt, render_batch_composition, render_kv_blocks):
        assert figures_per_row([render(r, lang="zh") for r in runs]) == 1, render.__name__
    for render in (render_timeline, render_latency, render_kv_growth):
        svgs = [render(trace, lang="en")] * 2
        assert figures_per_row(svgs) == 1, render.__name__
        width, smallest = figure_size(svgs[0])
        assert smallest * min(MAIN_COLUMN_PX / width, 1.0) >= MIN_LABEL_PX  # one per row: readable
    narrow = '<svg width="400" height="100"><text font-size="13">a</text></svg>'
    assert figure_size(narrow) == (400.0, 13.0) and figures_per_row([narrow, narrow]) == 2
