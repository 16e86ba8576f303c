"""Sweeps: one phase measured across a range, each point beside the cost model's floor.

    sweep = run_sweep(lm, "prefill", points=(8, 64, 512))          # TTFT's forward pass vs prompt length
    sweep = run_sweep(lm, "decode-context", points=(8, 64, 512))   # one Decode step vs positions cached
    sweep = run_sweep(lm, "decode-batch", points=(1, 8, 64))       # one batched Decode step vs batch size
    sweep.points[0].median_ms, sweep.points[0].floor_ms; Sweep.from_json(sweep.to_json())

Every point is measured: one warm-up pass, then `repeats` timed passes (5 by default), every
one kept with their median (a shared machine's noise lands in single passes; the median ignores
a few, and the figures draw the spread and flag the repeats far from the others; the sweep's
provenance says when and where it was measured, so a kept one shows its age). A
pass is one real forward with a real KV cache, timed from the host after the
device finished (engine.hf.device_clock). The token ids are a fixed random draw:
the time of a pass does not depend on which tokens it reads.

- prefill: a (1, n) pass into an empty cache. The prompt's share of TTFT (no tokenizing).
- decode-context: one (1, 1) pass after c cached positions. The cache of the largest c is
  filled once by a Prefill and cut down for each point (cutting is not timed).
- decode-batch: one (b, 1) pass, b rows of the same length (`context` cached positions,
  the K/V of one Prefill copied into every row): a real batched forward with a batched cache.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from .cost import DEVICE_SPECS, TORCH_DTYPES, DeviceSpec, ModelShape, measure_this_machine, pass_cost
from .errors import InputError
from .provenance import this_machine
from .trace import RANDOM_WEIGHTS_NOTE, Provenance

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
    provenance: Provenance | None = None  # where and when it was measured (engine/provenance.py); None: older

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps({"schema": SCHEMA, **asdict(self)}, ensure_ascii=False, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Sweep:
        data = json.loads(text)
        if not isinstance(data, dict) or data.pop("schema", None) != SCHEMA:
            raise ValueError(f"not a sweep ({SCHEMA})")
        points = tuple(SweepPoint(**{**p, "times_ms": tuple(p["times_ms"])}) for p in data.pop("points"))
        return cls(**{**data, "points": points, "skipped": tuple(data.get("skipped", ())),
                      "provenance": Provenance.from_dict(data.get("provenance"))})


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


def run_sweep(lm, kind: str, points: Sequence[int] | None = None, *, repeats: int = DEFAULT_REPEATS,
              batch_context: int = DEFAULT_BATCH_CONTEXT, device_spec: DeviceSpec | None = None,
              cap: int | None = None, progress: Callable[[int, int, SweepPoint], None] | None = None,
              seed: int = 0) -> Sweep:
    """Measure `kind` at each point on `lm` (engine.model.LoadedModel).

    `device_spec`: the roofs of the floors (default: H200's datasheet on a GPU, this machine
    measured on a CPU). `cap`: leave out points above it (a server's limit). `progress(done,
    total, point)` is called after every point; an exception from it stops the sweep.
    """
    import torch  # only a sweep that measures needs torch: the CLI's parser and Sweep.from_json do not

    info = lm.info
    values, skipped = _checked_values(info, kind, points, repeats, batch_context, cap)
    spec = device_spec or (DEVICE_SPECS["h200"] if lm.device.type == "cuda" else measure_this_machine("cpu"))
    shape = ModelShape.from_config(lm.model.config, name=info.model_id)
    weight_dtype = default_weight_dtype(info.dtype)
    dtypes = dict(weight_dtype=weight_dtype, kv_dtype=weight_dtype)
    generator = torch.Generator().manual_seed(seed)
    measured: list[SweepPoint] = []
    with torch.inference_mode():
        reference = None  # the Decode sweeps cut each point's cache from one filled cache
        if kind != "prefill":
            reference = _filled_cache(lm, values[-1] if kind == "decode-context" else batch_context, generator)
        for value in values:
            n, c, b = {"prefill": (value, 0, 1), "decode-context": (1, value, 1),
                       "decode-batch": (1, batch_context, value)}[kind]
            times = _time_point(lm, n, c, b, reference, repeats, generator)
            cost = pass_cost(shape, spec, new_positions=n, context=c, batch=b, **dtypes)
            measured.append(SweepPoint(value=value, new_positions=n, context=c, batch=b, times_ms=times,
                                       median_ms=statistics.median(times), floor_ms=cost.floor_ms,
                                       compute_ms=cost.compute_ms, memory_ms=cost.memory_ms, bound=cost.bound,
                                       flops=cost.flops, bytes=cost.bytes))
            if progress is not None:
                progress(len(measured), len(values), measured[-1])
    return Sweep(kind=kind, model_id=info.model_id, random_weights=info.random_weights, device=info.device,
                 dtype=info.dtype, device_spec=spec.name, repeats=repeats,
                 batch_context=batch_context if kind == "decode-batch" else 0,
                 points=tuple(measured), skipped=skipped, provenance=this_machine(lm.device), **dtypes)


def _checked_values(info, kind: str, points: Sequence[int] | None, repeats: int, batch_context: int,
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


def _random_ids(lm, batch: int, length: int, generator):
    import torch

    ids = torch.randint(0, lm.info.vocab_size, (batch, length), generator=generator)
    return ids.to(lm.device)


def _forward(lm, ids, cache):
    """One pass of (b, n) new positions after what `cache` holds; only the last position's logits."""
    from . import hf  # torch and transformers: imported by a sweep that measures, not by the CLI's parser

    return hf.forward(lm.model, ids, cache).logits[:, -1, :]


def _filled_cache(lm, positions: int, generator):
    """A cache holding `positions` positions of one row, filled by a real Prefill (not timed)."""
    from .hf import new_cache

    cache = new_cache(lm.model)
    with lm.lock:
        _forward(lm, _random_ids(lm, 1, positions, generator), cache)
    return cache


def _cache_copy(lm, reference, positions: int, batch: int):
    """A fresh cache with the first `positions` positions of `reference`, copied into `batch` rows."""
    from .hf import new_cache

    cache = new_cache(lm.model)
    for index, layer in enumerate(reference.layers):
        keys, values = layer.keys[:, :, :positions], layer.values[:, :, :positions]
        cache.update(keys.repeat(batch, 1, 1, 1), values.repeat(batch, 1, 1, 1), index)
    return cache


def _time_point(lm, n: int, c: int, b: int, reference, repeats: int, generator) -> tuple[float, ...]:
    """One warm-up pass, then `repeats` timed passes, each on a fresh cache of c positions (b rows)."""
    from .hf import device_clock, new_cache

    times = []
    for attempt in range(repeats + 1):
        cache = new_cache(lm.model) if c == 0 else _cache_copy(lm, reference, c, b)
        ids = _random_ids(lm, b, n, generator)
        with lm.lock:  # one pass at a time on a shared model: another visitor's pass is not in this time
            start = device_clock(lm.device)
            logits = _forward(lm, ids, cache)
            logits.argmax(-1).tolist()  # the answer on the host, as a real step needs it
            end = device_clock(lm.device)
        if attempt:  # the first pass is the warm-up
            times.append((end - start) * 1e3)
        del cache
    return tuple(times)


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
