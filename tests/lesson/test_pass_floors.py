"""Where a pass's time goes (lesson.pass_floors, lesson.diagrams.pass_floors): each pass as its floor on the
machine's measured roofs plus the rest, and the first figure's caption chosen by those numbers. A short
prompt's Prefill and Decode step have the same floor (both read the weights once), so a Decode step as slow
as Prefill there is per-pass overhead, never "the machine's noise"; a long prompt's Prefill has a floor
many times a Decode step's, and only there does a Decode step at or above it mean a disturbed measurement."""

from __future__ import annotations

import pytest

from engine.contract.cost import DeviceSpec, trace_floors
from lesson.diagrams.pass_floors import FloorGroup, pass_floors_alt, render_pass_floors
from lesson.formats import format_ms
from lesson.metric_cards import timeline_lesson
from lesson.pass_floors import run_floors
from lesson.spread import headline
from lesson.style import classroom_style
from lesson.text import t
from tests.factories import default_shape
from tests.lesson.test_spread import run
from tests.svg import all_text, parse, with_class

# this 2-core CPU as `python -m engine cost --device-spec this` measured it (fp32 matmul, copy bandwidth)
THIS_CPU = DeviceSpec("this machine: CPU (measured)", 179e9, 1.24e12, 13.5e9, source="measured", device_type="cpu")
NOISE = {"zh": "这台机器的噪声", "en": "the machine's noise"}


def floors_of(prefill_ms: float, decode_ms: float, prompt_len: int):
    trace = run(prefill_ms, (decode_ms * 0.95, decode_ms, decode_ms * 1.05), prompt_len=prompt_len)
    return trace, run_floors(trace_floors(trace, default_shape(), THIS_CPU), "cpu")


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("prefill_ms, decode_ms", [(10.4, 17.5), (13.7, 14.4), (11.7, 6.5)])
def test_a_short_prompts_two_passes_share_one_floor_and_the_rest_is_overhead(prefill_ms, decode_ms, lang):
    trace, floors = floors_of(prefill_ms, decode_ms, prompt_len=4)
    assert floors.same_floor and not floors.flipped
    assert floors.prefill.floor_ms == pytest.approx(floors.decode.floor_ms, rel=0.05)
    assert 0.9 < floors.prefill.floor_ms < 1.2  # 14 MB of weights over 13.5 GB/s
    caption = timeline_lesson(trace, lang, headline((trace,)), floors)
    assert NOISE[lang] not in caption
    assert format_ms(floors.decode.floor_ms) in caption and t(lang, "pf_device_cpu").strip() in caption
    assert format_ms(floors.prefill.rest_ms) in caption and format_ms(decode_ms) in caption


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_long_prompts_prefill_grows_and_its_caption_says_so(lang):
    trace, floors = floors_of(410.0, 11.0, prompt_len=1024)
    assert not floors.same_floor and not floors.flipped and floors.floor_ratio > 10
    assert floors.prefill.bound == "compute"
    caption = timeline_lesson(trace, lang, headline((trace,)), floors)
    assert t(lang, "pf_bound_compute") in caption and format_ms(floors.prefill.floor_ms) in caption
    assert "410" in caption and t(lang, "pf_flipped", x="", y="")[:6] not in caption


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_long_prefill_measured_no_slower_than_a_decode_step_is_marked_and_asks_to_measure_again(lang):
    trace, floors = floors_of(9.0, 11.0, prompt_len=1024)
    assert floors.flipped
    caption = timeline_lesson(trace, lang, headline((trace,)), floors)
    assert t(lang, "pf_flipped", x=format_ms(9.0), y=format_ms(11.0)) in caption


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_figure_draws_floor_plus_rest_on_one_axis_for_the_short_and_the_long_prompt(lang):
    _, short = floors_of(10.4, 17.5, prompt_len=4)
    _, long = floors_of(410.0, 11.0, prompt_len=1024)
    groups = (FloorGroup("short", short), FloorGroup("long", long))
    root = parse(render_pass_floors(groups, lang=lang, device_name=THIS_CPU.name, run_note="median run"))
    floors = [float(r.get("width")) for r in with_class(root, "bar", "floor")]
    rests = [float(r.get("width")) for r in with_class(root, "bar", "rest")]
    assert len(floors) == len(rests) == 4
    assert floors[0] == pytest.approx(floors[1], abs=0.5)  # the short prompt: one floor for both passes
    assert floors[2] > 10 * floors[3]  # the long prompt's Prefill floor
    widths = [f + r for f, r in zip(floors, rests)]
    assert widths[2] == max(widths)  # one axis: the long Prefill is the longest bar
    values = [e.text for e in with_class(root, "value")]
    assert values[2] == t(lang, "pf_value", floor=format_ms(long.prefill.floor_ms),
                          rest=format_ms(long.prefill.rest_ms), total=format_ms(410.0))
    assert "short" in pass_floors_alt(groups, lang) and format_ms(410.0) in pass_floors_alt(groups, lang)


