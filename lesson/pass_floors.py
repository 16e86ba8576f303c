"""Where a pass's time goes: each pass as its floor (the cost model on the machine's measured roofs:
bytes / bandwidth, FLOPs / peak, engine.contract.cost) plus the rest (per-pass overhead and noise), and
the words that read a run's Prefill and Decode step against their floors.

On the default model a 4-position Prefill and a 1-position Decode step both read the same ~14 MB of
weights, so their floors are equal and a short prompt makes them cost about the same; a 1000-position
Prefill has a floor many times a Decode step's. The words are chosen by those numbers: never "noise"
where the floors say the two passes should take the same time.

    floors = run_floors(trace, trace_floors(trace, shape, spec))   # None without a Decode step
    floor_words(floors, "en")
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from engine.contract.cost import StepFloor, TraceFloors

from .formats import fmt_bytes, fmt_ratio, format_ms
from .text import t

SAME_FLOOR = 1.5  # floors within 1.5x of each other: the two passes must do about the same work


@dataclass(frozen=True)
class PassFloor:
    """One pass (or the median Decode step): measured time, its floor, and what set the floor."""

    phase: str  # "prefill" or "decode"
    num_positions: int
    context: int  # positions cached before the pass
    measured_ms: float
    floor_ms: float
    bytes: float  # what the pass must move (weights once, the KV it reads and writes)
    bound: str  # "memory" or "compute": the larger of bytes / bandwidth and FLOPs / peak

    @property
    def rest_ms(self) -> float:
        """The part of the measured time above the floor: per-pass overhead and noise (never negative)."""
        return max(self.measured_ms - self.floor_ms, 0.0)


@dataclass(frozen=True)
class RunFloors:
    """A run's Prefill and its median Decode step against one machine's floors."""

    prefill: PassFloor
    decode: PassFloor
    device_type: str  # "cpu" or "cuda": whose per-pass overhead the rest is

    @property
    def floor_ratio(self) -> float:
        """Prefill's floor over a Decode step's: about 1 on a short prompt, large on a long one."""
        return self.prefill.floor_ms / self.decode.floor_ms if self.decode.floor_ms > 0 else float("inf")

    @property
    def same_floor(self) -> bool:
        return self.floor_ratio <= SAME_FLOOR

    @property
    def under_floor(self) -> bool:
        """A pass measured faster than its floor, which no pass can be: the roofs were measured low (the
        machine was busy while they were benchmarked), so every floor here is too high."""
        return any(p.measured_ms < p.floor_ms for p in (self.prefill, self.decode))

    @property
    def flipped(self) -> bool:
        """The floors say Prefill must take longer, yet it measured no slower than a Decode step: the
        machine was disturbed while it measured (the lesson's order turned round)."""
        return not self.same_floor and self.prefill.measured_ms <= self.decode.measured_ms


def _pass(step: StepFloor, measured_ms: float, floor_ms: float) -> PassFloor:
    return PassFloor(step.phase, step.new_positions, step.context, measured_ms, floor_ms, step.bytes, step.bound)


def run_floors(floors: TraceFloors, device_type: str) -> RunFloors | None:
    """The Prefill and the median Decode step (the median of the steps' times, as the run's numbers
    quote it, against the median of their floors) of a trace's floors; None without both phases."""
    prefills, decodes = floors.phase_steps("prefill"), floors.phase_steps("decode")
    if not prefills or not decodes:
        return None
    middle = sorted(decodes, key=lambda s: s.measured_ms)[len(decodes) // 2]
    decode = _pass(middle, statistics.median(s.measured_ms for s in decodes),
                   statistics.median(s.floor_ms for s in decodes))
    prefill = prefills[0]
    return RunFloors(_pass(prefill, prefill.measured_ms, prefill.floor_ms), decode, device_type)


def _device(floors: RunFloors, lang: str) -> str:
    return t(lang, "pf_device_gpu" if floors.device_type == "cuda" else "pf_device_cpu")


def floor_words(floors: RunFloors, lang: str) -> str:
    """A run's two passes read per position and against their floors, in the lesson's terms."""
    prefill, decode = floors.prefill, floors.decode
    fields = dict(n=prefill.num_positions, x=format_ms(prefill.measured_ms), y=format_ms(decode.measured_ms),
                  floor_p=format_ms(prefill.floor_ms), floor_d=format_ms(decode.floor_ms),
                  rest_p=format_ms(prefill.rest_ms), rest_d=format_ms(decode.rest_ms),
                  bytes=fmt_bytes(prefill.bytes), device=_device(floors, lang),
                  per=format_ms(prefill.measured_ms / prefill.num_positions))
    words = [t(lang, "pf_under_floor")] if floors.under_floor else []
    if floors.same_floor:
        words.append(t(lang, "pf_same_floor", floor=format_ms(max(prefill.floor_ms, decode.floor_ms)), **fields))
        return ("" if lang == "zh" else " ").join(words)
    words += [t(lang, "pf_grows", r=fmt_ratio(floors.floor_ratio), bound=t(lang, f"pf_bound_{prefill.bound}"),
               **fields)]
    if floors.flipped:  # the floors say otherwise: the machine was busy, so measure again
        words.append(t(lang, "pf_flipped", **fields))
    return ("" if lang == "zh" else " ").join(words)
