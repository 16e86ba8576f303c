"""The lesson's last section (AppTest): the weight formats as recorded (assets/gallery/cpu/weight-formats.json),
then measured live on the engine worker at the press of a button, and its two exercises graded from what is
shown, in both languages."""

from __future__ import annotations

from app_support.quantization import FORMATS_FILE, format_runs, live_key, live_store
from engine.contract.format_runs import LIVE_FORMATS
from lesson import quantization as q
from lesson.text import t
from tests.app.apptest import assert_healthy, read_on, texts


def test_the_section_shows_the_measured_formats_and_grades_both_predictions(app):
    runs = format_runs(str(FORMATS_FILE))
    assert runs is not None, "the shipped weight-formats file must read"
    live_store().runs.clear()  # no live run yet: the page shows the recording
    at = read_on(app)
    assert_healthy(at)
    assert t("zh", "q_title") in texts(at, "subheader")
    assert q.preset_story(runs, "zh") in texts(at, "markdown")
    at.number_input(key="q_speedup_guess").set_value(8.0)
    at.radio(key="q_paris_guess").set_value("no")
    at.button(key="q_check").click().run()
    assert_healthy(at)
    speedup, paris = at.session_state["q_grades"]
    assert not speedup.correct and speedup.measured == runs.preset.speedup("int4", 64)
    assert paris.correct == (not q.answer_kept(runs))
    feedback = texts(at, "info") + texts(at, "success")
    assert q.grade_words(speedup, "zh") in feedback and q.grade_words(paris, "zh") in feedback
    at.radio(key="lang").set_value("en").run()
    assert_healthy(at)
    assert t("en", "q_title") in texts(at, "subheader") and q.grade_words(speedup, "en") in texts(at, "info")


def test_the_live_run_measures_on_the_engine_and_the_exercises_then_grade_from_it(app):
    """Before the button: the recording, said to be one. After: the embedded model measured in the engine
    worker now (kept for every visitor), the page says so, and the same guesses are graded from the live run."""
    recorded = format_runs(str(FORMATS_FILE))
    live_store().runs.clear()
    at = read_on(app)
    assert q.provenance_caption(recorded, "zh") in texts(at, "caption")
    at.number_input(key="q_speedup_guess").set_value(1.0)
    at.radio(key="q_paris_guess").set_value("yes")
    at.button(key="q_check").click().run()
    at.button(key="q_live_run").click().run()
    assert_healthy(at)
    (live,) = live_store().runs.values()
    assert live.embedded.model_id == recorded.embedded.model_id and live.recorded_at >= recorded.recorded_at
    assert [(r.weights, r.group_size) for r in live.embedded.rows] == list(LIVE_FORMATS)
    assert all(len(r.kl_positions) > 100 for r in live.embedded.rows)  # the KL figure's line per format
    assert q.provenance_caption(live, "zh", True, recorded) in texts(at, "caption")
    speedup, paris = at.session_state["q_grades"]
    assert speedup.measured == live.embedded.speedup("int4", 64)  # the live run has no preset: the embedded model
    assert paris.correct == q.answer_kept(live)
    assert q.grade_words(speedup, "zh") in texts(at, "info") + texts(at, "success")
    kits = [b for b in at.get("download_button") if b.label == t("zh", "kit_download")]
    assert len(kits) == 2  # the lesson's run, and this live run's weight-format figures
    table = texts(at, "markdown")
    assert q.formats_rows(live.embedded, "zh")[0][t("zh", "q_col_step")] in table
    at.radio(key="lang").set_value("en").run()  # the kept run, in the other language: no second measurement
    assert_healthy(at)
    assert q.provenance_caption(live, "en", True, recorded) in texts(at, "caption")
    assert live_store().runs[live_key()] is live
    assert t("en", "q_live_again") in [b.label for b in at.button]


def test_a_live_run_the_engine_refuses_is_said_in_words_and_the_recording_stays(app, monkeypatch):
    from app_support import quantization
    from engine.contract.errors import InputError
    from lesson.messages import error_message

    refusal = InputError("format_run_bounds", "a weight-formats run takes 1 to 32 steps, not 0", name="steps",
                         value="0", limit=32)

    def refuse(lang):
        raise refusal

    live_store().runs.clear()
    monkeypatch.setattr(quantization, "measure_live", refuse)
    at = read_on(app)
    at.button(key="q_live_run").click().run()
    assert not at.exception
    assert error_message(refusal, "zh") in [e.value for e in at.error]
    recorded = format_runs(str(FORMATS_FILE))
    assert q.provenance_caption(recorded, "zh") in texts(at, "caption") and not live_store().runs
