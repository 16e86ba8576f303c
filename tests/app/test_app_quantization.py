"""The lesson's last section (AppTest): the weight formats as measured (assets/gallery/cpu/weight-formats.json),
and its two exercises graded from that file, in both languages."""

from __future__ import annotations

from app_support.quantization import FORMATS_FILE, format_runs
from lesson import quantization as q
from lesson.text import t
from tests.app.apptest import assert_healthy, read_on, texts


def test_the_section_shows_the_measured_formats_and_grades_both_predictions(app):
    runs = format_runs(str(FORMATS_FILE))
    assert runs is not None, "the shipped weight-formats file must read"
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
