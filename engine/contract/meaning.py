"""Checks of meaning for the engine's results, wherever they come from (a worker, a recorded file).

Types are checked where a result is rebuilt; these check that the numbers mean something before
anything is drawn: every time finite, non-negative and within MAX_TIME_MS, a trace's passes in
order (each ends after it starts, the next starts after it ends), counts within the engine's own
caps (MAX_TRACE_STEPS: engine.contract.limits.MAX_NEW_TOKENS), lists that belong together of one
length, a sweep of a kind the engine measures. A refusal is a MeaningError naming the field; the
caller words it (the client: ProtocolError "protocol_malformed"; a recorded file: RecordedFileError).

A trace's step count is checked on its parsed JSON, before a single Step is built
(RequestTrace.upgrade, run by engine.contract.codec): a 500,000-step trace is refused in
microseconds, not after a minute of building.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from engine.contract.limits import MAX_NEW_TOKENS, MAX_TIME_MS, is_number
from engine.contract.results import CacheComparison
from engine.contract.serving.trace import ServingRun
from engine.contract.sweep import KINDS as SWEEP_KINDS
from engine.contract.sweep import Sweep
from engine.contract.speculative import MAX_SPECULATIVE_TOKENS
from engine.contract.trace import PHASES, PROVENANCE_TEXT_LIMIT, RequestTrace, Step

MAX_TRACE_STEPS = MAX_NEW_TOKENS  # a trace's passes: the Prefill and at most the engine's answer cap
EPSILON_MS = 1e-6  # rounding in a time written with few digits


class MeaningError(ValueError):
    """A result whose numbers cannot be true (a negative duration, NaN, passes out of order)."""


def check_time(name: str, value: Any) -> None:
    """A time or duration in ms: a finite number from 0 to MAX_TIME_MS."""
    if not is_number(value) or not math.isfinite(value) or not 0 <= value <= MAX_TIME_MS:
        raise MeaningError(f"{name} must be a time from 0 to {MAX_TIME_MS:g} ms, not {str(value)[:40]}")


def check_times(name: str, values: Iterable[Any]) -> None:
    for i, value in enumerate(values):
        check_time(f"{name}[{i}]", value)


def check_count(name: str, value: Any, limit: float = math.inf) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
        raise MeaningError(f"{name} must be a count from 0 to {limit}, not {str(value)[:40]}")


def check_step(step: Step, where: str = "step") -> None:
    """One pass: its times, its order inside itself, its counts."""
    for name in ("start_ms", "end_ms", "lock_wait_ms", "consumer_ms", "draft_ms"):
        check_time(f"{where}.{name}", getattr(step, name))
    if step.end_ms + EPSILON_MS < step.start_ms:
        raise MeaningError(f"{where} ends ({step.end_ms} ms) before it starts ({step.start_ms} ms)")
    if step.phase not in PHASES:
        raise MeaningError(f"{where}.phase must be one of {', '.join(PHASES)}, not {step.phase[:20]!r}")
    if len(step.draft_ids) > MAX_SPECULATIVE_TOKENS or len(step.drafter) > PROVENANCE_TEXT_LIMIT:
        raise MeaningError(f"{where} has {len(step.draft_ids)} drafts; a verify pass checks at most "
                           f"{MAX_SPECULATIVE_TOKENS}")
    for name in ("index", "output_id", "context_before", "context_after", "kv_bytes", "num_accepted"):
        check_count(f"{where}.{name}", getattr(step, name))
    if step.context_after < step.context_before:
        raise MeaningError(f"{where}'s cache shrank ({step.context_before} -> {step.context_after})")
    for i, value in enumerate(step.kv_bytes_per_layer):
        check_count(f"{where}.kv_bytes_per_layer[{i}]", value)


def check_trace(trace: RequestTrace, first: int = 0, header: bool = False) -> None:
    """A trace (a finished one, or one streaming): its steps from `first` on, in order; its own times.
    `header`: a streamed trace's fields without its steps (they come pass by pass)."""
    steps = trace.steps
    if len(steps) > MAX_TRACE_STEPS:
        raise MeaningError(f"the trace has {len(steps):,} steps; the engine writes at most {MAX_TRACE_STEPS:,}")
    if trace.finished and not steps and not header:
        raise MeaningError("a finished trace has no steps")
    for name in ("tokenize_ms", "engine_setup_ms"):
        check_time(name, getattr(trace, name))
    check_count("max_new_tokens", trace.max_new_tokens, MAX_NEW_TOKENS)
    for i in range(first, len(steps)):
        step = steps[i]
        check_step(step, f"steps[{i}]")
        if step.index != i or (step.phase == "prefill") != (i == 0):
            raise MeaningError(f"steps[{i}] is pass {step.index} ({step.phase}); the passes are out of order")
        if i and step.start_ms + EPSILON_MS < steps[i - 1].end_ms:
            raise MeaningError(f"steps[{i}] starts before steps[{i - 1}] ends")


def check_comparison(comparison: CacheComparison) -> None:
    """Cache on vs off: one entry per pass in every list, every time and count meaningful."""
    n = len(comparison.output_ids)
    if not 1 <= n <= MAX_TRACE_STEPS:
        raise MeaningError(f"a cache comparison has 1 to {MAX_TRACE_STEPS} passes, not {n}")
    for name in ("off_ms", "on_ms", "off_flops", "on_flops", "off_positions", "on_positions"):
        values = getattr(comparison, name)
        if len(values) != n:
            raise MeaningError(f"{name} has {len(values)} entries; output_ids has {n}")
        for i, value in enumerate(values):
            if name.endswith("_ms"):
                check_time(f"{name}[{i}]", value)
            elif not is_number(value) or not math.isfinite(value) or value < 0:
                raise MeaningError(f"{name}[{i}] must be a finite count, not {str(value)[:40]}")
    check_count("prompt_len", comparison.prompt_len)


def check_sweep(sweep: Sweep) -> None:
    """A sweep of a kind the engine measures, with points, every time meaningful."""
    if sweep.kind not in SWEEP_KINDS:
        raise MeaningError(f"unknown sweep kind {str(sweep.kind)[:40]!r} (the engine measures "
                           f"{', '.join(SWEEP_KINDS)})")
    if not sweep.points:
        raise MeaningError("a sweep has no points")
    for i, point in enumerate(sweep.points):
        check_count(f"points[{i}].value", point.value)
        check_times(f"points[{i}].times_ms", point.times_ms)
        if not point.times_ms:
            raise MeaningError(f"points[{i}] has no times")


def check_serving(run: ServingRun) -> None:
    """A serving run's requests: times non-negative and in order (arrival, first pass, first token, end)."""
    for i, r in enumerate(run.requests):
        where = f"requests[{i}]"
        order = ("arrival_ms", "first_scheduled_ms", "first_token_ms", "finish_ms")
        for name in order:
            check_time(f"{where}.{name}", getattr(r, name))
        check_times(f"{where}.token_times_ms", r.token_times_ms)
        check_times(f"{where}.itl_ms", r.itl_ms)
        times = [getattr(r, name) for name in order]
        if any(b + EPSILON_MS < a for a, b in zip(times, times[1:])):
            raise MeaningError(f"{where}'s times are out of order ({', '.join(order)})")
    for i, it in enumerate(run.iterations):
        check_time(f"iterations[{i}].start_ms", it.start_ms)
        check_time(f"iterations[{i}].end_ms", it.end_ms)
        if it.end_ms + EPSILON_MS < it.start_ms:
            raise MeaningError(f"iterations[{i}] ends before it starts")
    check_time("wall_ms", run.wall_ms)
