"""Predict, then measure: every grader on synthetic runs against answers computed by hand."""

from __future__ import annotations

import dataclasses

import pytest

from lesson import exercises as ex
from lesson.exercises import BY_KEY, EXERCISES, Choice, Context, Grade, Number, NotGradable, grade
from lesson.text import LANGUAGES, TEXTS, t
from tests.factories import TINY_MODEL, fake_comparison, make_run, make_sweep_at, make_trace

# TINY_MODEL: 2 (K and V) x 4 layers x 2 KV heads x 32 dims x 4 bytes = 2048 bytes per position
SHORT = make_trace(("法国", "的", "首都", "是"), tuple(f"o{i}" for i in range(8)))
# tokenize 0.3 + Prefill (1 + 0.5 x 4) = TTFT 3.3 ms; 1024 positions: 0.3 + 1 + 512 = 513.3 ms; TPOT 2.0 ms both
LONG = make_trace(tuple(f"p{i}" for i in range(1024)), tuple(f"o{i}" for i in range(8)))


def with_p99(run, p99_ms: float):
    return dataclasses.replace(run, metrics=dataclasses.replace(
        run.metrics, itl=dataclasses.replace(run.metrics.itl, p99=p99_ms)))


def test_there_are_at_least_eight_in_the_lessons_order_with_unique_keys():
    assert len(EXERCISES) >= 8 and len(BY_KEY) == len(EXERCISES)
    order = ["timeline", "decode", "bottleneck", "waits", "many"]
    sections = [order.index(e.section) for e in EXERCISES]
    assert sections == sorted(sections)
    assert {type(e.form) for e in EXERCISES} == {Choice, Number}


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_every_exercise_is_worded_in_both_languages(exercise, lang):
    keys = [f"ex_{exercise.key}_{part}" for part in ("title", "q", "rule", "explain")]
    if isinstance(exercise.form, Choice):
        keys += [f"ex_{exercise.key}_opt_{o}" for o in exercise.form.options]
    else:
        keys.append(f"ex_unit_{exercise.form.unit}")
    assert all(key in TEXTS[lang] for key in keys)
    assert exercise.lesson_key in TEXTS[lang]
    text = ex.question(exercise, lang, Context(model=TINY_MODEL))
    assert "{" not in text  # every number the question quotes is filled in


def test_the_first_answer_token_comes_from_prefill():
    exercise = BY_KEY["first_token_phase"]
    right = grade(exercise, "prefill", [SHORT])
    assert right.correct and right.measured == "prefill" and right.params["positions"] == "4"
    assert not grade(exercise, "decode", [SHORT]).correct
    with pytest.raises(ValueError):
        grade(exercise, "both", [SHORT])


def test_an_answer_of_eight_tokens_has_seven_decode_steps_of_one_position():
    passes = grade(BY_KEY["decode_passes"], 7, [SHORT])
    assert passes.correct and passes.measured == 7.0 and passes.low == passes.high == 7.0
    assert not grade(BY_KEY["decode_passes"], 8, [SHORT]).correct
    positions = grade(BY_KEY["decode_positions"], 1, [SHORT])
    assert positions.correct and positions.params["first"] == "4" and positions.params["last"] == "10"
    assert not grade(BY_KEY["decode_positions"], 4, [SHORT]).correct


def test_kv_bytes_of_32_more_tokens_are_read_from_the_cache_tensors():
    trace = make_trace(("a",) * 4, tuple(f"o{i}" for i in range(33)))  # Prefill, then 32 more positions
    exercise = BY_KEY["kv_bytes_more"]
    result = grade(exercise, 64, [trace])  # 32 x 2048 bytes = 64 KiB
    assert result.correct and result.measured == 64.0
    assert result.params["grown"] == "64.0 KiB" and result.params["per_token"] == "2.0 KiB"
    assert result.params["hand"] == "64.0 KiB"
    assert grade(exercise, 62, [trace]).correct and not grade(exercise, 60, [trace]).correct  # within 5 %
    params = exercise.question_params(Context(model=TINY_MODEL))
    shape = (params["extra"], params["layers"], params["kv_heads"], params["head_dim"], params["bytes"])
    assert shape == (32, 4, 2, 32, 4)
    assert exercise.plan(Context(max_new_tokens=10)) == (ex.TraceRun(0, 10),)  # a lower cap: 9 more tokens


def test_cache_off_flops_ratio_and_the_count_by_positions():
    # off: 1e6 x (5 + t), t = 0..5 -> 45e6; on: 5e6 + 5 x 2e5 = 6e6 -> 7.5x; positions: (6 x 5 + 15) / 10 = 4.5x
    result = grade(BY_KEY["cache_off_flops"], 7.5, [fake_comparison(num_steps=6, prompt_len=5)])
    assert result.correct and result.measured == pytest.approx(7.5)
    assert result.params["estimate"] == "4.5×" and result.params["ratio"] == "7.5×"
    assert (result.low, result.high) == pytest.approx((5.0, 11.25))  # a factor of 1.5 either way
    assert grade(BY_KEY["cache_off_flops"], 5.1, [fake_comparison(num_steps=6, prompt_len=5)]).correct
    assert not grade(BY_KEY["cache_off_flops"], 4.9, [fake_comparison(num_steps=6, prompt_len=5)]).correct
    assert ex.cache_off_estimate(32, 16) == pytest.approx((16 * 32 + 120) / 47)


@pytest.mark.parametrize("long_ms, expected", [(5.0, "much"), (3.0, "little"), (2.2, "same"), (1.5, "same")])
def test_a_decode_step_against_its_context(long_ms, expected):
    sweep = make_sweep_at("decode-context", {8: 2.0, 512: long_ms})  # 2.5x, 1.5x, 1.1x, 0.75x
    result = grade(BY_KEY["decode_step_context"], expected, [sweep])
    assert result.correct and result.measured == expected


