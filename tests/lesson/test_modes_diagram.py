"""The engine modes figure (lesson/diagrams/modes.py) and its plotly twin (lesson/charts/modes.py),
on made-up runs of one prompt in several modes: structure, numbers, escaping, languages, classroom."""

from __future__ import annotations

import dataclasses
import re
import statistics

import pytest

from lesson.charts.modes import modes_figure
from lesson.diagrams.modes import headline, mode_summaries, render_modes
from lesson.style import CLASSROOM_MIN_FONT, CLASSROOM_WIDTH, classroom_style
from lesson.text import t
from tests.factories import COMPILED_MS, EAGER_MS, MODE_FLOORS, STATIC_MS, TINY_MODEL, make_mode_run, make_mode_runs
from tests.svg import all_text, parse, with_class


def test_each_mode_is_a_row_with_every_decode_step_and_its_median():
    root = parse(render_modes(make_mode_runs(), floors_ms=MODE_FLOORS, lang="en"))
    rows = with_class(root, "mode-row")
    assert [r.get("data-mode") for r in rows] == ["eager", "static", "compiled"]
    for row, values in zip(rows, (EAGER_MS, STATIC_MS, COMPILED_MS)):
        steps = [float(c.get("data-ms")) for c in row.iter() if "step" in c.get("class", "").split()]
        assert steps == pytest.approx(values)
        bar = next(c for c in row.iter() if "median-bar" in c.get("class", "").split())
        assert float(bar.get("data-median-ms")) == pytest.approx(statistics.median(values))
    # a longer median is a longer bar
    widths = [float(next(c for c in r.iter() if "median-bar" in c.get("class", "").split()).get("width"))
              for r in rows]
    assert widths[1] > widths[0] > widths[2]


def test_the_floor_is_drawn_through_every_row_and_named():
    svg = render_modes(make_mode_runs(), floors_ms=MODE_FLOORS, lang="en")
    root = parse(svg)
    line = with_class(root, "floor-line")
    assert len(line) == 1 and float(line[0].get("data-floor-ms")) == pytest.approx(0.9)
    assert len(with_class(root, "floor-mark")) == 3  # over each row's bar, so no bar hides it
    words = all_text(root)
    assert "floor 0.90 ms" in words
    assert "eager → compiled removes 1.3 ms per Decode step (3.9 ms → 2.6 ms). The floor is 0.90 ms." in words
    without = parse(render_modes(make_mode_runs(), lang="en"))
    assert not with_class(without, "floor-line") and "floor" not in all_text(without)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_labels_say_what_ran_and_which_attention_kernel(lang):
    fell_back = make_mode_run("compiled", STATIC_MS, ran="static", note="torch.compile failed: no compiler")
    runs = make_mode_runs(compiled=fell_back)
    words = all_text(parse(render_modes(runs, floors_ms=MODE_FLOORS, lang=lang)))
    assert t(lang, "modes_fig_title") in words
    assert t(lang, "modes_fell_back", asked="compiled", ran="static") in words
    assert t(lang, "modes_kernels", prefill="flash", decode="flash") in words
    assert "torch.compile failed: no compiler" in words  # why it fell back, in the notes
    assert t(lang, "modes_same_tokens") in words
    other = "Engine modes" if lang == "zh" else "引擎模式"
    assert other not in words


def test_a_trace_without_kernels_says_n_a():
    runs = {"eager": make_mode_run("eager", EAGER_MS, kernel="")}
    words = all_text(parse(render_modes(runs, lang="en")))
    assert "attention kernel: Prefill n/a, Decode n/a" in words
    assert headline(mode_summaries(runs), "en") == "eager: a Decode step takes 3.9 ms (median)."


