"""The roofline, floor-bar and sweep figures (SVG in lesson/diagrams/roofline.py and sweep.py,
plotly in lesson/charts/lab.py): the picture is checked against the numbers it draws."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from engine.contract.cost import DEVICE_SPECS, trace_floors
from lesson.diagrams import render_roofline, render_step_floors, render_sweep
from lesson.diagrams.roofline import roofline_layout
from lesson.formats import fmt_time
from lesson.text import TEXTS
from tests.factories import default_shape, make_floors, make_sweep, make_trace

SVG = "{http://www.w3.org/2000/svg}"
SHAPE = default_shape()


def _marks(svg: str, cls: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [e for e in root.iter()
            if cls in (e.get("class") or "").split() and any(k.startswith("data-") for k in e.attrib)]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_roofline_draws_both_roofs_and_every_pass_measured_and_at_its_floor(lang):
    floors = make_floors("h200", weight_dtype="bf16")
    svg = render_roofline(floors, lang=lang)
    assert float(_marks(svg, "compute-roof")[0].get("data-flops-per-s")) == DEVICE_SPECS["h200"].bf16_flops_per_s
    assert float(_marks(svg, "memory-roof")[0].get("data-bytes-per-s")) == DEVICE_SPECS["h200"].bandwidth_bytes_per_s
    assert float(_marks(svg, "ridge")[0].get("data-intensity")) == pytest.approx(989e12 / 4.8e12)
    measured, floor = _marks(svg, "measured"), _marks(svg, "floor")
    assert len(measured) == len(floor) == len(floors.steps)
    layout = roofline_layout(floors)
    for dot in measured:
        step = floors.steps[int(dot.get("data-step"))]
        assert float(dot.get("data-flops-per-s")) == pytest.approx(step.achieved_flops_per_s)
        assert float(dot.get("cy")) == layout.y(step.achieved_flops_per_s)
        assert float(dot.get("cx")) == layout.x(step.intensity)
    for dot in floor:  # on the roof: min(peak, bandwidth x intensity)
        step = floors.steps[int(dot.get("data-step"))]
        roof = min(floors.peak_flops_per_s, floors.bandwidth_bytes_per_s * step.intensity)
        assert float(dot.get("data-flops-per-s")) == pytest.approx(roof, rel=1e-9)
    prefill, decode = floors.steps[0], floors.steps[1]
    assert decode.intensity < floors.ridge_intensity  # a Decode step sits left of the ridge: memory-bound
    text = "".join(ET.fromstring(svg).itertext())
    assert f"{prefill.intensity:,.1f}" in text and "64" in text


def test_step_floor_bars_carry_each_passes_numbers_and_the_floor_sits_inside_the_bar():
    floors = make_floors("l4")
    svg = render_step_floors(floors, lang="en")
    bars, lines = _marks(svg, "measured-bar"), _marks(svg, "floor-mark")
    assert len(bars) == len(lines) == len(floors.steps)
    for bar, line, step in zip(bars, lines, floors.steps):
        assert float(bar.get("data-ms")) == step.measured_ms and float(line.get("data-floor-ms")) == step.floor_ms
        top, bottom = float(bar.get("y")), float(bar.get("y")) + float(bar.get("height"))
        if step.floor_ms <= step.measured_ms:
            assert top <= float(line.get("y1")) <= bottom
    titles = [e.text for e in ET.fromstring(svg).iter(f"{SVG}title")]
    assert any(fmt_time(floors.steps[0].floor_ms) in t for t in titles)


def test_many_passes_are_sampled_first_and_last_kept():
    trace = make_trace(("a",) * 8, ("x",) * 120)
    floors = trace_floors(trace, SHAPE, DEVICE_SPECS["a100"])
    steps = [int(b.get("data-step")) for b in _marks(render_step_floors(floors), "measured-bar")]
    assert len(steps) == 48 and steps[0] == 0 and steps[-1] == 119


@pytest.mark.parametrize("kind", ["prefill", "decode-context", "decode-batch"])
def test_sweep_figure_has_a_measured_and_a_floor_mark_per_point_in_both_panels(kind):
    sweep = make_sweep(kind)
    svg = render_sweep(sweep, lang="zh")
    for cls in ("measured", "floor"):
        marks = _marks(svg, cls)
        assert sorted(int(m.get("data-value")) for m in marks) == sorted([8, 64, 512] * 2)
    spreads = _marks(svg, "spread")
    assert len(spreads) == 3 and all(float(s.get("y1")) >= float(s.get("y2")) for s in spreads)  # slowest higher
    assert TEXTS["zh"]["random_weights"] not in svg


def test_a_preset_sweep_says_its_weights_are_random():
    assert TEXTS["en"]["random_weights"] in render_sweep(make_sweep(random_weights=True), lang="en")
    floors = trace_floors(make_trace(model=_preset_model()), SHAPE, DEVICE_SPECS["h100"])
    assert TEXTS["en"]["random_weights"] in render_roofline(floors, lang="en")
    assert TEXTS["zh"]["random_weights"] in render_step_floors(floors, lang="zh")


def _preset_model():
    from dataclasses import replace

    from tests.factories import TINY_MODEL

    return replace(TINY_MODEL, model_id="preset:qwen2.5-0.5b", random_weights=True)


def test_user_text_in_a_model_name_stays_text():
    from dataclasses import replace

    floors = replace(make_floors(), model_id="<script>alert(1)</script>")
    for svg in (render_roofline(floors), render_step_floors(floors)):
        root = ET.fromstring(svg)
        assert not [e for e in root.iter() if e.tag.endswith("script")] and "<script>" not in svg


def test_plotly_figures_hold_the_same_numbers():
    from lesson.charts.lab import roofline_figure, step_floors_figure, sweep_figure

    floors = make_floors("h100", weight_dtype="bf16")
    fig = roofline_figure(floors, "en")
    roof = fig.data[0]
    assert list(roof.y)[1:] == [floors.peak_flops_per_s] * 2 and roof.x[1] == pytest.approx(floors.ridge_intensity)
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    prefill_measured = fig.data[1]
    assert prefill_measured.y[0] == pytest.approx(floors.steps[0].achieved_flops_per_s)
    bars = step_floors_figure(floors, "zh")
    assert list(bars.data[0].y) == [s.measured_ms for s in floors.steps]
    assert list(bars.data[1].y) == [s.floor_ms for s in floors.steps]
    sweep = make_sweep("decode-batch")
    fig = sweep_figure(sweep, "en")
    assert list(fig.data[0].y) == [p.median_ms for p in sweep.points]
    assert list(fig.data[1].y) == [p.floor_ms for p in sweep.points]
    assert list(fig.data[2].y) == pytest.approx([p.tokens_per_s for p in sweep.points])
    assert all(not math.isnan(v) for v in fig.data[3].y)


def test_a_measured_machine_is_named_in_the_figures_language():
    from lesson.text import device_label

    name = "this machine: CPU (2 cores; torch threads: 1) (measured)"
    assert device_label(name, "zh") == "这台机器（实测）：CPU (2 cores; torch threads: 1)"
    assert device_label(name, "en") == "this machine (measured): CPU (2 cores; torch threads: 1)"
    assert device_label("NVIDIA H200 SXM (spec)", "zh") == "NVIDIA H200 SXM (spec)"  # a datasheet keeps its name


def _decade_ticks(axis) -> list[str]:
    """An axis' tick words, after checking it is ticked at whole decades only (no 2s and 5s between)."""
    assert axis.type == "log" and axis.tickvals, "log axis left to plotly's own ticks"
    for value in axis.tickvals:
        assert math.log10(value) == pytest.approx(round(math.log10(value)))
    assert len(axis.ticktext) == len(axis.tickvals)
    return list(axis.ticktext)


