"""The trace's TTFT parts: choosing the first token timed on its own, and the
request's start on the wall clock; JSON that older traces and gallery runs without them still load."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from engine.contract.codec import convert
from engine.contract.trace import RequestTrace, TraceFormatError
from tests.factories import make_trace


def test_the_new_fields_round_trip_and_older_traces_load_without_them():
    trace = dataclasses.replace(make_trace(), first_token_choice_ms=0.25, started_at_s=1_764_000_000.5)
    again = RequestTrace.from_json(trace.to_json())
    assert again == trace and again.first_token_choice_ms == 0.25 and again.started_at_s == 1_764_000_000.5
    older = json.loads(trace.to_json())
    del older["first_token_choice_ms"], older["started_at_s"]  # written before these fields existed
    loaded = convert(older, RequestTrace)
    assert loaded.first_token_choice_ms is None and loaded.started_at_s is None
    assert loaded == make_trace()


@pytest.mark.parametrize("bad", [-1.0, "3", True, float("inf"), [1]])
def test_a_bad_value_is_refused_as_a_format_error(bad):
    data = json.loads(make_trace().to_json())
    data["first_token_choice_ms"] = bad
    with pytest.raises(TraceFormatError):
        convert(data, RequestTrace)


def test_gallery_runs_recorded_before_the_fields_still_load():
    from pathlib import Path

    from engine.contract.recorded import read_recorded

    lessons = sorted(Path("assets/gallery").rglob("lesson-*.json"))
    assert lessons, "the gallery holds recorded lesson runs"
    for path in lessons:
        data = path.read_text(encoding="utf-8")
        assert "first_token_choice_ms" not in data  # recorded before the field: it loads all the same
        run = read_recorded(data, max_bytes=len(data.encode()) + 1)
        assert run.kind == "trace"


@pytest.fixture(scope="module")
def tiny_llama(tiny_model_dirs):
    from engine.runtime.model import load_model

    return load_model(tiny_model_dirs["llama"], device="cpu")


def test_the_stream_times_the_first_tokens_choice_inside_prefill_and_its_wall_clock_start(tiny_llama):
    from engine.contract.results import GenerationConfig
    from engine.runtime.generation import stream_trace

    before = time.time()
    partials = list(stream_trace(tiny_llama, "The capital of France is", GenerationConfig(max_new_tokens=3)))
    after = time.time()
    first, final = partials[0], partials[-1]
    for trace in (first, final):  # known from the first pass on: the page draws it while the run streams
        assert trace.first_token_choice_ms is not None
        assert 0 <= trace.first_token_choice_ms <= trace.prefill.duration_ms
        assert before <= trace.started_at_s <= after
        # the first token, on the wall clock, was known before the stream returned
        assert trace.started_at_s + trace.prefill.end_ms / 1e3 <= after
    sampled = list(stream_trace(tiny_llama, "The capital", GenerationConfig(max_new_tokens=2, temperature=1.0)))[-1]
    assert 0 <= sampled.first_token_choice_ms <= sampled.prefill.duration_ms
