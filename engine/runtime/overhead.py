"""Why a small model's Decode step costs more than its floor: the operator calls.

An eager forward pass is a chain of operator calls issued one at a time from Python.
Each RMSNorm is about six of them, each rotary embedding about ten, each matmul one.
Every call costs host time (Python, PyTorch's dispatcher, and on a GPU a kernel launch),
however little data it touches. A Decode step moves very little data, so on a small
model, or on a fast GPU, these calls are most of the step. Two measurements show it:

    ops = count_decode_ops(lm)        # the operator calls of one eager Decode step
    us = per_op_host_us(lm.device)    # what one tiny call costs on this device
    ops.kernels * us / 1e3            # ms of the step that is call overhead (an estimate)

The engine's "static", "graph" and "compiled" runners (engine/runtime/runners.py) attack this.
"compiled" fuses the small calls into a few generated kernels. "graph" replays the
whole step with a single launch.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from engine.contract.results import DecodeOps
from engine.runtime.generation import decode_step, prefill
from engine.runtime.hf import new_cache
from engine.runtime.model import LoadedModel


class OpCounter(TorchDispatchMode):
    """Counts every operator call PyTorch dispatches while active (`with OpCounter() as c:`), by name:
    `calls` all of them, `kernels` those that run a kernel (not a view, not an input handed back)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.kernels: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        self.calls[name] += 1
        if func._schema.is_mutable or not _shares_storage(out, args):  # views and .to(same dtype) are free
            self.kernels[name] += 1
        return out


def _shares_storage(out, args) -> bool:
    """The call handed back (a view of) one of its inputs: it moved no data, so it ran no kernel."""
    first = out[0] if isinstance(out, (tuple, list)) and out else out
    if not isinstance(first, torch.Tensor) or first.numel() == 0:
        return False
    ptr = first.untyped_storage().data_ptr()
    return any(isinstance(a, torch.Tensor) and a.numel() and a.untyped_storage().data_ptr() == ptr for a in args)


def count_decode_ops(lm: LoadedModel, prompt_ids: tuple[int, ...] = (1, 2, 3, 4), top: int = 6) -> DecodeOps:
    """Run a short Prefill, then count the calls of one Decode step (untimed; holds the model lock)."""
    device = lm.device
    with lm.lock, torch.inference_mode():
        cache = new_cache(lm.model)
        logits, cache = prefill(lm.model, torch.tensor([list(prompt_ids)], device=device), cache)
        token = torch.tensor([[int(logits[0].argmax())]], device=device)
        counter = OpCounter()
        with counter:
            decode_step(lm.model, token, cache)
        lm.kernels.take()  # the passes above are not a request's: leave no kernel names behind
    return DecodeOps(calls=sum(counter.calls.values()), kernels=sum(counter.kernels.values()),
                     top=tuple(counter.kernels.most_common(top)), layers=lm.info.num_layers)


def per_op_host_us(device: torch.device | str, calls: int = 2000, repeats: int = 5) -> float:
    """Median microseconds of one tiny operator call on `device`, waited for at the end (a CUDA
    launch is asynchronous: what bounds a chain of tiny calls is the host issuing them)."""
    device = torch.device(device)
    x = torch.zeros(1, device=device)
    out = torch.empty_like(x)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    times = []
    with torch.inference_mode():
        for _ in range(repeats + 1):  # the first round warms the allocator and the dispatcher up
            sync()
            start = time.perf_counter()
            for _ in range(calls):
                torch.add(x, 1.0, out=out)
            sync()
            times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times[1:])
