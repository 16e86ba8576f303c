"""The trace contract: JSON round trips, metric formulas, and what the stream measures."""

from __future__ import annotations

import dataclasses
import gc
import json
import threading
import time

import pytest

from engine.contract.codec import convert
from engine.contract.trace import SCHEMA_VERSION, RequestTrace, Step, TraceFormatError, compute_metrics, step_rows
from tests.factories import make_long_trace, make_trace


def test_json_round_trip_is_exact():
    trace = make_trace()
    again = RequestTrace.from_json(trace.to_json())
    assert again == trace
    assert again.to_json() == trace.to_json()


def test_sliding_window_fields_round_trip_and_older_traces_still_load():
    from tests.factories import SLIDING_MODEL

    sliding = make_trace(model=SLIDING_MODEL)
    assert RequestTrace.from_json(sliding.to_json()).model == SLIDING_MODEL
    older = json.loads(make_trace().to_json())  # a schema-1 trace written before the window fields existed
    for name in ("sliding_window", "num_sliding_layers"):
        del older["model"][name]
    assert convert(older, RequestTrace) == make_trace()


@pytest.mark.parametrize("fields", [
    {"sliding_window": 8}, {"num_sliding_layers": 2}, {"sliding_window": 8, "num_sliding_layers": 5},
])
def test_model_info_rejects_half_a_sliding_window(fields):
    data = json.loads(make_trace().to_json())
    data["model"].update(fields)  # the synthetic model has 4 layers
    with pytest.raises(TraceFormatError):
        convert(data, RequestTrace)


def test_json_is_plain_and_readable():
    data = json.loads(make_trace().to_json())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["steps"][0]["phase"] == "prefill"
    assert data["derived"]["output_pieces"] == ["巴黎", "。"]
    assert "巴黎" in make_trace().to_json()  # not \\u-escaped: readable in an editor


def test_metrics_follow_vllm_definitions():
    # tokens appear at 10, 12, 15, 19 ms after the request started
    m = compute_metrics([10.0, 12.0, 15.0, 19.0])
    assert m.ttft_ms == 10.0 and m.e2el_ms == 19.0
    assert m.itl_ms == (2.0, 3.0, 4.0)
    assert m.tpot_ms == pytest.approx((19.0 - 10.0) / 3)
    assert m.mean_itl_ms == pytest.approx(3.0)


def test_one_token_has_no_tpot():
    m = compute_metrics([7.5])
    assert m.ttft_ms == m.e2el_ms == 7.5 and m.tpot_ms is None and m.itl_ms == () and m.mean_itl_ms is None


def test_metrics_recomputed_from_step_times():
    trace = make_trace(("a", "b", "c"), ("x", "y", "z", "w"))
    ends = [s.end_ms for s in trace.steps]
    m = trace.metrics
    assert m.ttft_ms == ends[0] and m.e2el_ms == ends[-1]
    assert m.itl_ms == pytest.approx([b - a for a, b in zip(ends, ends[1:])])
    assert m.tpot_ms == pytest.approx(sum(m.itl_ms) / len(m.itl_ms))


def test_derived_views():
    trace = make_trace()
    assert trace.prompt_len == 4 and trace.output_pieces == ("巴黎", "。")
    assert trace.prefill.num_positions == 4 and [s.num_positions for s in trace.decode_steps] == [1]
    assert list(trace.steps[1].positions) == [4]
    assert trace.kv_bytes == trace.model.kv_bytes_for(5)


@pytest.mark.parametrize("bad", ["[]", "{}", "not json", json.dumps({"schema_version": 999})])
def test_bad_json_is_refused_with_a_format_error(bad):
    with pytest.raises(TraceFormatError):
        RequestTrace.from_json(bad)


