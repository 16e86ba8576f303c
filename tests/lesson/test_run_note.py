"""Which of several repeats a figure draws ("median run 3 of 5 (over the 5 runs Prefill a–b, a Decode step
c–d)", lesson.spread.run_label): every figure of lesson.diagrams.RUN_NOTED draws it when given, zh and en,
at one size at every step of the classroom, and so do the plotly latency chart, the presenter's figures and
the slide kit's figures and alt texts. The blocks, the KV growth, the animation and the plotly chart said
nothing of it: the run they drew could be any of the five."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from lesson.answer import truncate_trace
from lesson.charts.run import latency_figure
from lesson.diagrams import DIAGRAMS, RUN_NOTED, render_animation
from lesson.slides import lesson_slides
from lesson.spread import headline, run_label
from lesson.style import classroom_style
from tests.factories import make_trace
from tests.svg import all_text

RUNS = tuple(make_trace(output_pieces=("巴黎", "。", "</s>"), decode_ms=ms) for ms in (2.0, 3.5, 2.4))


def note(lang: str) -> str:
    return run_label(headline(RUNS), lang)


def words(svg: str) -> str:
    return all_text(ET.fromstring(svg)).replace("\n", "").replace(" ", "")  # wrapped notes: lines joined


def test_the_figures_that_draw_a_runs_measurements_all_say_which_repeat():
    assert set(RUN_NOTED) == set(DIAGRAMS)  # the review map too: its "this run" row quotes the chosen repeat


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("name", RUN_NOTED)
def test_each_noted_figure_draws_the_note(name, lang):
    trace = RUNS[headline(RUNS).shown]
    label = note(lang)
    assert label and label.replace(" ", "") in words(DIAGRAMS[name](trace, lang=lang, run_note=label))
    assert label.replace(" ", "") not in words(DIAGRAMS[name](trace, lang=lang))  # a single run: nothing


@pytest.mark.parametrize("name", RUN_NOTED)
def test_a_noted_figure_keeps_its_size_at_every_step(name):
    trace, style = RUNS[headline(RUNS).shown], classroom_style()
    sizes = {(root.get("width"), root.get("height")) for root in (
        ET.fromstring(DIAGRAMS[name](truncate_trace(trace, k), lang="en", full=trace, style=style,
                                     run_note=note("en"))) for k in range(1, len(trace.steps) + 1))}
    assert len(sizes) == 1, sizes


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_animations_still_frame_says_it_too(lang):
    trace = RUNS[headline(RUNS).shown]
    svg = render_animation(truncate_trace(trace, 1), lang=lang, full=trace, still=True, run_note=note(lang))
    assert note(lang).replace(" ", "") in words(svg)


@pytest.mark.parametrize("classroom", [False, True])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_plotly_latency_chart_says_it_under_its_title(lang, classroom):
    trace = RUNS[headline(RUNS).shown]
    plain = latency_figure(trace, lang, classroom=classroom)
    fig = latency_figure(trace, lang, classroom=classroom, run_note=note(lang))
    subtitle = fig.layout.title.subtitle.text
    assert subtitle.replace("<br>", "").replace(" ", "") == note(lang).replace(" ", "")
    assert fig.layout.margin.t > plain.layout.margin.t and fig.layout.height - plain.layout.height == \
        fig.layout.margin.t - plain.layout.margin.t  # room for its lines: the plot keeps its height
    assert not plain.layout.title.subtitle.text


def test_plotly_reads_no_markup_from_the_note():
    fig = latency_figure(RUNS[0], "en", run_note="<b>{x}</b> & more")
    assert fig.layout.title.subtitle.text == "&lt;b&gt;(x)&lt;/b&gt; &amp; more"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_slide_kit_says_it_on_every_noted_figure_and_its_alt(lang):
    trace = RUNS[headline(RUNS).shown]
    slides = {s.name.split("_", 1)[1].rsplit("_", 1)[0]: s for s in
              lesson_slides(trace, lang=lang, run_name="run1", run_note=note(lang))}
    for name in RUN_NOTED:
        assert note(lang).replace(" ", "") in words(slides[name].svg), name
        assert slides[name].alt.endswith(note(lang)), name


def test_the_presenters_figures_say_it():
    from app_support import presenter, run_store  # streamlit: imported by this test only

    trace = RUNS[headline(RUNS).shown]
    run = run_store.StoredRun(trace, None, "measured", "20250601-120000")
    for name, *_ in presenter.FIGURES:  # at step 1: the first pass on the whole run's axes
        svg, alt = presenter.presenter_svg.__wrapped__(name, run_store.RunView(run, 1, stepping=True), "en",
                                                       note("en"))
        noted = name in RUN_NOTED
        assert (note("en").replace(" ", "") in words(svg)) == noted and alt.endswith(note("en")) == noted, name
