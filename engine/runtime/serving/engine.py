"""The serving loop, in real time: admit arrivals, schedule, run one pass, record.

    while requests remain:
        1) admit every request whose arrival time has passed (the clock is real)
        2) schedule: which requests get which positions this pass (scheduler.py)
        3) run ONE batched forward pass (runner.py); tokens appear when it ends
        4) postprocess: append tokens, finish requests, free their blocks, record the pass
        5) between_units(): the worker may run other visitors' short jobs here; the run's clock
           stops meanwhile (PausedClock), so no time, arrival or pass of this run moves
       (nothing to run and nobody here yet: sleep until the next arrival)

`run_workload(lm, workload, ServeConfig(policy=...))` returns a `ServingRun`
(engine/contract/serving/trace.py). Greedy decoding only: each request's tokens equal
running it alone with `engine.runtime.generation` (tests/serving/test_serving_engine.py checks).
The pieces both this loop and the disaggregated one use (EngineCore, the clock, the record)
are in core.py, ServeConfig in engine/contract/serving/config.py; the disaggregated policy runs in disaggregated.py.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

import torch

from engine.contract.errors import InputError
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.trace import Iteration, ServingRun
from engine.runtime.model import LoadedModel
from engine.runtime.serving.scheduler import SchedulerConfig
from engine.runtime.serving.core import EngineCore, build_run, make_clock, prepare_sequences
from engine.runtime.serving.disaggregated import run_disaggregated

# ServeConfig lives in engine/contract/serving/config.py; callers of run_workload find it here
__all__ = ["ServeConfig", "run_workload"]


class PausedClock:
    """The run's clock with its pauses left out: ms since the start, less the time spent in `pause`.
    Arrivals, pass times and the timeout all read it, so a pause is invisible in the run's timeline."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock, self.paused_ms = clock, 0.0

    def __call__(self) -> float:
        return self._clock() - self.paused_ms

    def pause(self, work: Callable[[], None]) -> None:
        start = self._clock()
        try:
            work()
        finally:
            self.paused_ms += self._clock() - start


def run_workload(lm: LoadedModel, workload, config: ServeConfig = ServeConfig(), *, scenario: str = "custom",
                 on_iteration: Callable[[Iteration, int, int], None] | None = None,
                 between_units: Callable[[], None] | None = None) -> ServingRun:
    """Serve `workload` in real time under `config.policy`; every time in the result is measured.
    `on_iteration(iteration, num_finished, num_requests)` is called after each pass (progress).
    `between_units()` is called between passes, on the run's clock stopped (the engine worker runs
    waiting lesson runs there); a disaggregated run's two processes keep their own clocks: it never pauses."""
    if config.policy == "disaggregated":  # two workers in two processes: disaggregated.py
        return run_disaggregated(lm, workload, config, scenario=scenario, on_iteration=on_iteration)
    seqs = prepare_sequences(lm, workload, config)
    num_blocks = config.blocks_for_run(seqs)
    core = EngineCore(lm, SchedulerConfig.for_run(config), num_blocks, config.block_size)
    pending = deque(seqs)
    iterations: list[Iteration] = []
    num_finished = 0
    t0 = time.perf_counter()
    clock = PausedClock(make_clock(lm, t0))
    while pending or core.scheduler.has_work():
        while pending and pending[0].arrival_ms <= clock():
            core.scheduler.add(pending.popleft())  # 1) arrivals
        stepped = core.step(clock)  # 2) schedule + 3) one pass + 4) postprocess
        if stepped is None:
            if not pending:
                raise RuntimeError("the scheduler found nothing to run with requests left (a bug)")
            if between_units is not None:
                clock.pause(between_units)  # idle: a short job may run; then the arrival is read again
            time.sleep(max(0.0, pending[0].arrival_ms - clock()) / 1e3)  # idle until the next arrival
            continue
        iterations.append(stepped[0])
        num_finished += len(stepped[1])
        if on_iteration is not None:
            on_iteration(stepped[0], num_finished, len(seqs))
        if between_units is not None:
            clock.pause(between_units)  # 5) between two passes: nothing of this run is timed here
        if clock() > config.timeout_s * 1e3:
            raise InputError("serve_timeout", f"the run took longer than {config.timeout_s:.0f} s; stopped")
    wall_ms = clock()
    settings = config.settings(num_blocks, torch.get_num_threads())
    return build_run(lm, seqs, iterations, settings, config.slo, scenario, wall_ms)
