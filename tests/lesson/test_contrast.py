"""Every figure label meets WCAG AA contrast, and in classroom mode every figure
fits the column it is shown in with no label under the page's body text.

The contrast checker (tests/contrast.py) is pure: it parses the SVG and judges each <text>
against the rects painted under it. The browser test (tests/browser/test_classroom_browser.py) measures
the same on screen.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from tests.contrast import (
    AA_LARGE, AA_NORMAL, contrast_ratio, failing_labels, is_large, parse_color, required_ratio, text_contrasts,
)
from lesson.diagrams import DIAGRAMS, RUN_NOTED, render_attention, render_blocks_schematic, render_cache_compare
from lesson.layout import text_width
from lesson.spread import headline, run_label
from lesson.style import CLASSROOM_MIN_FONT, CLASSROOM_WIDTH, DEFAULT_STYLE, classroom_style
from tests.factories import (
    MODE_FLOORS, SLIDING_MODEL, client_run, fake_attention, fake_comparison, make_floors, make_long_trace,
    make_mode_runs, make_run, make_sweep, make_trace,
)

SVG = "{http://www.w3.org/2000/svg}"
STYLES = {"normal": DEFAULT_STYLE, "classroom": classroom_style()}


def _traces():
    return {
        "lesson": make_trace(("法国", "的", "首都", "是"), ("巴黎", "。", "<eos>")),
        "one_token": make_trace(("法国", "的", "首都", "是"), ("巴黎",)),
        "long": make_long_trace(1024, 64),
        "sliding": make_trace(tuple(f"p{i}" for i in range(12)), tuple(f"o{i}" for i in range(6)), model=SLIDING_MODEL),
    }


def _figures():
    """(id, render(lang, style)) for every figure the app shows."""
    cases = []
    for tname, trace in _traces().items():
        for name, render in DIAGRAMS.items():
            cases.append((f"{name}-{tname}", lambda lang, style, r=render, t=trace: r(t, lang=lang, style=style)))
    noted = _traces()["lesson"]
    for name in RUN_NOTED:  # "median run 3 of 5 (...)": one more note, in the page's language
        cases.append((f"{name}-noted", lambda lang, style, r=DIAGRAMS[name], t=noted: r(
            t, lang=lang, style=style, run_note=run_label(headline([t, t, t], shown=2), lang))))
    cases += [
        ("blocks_schematic-small", lambda lang, style: render_blocks_schematic(6, 3, lang=lang, style=style)),
        ("blocks_schematic-big", lambda lang, style: render_blocks_schematic(1024, 128, lang=lang, style=style)),
        ("cache_compare-short", lambda lang, style: render_cache_compare(fake_comparison(), lang=lang, style=style,
                                                                         model_id="default")),
        ("cache_compare-long", lambda lang, style: render_cache_compare(fake_comparison(200, 1024), lang=lang,
                                                                        style=style, model_id="default")),
        ("attention-short", lambda lang, style: render_attention(fake_attention(), lang=lang, style=style)),
        ("attention-long", lambda lang, style: render_attention(fake_attention(60), lang=lang, style=style)),
    ]
    cases += _serving_figures()
    cases.append(("engine_modes", _modes_figure))
    return cases


def _modes_figure(lang, style):
    """The bottleneck lab's engine modes: shown in the app's classroom style too."""
    from lesson.diagrams.modes import render_modes

    return render_modes(make_mode_runs(), floors_ms=MODE_FLOORS, lang=lang, style=style)


def _serving_figures():
    """The serving lab's figures: classroom mode folds them to the column too."""
    from lesson.diagrams.batch_composition import render_batch_composition
    from lesson.diagrams.kv_blocks import render_kv_blocks
    from lesson.diagrams.serving_gantt import render_serving_gantt
    from lesson.diagrams.serving_metrics import render_serving_metrics

    runs = {p: make_run(policy=p) for p in ("one-at-a-time", "prefill-first", "chunked", "disaggregated")}
    cases = [("serving_gantt-client", lambda lang, style: render_serving_gantt(client_run(), lang=lang, style=style)),
             ("serving_metrics-all", lambda lang, style: render_serving_metrics(list(runs.values()), lang=lang,
                                                                                style=style))]
    for policy in ("chunked", "disaggregated"):
        run = runs[policy]
        cases += [(f"serving_gantt-{policy}", lambda lang, style, r=run: render_serving_gantt(r, lang=lang,
                                                                                             style=style)),
                  (f"serving_batch-{policy}", lambda lang, style, r=run: render_batch_composition(r, lang=lang,
                                                                                                   style=style)),
                  (f"serving_kv-{policy}", lambda lang, style, r=run: render_kv_blocks(r, lang=lang, style=style))]
    return cases


