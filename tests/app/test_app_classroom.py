"""Classroom tools: runs kept in the session, two compared on the same axes, the slow-motion
replay, the animation's pause and step, and controls that agree with their captions.

Pure checks of lesson.runs first, then the page through AppTest (the `app` fixture of
tests/app/conftest.py: the embedded default model, answers capped at 32 tokens, prompts at 256).
Already covered in tests/app/test_app.py and not repeated here: the language switch changing the
default prompt, the 1-token answer cards, Run disabled for an empty prompt.
"""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET

import pytest

from lesson.alt_text import figure_alt, with_run_note
from lesson.answer import truncate_trace
from lesson.diagrams.kv_growth import kv_layout
from lesson.diagrams.latency import latency_layout
from lesson.diagrams.timeline import timeline_layout
from lesson.formats import format_ms
from lesson.runs import (
    HISTORY_LIMIT, REPLAY_PACES, HistoryEntry, compare_table, history_add, keep_pins, replay_position, replay_times_s,
    run_label, shared_extent,
)
from lesson.spread import run_label as shown_run_label
from lesson.style import DEFAULT_STYLE
from lesson.text import t, table_for
from app_support import run_store
from tests.app.apptest import assert_healthy, needs_model, read_on, shown_trace, stored_run, texts
from tests.factories import make_trace

SHORT = make_trace(("法国", "的", "首都", "是"), ("巴黎", "。", "法国", "的", "首都", "是"), decode_ms=2.0)
LONG = make_trace(tuple(f"t{i}" for i in range(200)), ("巴黎", "。", "</s>"), prefill_ms_per_position=0.5,
                  decode_ms=5.0)


# ---------------------------------------------------------------------------
# lesson.runs: pure
# ---------------------------------------------------------------------------

def test_history_keeps_the_newest_runs_first_and_never_the_same_run_twice():
    history: list[HistoryEntry] = []
    for i in range(HISTORY_LIMIT + 3):
        history = history_add(history, f"run-{i}", f"20260101-1200{i:02d}")
    assert len(history) == HISTORY_LIMIT
    assert history[0].stored_id == f"run-{HISTORY_LIMIT + 2}" and history[-1].stored_id == "run-3"
    assert len({e.run_id for e in history}) == HISTORY_LIMIT
    again = history_add(history, "run-5", "20260101-130000")  # the same run drawn again
    assert len(again) == HISTORY_LIMIT and again[0] is next(e for e in history if e.stored_id == "run-5")
    assert keep_pins([again[0].run_id, "forged", again[0].run_id, again[1].run_id, again[2].run_id], again) == [
        again[0].run_id, again[1].run_id]
    assert keep_pins("not a list", again) == [] and keep_pins([None, 3], again) == []


def test_the_shared_extent_covers_both_runs():
    extent = shared_extent(SHORT, LONG)
    assert len(extent.steps) == max(len(SHORT.steps), len(LONG.steps))
    assert extent.steps[-1].end_ms >= max(SHORT.steps[-1].end_ms, LONG.steps[-1].end_ms)
    for run in (SHORT, LONG):
        parts = [p.total_ms for p in run.latency_parts()]
        assert max(p.total_ms for p in extent.latency_parts()) >= max(parts + list(run.metrics.itl_ms))
        assert max(s.kv_bytes for s in extent.steps) >= run.kv_bytes
    assert extent.steps[0].num_positions == 200  # the longer prompt's chips size the table's columns
    assert shared_extent(LONG, SHORT) == extent  # the order of the two runs does not matter


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_two_runs_drawn_with_the_shared_extent_have_the_same_axes(lang):
    table, extent = table_for(lang), shared_extent(SHORT, LONG)
    timelines = [timeline_layout(run, table, DEFAULT_STYLE, full=extent) for run in (SHORT, LONG)]
    assert timelines[0].ticks == timelines[1].ticks and timelines[0].width == timelines[1].width
    latencies = [latency_layout(run, table, DEFAULT_STYLE, full=extent) for run in (SHORT, LONG)]
    assert latencies[0].y_ticks == latencies[1].y_ticks
    kvs = [kv_layout(run, table, DEFAULT_STYLE, full=extent) for run in (SHORT, LONG)]
    assert kvs[0].y_ticks == kvs[1].y_ticks
    alone = [latency_layout(run, table, DEFAULT_STYLE) for run in (SHORT, LONG)]
    assert alone[0].y_ticks != alone[1].y_ticks  # without it, each run would get its own axis


