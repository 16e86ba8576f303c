"""The worker's queue with real runs (engine/runtime/worker/queue.py through server.py and jobs.py).

What it proves:
- a lesson run sent during a serving run is told it waits (queued, 1 ahead: the page then says it
  waited), runs between two of the serving run's iterations (not after the whole run), and no
  forward pass of either overlaps another (every pass's start and end recorded in real time);
- pausing a serving run changes none of its numbers: with a clock that only moves inside forward
  passes (and by ten seconds in each pause), every iteration's times and tokens are the same with and
  without pauses;
- three identical serving labs are one measurement (each gets the same run and "measured once for
  3 visitors"); a different policy, or a sampled run with another seed, is measured on its own;
- the queue's history reaches the client, with kinds and pauses and no visitor named.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from types import SimpleNamespace

import pytest

from engine.contract.results import GenerationConfig
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.trace import ServingRun
from engine.contract.serving.workloads import WorkloadRequest, questions
from engine.contract.worker.client import EngineClient, Queued, Shared
from engine.contract.codec import to_plain
from engine.contract.worker.protocol import ModelRef
from engine.runtime.serving import core as serving_core
from engine.runtime.serving import engine as serving_engine
from engine.runtime.serving.engine import run_workload
from engine.runtime.worker.jobs import MEASURED, run_serve
from engine.runtime.worker.models import WorkerSettings
from engine.runtime.worker.server import start_in_thread
from tests.factories import Gate

DEFAULT = ModelRef("default", "cpu", "auto")
WAIT_S = 120.0
REQUESTS = [WorkloadRequest(0.0, q, 6, ignore_eos=True) for q in questions()[:3]]


class GatedServe:
    """A serving run that stops at its first unit boundary until the test lets it go on (so a lesson
    run is surely queued while it runs), then yields as the worker's serving run does."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, ctx, args):
        def between() -> None:
            if not self.entered.is_set():
                self.entered.set()
                assert self.release.wait(WAIT_S)
            ctx.between_units()
        return run_serve(dataclasses.replace(ctx, between_units=between), args)


@pytest.fixture(scope="module")
def served():
    key = secrets.token_hex(16).encode()
    gate, gated = Gate(), GatedServe()
    running = start_in_thread(key, WorkerSettings(presets=False, max_prompt_tokens=64),
                              measured={**MEASURED, "gate": gate, "serve_gated": gated})
    client = EngineClient(running.address, key)
    client.load(DEFAULT)
    yield SimpleNamespace(worker=running.worker, client=client, gate=gate, gated=gated)
    gate.opened.set()
    gated.release.set()
    running.close()


def wait_for(condition, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def serve_args(policy: str = "chunked") -> dict:
    return {"model": DEFAULT.to_wire(), "requests": [to_plain(r) for r in REQUESTS],
            "config": {"policy": policy, "token_budget": 16}, "scenario": "test"}


def record_passes(served) -> tuple[list, list]:
    """(start, end, method) of every forward pass of the worker's model from now on, in real time."""
    lm = served.worker.models.loaded(DEFAULT)
    passes, open_pass = [], {}

    def before(module, inputs):
        open_pass["start"] = time.perf_counter()

    def after(module, inputs, output):
        passes.append((open_pass.pop("start"), time.perf_counter(), served.worker.queue.running.method))

    return passes, [lm.model.register_forward_pre_hook(before), lm.model.register_forward_hook(after)]


def test_a_lesson_run_during_a_serving_run_goes_between_its_iterations_and_overlaps_nothing(served, default_lm):
    passes, handles = record_passes(served)
    result = {}
    serving = threading.Thread(target=lambda: result.setdefault("events", list(
        served.client.call("serve_gated", serve_args()))), daemon=True)
    try:
        serving.start()
        assert served.gated.entered.wait(WAIT_S)  # the serving run is between two of its iterations
        lesson = served.client.stream_repeats(DEFAULT, "法国的首都是", GenerationConfig(max_new_tokens=4,
                                                                                       ignore_eos=True), repeats=3)
        assert next(lesson) == Queued(ahead=1)  # told it waits: only the serving run is before it
        served.gated.release.set()
        rest = list(lesson)
        serving.join(WAIT_S)
    finally:
        for handle in handles:
            handle.remove()
    runs = rest[-1].result
    assert len(runs) == 3 and all(r.finished for r in runs)
    ordered = sorted(passes)
    assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:]))  # no pass overlaps another
    serving_passes = [p for p in ordered if p[2] == "serve_gated"]
    lesson_passes = [p for p in ordered if p[2] == "trace_repeats"]
    assert len(lesson_passes) == 3 * 4
    assert serving_passes[0][1] <= lesson_passes[0][0] and lesson_passes[-1][1] <= serving_passes[-1][0]
    run = ServingRun.from_json(dict(result["events"])["done"]["result"])
    expected = run_workload(default_lm, REQUESTS, ServeConfig(policy="chunked", token_budget=16), scenario="test")
    assert [r.output_ids for r in run.requests] == [r.output_ids for r in expected.requests]
    # the page's queue note: a run that heard "1 ahead" says it waited (app_support/frame.py QueuePlace)
    from app_support.frame import QueuePlace

    place = QueuePlace("en", slot=SimpleNamespace(info=lambda *a, **k: None, empty=lambda: None))
    place(Queued(ahead=1))
    assert place.waited == 1
    history = served.client.queue_history()
    serving_job = [j for j in history.jobs if j.kind == "other" and j.lane == "long"][-1]
    assert len(serving_job.pauses) == 1 and serving_job.outcome == "done"
    assert [j.kind for j in history.jobs if j.kind == "lesson"]


