"""The speculative-decoding section's words and grades (lesson/speculative.py), from built traces, zh and en."""

from __future__ import annotations

import math

import pytest

from lesson import speculative as sp
from lesson.run_words import pass_phase
from lesson.text import t
from tests.factories import make_speculative_trace, make_trace

LANGS = ("zh", "en")
PLAIN = make_trace(output_pieces=tuple(f"o{i}" for i in range(8)), decode_ms=2.0)  # Decode steps of 2.0 ms


def test_the_exercise_quotes_a_pass_that_guessed_4_and_kept_3_and_grades_one_pass():
    spec = make_speculative_trace(((2, 1), (4, 3), (4, 4)))
    assert sp.quoted_pass(spec).index == 2
    right, wrong = sp.grade_passes(spec, 1), sp.grade_passes(spec, 4)
    assert right.correct and not wrong.correct
    assert right.params == {"n": "2", "drafted": "4", "kept": "3", "tokens": "4"}
    for lang in LANGS:
        assert "V2" in sp.grade_words(right, lang) and sp.grade_words(right, lang) != sp.grade_words(wrong, lang)


def test_without_a_4_3_pass_the_exercise_quotes_the_pass_that_kept_the_most():
    assert sp.quoted_pass(make_speculative_trace(((2, 1), (3, 3), (4, 0)))).index == 2
    assert sp.grade_passes(make_trace(), 1) is None  # no verify pass: nothing to grade from


@pytest.mark.parametrize(("verify_ms", "answer"), [(2.4, "no"), (12.0, "yes")])
def test_the_pass_cost_answer_follows_the_measured_ratio(verify_ms, answer):
    spec = make_speculative_trace(((4, 3), (2, 0), (4, 1)), verify_ms=verify_ms)
    x, positions = sp.pass_ratio(spec, PLAIN)
    assert positions == 5 and x == pytest.approx(verify_ms / 2.0)
    grade = sp.grade_ratio(spec, PLAIN, answer)
    assert grade.correct and grade.measured == answer and (x >= math.sqrt(5)) == (answer == "yes")
    assert not sp.grade_ratio(spec, PLAIN, "yes" if answer == "no" else "no").correct
    for lang in LANGS:
        assert f"{x:.2f}" in sp.grade_words(grade, lang) and f"{x:.2f}" in sp.ratio_words(spec, PLAIN, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_the_summary_says_whether_the_tokens_are_plain_decodes(lang):
    spec = make_speculative_trace()
    assert sp.same_tokens(spec, spec) and not sp.same_tokens(spec, PLAIN)
    assert sp.summary(spec, spec, lang).endswith(t(lang, "spec_same"))
    assert sp.summary(spec, PLAIN, lang).endswith(t(lang, "spec_differ"))
    assert f"{spec.tokens_per_pass:.2f}" in sp.summary(spec, spec, lang)
    assert sp.passes_after_prefill(spec) == 4


def test_the_answer_pieces_are_escaped_markdown():
    trace = make_trace(output_pieces=("*bold*", "<b>"))
    assert "*" not in sp.pieces(trace).replace("\\*", "") and "<b>" not in sp.pieces(trace)


def test_the_stepping_names_a_verify_pass_verify_n():
    spec = make_speculative_trace()  # prefill, verify, decode, verify, verify
    assert [pass_phase(spec, shown, "en") for shown in range(1, 6)] == [
        "Prefill", "Verify 1", "Decode 2", "Verify 3", "Verify 4"]
    assert pass_phase(spec, 2, "zh") == "验证 1" and pass_phase(spec, 3, "zh") == "Decode 2"
    assert pass_phase(spec, 99, "zh") == "验证 4"  # past the end: the last pass


def test_a_newline_piece_is_shown_not_broken():
    assert sp.pieces(make_trace(output_pieces=("a\n", "b"))) == "a⏎ │ b"


@pytest.mark.parametrize("lang", LANGS)
def test_the_drafters_own_time_is_said(lang):
    spec = make_speculative_trace(((4, 3), (2, 0)))  # each verify pass drafted in 0.05 ms
    assert "0.10" in sp.draft_cost_words(spec, lang) and sp.draft_cost_words(make_trace(), lang) is None


@pytest.mark.parametrize("lang", LANGS)
def test_a_run_without_a_4_3_pass_says_which_pass_it_quotes(lang):
    exact = sp.grade_passes(make_speculative_trace(((4, 3),)), 1)
    nearest = sp.grade_passes(make_speculative_trace(((4, 4),)), 1)
    assert t(lang, "spec_ex_passes_other") not in sp.grade_words(exact, lang)
    assert sp.grade_words(nearest, lang).endswith(t(lang, "spec_ex_passes_other"))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(("verify_ms", "measured"), [(2.4, "no"), (12.0, "yes")])
def test_the_pass_cost_answer_says_why_as_measured(lang, verify_ms, measured):
    grade = sp.grade_ratio(make_speculative_trace(((4, 3),), verify_ms=verify_ms), PLAIN, "yes")
    assert sp.grade_words(grade, lang).endswith(t(lang, f"spec_ex_ratio_why_{measured}"))


@pytest.mark.parametrize("lang", LANGS)
def test_a_wrong_pass_cost_answer_names_the_measured_one(lang):
    spec = make_speculative_trace(((4, 3),), verify_ms=12.0)  # 6x a Decode step: "yes"
    words = sp.grade_words(sp.grade_ratio(spec, PLAIN, "no"), lang)
    assert f"“{t(lang, 'spec_ex_yes')}”" in words and "{" not in words