def test_hostile_model_ids_and_engine_notes_stay_text():
    model = dataclasses.replace(TINY_MODEL, model_id="<script>alert(1)</script>")
    note = "</text><script>x</script> & {mode}"
    runs = {"eager": make_mode_run("eager", EAGER_MS, model=model),
            "graph": make_mode_run("graph", EAGER_MS, ran="static", note=note, model=model)}
    svg = render_modes(runs, floors_ms=MODE_FLOORS, lang="en")
    root = parse(svg)  # well-formed
    assert not [el for el in root.iter() if el.tag.endswith("script")]
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "<script>alert(1)</script>" in all_text(root) and note in all_text(root)
    fig = modes_figure(runs, MODE_FLOORS, "en")
    assert "<script>" not in fig.to_json()


def test_classroom_style_fits_the_column_with_body_size_labels():
    svg = render_modes(make_mode_runs(), floors_ms=MODE_FLOORS, lang="zh", style=classroom_style())
    root = parse(svg)
    assert float(root.get("width")) <= CLASSROOM_WIDTH
    assert min(float(s) for s in re.findall(r'font-size="([\d.]+)"', svg)) >= CLASSROOM_MIN_FONT
    assert len(with_class(root, "mode-row")) == 3


def test_a_one_token_answer_has_no_decode_to_compare():
    runs = {"eager": make_mode_run("eager", ()), "static": make_mode_run("static", ())}
    words = all_text(parse(render_modes(runs, lang="en")))
    assert t("en", "modes_no_decode") in words
    with pytest.raises(ValueError):
        render_modes({}, lang="en")


def test_the_plotly_figure_has_the_same_numbers():
    fig = modes_figure(make_mode_runs(), MODE_FLOORS, "en")
    bars, dots = fig.data[0], fig.data[1]
    assert list(bars.y) == ["eager", "static", "compiled"]
    assert list(bars.x) == pytest.approx([statistics.median(v) for v in (EAGER_MS, STATIC_MS, COMPILED_MS)])
    assert len(dots.x) == 3 * len(EAGER_MS)
    assert any(shape.x0 == pytest.approx(0.9) for shape in fig.layout.shapes)  # the floor
    assert "removes 1.3 ms" in fig.layout.title.text
    big = modes_figure(make_mode_runs(), MODE_FLOORS, "zh", classroom=True)
    assert big.layout.font.size >= 21 and big.layout.title.font.size >= 21
    untitled = modes_figure(make_mode_runs(), MODE_FLOORS, "zh", title=False)
    assert untitled.layout.title.text == ""  # the page writes it instead
    # The legend has the figure's bottom margin to itself (it sat on the axis title in classroom type).
    assert (big.layout.legend.yref, big.layout.legend.y, big.layout.legend.yanchor) == ("container", 0, "bottom")


def test_a_straggler_sits_at_the_edge_instead_of_squashing_every_bar():
    hiccup = EAGER_MS[:3] + (40.0,) + EAGER_MS[4:]  # one step while the machine was busy
    runs = {"eager": make_mode_run("eager", hiccup), "compiled": make_mode_run("compiled", COMPILED_MS)}
    root = parse(render_modes(runs, floors_ms=MODE_FLOORS, lang="en"))
    edge = with_class(root, "off-scale")
    assert [float(e.get("data-ms")) for e in edge] == [40.0]
    ticks = [e.text for e in with_class(root, "tick-label")]
    assert ticks[-1] == "8.0 ms"  # about twice the largest median (3.9 ms), not 40 ms
    assert "1 Decode step(s) beyond the axis (the slowest took 40.0 ms" in all_text(root)
    fig = modes_figure(runs, MODE_FLOORS, "en")
    assert max(fig.data[1].x) <= fig.layout.xaxis.range[1] < 40
    assert "40.0 ms" in " ".join(fig.data[1].hovertext)  # the true time, on hover
    calm = parse(render_modes(make_mode_runs(), floors_ms=MODE_FLOORS, lang="en"))
    assert not with_class(calm, "off-scale") and "beyond the axis" not in all_text(calm)


def test_a_one_token_run_says_no_decode_step_ran_not_that_it_went_unrecorded():
    from lesson.diagrams.modes import row_detail

    one = make_mode_run("eager", ())
    words = row_detail(mode_summaries({"eager": one})[0], "en")
    assert "no Decode step" in words and "n/a" not in words