def test_batching_eight_decode_steps():
    sweep = make_sweep_at("decode-batch", {1: 2.0, 8: 4.0})  # 500 tokens/s alone, 2000 batched: 4x
    result = grade(BY_KEY["batch_throughput"], 4, [sweep])
    assert result.correct and result.params["one_rate"] == "500" and result.params["many_rate"] == "2,000"
    assert grade(BY_KEY["batch_throughput"], 8, [sweep]).correct is False  # 4 x 1.5 = 6 at most
    with pytest.raises(NotGradable):
        grade(BY_KEY["batch_throughput"], 4, [make_sweep_at("decode-batch", {1: 2.0})])


def test_a_long_prompt_grows_ttft_far_more_than_tpot():
    result = grade(BY_KEY["ttft_vs_tpot"], "ttft", [SHORT, LONG])
    assert result.correct and result.params["ttft_short"] == "3.3 ms" and result.params["ttft_long"] == "513 ms"
    assert result.params["tpot_ratio"] == "1.0×" and result.params["long_len"] == "1024"
    growth = grade(BY_KEY["ttft_growth"], 100, [SHORT, LONG])  # 513.3 / 3.3 = 155.5x; a factor of 2: 77.8..311
    assert growth.correct and growth.measured == pytest.approx(513.3 / 3.3)
    assert not grade(BY_KEY["ttft_growth"], 70, [SHORT, LONG]).correct


def test_tpot_growing_more_and_both_alike_are_graded_too():
    slow_decode = make_trace(("a",) * 1024, ("x",) * 8, prefill_ms_per_position=0.0, decode_ms=10.0)
    assert grade(BY_KEY["ttft_vs_tpot"], "tpot", [SHORT, slow_decode]).correct  # TTFT 3.3 -> 1.3, TPOT 2 -> 10
    both = make_trace(("a",) * 4, ("x",) * 8, prefill_ms_per_position=2.0, tokenize_ms=0.6, decode_ms=4.0)
    assert grade(BY_KEY["ttft_vs_tpot"], "same", [SHORT, both]).correct  # TTFT 3.3 -> 9.6, TPOT 2 -> 4


@pytest.mark.parametrize("first_ms, chunked_ms, expected",
                         [(40.0, 10.0, "prefill_first"), (10.0, 10.5, "same"), (5.0, 10.0, "chunked")])
def test_p99_itl_of_a_long_prompt_under_prefill_first_and_chunked(first_ms, chunked_ms, expected):
    runs = [with_p99(make_run(policy="prefill-first"), first_ms), with_p99(make_run(policy="chunked"), chunked_ms)]
    assert grade(BY_KEY["p99_itl"], expected, runs).correct


def test_the_synthetic_long_prompt_stalls_prefill_first_more():
    runs = [make_run(policy="prefill-first"), make_run(policy="chunked")]
    assert BY_KEY["p99_itl"].measure(runs).value == "prefill_first"


def test_plans_follow_the_servers_caps():
    ctx = Context(max_prompt_tokens=256, max_new_tokens=4, sweep_max_positions=128, sweep_max_batch=1, model=TINY_MODEL)
    assert BY_KEY["ttft_growth"].plan(ctx) == (ex.TraceRun(0, 4), ex.TraceRun(256, 4))
    assert BY_KEY["decode_step_context"].plan(ctx) == (ex.SweepRun("decode-context", (8, 128)),)
    assert BY_KEY["batch_throughput"].plan(ctx) == ()  # a batch of one cannot be compared with itself
    assert BY_KEY["cache_off_flops"].plan(ctx) == (ex.CacheRun(32, 4),)
    assert BY_KEY["kv_bytes_more"].plan(Context(max_new_tokens=1)) == ()


def test_number_tolerances():
    assert Number("kib", rel_tol=0.05).accepted(100.0) == (95.0, 105.0)
    assert Number("times", factor=2.0).accepted(10.0) == (5.0, 20.0)
    assert Number("passes", exact=True).accepted(6.6) == (7.0, 7.0)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_verdict_and_explanation_quote_the_measured_numbers_and_the_lesson(lang):
    exercise = BY_KEY["ttft_growth"]
    result = grade(exercise, 100, [SHORT, LONG])
    said = ex.verdict(exercise, result, lang)
    assert said.startswith(t(lang, "ex_right", answer="", measured="")[:6]) and "156" in said
    measured, lesson = ex.explanation(exercise, result, lang)
    assert "513 ms" in measured and "3.3 ms" in measured and "{" not in measured
    assert "[[" not in lesson and "](#" not in lesson  # the lesson's sentence as plain text


def test_progress_counts_graded_exercises():
    right = Grade("a", 1.0, 1.0, True)
    wrong = Grade("b", 2.0, 1.0, False)
    assert ex.progress({"a": right, "b": wrong, "c": None}) == (2, 1)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_question_sheet_holds_every_question_and_its_key(lang):
    sheet = ex.question_sheet(lang, Context(model=TINY_MODEL))
    for number, exercise in enumerate(EXERCISES, start=1):
        assert f"## {number}. {ex.title(exercise, lang)}" in sheet
    assert t(lang, "ex_sheet_key") in sheet and "{" not in sheet
    assert t(lang, "ex_p99_itl_opt_chunked") in sheet and t(lang, "ex_unit_kib") in sheet
    without = ex.question_sheet(lang, Context(model=TINY_MODEL), with_key=False)
    assert t(lang, "ex_sheet_key") not in without
