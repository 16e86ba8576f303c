"""Figure labels that say what is drawn, at every length, in both languages and both styles:

1. the latency chart's "Pass N" tick labels are few, start at one, reach the end and stay level
   (that they never overlap the axis title or the legend on screen: tests/browser/test_figures_browser.py);
2. the KV-growth and cache on/off figures say when they draw a sample of the passes;
3. a one-token answer's engine caption says that no Decode step ran;
4. the cache on/off figure's axis title matches its ticks.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from lesson.charts.common import CLASSROOM_FONT_PX
from lesson.charts.run import AXIS_TITLE_PX, LATENCY_MARGIN_PX, MAX_PASS_TICKS, latency_figure, pass_tick_numbers
from lesson.diagrams import render_cache_compare, render_kv_growth
from lesson.diagrams.cache_compare import MAX_SLOTS
from lesson.diagrams.kv_growth import MAX_BARS, kv_layout
from lesson.engine_modes import engine_caption
from lesson.style import DEFAULT_STYLE, classroom_style
from lesson.text import TEXTS, label, t
from tests.factories import fake_comparison, make_trace
from tests.svg import with_class


def run_of(num_tokens: int):
    return make_trace(("法国", "的", "首都", "是"), tuple(f"o{i}" for i in range(num_tokens)))




def words(element) -> str:
    return "".join(element.itertext())


# ---- 1. the latency chart: level, few tick labels; the legend under everything ----

@pytest.mark.parametrize("classroom", [False, True])
def test_pass_ticks_are_few_start_at_one_and_reach_the_end(classroom):
    most = MAX_PASS_TICKS[classroom]
    for num_passes in range(1, 1025):
        ticks = pass_tick_numbers(num_passes, classroom)
        assert ticks[0] == 1 and ticks == sorted(set(ticks)) and ticks[-1] <= num_passes, (num_passes, ticks)
        assert len(ticks) <= most, (num_passes, ticks)
        if num_passes <= most:
            assert ticks == list(range(1, num_passes + 1))  # few passes: every one named
        else:  # evenly stepped after pass 1, and the last tick within one step of the end
            steps = {b - a for a, b in zip(ticks[1:], ticks[2:])}
            assert len(steps) <= 1 and num_passes - ticks[-1] < max(steps | {ticks[-1]}), (num_passes, ticks)
            assert len(ticks) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("classroom", [False, True])
def test_latency_chart_labels_stay_level_at_every_length(lang, classroom):
    """At any answer length 1..128: at most MAX_PASS_TICKS tick labels, never turned (tickangle 0),
    the axis title clear of them (automargin), the legend hung from the figure's bottom edge
    under a margin sized for ticks, title and legend (plotly's paper-relative y slid into the title)."""
    for num_tokens in range(1, 129):
        trace = run_of(num_tokens)
        fig = latency_figure(trace, lang, classroom=classroom)
        axis = fig.layout.xaxis
        names = list(fig.data[0].x)
        assert axis.tickangle == 0 and axis.tickmode == "array" and axis.automargin is True
        assert len(axis.tickvals) <= MAX_PASS_TICKS[classroom] and set(axis.tickvals) <= set(names)
        assert axis.tickvals[0] == names[0] and tuple(axis.ticktext) == tuple(axis.tickvals)
        legend = fig.layout.legend
        assert (legend.orientation, legend.yref, legend.yanchor, legend.y) == ("h", "container", "bottom", 0)
    fig = latency_figure(run_of(128), lang, classroom=classroom)
    extra_lines = fig.layout.xaxis.title.text.count("<br>")  # wrapped: for a phone, or the classroom's type
    assert extra_lines >= 1
    size = CLASSROOM_FONT_PX if classroom else AXIS_TITLE_PX
    assert fig.layout.margin.b == LATENCY_MARGIN_PX[classroom]["b"] + round(extra_lines * size * 1.35) >= 130


def test_a_stepped_chart_labels_the_whole_run():
    """Stepping through a run (classroom, replay): the ticks come from the whole run, fixed."""
    full = run_of(128)
    prefix = dataclasses.replace(full, steps=full.steps[:3])
    fig = latency_figure(prefix, "en", full=full)
    assert list(fig.layout.xaxis.tickvals) == [f"Pass {n}" for n in pass_tick_numbers(128)]


# ---- 2. a sampled figure says so ----

@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("style", [DEFAULT_STYLE, classroom_style()], ids=["default", "classroom"])
def test_kv_growth_says_when_it_draws_a_sample_of_the_passes(lang, style):
    long_run = run_of(128)
    root = ET.fromstring(render_kv_growth(long_run, lang=lang, style=style))
    assert len(with_class(root, "kv-bar")) == MAX_BARS < 128
    note = " ".join(words(e) for e in with_class(root, "sampled-note"))
    expected = label(TEXTS[lang], "fig_sampled_passes", drawn=MAX_BARS, total=128)
    assert re.sub(r"\s+", "", note) == re.sub(r"\s+", "", expected)
    assert "48" in note and "128" in note
    layout = kv_layout(long_run, TEXTS[lang], style)
    last_line = max(float(e.get("y")) for e in with_class(root, "sampled-note"))
    assert last_line < layout.legend_y - style.small_size * 0.8  # above the layer legend, not on it
    short = ET.fromstring(render_kv_growth(run_of(20), lang=lang, style=style))
    assert not with_class(short, "sampled-note")  # every pass drawn: nothing to say


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_cache_compare_says_when_it_draws_a_sample_of_the_passes(lang):
    sampled = " ".join(words(e) for e in ET.fromstring(render_cache_compare(fake_comparison(200), lang=lang)).iter()
                       if "note" in (e.get("class") or "").split())
    note = label(TEXTS[lang], "fig_sampled_passes", drawn=MAX_SLOTS, total=200)
    assert re.sub(r"\s+", "", note) in re.sub(r"\s+", "", sampled)
    whole = ET.fromstring(render_cache_compare(fake_comparison(30), lang=lang))
    assert label(TEXTS[lang], "fig_sampled_passes", drawn=30, total=30)[:6] not in "".join(whole.itertext())


# ---- 3. a one-token answer ran no Decode step ----

def _with_kernels(trace, kernel: str):
    return dataclasses.replace(trace, steps=tuple(dataclasses.replace(s, attention_kernel=kernel) for s in trace.steps))


def test_a_one_token_answer_says_no_decode_step_ran():
    one = _with_kernels(make_trace(output_pieces=("巴黎",)), "flash")
    assert engine_caption(one, "zh") == "引擎：eager · 注意力内核：Prefill flash（没有 Decode 步）"
    assert engine_caption(one, "en") == "Engine: eager · attention kernel: Prefill flash (no Decode step)"
    for lang in ("zh", "en"):
        assert t(lang, "modes_kernel_na") not in engine_caption(one, lang)
    # an older trace: Decode steps ran, but without a kernel recorded: still "not recorded"
    old = _with_kernels(make_trace(output_pieces=("巴黎", "。")), "")
    assert engine_caption(old, "zh") == "引擎：eager · 注意力内核：Prefill 未记录，Decode 未记录"
    old_one = _with_kernels(make_trace(output_pieces=("巴黎",)), "")
    assert engine_caption(old_one, "en") == "Engine: eager · attention kernel: Prefill n/a (no Decode step)"


# ---- 4. the cache on/off axis title speaks of the ticks it stands under ----

def _step_axis(root, lang: str):
    table = TEXTS[lang]
    named, numbered = label(table, "cc_step_axis"), label(table, "cc_step_axis_numbered")
    (title,) = [e for e in with_class(root, "axis-label") if words(e) in (named, numbered)]
    return words(title), named, numbered


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("style", [DEFAULT_STYLE, classroom_style()], ids=["default", "classroom"])
@pytest.mark.parametrize("num_steps", [1, 6, 16, 17, 32, 128])
def test_cache_compare_axis_title_matches_its_ticks(lang, style, num_steps):
    root = ET.fromstring(render_cache_compare(fake_comparison(num_steps), lang=lang, style=style))
    title, named, numbered = _step_axis(root, lang)
    bottom_ticks = [words(e) for e in with_class(root, "tick-label")
                    if re.fullmatch(r"P|D\d+|\d+", words(e)) and not words(e).endswith("ms")]
    if "P" in bottom_ticks:  # P, D1, D2 ...: the title explains P
        assert title == named
    else:  # pass numbers 1, 3, 5 ...: the title says step 1 is the Prefill, no "P ="
        assert title == numbered and "P =" not in title and "1" in bottom_ticks