def test_step_rejects_unknown_phase_and_inconsistent_positions():
    step = make_trace().steps[0]
    fields = {f: getattr(step, f) for f in step.__dataclass_fields__}
    with pytest.raises(TraceFormatError):
        Step(**{**fields, "phase": "chunked"})
    with pytest.raises(TraceFormatError):
        Step(**{**fields, "context_after": step.context_after + 1})


def test_step_rows_one_per_pass():
    rows = step_rows(make_long_trace(100, 20))
    assert len(rows) == 20 and rows[0]["new_positions"] == 100 and rows[1]["positions"] == "100..100"


# ---------------------------------------------------------------------------
# ITL spread, what each wait is made of, and how the stream builds its traces
# ---------------------------------------------------------------------------

def test_itl_spread_from_hand_made_timestamps():
    # tokens at 5, 15, 17, 20, 24, 35 ms -> gaps 10, 2, 3, 4, 11 (sorted: 2, 3, 4, 10, 11)
    m = compute_metrics([5.0, 15.0, 17.0, 20.0, 24.0, 35.0])
    assert m.itl_ms == (10.0, 2.0, 3.0, 4.0, 11.0)
    assert m.tpot_ms == m.mean_itl_ms == 6.0  # (35 - 5) / 5: for one request always the same number
    assert m.p50_itl_ms == 4.0  # the middle one of five
    assert m.p90_itl_ms == pytest.approx(10.6)  # rank 0.9 x 4 = 3.6: 60 % of the way from 10 to 11
    assert m.p99_itl_ms == pytest.approx(10.96)  # rank 3.96
    assert m.max_itl_ms == 11.0
    assert m.spread() == {"p50_itl_ms": 4.0, "p90_itl_ms": m.p90_itl_ms, "p99_itl_ms": m.p99_itl_ms,
                          "max_itl_ms": 11.0}


def test_percentile_ends_ties_and_refusals():
    from engine.contract.trace import percentile

    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 0) == 1.0 and percentile([3.0, 1.0, 2.0], 100) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5  # between the two middle values
    assert percentile([2.0, 2.0, 9.0], 50) == 2.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)
    one = compute_metrics([7.5])
    assert one.p50_itl_ms is None and one.p99_itl_ms is None and one.max_itl_ms is None


def test_percentile_interpolates_between_ranks_as_vllm_reports_it():
    """vLLM's rule (numpy's default): rank (n - 1) * p / 100, linear between its neighbours; a nearest-rank
    percentile (bench/classroom.py's) would give 50 for both."""
    from engine.contract.trace import percentile

    values = [50.0, 10.0, 40.0, 20.0, 30.0]
    assert percentile(values, 90) == pytest.approx(46.0) and percentile(values, 99) == pytest.approx(49.6)
    assert percentile(values, 25) == 20.0 and isinstance(percentile(values, 25), float)


def _with_times(trace, times):
    """The trace with each step's (start_ms, end_ms, consumer_ms, lock_wait_ms) replaced."""
    steps = tuple(
        dataclasses.replace(s, start_ms=a, end_ms=b, consumer_ms=c, lock_wait_ms=w)
        for s, (a, b, c, w) in zip(trace.steps, times)
    )
    return dataclasses.replace(trace, steps=steps)


def test_latency_parts_split_each_wait_from_hand_made_timestamps():
    trace = _with_times(make_trace(("a", "b"), ("x", "y", "z")), [
        (1.5, 4.0, 0.0, 0.5),  # Prefill: 1.5 ms before it (0.5 queued for the lock), a 2.5 ms pass
        (7.0, 9.0, 2.5, 0.25),  # the page drew 2.5 ms after token 1, then 0.25 ms queued, a 2 ms pass
        (9.5, 11.0, 0.0, 0.0),  # 0.5 ms of bookkeeping, a 1.5 ms pass
    ])
    first, second, third = trace.latency_parts()
    assert (first.pass_ms, first.consumer_ms, first.lock_wait_ms, first.other_ms) == (2.5, 0.0, 0.5, 1.0)
    assert (second.pass_ms, second.consumer_ms, second.lock_wait_ms, second.other_ms) == (2.0, 2.5, 0.25, 0.25)
    assert (third.pass_ms, third.consumer_ms, third.lock_wait_ms, third.other_ms) == (1.5, 0.0, 0.0, 0.5)
    m = trace.metrics
    assert (first.total_ms, second.total_ms, third.total_ms) == (4.0, 5.0, 2.0)
    assert m.ttft_ms == 4.0 and m.itl_ms == (5.0, 2.0)  # the parts add up to the metrics