def test_the_flipped_run_is_marked_in_the_figure_and_classroom_mode_keeps_its_width():
    _, flipped = floors_of(9.0, 11.0, prompt_len=1024)
    style = classroom_style()
    svg = render_pass_floors((FloorGroup("long", flipped),), lang="en", style=style)
    root = parse(svg)
    assert float(root.get("width")) <= style.max_width
    assert t("en", "pf_flipped_note") in all_text(root)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_timeline_draws_each_pass_as_its_floor_and_the_rest(lang):
    """Under floors_ms (each pass's floor on the machine's roofs), every pass's bar starts with its floor, dark:
    a 4-position Prefill's floor and a Decode step's are the same length of the time axis."""
    from lesson.diagrams.timeline import render_timeline

    trace = run(10.4, (17.5, 16.0, 18.0), prompt_len=4)
    floors_ms = tuple(step.floor_ms for step in trace_floors(trace, default_shape(), THIS_CPU).steps)
    root = parse(render_timeline(trace, lang=lang, floors_ms=floors_ms))
    marks = with_class(root, "pass-floor")
    bars = with_class(root, "pass-time")
    assert len(marks) == len(bars) == len(trace.steps)
    widths = [float(m.get("width")) for m in marks]
    assert max(widths) - min(widths) < 0.5  # one floor for every pass of a short prompt
    for mark, bar, step, floor in zip(marks, bars, trace.steps, floors_ms):
        ratio = float(mark.get("width")) / float(bar.get("width"))
        assert ratio == pytest.approx(floor / step.duration_ms, abs=0.01)
    words = all_text(root)
    assert t(lang, "legend_floor") in words and t(lang, "note_floor")[:10] in words
    assert not with_class(parse(render_timeline(trace, lang=lang)), "pass-floor")  # without floors: none
    # classroom mode: the marks and the legend, not the note's lines (the figure fits a 1280x720 window)
    projected = parse(render_timeline(trace, lang=lang, floors_ms=floors_ms, style=classroom_style()))
    assert len(with_class(projected, "pass-floor")) == len(trace.steps)
    words = all_text(projected)
    assert t(lang, "legend_floor") in words and t(lang, "note_floor")[:10] not in words


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_pass_under_its_floor_says_the_roofs_were_measured_low(lang):
    """Roofs benchmarked while the machine was busy come out low and every floor high: a pass measured under
    its floor says so, in the caption and at the bar, instead of a negative rest."""
    slow_roofs = DeviceSpec("this machine (busy)", 179e9, 1.24e12, 2e9, source="measured", device_type="cpu")
    trace = run(5.0, (4.0, 4.2, 3.9), prompt_len=4)
    floors = run_floors(trace_floors(trace, default_shape(), slow_roofs), "cpu")
    assert floors.under_floor and floors.decode.rest_ms == 0
    assert t(lang, "pf_under_floor") in timeline_lesson(trace, lang, headline((trace,)), floors)
    values = [e.text for e in with_class(parse(render_pass_floors((FloorGroup("run", floors),), lang=lang)), "value")]
    assert values[1] == t(lang, "pf_value_under", total=format_ms(4.0), floor=format_ms(floors.decode.floor_ms))
    _, calm = floors_of(10.4, 17.5, prompt_len=4)
    assert not calm.under_floor


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_bottleneck_sentence_follows_the_floors_too(lang):
    """The lesson's bottleneck section: a short prompt's Decode step slower than its Prefill is the same
    fixed cost per pass (no "measure again"); a long prompt's Prefill no slower than a Decode step is noise."""
    from lesson.metric_cards import bottleneck_contradicts, bottleneck_live_text

    short, short_floors = floors_of(10.4, 17.5, prompt_len=4)
    words = bottleneck_live_text(short, lang, None, short_floors)
    assert format_ms(short_floors.prefill.floor_ms) in words and NOISE[lang] not in words
    assert t(lang, "bottleneck_same_floor")[-15:] in words  # its last sentence has no numbers
    assert not bottleneck_contradicts(short, None, short_floors) and bottleneck_contradicts(short)  # floors decide
    long, long_floors = floors_of(9.0, 11.0, prompt_len=1024)
    assert bottleneck_contradicts(long, None, long_floors)
    noise_end = t(lang, "bottleneck_noise")[-20:]  # its last sentence has no numbers
    assert noise_end in bottleneck_live_text(long, lang, None, long_floors)


def test_the_slide_kits_timeline_draws_the_floors_as_the_page_does():
    from lesson.slides import lesson_slides

    trace = run(10.4, (17.5, 16.0), prompt_len=4)
    floors_ms = tuple(step.floor_ms for step in trace_floors(trace, default_shape(), THIS_CPU).steps)
    slides = lesson_slides(trace, lang="en", run_name="run1", floors_ms=floors_ms)
    timeline = next(s for s in slides if s.name == "run1_timeline_en")
    assert len(with_class(parse(timeline.svg), "pass-floor")) == len(trace.steps)
    plain = next(s for s in lesson_slides(trace, lang="en", run_name="run1") if s.name == "run1_timeline_en")
    assert not with_class(parse(plain.svg), "pass-floor")