class FakeClock:
    """Time that moves only inside forward passes (5 ms each) and in pauses (10 s each)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self, *args) -> float:
        return self.now


def timeline(run: ServingRun) -> list:
    return [(round(it.start_ms, 6), round(it.end_ms, 6), tuple((e.request_id, e.phase, e.start, e.end, e.output_id)
                                                            for e in it.entries)) for it in run.iterations]


def test_pauses_move_no_number_of_a_serving_run(default_lm, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(serving_core, "device_clock", clock)
    monkeypatch.setattr(serving_engine, "time", SimpleNamespace(perf_counter=clock, sleep=time.sleep))
    handle = default_lm.model.register_forward_hook(lambda *a: setattr(clock, "now", clock.now + 0.005))
    workload = [WorkloadRequest(0.0, questions()[0], 12, ignore_eos=True),
                WorkloadRequest(7.0, questions()[1], 6, ignore_eos=True, prompt_tokens=40),
                WorkloadRequest(13.0, questions()[2], 6, ignore_eos=True)]
    config = ServeConfig(policy="chunked", token_budget=16)
    pauses = []

    def pause() -> None:  # another visitor's lesson run: ten seconds on the wall clock
        pauses.append(clock.now)
        clock.now += 10.0

    try:
        plain = run_workload(default_lm, workload, config, scenario="test")
        paused = run_workload(default_lm, workload, config, scenario="test", between_units=pause)
    finally:
        handle.remove()
    assert len(pauses) == len(paused.iterations)  # a pause after every pass
    assert timeline(paused) == timeline(plain)
    assert [[round(t, 6) for t in r.token_times_ms] for r in paused.requests] == \
        [[round(t, 6) for t in r.token_times_ms] for r in plain.requests]
    assert paused.wall_ms == pytest.approx(plain.wall_ms)


def test_three_identical_labs_are_measured_once(served):
    served.gate.reset()
    hold = threading.Thread(target=lambda: list(served.client.call("gate", {})), daemon=True)
    hold.start()
    assert served.gate.entered.wait(WAIT_S)
    heard = [[] for _ in range(4)]
    runs = [None] * 4
    configs = [ServeConfig(policy="chunked", token_budget=16)] * 3 + [ServeConfig(policy="prefill-first")]

    def lab(i: int) -> None:
        runs[i] = served.client.serve_workload(DEFAULT, REQUESTS, configs[i], scenario="test", on_event=heard[i].append)

    labs = [threading.Thread(target=lab, args=(i,), daemon=True) for i in range(4)]
    for t in labs:
        t.start()
    wait_for(lambda: all(any(isinstance(e, Queued) for e in h) for h in heard))
    assert len(served.worker.queue) == 3  # the gate, the three identical labs as one, the other policy
    sampled = [served.client.stream_trace(DEFAULT, "法国的首都是", GenerationConfig(max_new_tokens=2, temperature=1.0,
                                                                                     seed=s)) for s in (1, 2)]
    for events in sampled:
        assert isinstance(next(events), Queued)
    assert len(served.worker.queue) == 5  # two seeds: two measurements
    for events in sampled:
        events.close()
    served.gate.opened.set()
    for t in labs:
        t.join(WAIT_S)
    assert runs[0].to_json() == runs[1].to_json() == runs[2].to_json()  # one measurement, every waiter
    shared = [[e for e in h if isinstance(e, Shared)] for h in heard]
    assert all(len(s) == 1 and s[0].visitors == 3 for s in shared[:3]) and shared[3] == []
    assert shared[0][0].measured_at == shared[1][0].measured_at > 1e9
    assert runs[3].settings.policy == "prefill-first"


def test_a_token_preview_waits_for_the_pass_that_holds_the_model(served):
    lm = served.worker.models.loaded(DEFAULT)
    done = threading.Event()

    def preview() -> None:
        served.client.token_preview(DEFAULT, "法国的首都是", 24)
        done.set()

    with lm.lock:  # a timed pass of another visitor's run holds it
        threading.Thread(target=preview, daemon=True).start()
        assert not done.wait(1.0)  # tokenizing does not take the GIL from inside that pass
    assert done.wait(WAIT_S)  # it runs as soon as the pass ends


def test_the_page_says_a_run_was_measured_once_for_several_visitors():
    from app_support.frame import QueuePlace

    slot = SimpleNamespace(info=lambda *a, **k: None, empty=lambda: None)
    at = time.mktime((2026, 12, 1, 9, 5, 7, 0, 0, -1))
    said = {"en": "Measured once for 3 visitors at 09:05:07", "zh": "为 3 位访客只测量了一次（09:05:07）"}
    for lang, words in said.items():
        place = QueuePlace(lang, slot=slot)
        assert place.shared_note() is None  # a run of its own says nothing
        place(Shared(visitors=3, measured_at=at))
        assert place.shared_note().startswith(words)