FIGURES = _figures()


# --- the checker itself ------------------------------------------------------------

def test_contrast_ratio_matches_wcag_reference_values():
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#ffffff", "#ffffff") == pytest.approx(1.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic just-failing grey
    assert contrast_ratio("#fff", "#000") == contrast_ratio("#000000", "white")
    assert contrast_ratio("#2563eb", "#ffffff") == pytest.approx(5.17, abs=0.01)


def test_large_text_needs_three_to_one_normal_text_four_and_a_half():
    assert required_ratio(13, False) == AA_NORMAL and required_ratio(21, False) == AA_NORMAL
    assert required_ratio(24, False) == AA_LARGE and required_ratio(19, True) == AA_LARGE
    assert not is_large(18, True) and is_large(18.66, True)


def test_bad_colours_are_refused():
    with pytest.raises(ValueError):
        parse_color("rgb(1,2,3)")


def test_checker_finds_the_rect_under_a_label():
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">'
           '<rect x="0" y="0" width="200" height="100" fill="#ffffff"/>'
           '<rect x="10" y="10" width="100" height="30" fill="#1e3a8a"/>'
           '<text x="60" y="30" font-size="13" text-anchor="middle" fill="#0f172a">TTFT</text>'
           '<text x="60" y="80" font-size="13" text-anchor="middle" fill="#0f172a">below</text>'
           '<text x="60" y="30" font-size="13" text-anchor="middle" fill="#ffffff">ok</text></svg>')
    on_bar, below, white = text_contrasts(svg)
    assert on_bar.ratio < 2 and not on_bar.passes  # dark "TTFT" on the dark blue bar: the example
    assert below.passes and below.background == (1.0, 1.0, 1.0)
    assert white.passes
    assert [f.words for f in failing_labels(svg)] == ["TTFT"]


def test_checker_fails_the_old_orange():
    """The Decode orange the figures once used (#ea580c): white badge text on it is 3.6:1, under AA."""
    old = replace(DEFAULT_STYLE, decode="#ea580c")
    trace = _traces()["lesson"]
    failing = failing_labels(DIAGRAMS["timeline"](trace, lang="en", style=old))
    assert failing and {f.words for f in failing} >= {"Decode"}


# --- every figure -------------------------------------------------------------------

@pytest.mark.parametrize("style_name", sorted(STYLES))
@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("case", [c for c, _ in FIGURES])
def test_every_label_meets_wcag_aa(case, lang, style_name):
    render = dict(FIGURES)[case]
    svg = render(lang, STYLES[style_name])
    assert len(text_contrasts(svg)) > 3
    bad = [(f.words[:30], f.color, f.ratio, f.required) for f in failing_labels(svg)]
    assert bad == []


