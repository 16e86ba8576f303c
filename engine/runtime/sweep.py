"""Measuring a sweep: one phase across a range on a real model, each point beside its floor.

    sweep = run_sweep(lm, "prefill", points=(8, 64, 512))          # TTFT's forward pass vs prompt length
    sweep = run_sweep(lm, "decode-context", points=(8, 64, 512))   # one Decode step vs positions cached
    sweep = run_sweep(lm, "decode-batch", points=(1, 8, 64))       # one batched Decode step vs batch size

The record it returns is engine/contract/sweep.py's Sweep. A pass is one real forward with a real
KV cache, timed from the host after the device finished (engine.runtime.hf.device_clock). The
token ids are a fixed random draw: the time of a pass does not depend on which tokens it reads.
The Decode sweeps' cache of the largest context is filled once by a Prefill and cut down for each
point (cutting is not timed); the batch sweep copies one Prefill's K/V into every row.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import torch

from engine.contract.cost import DEVICE_SPECS, DeviceSpec, ModelShape, pass_cost
from engine.contract.sweep import (
    DEFAULT_BATCH_CONTEXT, DEFAULT_REPEATS, Sweep, SweepPoint, check_sweep, default_weight_dtype,
)
from engine.runtime import hf
from engine.runtime.machine import measure_this_machine
from engine.runtime.provenance import this_machine


def run_sweep(lm, kind: str, points: Sequence[int] | None = None, *, repeats: int = DEFAULT_REPEATS,
              batch_context: int = DEFAULT_BATCH_CONTEXT, device_spec: DeviceSpec | None = None,
              cap: int | None = None, progress: Callable[[int, int, SweepPoint], None] | None = None,
              seed: int = 0) -> Sweep:
    """Measure `kind` at each point on `lm` (engine.runtime.model.LoadedModel).

    `device_spec`: the roofs of the floors (default: H200's datasheet on a GPU, this machine
    measured on a CPU). `cap`: leave out points above it (a server's limit). `progress(done,
    total, point)` is called after every point; an exception from it stops the sweep.
    """
    info = lm.info
    values, skipped = check_sweep(info, kind, points, repeats, batch_context, cap)
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


def _random_ids(lm, batch: int, length: int, generator):
    ids = torch.randint(0, lm.info.vocab_size, (batch, length), generator=generator)
    return ids.to(lm.device)


def _forward(lm, ids, cache):
    """One pass of (b, n) new positions after what `cache` holds; only the last position's logits."""
    return hf.forward(lm.model, ids, cache).logits[:, -1, :]


def _filled_cache(lm, positions: int, generator):
    """A cache holding `positions` positions of one row, filled by a real Prefill (not timed)."""
    cache = hf.new_cache(lm.model)
    with lm.lock:
        _forward(lm, _random_ids(lm, 1, positions, generator), cache)
    return cache


def _cache_copy(lm, reference, positions: int, batch: int):
    """A fresh cache with the first `positions` positions of `reference`, copied into `batch` rows."""
    cache = hf.new_cache(lm.model)
    for index, layer in enumerate(reference.layers):
        keys, values = layer.keys[:, :, :positions], layer.values[:, :, :positions]
        cache.update(keys.repeat(batch, 1, 1, 1), values.repeat(batch, 1, 1, 1), index)
    return cache


def _time_point(lm, n: int, c: int, b: int, reference, repeats: int, generator) -> tuple[float, ...]:
    """One warm-up pass, then `repeats` timed passes, each on a fresh cache of c positions (b rows)."""
    times = []
    for attempt in range(repeats + 1):
        cache = hf.new_cache(lm.model) if c == 0 else _cache_copy(lm, reference, c, b)
        ids = _random_ids(lm, b, n, generator)
        with lm.lock:  # one pass at a time on a shared model: another visitor's pass is not in this time
            start = hf.device_clock(lm.device)
            logits = _forward(lm, ids, cache)
            logits.argmax(-1).tolist()  # the answer on the host, as a real step needs it
            end = hf.device_clock(lm.device)
        if attempt:  # the first pass is the warm-up
            times.append((end - start) * 1e3)
        del cache
    return tuple(times)
