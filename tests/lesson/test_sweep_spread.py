"""A sweep's spread in its figures (lesson/diagrams/sweep.py, lesson/charts/lab.py): each point's line
runs over the repeats that are not outliers, every outlier is its own red ring, and an older sweep
file (3 repeats, no provenance) still loads and draws."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET

import pytest

from engine.contract.sweep import DEFAULT_REPEATS, Sweep
from lesson.alt_text import cache_compare_caption
from lesson.charts.lab import sweep_figure
from lesson.diagrams import render_sweep
from lesson.lab import lab_sweep_caption
from lesson.text import TEXTS, t
from tests.factories import fake_comparison, make_sweep


def noisy_sweep() -> Sweep:
    """Three points of five repeats; the 64-position point has one repeat 3.4x its median."""
    sweep = make_sweep("decode-context")
    times = {8: (1.10, 1.20, 1.15, 1.30, 1.12), 64: (1.70, 1.75, 1.72, 5.90, 1.74), 512: (6.1, 6.2, 6.15, 6.3, 6.12)}
    medians = {8: 1.15, 64: 1.74, 512: 6.15}
    points = tuple(dataclasses.replace(p, times_ms=times[p.value], median_ms=medians[p.value]) for p in sweep.points)
    return dataclasses.replace(sweep, points=points, repeats=5)


def _marks(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter() if cls in (e.get("class") or "").split()]


def _rings(svg: str) -> list[ET.Element]:
    return [e for e in _marks(svg, "outlier") if e.get("data-ms")]  # not the legend's sample ring


def test_the_spread_line_leaves_the_outlier_out_and_a_red_ring_marks_it():
    svg = render_sweep(noisy_sweep(), lang="en")
    (ring,) = _rings(svg)
    assert ring.get("data-value") == "64" and float(ring.get("data-ms")) == 5.90
    spreads = {int(s.get("data-value")): s for s in _marks(svg, "spread")}
    assert (float(spreads[64].get("data-low-ms")), float(spreads[64].get("data-high-ms"))) == (1.70, 1.75)
    assert (float(spreads[8].get("data-low-ms")), float(spreads[8].get("data-high-ms"))) == (1.10, 1.30)
    assert float(ring.get("cy")) < float(spreads[64].get("y2"))  # the slow repeat sits above its line
    assert len(_marks(svg, "legend-item")) == 3 and len(_marks(svg, "outlier")) == 2  # the legend names the ring
    assert "1 of 15 repeats far from the others" in "".join(ET.fromstring(svg).itertext())


def test_a_sweep_without_outliers_draws_no_ring_and_no_ring_legend():
    svg = render_sweep(make_sweep("prefill"), lang="zh")
    assert not _marks(svg, "outlier") and len(_marks(svg, "legend-item")) == 2
    assert TEXTS["zh"]["sw_outlier"] not in svg


def test_the_plotly_sweep_has_the_same_spread_and_outliers():
    sweep = noisy_sweep()
    fig = sweep_figure(sweep, "en")
    measured, rings = fig.data[0], fig.data[4]
    assert list(measured.y) == [p.median_ms for p in sweep.points]
    assert [round(v, 6) for v in measured.error_y.array] == [0.15, 0.01, 0.15]  # up to the slowest kept repeat
    assert [round(v, 6) for v in measured.error_y.arrayminus] == [0.05, 0.04, 0.05]
    assert list(rings.x) == [64] and list(rings.y) == [5.90] and rings.showlegend
    quiet = sweep_figure(make_sweep("prefill"), "zh").data[4]
    assert len(quiet.x) == 0 and not quiet.showlegend


def test_an_older_sweep_file_still_loads_and_draws():
    old = json.loads(make_sweep("decode-batch").to_json())
    old.pop("provenance", None)  # written before sweeps said where and when
    old["repeats"] = 3
    sweep = Sweep.from_json(json.dumps(old))
    assert sweep.provenance is None and sweep.repeats == 3
    assert _marks(render_sweep(sweep, lang="en"), "spread") and sweep_figure(sweep, "zh").data
    assert DEFAULT_REPEATS >= 5  # a new sweep measures at least five repeats per point


# --- the lab's sweep sentence, over measured ratios 0.2x-100x ---------------------------------

def two_point_sweep(kind: str, ratio: float) -> Sweep:
    """First point 2 ms, last point 2 x `ratio` ms; a batch sweep's rows grow 1 -> 64."""
    sweep = make_sweep(kind)
    first, last = sweep.points[0], sweep.points[-1]
    batch = 64 if kind == "decode-batch" else 1
    points = (dataclasses.replace(first, times_ms=(2.0,) * 5, median_ms=2.0, batch=1),
              dataclasses.replace(last, times_ms=(2.0 * ratio,) * 5, median_ms=2.0 * ratio, batch=batch))
    return dataclasses.replace(sweep, points=points)


# each variant's own words: the one chosen must be there, its siblings must not
SWEEP_WORDS = {
    "prefill": {"": ("grew from", "涨到"), "_flat": ("hardly longer", "几乎不变慢"),
                "_noise": ("this machine's noise", "这台机器的噪声")},
    "decode-context": {"": ("nearly flat", "几乎不随上下文变长"), "_grows": ("grows with the context", "随上下文增长")},
    "decode-batch": {"": ("Batching pays", "批越大越划算"), "_flat": ("batching hardly paid", "几乎没有带来好处")},
}


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("ratio", [0.2, 0.5, 0.95, 1.0, 1.2, 1.49, 1.5, 3.0, 20.0, 100.0])
@pytest.mark.parametrize("kind", ["prefill", "decode-context", "decode-batch"])
def test_the_sweep_sentence_fits_what_was_measured(kind, ratio, lang):
    sweep = two_point_sweep(kind, ratio)
    words = lab_sweep_caption(sweep, lang)
    gain = sweep.points[-1].tokens_per_s / sweep.points[0].tokens_per_s
    if kind == "prefill":  # a longer prompt: grew, hardly grew, or (only noise can) did not
        chosen = "" if ratio >= 1.5 else "_flat" if ratio > 1 else "_noise"
    elif kind == "decode-context":
        chosen = "_grows" if ratio >= 1.5 else ""
    else:  # 64 rows: positions per second x64 / ratio
        chosen = "" if gain >= 1.2 else "_flat"
    phrase = 0 if lang == "en" else 1
    for variant, phrases in SWEEP_WORDS[kind].items():
        assert (phrases[phrase] in words) == (variant == chosen), (variant, words)
    assert f"×{ratio:,.1f}" in words and "{" not in words  # the measured ratio, formatted; every field filled


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("time_ratio", [0.2, 0.9, 1.0, 1.5, 100.0])
def test_the_cache_sentence_says_when_the_cache_saved_no_time(time_ratio, lang):
    comparison = dataclasses.replace(fake_comparison(num_steps=5), on_ms=(2.0,) * 5, off_ms=(2.0 * time_ratio,) * 5)
    words = cache_compare_caption(comparison, lang)
    no_saving = t(lang, "cache_compare_no_saving")
    assert (no_saving in words) == (time_ratio <= 1.0) and f"{time_ratio:.1f}" in words
