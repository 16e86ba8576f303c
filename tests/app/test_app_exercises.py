"""The exercises page (AppTest): the student answers before anything runs; locking the answer runs it
live on the real model, grades it with the measured numbers and explains; progress stays in the session."""

from __future__ import annotations

import pytest

from lesson.exercises import BY_KEY, EXERCISES, verdict
from lesson.text import t
from tests.app.apptest import APP, assert_healthy, needs_model, texts

EXERCISES_PAGE = "app_pages/exercises.py"


@pytest.fixture
def page(served_settings):
    """The exercises page on the session's models folder and its engine worker (prompts up to 256 tokens)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300).run()
    return at.switch_page(EXERCISES_PAGE).run()


@needs_model
def test_answer_first_then_the_run_grades_it_with_what_it_measured(page):
    at = page
    assert_healthy(at)
    assert t("zh", "ex_page_title") in texts(at, "header")
    assert at.button(key="ex_lock").disabled  # nothing to lock, nothing runs
    assert at.session_state["ex_results"] == {}
    at.radio(key="ex_answer_first_token_phase").set_value("decode").run()
    assert at.session_state["ex_results"] == {}  # an answer alone runs nothing
    at.button(key="ex_lock").click().run()
    assert_healthy(at)
    result = at.session_state["ex_results"]["first_token_phase"]
    assert result.measured == "prefill" and not result.correct  # the measured trace decides, not the answer
    assert at.session_state["ex_answers"] == {"first_token_phase": "decode"}
    assert [r.key for r in at.radio if r.key.startswith("ex_answer")] == []  # locked: no answer box to change
    assert verdict(BY_KEY["first_token_phase"], result, "zh") in texts(at, "warning")
    assert t("zh", "ex_lesson_says") in texts(at, "caption")
    assert t("zh", "ex_progress", answered=1, total=len(EXERCISES), right=0) in texts(at, "caption")

    at.button(key="ex_next").click().run()  # a number this time: 8 tokens are 7 Decode steps
    assert at.session_state["ex_pick"] == "decode_passes"
    at.number_input(key="ex_answer_decode_passes").set_value(7).run()
    at.button(key="ex_lock").click().run()
    assert_healthy(at)
    assert at.session_state["ex_results"]["decode_passes"].correct
    assert verdict(BY_KEY["decode_passes"], at.session_state["ex_results"]["decode_passes"], "zh") in texts(
        at, "success")
    assert t("zh", "ex_progress", answered=2, total=len(EXERCISES), right=1) in texts(at, "caption")

    at.button(key="ex_retry").click().run()  # answer again: the grade goes, the other stays
    assert set(at.session_state["ex_results"]) == {"first_token_phase"}
    assert at.button(key="ex_lock").disabled  # the answer widget is empty again


@needs_model
def test_the_question_sheet_is_offered_in_the_pages_language(page):
    at = page
    assert_healthy(at)
    assert any(b.label == t("zh", "ex_download_sheet") for b in at.get("download_button"))
    at.radio(key="lang").set_value("en").run()
    assert_healthy(at)
    assert t("en", "ex_page_title") in texts(at, "header")
    assert t("en", "ex_first_token_phase_q") in texts(at, "markdown")


def lock(at, key: str, answer) -> None:
    """Pick exercise `key`, answer it, lock the answer (which runs it)."""
    at.selectbox(key="ex_pick").set_value(key).run()
    widget = at.radio(key=f"ex_answer_{key}") if isinstance(answer, str) else at.number_input(key=f"ex_answer_{key}")
    widget.set_value(answer).run()
    at.button(key="ex_lock").click().run()


@pytest.mark.slow
@needs_model
@pytest.mark.parametrize("key, answer", [("cache_off_flops", 10.0), ("decode_step_context", "little"),
                                         ("batch_throughput", 3.0), ("ttft_growth", 5.0), ("p99_itl", "chunked")])
def test_each_kind_of_run_is_measured_live_and_graded(page, key, answer):
    at = page
    lock(at, key, answer)
    assert_healthy(at)
    result = at.session_state["ex_results"][key]
    assert result.answer == answer and result.params  # graded from what the engine measured
    assert verdict(BY_KEY[key], result, "zh") in texts(at, "success" if result.correct else "warning")
