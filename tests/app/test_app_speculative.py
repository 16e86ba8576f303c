"""The lesson's speculative-decoding section (AppTest, the real engine worker): the button runs the repeating
example twice (plain Decode, then prompt lookup), both runs in the run store, the same tokens said and checked,
and the two exercises graded from those runs, in both languages."""

from __future__ import annotations

from app_support import run_store
from app_support.speculative import spec_config
from engine.contract.errors import InputError
from engine.contract.results import GenerationConfig
from lesson import speculative as sp
from lesson.messages import error_message
from lesson.text import t
from tests.app.apptest import assert_healthy, needs_model, put_run, read_on, texts
from tests.factories import make_speculative_trace


def _runs(at):
    return tuple(run_store.store().get(at.session_state[key]) for key in ("spec_run_id", "spec_plain_id"))


@needs_model
def test_the_section_runs_both_and_grades_both_predictions(app):
    at = read_on(app)
    assert_healthy(at)
    assert t("zh", "spec_title") in texts(at, "header") and t("zh", "spec_no_run") in texts(at, "caption")
    images = len(at.get("image"))
    at.button(key="spec_run").click().run()
    assert_healthy(at)
    spec_run, plain_run = _runs(at)
    alts = [img.proto.imgs[0].alt for img in at.get("image")]
    assert len(alts) == images + 2 and t("zh", "spec_acc_alt", v=len(spec_run.trace.verify_steps),
                                          kept=sum(s.num_accepted for s in spec_run.trace.verify_steps),
                                          drafted=sum(len(s.draft_ids) for s in spec_run.trace.verify_steps),
                                          x=f"{spec_run.trace.tokens_per_pass:.2f}") in alts
    spec, plain = spec_run.trace, plain_run.trace
    assert spec.prompt == sp.example_prompt("zh") and spec.verify_steps and not plain.verify_steps
    assert sp.same_tokens(spec, plain) and spec.tokens_per_pass > 2  # the example repeats its prompt
    assert sp.summary(spec, plain, "zh") in texts(at, "markdown")
    assert sp.draft_cost_words(spec, "zh") in texts(at, "caption") and " ms ms" not in texts(at, "caption")
    at.number_input(key="spec_passes_guess").set_value(1)
    at.radio(key="spec_ratio_guess").set_value("no")
    at.button(key="spec_check").click().run()
    assert_healthy(at)
    passes, ratio = at.session_state["spec_grades"]
    assert passes.correct and ratio.measured == sp.grade_ratio(spec, plain, "no").measured
    feedback = texts(at, "info") + texts(at, "success")
    assert sp.grade_words(passes, "zh") in feedback and sp.grade_words(ratio, "zh") in feedback
    at.radio(key="lang").set_value("en").run()
    assert_healthy(at)
    assert t("en", "spec_title") in texts(at, "header") and sp.grade_words(passes, "en") in texts(at, "success")
    at.button(key="spec_run").click().run()  # the English example now
    assert_healthy(at)
    assert _runs(at)[0].trace.prompt == sp.example_prompt("en") and at.session_state["spec_grades"] is None


def test_a_k_the_engine_refuses_is_worded_in_the_pages_language():
    for k in (0, 99):
        try:
            spec_config(k, GenerationConfig())
        except InputError as err:
            assert "16" in error_message(err, "en") and "16" in error_message(err, "zh")
        else:
            raise AssertionError(f"k = {k} must be refused")


@needs_model
def test_the_classroom_and_the_presenter_step_through_a_verify_pass_as_verify_n(app):
    app.toggle(key="classroom").set_value(True).run()
    put_run(app, make_speculative_trace())  # prefill, verify, decode, verify, verify
    app.session_state["class_step"] = 2
    app.run()
    assert_healthy(app)
    progress = [p.proto.text for p in app.get("progress")]
    assert t("zh", "classroom_position", shown=2, total=5, phase="验证 1") in progress
    app.toggle(key="presenter").set_value(True).run()
    app.button(key="pres_next").click().run()
    assert_healthy(app)
    progress = [p.proto.text for p in app.get("progress")]
    assert t("zh", "classroom_position", shown=3, total=5, phase="Decode 2") in progress
    app.radio(key="lang").set_value("en").run()
    app.button(key="pres_next").click().run()
    progress = [p.proto.text for p in app.get("progress")]
    assert t("en", "classroom_position", shown=4, total=5, phase="Verify 3") in progress


@needs_model
def test_a_forged_k_is_said_and_set_back_and_my_prompt_runs_as_typed(app):
    app.session_state["spec_k"] = 99  # e.g. a session value no widget would take
    app.session_state["spec_source"] = "<b>forged</b>"
    read_on(app)
    assert_healthy(app)
    warnings = texts(app, "warning")
    assert t("zh", "err_length_range", name=t("zh", "spec_k"), value=99, clamped=16) in warnings
    assert app.session_state["spec_k"] == 16 and app.session_state["spec_source"] == "example"
    app.text_area(key="prompt").input("德国的首都是").run()
    app.radio(key="spec_source").set_value("yours")
    app.number_input(key="spec_k").set_value(2)
    app.button(key="spec_run").click().run()
    assert_healthy(app)
    spec, plain = (run.trace for run in _runs(app))
    assert spec.prompt == plain.prompt == "德国的首都是" and sp.same_tokens(spec, plain)
    assert all(len(s.draft_ids) <= 2 for s in spec.verify_steps)
