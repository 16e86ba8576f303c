"""TTFT as the lesson defines it, part by part (lesson/diagrams/ttft_parts.py): the parts add up to the
engine's TTFT and to what the visitor felt, the SVG draws them in time order with both labels, zh and
en, and a run without the visitor's side (recorded, first view, an export) says it has only the engine's."""

from __future__ import annotations

import dataclasses

import pytest

from lesson.diagrams.ttft_parts import ENGINE_KINDS, KINDS, FeltTimes, render_ttft_parts, ttft_parts, ttft_parts_alt
from lesson.formats import fmt_ms
from lesson.style import classroom_style
from lesson.text import label, table_for
from tests.factories import make_trace
from tests.svg import all_text, parse, with_class

START_S = 1_764_000_000.0


def _trace(wait_ms: float = 0.7, choice_ms: float | None = 0.4):
    """Tokenizing 0.3 ms, a wait inside the engine, then Prefill (3.0 ms, its choice inside)."""
    trace = make_trace()
    steps = [dataclasses.replace(s, start_ms=s.start_ms + wait_ms, end_ms=s.end_ms + wait_ms) for s in trace.steps]
    return dataclasses.replace(trace, steps=tuple(steps), first_token_choice_ms=choice_ms, started_at_s=START_S)


def _felt(trace, queue_ms=120.0, trip_ms=4.0, page_ms=9.0) -> FeltTimes:
    token_s = START_S + trace.prefill.end_ms / 1e3
    return FeltTimes(START_S - queue_ms / 1e3, token_s + trip_ms / 1e3, token_s + (trip_ms + page_ms) / 1e3,
                     START_S, trace.prefill.end_ms)


def test_the_engines_parts_add_up_to_the_traces_ttft():
    trace = _trace()
    parts = ttft_parts(trace)
    assert parts.tokenize_ms == 0.3 and parts.engine_ms == pytest.approx(0.7) and parts.choice_ms == 0.4
    assert parts.prefill_ms == pytest.approx(trace.prefill.duration_ms - 0.4)
    assert parts.engine_ttft_ms == pytest.approx(trace.metrics.ttft_ms)
    assert not parts.felt and parts.felt_ttft_ms is None


def test_the_visitors_parts_add_up_to_sending_to_seeing():
    trace = _trace()
    felt = _felt(trace)
    parts = ttft_parts(trace, felt)
    assert parts.queue_ms == pytest.approx(120.0, abs=1e-3) and parts.trip_ms == pytest.approx(4.0, abs=1e-3)
    assert parts.page_ms == pytest.approx(9.0, abs=1e-3)
    assert parts.felt_ttft_ms == pytest.approx((felt.shown_at_s - felt.sent_at_s) * 1e3, abs=1e-3)
    assert parts.felt_ttft_ms == pytest.approx(120.0 + trace.metrics.ttft_ms + 13.0, abs=1e-3)


def test_clocks_that_disagree_leave_only_the_engines_parts():
    trace = _trace()
    assert not ttft_parts(trace, _felt(trace, trip_ms=-50.0)).felt  # another machine's clock: not drawn
    slightly = ttft_parts(trace, _felt(trace, trip_ms=-1.0))  # within the clocks' grain: read as 0
    assert slightly.felt and slightly.trip_ms == 0.0


