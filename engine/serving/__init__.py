"""Serving many requests at once on the real engine: continuous batching, chunked
prefill, Prefill/Decode disaggregation and a paged KV cache.

Files mirror the concepts a learner meets (as nano-vllm's do):

    workloads.py      who arrives when, with which prompt (scenarios, Poisson, JSON Lines)
    sequence.py       one request's state inside the engine (tokens, positions computed, status)
    block_manager.py  paged KV memory: fixed-size blocks, block tables, a free list
    scheduler.py      each iteration: which requests get which positions (the policies)
    runner.py         ONE batched forward pass over a flat [1, T] token row, K/V in paged blocks
    core.py           what every run shares: its config, one worker's EngineCore, the clock, the record
    engine.py         the loop in real time: admit arrivals, schedule, run, record
    disaggregated.py  a Prefill worker and a Decode worker in two processes, KV handed over
    metrics.py        vLLM's TTFT / TPOT / ITL / E2EL, throughput, goodput under SLOs
    trace.py          the record of a run (frozen dataclasses, JSON; no torch)

`python -m engine serve ...` is engine/cli/serve.py.

Names are imported lazily, so `from engine.serving.trace import ServingRun` (what the
renderers need) does not pull in torch.
"""

import importlib

_EXPORTS = {
    "trace": ("ServingRun", "ServingSettings", "RequestRecord", "Iteration", "BatchEntry", "BlockSnapshot",
              "BlockTable", "Handoff", "LinkSpec", "ServingMetrics", "Distribution", "SLO", "KVMemory", "POLICIES"),
    "metrics": ("compute_serving_metrics",),
    "workloads": ("WorkloadRequest", "SCENARIOS", "scenario", "poisson_workload", "load_workload_file"),
    "core": ("ServeConfig",),
    "engine": ("run_workload",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'engine.serving' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
