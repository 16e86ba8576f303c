"""The lesson's headline numbers through AppTest: every run (the first view too) is repeated
PREFILL_DECODE_REPEATS times, the page shows the run nearest the medians (lesson.spread), the cards
and the bottleneck sentence quote it with the runs' range and number, and a run that contradicts the
lesson offers to measure again."""

from __future__ import annotations

import dataclasses

from engine.contract.config import REPEATS
from lesson.formats import fmt_ratio
from lesson.spread import headline
from lesson.text import t
from tests.app.apptest import assert_healthy, needs_model, put_run, read_on, stored_run, texts
from tests.factories import make_trace


@needs_model
def test_the_first_view_and_a_run_quote_the_median_of_the_repeats(app):
    read_on(app)  # the reader came to the sections below the first screen
    assert_healthy(app)
    numbers = stored_run(app).headline
    assert numbers.n == REPEATS.default and numbers.belongs_to(_shown(app))
    captions = texts(app, "caption")
    k = numbers.shown + 1
    assert t("zh", "metric_spread_shown", k=k, n=numbers.n, low="§").split("§")[0] in captions  # "中位数那一次…"
    assert t("zh", "metric_shown_run", k=k, n=numbers.n) in captions
    app.slider(key="output_len").set_value(4)
    app.checkbox(key="ignore_eos").check()
    app.button(key="run").click().run()
    assert_healthy(app)
    numbers = stored_run(app).headline
    assert numbers.n == REPEATS.default and numbers.belongs_to(_shown(app))
    assert all(r.num_passes == 4 for r in numbers.runs)  # the same request, every time
    assert t("zh", "bottleneck_live_shown", n=numbers.n, k=numbers.shown + 1).split("（")[0] in texts(app, "info")


@needs_model
def test_the_repeats_follow_the_operators_setting(monkeypatch, app, fresh_settings):
    from streamlit.testing.v1 import AppTest

    from tests.app.apptest import APP

    monkeypatch.setenv("PREFILL_DECODE_REPEATS", "2")
    fresh_settings()  # the `app` fixture's page read them already
    at = AppTest.from_file(APP, default_timeout=300).run()
    assert_healthy(at)
    assert stored_run(at).headline.n == 2


@needs_model
def test_medians_that_contradict_the_lesson_offer_to_measure_again(app):
    """A long prompt's Prefill (1024 positions, a floor many times a Decode step's) measured no slower than a
    Decode step: this machine's noise, and the page offers to measure again."""
    read_on(app)  # the reader came to the sections below the first screen
    pieces = tuple(f"p{i}" for i in range(1024))
    noisy = make_trace(pieces, decode_ms=12.0, prefill_ms_per_position=0.01, model=_shown(app).model)
    put_run(app, noisy, headline([noisy, noisy]))
    app.run()
    assert_healthy(app)
    words = texts(app, "info")
    assert t("zh", "bottleneck_noise", prompt_len=1024).split("。")[1][:8] in words  # the noise sentence, its spread
    low = fmt_ratio(noisy.prefill.duration_ms / 12.0)
    assert t("zh", "bottleneck_ratio_same", n=2, low=low).split("，")[0] in words
    before = app.session_state["run_id"]
    app.button(key="bottleneck_measure_again").click().run()  # runs the request in the run panel again
    assert_healthy(app)
    assert app.session_state["run_id"] != before
    assert stored_run(app).headline.belongs_to(_shown(app))


@needs_model
def test_a_short_prompts_slow_decode_step_is_the_same_cost_per_pass_not_noise(app):
    """4 positions: Prefill and a Decode step have one floor (the same weights read once each), so a Decode
    step of 9 ms beside a 3 ms Prefill is the same fixed cost per pass: no noise, no "measure again"."""
    read_on(app)
    noisy = dataclasses.replace(make_trace(decode_ms=9.0), model=_shown(app).model)
    put_run(app, noisy, headline([noisy, noisy]))
    app.run()
    assert_healthy(app)
    words = texts(app, "info")
    assert t("zh", "bottleneck_same_floor")[-15:] in words and "噪声" not in words
    assert "bottleneck_measure_again" not in {b.key for b in app.button}


def _shown(app):
    return stored_run(app).trace