@pytest.mark.parametrize("source", ["felt", "felt_other_run"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_times_that_do_not_fit_the_runs_clock_draw_the_engines_parts_and_say_why(source, lang):
    """A visitor who joined a shared measurement under way sent its request after the run's clock started (its
    queue below zero); a worker on another machine has another clock. 100 sessions pressing Run at once drew
    an error there (no words for it) in 20 of them."""
    trace = _trace()
    for felt in (_felt(trace, queue_ms=-800.0), _felt(trace, trip_ms=-50.0)):
        root = parse(render_ttft_parts(trace, lang=lang, felt=felt, source=source))
        assert [p.get("class").split()[1] for p in with_class(root, "part")] == list(ENGINE_KINDS)
        words = all_text(root).replace(" ", "")  # its note, wrapped over lines
        assert label(table_for(lang), "ttft_parts_only_engine_unclocked").replace(" ", "")[:30] in words
        assert ttft_parts_alt(trace, lang, felt)


def test_felt_times_round_trip_as_json_and_refuse_anything_else():
    felt = _felt(_trace())
    assert FeltTimes.from_json(felt.to_json()) == felt
    with pytest.raises(ValueError):
        FeltTimes.from_json('{"schema": "other"}')


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_bar_draws_every_part_in_time_order_with_both_labels(lang):
    trace = _trace()
    felt, table = _felt(trace), table_for(lang)
    root = parse(render_ttft_parts(trace, lang=lang, felt=felt, source="felt"))
    parts = with_class(root, "part")
    assert [p.get("class").split()[1] for p in parts] == list(KINDS)
    xs = [float(p.get("x")) for p in parts]
    assert xs == sorted(xs)
    expected = ttft_parts(trace, felt)
    for rect in parts:
        assert float(rect.get("data-ms")) == pytest.approx(expected.part_ms(rect.get("class").split()[1]), abs=1e-3)
    words = all_text(root)
    assert label(table, "ttft_parts_engine", ms=fmt_ms(expected.engine_ttft_ms)) in words
    assert label(table, "ttft_parts_felt", ms=fmt_ms(expected.felt_ttft_ms)) in words
    assert label(table, "ttft_parts_clock")[:12] in words  # which clock the page's part ends on
    for kind in KINDS:
        assert label(table, f"ttft_part_{kind}") in words
    widths = sum(float(p.get("width")) for p in parts)
    assert widths == pytest.approx(float(root.get("width")) - 64, abs=0.1)  # one bar across the figure


@pytest.mark.parametrize("source", ["trace", "recorded", "first_view"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_without_the_visitors_side_only_the_engines_parts_and_the_bar_says_so(source, lang):
    root = parse(render_ttft_parts(_trace(), lang=lang, source=source))
    assert [p.get("class").split()[1] for p in with_class(root, "part")] == list(ENGINE_KINDS)
    words = all_text(root)
    assert label(table_for(lang), f"ttft_parts_only_engine_{source}")[:12] in words
    assert not with_class(root, "felt")


def test_a_trace_written_before_the_choice_was_timed_draws_it_inside_prefill():
    trace = _trace(choice_ms=None)
    root = parse(render_ttft_parts(trace, lang="en"))
    assert "choice" not in [p.get("class").split()[1] for p in with_class(root, "part")]
    assert label(table_for("en"), "ttft_parts_no_choice")[:20] in all_text(root)
    assert ttft_parts(trace).engine_ttft_ms == pytest.approx(trace.metrics.ttft_ms)


def test_another_repeat_says_whose_the_visitors_parts_are_and_which_run_it_draws():
    trace = _trace()
    note = "中位数那一次：第 3 / 5 次"
    svg = render_ttft_parts(trace, lang="zh", felt=_felt(trace), source="felt_other_run", run_note=note)
    words = all_text(parse(svg))
    assert "中位数那一次：第 3 / 5 次" in words and label(table_for("zh"), "ttft_parts_run1")[:10] in words


def test_the_bar_is_byte_stable_fits_the_classroom_and_has_words_for_a_screen_reader():
    trace = _trace()
    felt = _felt(trace)
    assert render_ttft_parts(trace, felt=felt, source="felt") == render_ttft_parts(trace, felt=felt, source="felt")
    style = classroom_style()
    root = parse(render_ttft_parts(trace, lang="zh", style=style, felt=felt, source="felt"))
    assert float(root.get("width")) <= style.max_width
    alt = ttft_parts_alt(trace, "en", felt)
    assert fmt_ms(ttft_parts(trace, felt).felt_ttft_ms) in alt and "Prefill" in alt
    assert "<" not in ttft_parts_alt(dataclasses.replace(trace, prompt="<script>"), "zh")


def test_the_slide_kit_holds_the_bar_and_says_which_repeat_its_figures_draw():
    from lesson.diagrams import RUN_NOTED
    from lesson.slides import lesson_slides

    note = "median run: run 2 of 5 (over the 5 runs Prefill 3.0 ms–9.0 ms)"
    slides = {s.name: s for s in lesson_slides(_trace(), lang="en", run_name="run1", run_note=note)}
    assert "run1_ttft_parts_en" in slides
    for figure in RUN_NOTED:  # every figure of the run says which repeat it draws
        assert note in all_text(parse(slides[f"run1_{figure}_en"].svg)).replace("\n", ""), figure
    plain = {s.name: s for s in lesson_slides(_trace(), lang="en", run_name="run1")}
    assert note not in all_text(parse(plain["run1_timeline_en"].svg))