def _text_extent(el: ET.Element) -> tuple[float, float]:
    words, size = "".join(el.itertext()), float(el.get("font-size"))
    x, width = float(el.get("x", 0)), text_width(words, size)
    anchor = el.get("text-anchor", "start")
    left = x if anchor == "start" else x - width if anchor == "end" else x - width / 2
    return left, left + width


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("case", [c for c, _ in FIGURES])
def test_classroom_figures_fit_the_column_with_body_size_labels(case, lang):
    """Shown CLASSROOM_WIDTH px wide (the column at 1280x720), a figure at most that wide in
    SVG units is drawn at scale >= 1: no label under CLASSROOM_MIN_FONT px. Nothing runs off
    its right edge (text widths estimated as the layouts do)."""
    svg = dict(FIGURES)[case](lang, classroom_style())
    root = ET.fromstring(svg)
    width = float(root.get("width"))
    assert width <= CLASSROOM_WIDTH
    sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', svg)]
    assert min(sizes) >= CLASSROOM_MIN_FONT
    for el in root.iter(f"{SVG}text"):
        if el.get("transform"):  # rotated column labels hang below the plot
            continue
        left, right = _text_extent(el)
        assert -1 <= left and right <= width + 1, ("".join(el.itertext()), left, right, width)


def test_classroom_timeline_folds_the_time_panel_under_the_table():
    trace = _traces()["lesson"]
    folded = ET.fromstring(DIAGRAMS["timeline"](trace, lang="zh", style=classroom_style()))

    def first(root, cls):
        return next(el for el in root.iter() if cls in el.get("class", "").split())
    panel, rule = first(folded, "time-panel"), first(folded, "rule")
    assert float(panel.get("y")) > float(rule.get("y1")) + 3 * 40  # below the table's rows
    assert float(panel.get("x")) < 300  # and across the width, not in a right-hand column
    bars = [el for el in folded.iter() if "pass-time" in el.get("class", "").split()]
    assert len(bars) == len(trace.steps)


def test_classroom_review_map_puts_the_techniques_two_by_two():
    root = ET.fromstring(DIAGRAMS["review_map"](_traces()["lesson"], lang="en", style=classroom_style()))
    boxes = [el for el in root.iter() if "technique" in el.get("class", "").split()]
    tops = sorted({float(next(iter(b)).get("y")) for b in boxes})
    assert len(boxes) == 4 and len(tops) == 2


def _other_figures():
    """The bottleneck and serving labs' figures (drawn in the default style only)."""
    from lesson.diagrams import render_roofline, render_step_floors, render_sweep
    from lesson.diagrams.batch_composition import render_batch_composition
    from lesson.diagrams.kv_blocks import render_kv_blocks
    from lesson.diagrams.serving_gantt import render_serving_gantt
    from lesson.diagrams.serving_metrics import render_serving_metrics

    run = make_run(policy="chunked")
    return {
        "roofline": lambda lang: render_roofline(make_floors(), lang=lang),
        "step_floors": lambda lang: render_step_floors(make_floors(), lang=lang),
        "sweep": lambda lang: render_sweep(make_sweep(), lang=lang),
        "serving_gantt": lambda lang: render_serving_gantt(run, lang=lang),
        "batch_composition": lambda lang: render_batch_composition(run, lang=lang),
        "kv_blocks": lambda lang: render_kv_blocks(run, lang=lang),
        "serving_metrics": lambda lang: render_serving_metrics([run], lang=lang),
    }


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_labs_figures_meet_wcag_aa_too(lang):
    for name, render in _other_figures().items():
        bad = [(f.words[:30], f.color, f.ratio) for f in failing_labels(render(lang))]
        assert bad == [], name


def test_classroom_timeline_panel_and_axis_stay_put_while_stepping():
    """Folded, the time panel sits under the table: with `full=` it is placed for the whole
    run's rows, so stepping adds rows without moving the panel or its axis."""
    from lesson.answer import truncate_trace

    run = make_trace(output_pieces=tuple(f"t{i}" for i in range(6)))
    style = classroom_style()

    def marks(svg):
        root = ET.fromstring(svg)
        panel = next(el for el in root.iter() if "time-panel" in el.get("class", "").split())
        ticks = [(el.get("x"), el.get("y"), el.text) for el in root.iter()
                 if "tick-label" in el.get("class", "").split()]
        return (panel.get("y"), panel.get("height")), ticks, root.get("height")

    frames = [marks(DIAGRAMS["timeline"](truncate_trace(run, k), lang="en", style=style, full=run))
              for k in range(1, len(run.steps) + 1)]
    assert all(frame == frames[-1] for frame in frames)
