"""Every measured figure marks its outliers the same way: the sweep's red ring and noise note, by
lesson.spread's one rule, in the KV cache on vs off figure (against each mode's trend: cache off grows
step by step) and the engine modes figure (SVG and plotly)."""

from __future__ import annotations

import dataclasses

import pytest

from lesson.charts.modes import modes_figure
from lesson.diagrams.cache_compare import comparison_outliers, render_cache_compare
from lesson.diagrams.modes import render_modes
from lesson.spread import trend_outliers
from lesson.text import t
from tests.factories import fake_comparison, make_mode_run
from tests.svg import all_text, parse, with_class

def rings_of(root):
    """The red rings drawn over measurements (not the legend's swatch)."""
    return [el for el in root.iter() if el.get("class") == "outlier"]


def calm_modes():
    return {"eager": make_mode_run("eager", (5.0, 5.1, 4.9, 5.05, 5.0, 5.2, 4.8)),
            "static": make_mode_run("static", (4.0, 4.1, 3.9, 4.05, 4.0, 4.2, 3.8))}


CALM_ON = (2.0,) + (10.0, 10.5, 9.8, 10.2, 10.1, 9.9, 10.3, 10.0, 9.7, 10.4, 10.2, 10.0)


def test_a_trend_is_not_noise_but_a_step_far_from_it_is():
    work = [float(k) for k in range(12)]
    assert trend_outliers([5.0 + 2 * w for w in work], work) == ()  # cache off: each step one position more
    spiked = [5.0 + 2 * w for w in work]
    spiked[7] *= 3
    assert trend_outliers(spiked, work) == (7,)
    assert trend_outliers([10.0, 10.2, 9.9, 30.0, 10.1], [1.0] * 5) == (3,)  # equal work: the plain rule


def _comparison(on_ms: tuple[float, ...]):
    base = fake_comparison(num_steps=len(on_ms))
    off_ms = tuple(20.0 + 3.0 * t for t in range(len(on_ms)))  # grows, no step far from the line
    return dataclasses.replace(base, on_ms=on_ms, off_ms=off_ms)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_cache_figure_rings_the_cache_on_steps_taller_than_their_neighbours_and_says_why(lang):
    noisy = list(CALM_ON)
    for step in (5, 9):
        noisy[step] = 120.0  # steps taller than the cache-off bars beside them, as measured at load 6.7
    comparison = _comparison(tuple(noisy))
    assert comparison_outliers(comparison) == {(5, "on"), (9, "on")}
    root = parse(render_cache_compare(comparison, lang=lang))
    rings = rings_of(root)
    assert sorted((int(r.get("data-step")), r.get("data-mode")) for r in rings) == [(5, "on"), (9, "on")]
    words = all_text(root)
    assert t(lang, "cc_outliers_note", n=2, total=2 * (len(noisy) - 1))[:30] in words and t(lang, "cc_outlier") in words


def test_a_calm_cache_figure_has_no_ring_and_no_noise_note():
    root = parse(render_cache_compare(_comparison(CALM_ON), lang="en"))
    assert not rings_of(root) and t("en", "cc_outlier") not in all_text(root)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_modes_figure_rings_a_straggling_step_and_notes_a_prefill_far_from_the_other_modes(lang):
    eager = make_mode_run("eager", (5.0, 5.1, 4.9, 25.0, 5.0, 5.2, 4.8))
    eager = dataclasses.replace(eager, steps=(dataclasses.replace(eager.steps[0], end_ms=eager.steps[0].start_ms
                                                                  + 303.0),) + eager.steps[1:])
    runs = {**calm_modes(), "eager": eager, "compiled": make_mode_run("compiled", (3.0, 3.1, 2.9, 3.0, 3.05, 3.0, 3.1))}
    root = parse(render_modes(runs, lang=lang))
    rings = rings_of(root)
    assert [(r.get("data-step"), float(r.get("data-ms"))) for r in rings] == [("4", pytest.approx(25.0))]
    words = all_text(root)
    assert t(lang, "modes_legend_outlier") in words
    assert t(lang, "modes_outliers_note", n=1, total=sum(len(r.decode_steps) for r in runs.values()))[:40] in words
    assert "303" in words and t(lang, "modes_prefill_outlier", mode="eager", ms="", median="")[:8] in words
    spread = next(el for el in with_class(root, "mode-row", "eager")[0].iter() if el.get("class") == "spread")
    assert float(spread.get("x2")) < float(rings[0].get("cx"))  # the line stops at the slowest kept step
    chart = modes_figure(runs, None, lang)
    assert len(chart.data[2].x) == 1 and "25.0 ms" in chart.data[2].hovertext[0] and chart.data[2].showlegend


def test_calm_modes_have_no_ring():
    root = parse(render_modes(calm_modes(), lang="en"))
    assert not rings_of(root) and not modes_figure(calm_modes(), None, "en").data[2].showlegend
    assert t("en", "modes_legend_outlier") not in all_text(root)