def test_the_comparison_table_and_labels_say_which_run_is_which():
    rows = compare_table(SHORT, LONG, "en")
    assert [row["Measure"] for row in rows][:2] == ["Prompt tokens", "Answer tokens"]
    assert rows[0]["Run A"] == "4" and rows[0]["Run B"] == "200" and rows[1]["Run B"] == "3"
    assert compare_table(SHORT, LONG, "zh")[0][t("zh", "cmp_measure")] == t("zh", "cmp_prompt_tokens")
    one = make_trace(output_pieces=("巴黎",))
    assert compare_table(one, LONG, "en")[4]["Run A"] == "—"  # TPOT of a 1-token answer
    label = run_label(LONG, "20261129-224107", "en")
    assert label.startswith("22:41:07 · “…") and "prompt 200 → answer 3 tokens" in label
    assert LONG.model.model_id in label


def test_history_labels_quote_the_prompts_end_so_a_germany_run_and_a_france_run_differ():
    """History entries showed counts but not the prompt; a recorded run (the first view too) showed
    this session's clock for numbers measured earlier."""
    from lesson.runs import short_prompt

    france, germany = make_trace(prompt="法国的首都是"), make_trace(prompt="德国的首都是")
    assert run_label(france, "20261129-224107", "zh") != run_label(germany, "20261129-224107", "zh")
    assert "“德国的首都是”" in run_label(germany, "20261129-224107", "zh")
    stretched = "filler " * 300 + "The capital of\nGermany is"  # the end asks; a newline stays one line
    shown = short_prompt(stretched)
    assert shown.startswith("…") and shown.endswith("of Germany is") and len(shown) == 20
    assert short_prompt("a\u202eb") == "a\u27eaRLO\u27ebb"  # a bidi override cannot reverse the label
    recorded = run_label(france, "", "en", 1)
    assert recorded.startswith("#1 · “法国的首都是” · prompt") and ":" not in recorded.split("·")[1]


def test_history_labels_stay_unique_for_runs_alike_in_every_field():
    """A multiselect matches its values by label: two runs in one second with the same lengths and
    TTFT must still read differently, or a pin cannot tell them apart."""
    import dataclasses

    a = make_trace(("法国", "的", "首都", "是"), ("巴黎", "。"))
    b = dataclasses.replace(a, request_id="again")  # another run, the same label fields
    history = history_add(history_add([], a.to_json(), "20261129-224107"), b.to_json(), "20261129-224107")
    assert [e.number for e in history] == [2, 1]
    labels = [run_label(a, e.stamp, "en", e.number) for e in history]
    assert labels[0] != labels[1] and labels[0].startswith("#2 · 22:41:07 · “法国的首都是” · ")
    assert run_label(a, "20261129-224107", "en") == labels[0].removeprefix("#2 · ")


def test_replay_times_follow_the_measured_rhythm_or_a_fixed_pace():
    measured = [s.end_ms / 1000 for s in SHORT.steps]
    assert replay_times_s(SHORT, "x1") == pytest.approx(measured)
    assert replay_times_s(SHORT, "x0.25") == pytest.approx([m * 4 for m in measured])
    assert replay_times_s(SHORT, "s0.5") == pytest.approx([0.5 * (i + 1) for i in range(len(SHORT.steps))])
    assert replay_times_s(SHORT, "bogus") == replay_times_s(SHORT, "s0.5")
    times = replay_times_s(SHORT, "s1")
    assert [replay_position(times, s) for s in (0.0, 1.0, 2.5, 99.0)] == [1, 1, 2, len(SHORT.steps)]
    assert all(t(lang, f"replay_pace_{pace}") for pace in REPLAY_PACES for lang in ("zh", "en"))


# ---------------------------------------------------------------------------
# The page (AppTest)
# ---------------------------------------------------------------------------

def _raw_svgs(at) -> list[ET.Element]:
    return [ET.fromstring(c.value) for c in at.code if c.language == "xml"]


def _ticks(root: ET.Element) -> list[str]:
    """The axis's tick labels: the timeline's time axis; the latency and KV charts' y axis
    (their bars' own labels, centred under each bar, are left out)."""
    axis_only = "timeline" not in root.get("class", "")
    return [el.text for el in root.iter() if el.get("class") == "tick-label"
            and not (axis_only and el.get("text-anchor") == "middle")]


def _run(at, **sliders) -> None:
    for key, value in sliders.items():
        at.slider(key=key).set_value(value)
    at.button(key="run").click().run()
    assert_healthy(at)