def test_plotly_log_axes_name_whole_decades_in_one_format():
    import re

    from lesson.charts.lab import roofline_figure, sweep_figure

    fig = roofline_figure(make_floors("h200", weight_dtype="bf16"), "en")
    words = _decade_ticks(fig.layout.xaxis) + _decade_ticks(fig.layout.yaxis)
    assert all(re.fullmatch(r"\d+(\.\d+)? ?[kMGTP]?", w) for w in words), words  # never "10^16" beside "100T"
    assert any(w.endswith("P") for w in _decade_ticks(fig.layout.yaxis))  # the H200's roof is past 10^15
    sweep = sweep_figure(make_sweep("decode-batch"), "zh")
    times, rates = _decade_ticks(sweep.layout.yaxis), _decade_ticks(sweep.layout.yaxis2)
    assert all(re.fullmatch(r"\d+ (ns|µs|ms|s)", w) for w in times), times
    assert all(re.fullmatch(r"\d+ ?[kMGTP]?/s", w) for w in rates), rates
    assert sweep.layout.yaxis2.range[0] <= math.log10(min(sweep.data[2].y))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_roofline_places_each_formats_measured_decode_beside_its_floor(lang):
    from lesson.diagrams.roofline import format_steps
    from lesson.lab import lab_format_rows

    own = make_floors("h200")
    formats = {"int8": make_floors("h200", weight_dtype="int8"), "int4 g64": make_floors("h200", weight_dtype="int4")}
    svg = render_roofline(own, lang=lang, formats=formats)
    measured, floor = _marks(svg, "format-measured"), _marks(svg, "format-floor")
    assert [m.get("data-format") for m in measured] == [f.get("data-format") for f in floor] == list(formats)
    layout = roofline_layout(own, tuple(format_steps(formats).values()))
    for mark in measured:
        step = format_steps(formats)[mark.get("data-format")]
        assert float(mark.get("data-ms")) == step.measured_ms and float(mark.get("data-floor-ms")) == step.floor_ms
        assert float(mark.get("x")) + float(mark.get("width")) / 2 == pytest.approx(layout.x(step.intensity))
        assert float(mark.get("y")) + float(mark.get("height")) / 2 == pytest.approx(
            layout.y(step.achieved_flops_per_s))
    int8, int4 = (format_steps(formats)[k] for k in formats)
    assert int4.intensity > int8.intensity > own.phase_steps("decode")[0].intensity  # fewer bytes, same FLOPs
    labels = [e.text for e in ET.fromstring(svg).iter() if "format-label" in (e.get("class") or "")]
    assert labels == list(formats)
    assert not _marks(render_roofline(own, lang=lang), "format-measured")  # no formats: the figure as before
    rows = lab_format_rows({name: (1000, floors) for name, floors in formats.items()}, lang)
    weights, floor_col = TEXTS[lang]["lab_col_weights"], TEXTS[lang]["lab_col_floor"]
    assert [r[weights] for r in rows] == list(formats)
    assert rows[0][floor_col] == fmt_time(int8.floor_ms) and rows[1][floor_col] == fmt_time(int4.floor_ms)
