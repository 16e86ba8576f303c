"""Sweeps: one phase measured across a range, each point beside the cost model's floor: the record.

    Sweep.from_json(text); sweep.points[0].median_ms, sweep.points[0].floor_ms; format_sweep(sweep)
    check_points("prefill", (8, 64, 512), max_positions)   # which points a model can take

Measuring one is engine/runtime/sweep.py (`run_sweep`). Every point: one warm-up pass, then
`repeats` timed passes (5 by default), every one kept with their median (a shared machine's noise
lands in single passes; the figures draw the spread and flag the repeats far from the others; the
sweep's provenance says when and where it was measured, so a kept one shows its age).

- prefill: a (1, n) pass into an empty cache. The prompt's share of TTFT (no tokenizing).
- decode-context: one (1, 1) pass after c cached positions.
- decode-batch: one (b, 1) pass, b rows of the same length (`context` cached positions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.contract import codec
from engine.contract.cost import TORCH_DTYPES
from engine.contract.errors import InputError
from engine.contract.trace import RANDOM_WEIGHTS_NOTE, Provenance, TraceFormatError

KINDS = ("prefill", "decode-context", "decode-batch")
DEFAULT_POINTS = {
    "prefill": (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
    "decode-context": (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
    "decode-batch": (1, 2, 4, 8, 16, 32, 64),
}
MAX_BATCH = 64
DEFAULT_REPEATS = 5  # a spread needs a few: the lab's sweeps take at least this many
DEFAULT_BATCH_CONTEXT = 128  # positions every row of a batched Decode step has cached
SCHEMA = "prefill-decode.sweep/1"


@dataclass(frozen=True)
class SweepPoint:
    """One measured point: the pass's shape, its times, and the cost model's floor for it."""

    value: int                # the swept number: prompt length, context or batch
    new_positions: int        # per row
    context: int              # cached positions per row before the pass
    batch: int
    times_ms: tuple[float, ...]  # every timed repeat (after the warm-up)
    median_ms: float
    floor_ms: float           # max(compute, memory) on the sweep's device spec
    compute_ms: float
    memory_ms: float
    bound: str                # "compute" or "memory", as the cost model says
    flops: float
    bytes: float

    @property
    def tokens_per_s(self) -> float:
        """Positions computed per second: new positions x rows / the median pass."""
        return self.new_positions * self.batch / (self.median_ms / 1e3)

    @property
    def efficiency(self) -> float:
        """The floor over the measured time: 1.0 would be the device's best."""
        return self.floor_ms / self.median_ms


@dataclass(frozen=True)
class Sweep:
    """A whole sweep: what was swept, on which model and device, and its points in order."""

    kind: str
    model_id: str
    random_weights: bool      # a preset: times are real, tokens are meaningless
    device: str               # where it ran: "cpu", "cuda"
    dtype: str                # the model's torch dtype
    device_spec: str          # the roofs the floors use (a datasheet, or this machine measured)
    weight_dtype: str
    kv_dtype: str
    repeats: int
    batch_context: int        # decode-batch: positions cached per row; else 0
    points: tuple[SweepPoint, ...]
    skipped: tuple[int, ...] = ()  # asked-for values past the model's context (or a cap)
    provenance: Provenance | None = None  # where and when it was measured (engine/runtime/provenance.py); None: older

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **codec.to_plain(self)}

    def to_json(self, indent: int | None = 2) -> str:
        return codec.encode(self, indent)

    @staticmethod
    def upgrade(data: Any) -> Any:
        """A sweep's parsed JSON before it is built (engine.contract.codec): its schema marker, then its fields."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise TraceFormatError(f"not a sweep ({SCHEMA})")
        return {k: v for k, v in data.items() if k != "schema"}

    @classmethod
    def from_json(cls, text: str) -> Sweep:
        return codec.decode(text, cls)


def check_points(kind: str, points: Sequence[int] | None, max_positions: int | None = None,
                 cap: int | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the points to measure, ascending and unique; the ones left out: past the model or the cap).

    Raises InputError for an unknown kind, an empty list or a value below 1 (or a batch above 64)."""
    if kind not in KINDS:
        raise InputError("sweep_kind", f"unknown sweep kind {kind!r}; use {', '.join(KINDS)}", kind=kind)
    chosen = DEFAULT_POINTS[kind] if points is None else tuple(points)
    if not chosen:
        raise InputError("length_range", "a sweep needs at least one point", name="points", value="")
    for value in chosen:
        high = MAX_BATCH if kind == "decode-batch" else None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (high and value > high):
            limit = f"between 1 and {high}" if high else "at least 1"
            raise InputError("length_range", f"sweep point {value!r} must be a whole number {limit}",
                             name="points", value=value)
    ordered = sorted(set(chosen))
    limit = None if kind == "decode-batch" else max_positions
    if limit is not None and kind == "decode-context":
        limit -= 1  # the Decode step's own position must fit too
    keep = [v for v in ordered if (limit is None or v <= limit) and (cap is None or v <= cap)]
    return tuple(keep), tuple(v for v in ordered if v not in keep)