def test_version_1_traces_load_with_waits_unrecorded():
    data = json.loads(make_trace().to_json())
    data["schema_version"] = 1
    for step in data["steps"]:
        del step["lock_wait_ms"], step["consumer_ms"]
    old = convert(data, RequestTrace)
    assert old.schema_version == SCHEMA_VERSION
    assert all(s.lock_wait_ms == 0.0 and s.consumer_ms == 0.0 for s in old.steps)
    assert json.loads(make_trace().to_json())["derived"]["metrics"]["p99_itl_ms"] == 2.0


def test_steps_so_far_is_a_fixed_prefix_of_a_growing_list():
    import copy
    import pickle

    from engine.contract.trace import StepsSoFar

    steps = list(make_trace(("a",), ("x", "y", "z")).steps)
    backing = steps[:2]
    view = StepsSoFar(backing)
    backing.append(steps[2])  # the stream appends after handing the view out: the view must not change
    assert len(view) == 2 and view == tuple(steps[:2]) and tuple(steps[:2]) == view and view != tuple(steps)
    assert view[-1] is steps[1] and view[0] is steps[0] and view[:5] == tuple(steps[:2]) and list(view) == steps[:2]
    with pytest.raises(IndexError):
        view[2]
    assert view + (steps[2],) == tuple(steps)
    assert type(copy.deepcopy(view)) is tuple and type(pickle.loads(pickle.dumps(view))) is tuple
    partial = dataclasses.replace(make_trace(("a",), ("x", "y", "z")), steps=view)
    assert RequestTrace.from_json(partial.to_json()).steps == view
    assert partial.output_pieces == ("x", "y") and partial.metrics.itl_ms == pytest.approx((2.0,))
    with pytest.raises(ValueError):
        StepsSoFar(backing, 4)


# --- the stream, on a tiny random model ---

@pytest.fixture(scope="module")
def tiny_llama(tiny_model_dirs):
    from engine.runtime.model import load_model

    return load_model(tiny_model_dirs["llama"], device="cpu")


def test_stream_shares_one_step_list_instead_of_copying_it(tiny_llama):
    from engine.contract.results import GenerationConfig
    from engine.contract.trace import StepsSoFar
    from engine.runtime.generation import stream_trace

    n = 24
    partials = list(stream_trace(tiny_llama, "The capital of France is",
                                 GenerationConfig(max_new_tokens=n, ignore_eos=True)))
    final = partials[-1]
    assert [len(p.steps) for p in partials] == list(range(1, n + 1)) and type(final.steps) is tuple
    for i, p in enumerate(partials):
        assert p.steps == final.steps[: i + 1] and p.finished == (i == n - 1)
    views = [p.steps for p in partials[:-1]]
    assert all(isinstance(v, StepsSoFar) for v in views)  # views, not tuples: one list, counted below
    # Count element copies: tuples that hold each step. Copying the steps into a new tuple
    # per yield puts step k into n - k tuples (300 for n = 24); sharing one list, into one.
    gc.collect()
    copies = sum(sum(isinstance(r, tuple) for r in gc.get_referrers(step)) for step in final.steps)
    assert copies <= 2 * n, copies


