"""The two prefix-caching exercises (lesson/exercises.py): what they run and how they grade measured runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.contract.serving.trace import ServingRun
from lesson.exercises import BY_KEY, Context, ServeRun, grade

FIXTURE = Path(__file__).resolve().parents[1] / "serving" / "fixtures" / "prefix_near_miss_tight.json"


def near_miss() -> ServingRun:
    return ServingRun.from_json(FIXTURE.read_text(encoding="utf-8"))


def with_second_ttft(run: ServingRun, ttft_ms: float, cached: int = 0) -> ServingRun:
    r = run.requests[1]
    shift = r.arrival_ms + ttft_ms - r.first_token_ms
    prefix = dataclasses.replace(r.prefix, num_cached_tokens=cached, miss="" if cached else r.prefix.miss)
    moved = dataclasses.replace(r, first_token_ms=r.first_token_ms + shift, prefix=prefix,
                                token_times_ms=tuple(x + shift for x in r.token_times_ms),
                                finish_ms=r.finish_ms + shift)
    return dataclasses.replace(run, requests=(run.requests[0], moved, *run.requests[2:]))


def test_the_second_ttft_exercise_runs_the_scenario_with_and_without_the_cache():
    exercise = BY_KEY["prefix_second_ttft"]
    assert exercise.plan(Context(max_prompt_tokens=1024)) == (ServeRun("shared-system-prompt", "chunked"),
                                                              ServeRun("shared-system-prompt", "chunked", True))
    assert exercise.plan(Context(max_prompt_tokens=256)) == ()  # its prompts would be over the cap
    off, on = with_second_ttft(near_miss(), 400.0), with_second_ttft(near_miss(), 40.0, cached=176)
    right = grade(exercise, "smaller", [off, on])
    assert right.correct and right.params["cached"] == "176" and right.params["ratio"] == "10.0×"
    assert grade(exercise, "same", [off, with_second_ttft(near_miss(), 350.0)]).correct


def test_the_near_miss_exercise_grades_who_read_nothing_from_the_cache():
    exercise = BY_KEY["prefix_near_miss"]
    assert exercise.plan(Context()) == (ServeRun("near-miss", "chunked", True),)
    run = near_miss()  # under a one-request KV budget the third found the first's blocks evicted
    assert grade(exercise, "both", [run]).correct
    third = run.requests[2]
    hit = dataclasses.replace(third, prefix=dataclasses.replace(third.prefix, num_cached_tokens=176, miss=""))
    graded = grade(exercise, "second", [dataclasses.replace(run, requests=(*run.requests[:2], hit))])
    assert graded.correct and graded.params["k"] == "0" and graded.params["mine"] == "A"
    assert graded.params["cached"] == "Q" and graded.params["c3"] == "176"