@needs_model
def test_runs_are_kept_and_two_pinned_runs_share_their_axes(app):
    read_on(app)  # the reader came to the sections below the first screen
    assert len(app.session_state["history"]) == 1  # the page's first view is a run too
    assert t("zh", "compare_need_two", count=1) in texts(app, "info")
    app.checkbox(key="ignore_eos").check()
    _run(app, output_len=6)
    _run(app, output_len=3, prompt_len=120)
    history = app.session_state["history"]
    assert len(history) == 3
    newest, older = (json.loads(run_store.store().get(e.stored_id).trace.to_json()) for e in history[:2])
    assert len(newest["prompt_ids"]) == 120 and len(newest["steps"]) == 3 and len(older["steps"]) == 6
    assert history[0].stored_id == app.session_state["run_id"]
    picker = app.multiselect(key="compare_pins")
    assert picker.max_selections == 2 and len(picker.options) == 3
    assert t("zh", "compare_pick_two") in texts(app, "caption")
    picker.set_value([history[1].run_id, history[0].run_id]).run()
    assert_healthy(app)
    table = app.dataframe[-1].value
    assert list(table.iloc[0, 1:]) == [str(len(older["prompt_ids"])), "120"]  # Run A is the first pinned
    alts = [img.proto.imgs[0].alt for img in app.get("image")]
    assert sum(alt.startswith(t("zh", "cmp_run_a")) for alt in alts) == 3
    assert sum(alt.startswith(t("zh", "cmp_run_b")) for alt in alts) == 3
    for name in ("timeline", "latency", "kv_growth"):
        for run in "ab":
            app.toggle(key=f"raw_svg_compare_{name}_{run}").set_value(True)
    app.run()
    figures = {root.get("class"): [] for root in _raw_svgs(app)}
    for root in _raw_svgs(app):
        figures[root.get("class")].append((root.get("width"), _ticks(root)))
    for name in ("timeline", "latency", "kv-growth"):  # the SVG's class names
        pair = figures[f"lesson-diagram {name}"]
        assert len(pair) == 2 and pair[0] == pair[1] and len(pair[0][1]) >= 2, (name, pair)


@needs_model
def test_the_first_views_history_entry_carries_its_own_measured_time_not_this_sessions_clock(app):
    read_on(app)  # the reader came to the sections below the first screen
    from lesson.recorded import recorded_stamp
    from lesson.runs import run_label as label_of

    (first,) = app.session_state["history"]
    trace = run_store.store().get(first.stored_id).trace
    assert first.recorded and trace.provenance is not None
    assert first.stamp == stored_run(app).stamp == recorded_stamp(trace.provenance)
    app.checkbox(key="ignore_eos").check()
    _run(app, output_len=3)
    labels = app.multiselect(key="compare_pins").options
    assert labels[1].endswith(label_of(trace, "", "zh", 1))  # "录制于 <when> · #1 · “…” ·": no clock of ours
    assert "“法国的首都是”" in labels[0] and labels[0].startswith("#2 · ")


@needs_model
def test_a_pin_on_a_run_that_left_the_history_is_dropped(app):
    read_on(app)  # the reader came to the sections below the first screen
    app.session_state["compare_pins"] = ["no-such-run", 42]
    app.run()
    assert_healthy(app)
    assert app.session_state["compare_pins"] == []
    app.button(key="run").click().run()
    first, second = (e.run_id for e in app.session_state["history"][:2])
    app.multiselect(key="compare_pins").set_value([first, second]).run()
    for _ in range(HISTORY_LIMIT):  # the pinned runs leave the history one by one
        app.button(key="run").click().run()
        assert_healthy(app)
    ids = [e.run_id for e in app.session_state["history"]]
    assert len(ids) == HISTORY_LIMIT and first not in ids and second not in ids
    assert app.session_state["compare_pins"] == []


@pytest.mark.slow
@needs_model
def test_the_replay_shows_measured_times_slowed_down_and_labels_itself(app):
    app.checkbox(key="ignore_eos").check()
    _run(app, output_len=4)
    total = len(shown_trace(app)["steps"])
    app.selectbox(key="replay_pace").set_value("s0.5")
    app.button(key="replay_start").click()
    app.run(timeout=60)
    deadline = time.time() + 60
    while app.session_state["replay_from"] is not None and time.time() < deadline:
        time.sleep(0.2)  # in a browser, the replay's timer fragment draws the page again at each pass;
        app.run(timeout=60)  # AppTest runs no timers: draw it here until the replay is done
    assert_healthy(app)
    assert app.session_state["replay_from"] is None
    assert t("zh", "replay_done", total=total) in texts(app, "caption")
    assert len(shown_trace(app)["steps"]) == total  # the stored run is untouched