class StillClock:
    """A clock that stands still until a test moves it: the stream's times are then exactly what the test
    made happen (a caller that held the loop, a lock held by another visitor), never what load did."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def time(self) -> float:
        return time.time()

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def still_clock(monkeypatch):
    """The engine's clock (generation's perf_counter and the device clock) replaced by a StillClock."""
    from engine.runtime import generation

    clock = StillClock()
    monkeypatch.setattr(generation, "time", clock)
    monkeypatch.setattr(generation, "device_clock", lambda device: clock.perf_counter())
    return clock


def test_the_callers_time_between_passes_is_its_own_slice(tiny_llama, still_clock):
    from engine.contract.results import GenerationConfig
    from engine.runtime.generation import stream_trace

    stream = stream_trace(tiny_llama, "The capital of France is", GenerationConfig(max_new_tokens=4, ignore_eos=True))
    next(stream)  # Prefill is done; the caller now "draws the page" for 250 ms
    still_clock.advance(0.25)
    trace = list(stream)[-1]
    prefill, first_decode = trace.steps[0], trace.steps[1]
    assert [s.consumer_ms for s in trace.steps] == [0.0, 250.0, 0.0, 0.0]  # the drawing, in the next step only
    assert first_decode.start_ms - prefill.end_ms == first_decode.consumer_ms  # the pass began after it
    parts = trace.latency_parts()[1]
    assert parts.total_ms == trace.metrics.itl_ms[0] == 250.0  # ITL includes the page's time ...
    assert parts.pass_ms == first_decode.duration_ms == 0.0 and parts.other_ms == 0.0  # ... the pass time does not


class _HeldLock:
    """A real lock; while `held` (another visitor's pass holds the model), acquiring it takes `wait_s` on
    the still clock, as a request queued behind that pass would wait."""

    def __init__(self, clock: StillClock, wait_s: float) -> None:
        self._lock, self.clock, self.wait_s, self.held = threading.Lock(), clock, wait_s, False
        self.acquired = 0

    def __enter__(self):
        if self.held:
            self.clock.advance(self.wait_s)
            self.held = False  # the other pass is done: later passes find the model free
        self._lock.acquire()
        self.acquired += 1
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()


def test_lock_wait_is_only_the_time_queued_for_the_model(tiny_llama, still_clock):
    from engine.contract.results import GenerationConfig
    from engine.runtime.generation import generate

    cfg = GenerationConfig(max_new_tokens=3, ignore_eos=True)
    lock = _HeldLock(still_clock, 0.5)
    lm = dataclasses.replace(tiny_llama, lock=lock)
    alone = generate(lm, "The capital of France is", cfg)
    assert [s.lock_wait_ms for s in alone.steps] == [0.0, 0.0, 0.0] and lock.acquired == 3  # nobody else
    lock.held = True  # another visitor's pass holds the model until 500 ms after our request asks for it
    queued = generate(lm, "The capital of France is", cfg)
    assert [s.lock_wait_ms for s in queued.steps] == [500.0, 0.0, 0.0]  # the lock wait: no tokenizing, no pieces
    assert queued.steps[0].start_ms - queued.tokenize_ms == 500.0  # the Prefill began once the lock was free


def test_setup_is_kept_out_of_the_requests_clock(tiny_llama, still_clock, monkeypatch):
    """A runner built for the request (a static cache, a compile) is paid before the request's clock starts:
    the trace says how long in engine_setup_ms, and TTFT and every step's times leave it out."""
    from engine.contract.results import GenerationConfig
    from engine.runtime.generation import generate

    acquire = tiny_llama.runners.acquire

    def slow_build(*args, **kwargs):
        still_clock.advance(4.0)  # the build: 4 s on the still clock
        return acquire(*args, **kwargs)

    monkeypatch.setattr(tiny_llama.runners, "acquire", slow_build)
    trace = generate(tiny_llama, "The capital of France is", GenerationConfig(max_new_tokens=3, mode="static"))
    assert trace.engine_setup_ms == 4000.0
    assert trace.metrics.ttft_ms == 0.0 and all(s.start_ms == s.end_ms == 0.0 for s in trace.steps)