def default_weight_dtype(torch_dtype: str) -> str:
    return TORCH_DTYPES.get(torch_dtype, "fp32")


def check_sweep(info, kind: str, points: Sequence[int] | None, repeats: int, batch_context: int,
                    cap: int | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """check_points for this model, after the repeats and the batch sweep's context are checked."""
    if not isinstance(repeats, int) or not 1 <= repeats <= 50:
        raise InputError("length_range", f"repeats must be between 1 and 50, got {repeats!r}",
                         name="repeats", value=repeats)
    values, skipped = check_points(kind, points, info.max_positions, cap)
    if kind == "decode-batch":
        if not isinstance(batch_context, int) or not 1 <= batch_context < info.max_positions:
            raise InputError("length_range", f"the batch sweep's context must be between 1 and "
                                             f"{info.max_positions - 1}, got {batch_context!r}",
                             name="context", value=batch_context)
    if not values:
        raise InputError("length_range", f"no sweep point fits this model ({info.max_positions} positions)"
                                         + (f" and the cap of {cap}" if cap else ""), name="points", value=skipped[0])
    return values, skipped


# --- text for the CLI ------------------------------------------------------------

COLUMN_NAMES = {"prefill": "prompt", "decode-context": "context", "decode-batch": "batch"}


def format_sweep(sweep: Sweep) -> str:
    what = {"prefill": "Prefill of n positions (the forward pass of TTFT)",
            "decode-context": "one Decode step after c cached positions",
            "decode-batch": f"one batched Decode step, every row {sweep.batch_context} positions cached"}[sweep.kind]
    lines = [f"sweep {sweep.kind}: {what}",
             f"model {sweep.model_id} on {sweep.device} ({sweep.dtype}); floors: {sweep.device_spec}, weights "
             f"{sweep.weight_dtype}, KV {sweep.kv_dtype}; median of {sweep.repeats} after a warm-up"]
    if sweep.random_weights:
        lines.append(f"note: {RANDOM_WEIGHTS_NOTE}")
    lines.append("")
    columns = (COLUMN_NAMES[sweep.kind], "median ms", "min ms", "max ms", "floor ms", "bound", "floor/measured",
               "tokens/s")
    rows = [(str(p.value), f"{p.median_ms:.3f}", f"{min(p.times_ms):.3f}", f"{max(p.times_ms):.3f}",
             f"{p.floor_ms:.4g}", p.bound, f"{p.efficiency:.2%}", f"{p.tokens_per_s:,.0f}") for p in sweep.points]
    widths = [max(len(r[i]) for r in (columns, *rows)) for i in range(len(columns))]
    lines += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in (columns, *rows)]
    if sweep.skipped:
        lines.append(f"left out (past the model's context or the cap): {', '.join(map(str, sweep.skipped))}")
    return "\n".join(lines)