@needs_model
def test_a_replay_in_progress_cuts_every_figure_to_its_pass(app, monkeypatch):
    read_on(app)  # the reader came to the sections below the first screen
    import time as time_module

    app.checkbox(key="ignore_eos").check()
    _run(app, output_len=5)
    total = len(shown_trace(app)["steps"])
    app.selectbox(key="replay_pace").set_value("s1").run()
    # a replay that starts in an hour shows its first pass (Prefill) whatever the machine's speed;
    # the page then waits at most a second and draws itself again: stop it before that
    app.session_state["replay_from"] = time_module.time() + 3600
    monkeypatch.setattr("app_support.stepping.replay_tick", lambda: None)
    app.run()
    assert_healthy(app)
    trace = stored_run(app).trace
    first = truncate_trace(trace, 1)
    assert t("zh", "replay_label", shown=1, total=total, ms=format_ms(first.steps[0].end_ms)) in texts(app, "info")
    alts = [img.proto.imgs[0].alt for img in app.get("image")]
    for name in ("timeline", "kv_growth", "latency"):  # the timeline's and latency's then say which repeat
        assert any(alt.startswith(figure_alt(name, first, "zh")) for alt in alts), name
    app.button(key="replay_stop").click().run()
    assert app.session_state["replay_from"] is None
    alts = [img.proto.imgs[0].alt for img in app.get("image")]
    assert any(alt.startswith(figure_alt("timeline", trace, "zh")) for alt in alts)


@needs_model
@pytest.mark.parametrize("pace", ["s0.5", "x0.25"])
def test_a_page_slower_than_the_replay_still_shows_the_whole_answer_before_it_ends(app, monkeypatch, pace):
    """Each page run comes 10 s after the last (a busy server): a fixed pace still shows every pass in
    turn, a measured one may skip passes to keep its rhythm, and both show the last pass before "done".
    The replay's clock stands still between page runs (a page run of this machine's may take longer than
    a pass at x0.25: the first one then drew pass 2), and the test moves it."""
    monkeypatch.setattr("app_support.stepping.replay_tick", lambda: None)  # no timer: the test draws the page
    now = [1_800_000_000.0]
    monkeypatch.setattr("app_support.stepping.replay_clock", lambda: now[0])
    app.checkbox(key="ignore_eos").check()
    _run(app, output_len=4)
    total = len(shown_trace(app)["steps"])
    app.selectbox(key="replay_pace").set_value(pace).run()
    app.button(key="replay_start").click().run()
    shown = []
    while app.session_state["replay_from"] is not None and len(shown) <= total:
        shown.append(app.session_state["replay_last"])
        now[0] += 10  # the next page run comes 10 s late
        app.run()
    assert_healthy(app)
    assert shown == (list(range(1, total + 1)) if pace == "s0.5" else [1, total]), shown
    assert t("zh", "replay_done", total=total) in texts(app, "caption")


@needs_model
def test_the_prompt_length_slider_and_its_caption_agree(app):
    """Slider 64, split still 4 tokens. The caption and Run follow the slider's value."""
    app.slider(key="prompt_len").set_value(64).run()
    assert_healthy(app)
    assert t("zh", "token_split", num_tokens=64) in texts(app, "caption")
    app.button(key="run").click().run()
    assert shown_trace(app)["prompt_ids"].__len__() == 64
    app.slider(key="prompt_len").set_value(0).run()
    assert t("zh", "token_split", num_tokens=4) in texts(app, "caption")


@needs_model
def test_the_animation_pauses_on_a_chosen_pass(app):
    read_on(app)  # the reader came to the sections below the first screen
    app.checkbox(key="ignore_eos").check()
    _run(app, output_len=5)
    total = len(shown_trace(app)["steps"])

    def animation_svg() -> str:
        app.toggle(key="raw_svg_animation").set_value(True).run()
        return next(c.value for c in app.code if "lesson-diagram animation" in c.value)

    assert total >= 3 and "<animate" in animation_svg()
    app.button(key="anim_play_pause").click().run()  # pause: the still frame of the whole run
    assert_healthy(app)
    assert app.session_state["anim_paused"] and "<animate" not in animation_svg()
    app.select_slider(key=f"anim_step_{total}").set_value(2).run()
    still = animation_svg()
    trace = stored_run(app).trace
    assert "<animate" not in still and 'class="caption step-1"' in still
    alts = [img.proto.imgs[0].alt for img in app.get("image")]
    run_note = shown_run_label(stored_run(app).headline, "zh")  # which of the repeats
    assert with_run_note(figure_alt("animation", truncate_trace(trace, 2), "zh"), run_note) in alts
    app.button(key="anim_play_pause").click().run()  # play again: on from pass 2 (3 s in: Prefill's time)
    playing = animation_svg()
    assert not app.session_state["anim_paused"] and "<animate" in playing and 'begin="-3s"' in playing
    app.select_slider(key=f"anim_step_{total}").set_value(total).run()  # the slider pauses it again
    assert app.session_state["anim_paused"]
    app.button(key="anim_play_pause").click().run()  # from the last pass: the plain loop, from the start
    assert "<animate" in animation_svg() and "begin=" not in animation_svg()


