"""This machine's two roofs, measured: bandwidth from one large copy, peak FLOP/s from square matmuls.

    spec = measure_this_machine()        # a DeviceSpec (engine/contract/cost.py), source "measured"

The formulas that use it are torch-free (engine/contract/cost.py); only measuring needs torch.
"""

from __future__ import annotations

import functools
import os
import time

import torch

from engine.contract.cost import DeviceSpec, spec_for_device_name


@functools.cache
def measure_this_machine(device: str | None = None) -> DeviceSpec:
    """Bandwidth from one large copy, peaks from square matmuls; once per process.

    Best of a few repeats: a floor wants the machine at its fastest. The copy reads
    and writes every byte (2 x size moved). Uses torch's current thread count on a CPU.
    """
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    gpu = dev.type == "cuda"
    name = torch.cuda.get_device_name(dev) if gpu else \
        f"CPU ({os.cpu_count()} cores; torch threads: {torch.get_num_threads()})"
    sync = {"cuda": lambda: torch.cuda.synchronize(dev), "mps": lambda: torch.mps.synchronize()}.get(
        dev.type, lambda: None)  # GPU kernels run asynchronously: wait before reading the clock
    bandwidth = _copy_bytes_per_s(torch, dev, (1 << 30) if gpu else (128 << 20), sync)
    sizes = {torch.float32: 4096 if gpu else 1024, torch.bfloat16: 8192 if gpu else 512}
    peaks = {dtype: _matmul_flops_per_s(torch, dev, dtype, n, sync) for dtype, n in sizes.items()}
    return DeviceSpec(f"this machine: {name} (measured)", peaks[torch.float32], peaks[torch.bfloat16], bandwidth,
                      source="measured", device_type=dev.type, spec=spec_for_device_name(name) if gpu else None)


def _copy_bytes_per_s(torch, dev, copy_bytes: int, sync) -> float:
    """One large copy reads and writes every byte: 2 x size moved. The buffers are freed on return."""
    src = torch.empty(copy_bytes, dtype=torch.uint8, device=dev).fill_(1)
    dst = torch.empty_like(src)
    return 2 * copy_bytes / _best_seconds(lambda: dst.copy_(src), sync)


def _matmul_flops_per_s(torch, dev, dtype, n: int, sync) -> float:
    a = torch.randn(n, n, device=dev).to(dtype)
    b = torch.randn(n, n, device=dev).to(dtype)
    return 2 * n**3 / _best_seconds(lambda: a @ b, sync)


def _best_seconds(run, sync, repeats: int = 5) -> float:
    run()  # warm-up: allocation, kernel choice
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        sync()
        best = min(best, time.perf_counter() - start)
    return best