@needs_model
def test_control_values_survive_a_visit_to_the_other_page(app):
    """Kept aside without writing a widget's key while it is drawn (that write made a slider moved
    with the keyboard during a rerun fall out of step with the server)."""
    app.slider(key="prompt_len").set_value(40)
    app.slider(key="output_len").set_value(5).run()
    app.switch_page("app_pages/bottleneck_lab.py").run()
    app.run()  # a second run on the lab page: Streamlit has dropped the lesson's widgets by now
    app.switch_page("app_pages/lesson.py").run()
    assert_healthy(app)
    assert app.slider(key="prompt_len").value == 40 and app.slider(key="output_len").value == 5
    assert t("zh", "token_split", num_tokens=40) in texts(app, "caption")


@needs_model
def test_in_classroom_mode_the_compared_runs_and_the_paused_frame_use_the_classroom_style(app):
    read_on(app)  # the reader came to the sections below the first screen
    from lesson.style import classroom_style

    app.button(key="run").click().run()
    first, second = (e.run_id for e in app.session_state["history"][:2])
    app.multiselect(key="compare_pins").set_value([first, second])
    app.toggle(key="classroom").set_value(True).run()
    app.button(key="class_all").click().run()
    app.button(key="anim_play_pause").click()
    for key in ("raw_svg_compare_latency_a", "raw_svg_animation"):
        app.toggle(key=key).set_value(True)
    app.run()
    assert_healthy(app)
    widths = {ET.fromstring(c.value).get("class"): float(ET.fromstring(c.value).get("width"))
              for c in app.code if c.language == "xml"}
    for name in ("lesson-diagram latency", "lesson-diagram animation"):
        assert widths[name] <= classroom_style().max_width, widths  # folded to the projector's column


def test_the_animation_can_start_from_any_pass_and_stand_still_on_one():
    from lesson.diagrams.animation import SECONDS, render_animation

    trace = make_trace(output_pieces=("巴黎", "。", "a", "b"))
    assert "begin=" not in render_animation(trace) and "begin=" not in render_animation(trace, start_pass=1)
    later = render_animation(trace, start_pass=3)  # Prefill's time and one Decode pass's time in
    offset = SECONDS["prefill"] + SECONDS["decode"]
    assert set(re.findall(r'begin="([^"]*)"', later)) == {f"-{offset:g}s"}
    assert later.count("<animate") == render_animation(trace).count("<animate")
    still = render_animation(make_trace(output_pieces=("巴黎", "。")), still=True, full=trace)
    assert "<animate" not in still and 'class="caption step-1"' in still


@needs_model
def test_the_presenter_view_shows_one_figure_steps_in_place_and_its_notes(app):
    from app_support.presenter import FIGURES

    app.toggle(key="classroom").set_value(True).run()
    app.toggle(key="presenter").set_value(True).run()
    assert_healthy(app)
    images = [img.proto.imgs[0].alt for img in app.get("image")]
    assert len(images) == 1 and images[0].startswith(t("zh", "alt_timeline")[:6])  # one figure: the timeline
    total = len(shown_trace(app)["steps"])
    assert app.session_state["class_step"] == 1
    app.button(key="pres_next").click().run()
    assert app.session_state["class_step"] == min(2, total)
    app.button(key="pres_last").click().run()
    assert app.session_state["class_step"] == total
    app.button(key="pres_fig_next").click().run()
    assert app.session_state["presenter_figure"] == 1
    assert t("zh", FIGURES[1][2])[:20] in texts(app.sidebar, "markdown")  # the lesson's sentence: the notes
    app.radio(key="presenter_figure").set_value(len(FIGURES) - 1).run()
    assert_healthy(app)
    assert [img.proto.imgs[0].alt for img in app.get("image")][0].startswith(t("zh", "alt_review_map")[:6])
