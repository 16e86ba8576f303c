"""Serving many requests at once on the real engine: continuous batching, chunked
prefill, Prefill/Decode disaggregation and a paged KV cache.

Files mirror the concepts a learner meets (as nano-vllm's do):

    sequence.py       one request's state inside the engine (tokens, positions computed, status)
    block_manager.py  paged KV memory: fixed-size blocks, block tables, a free list
    scheduler.py      each iteration: which requests get which positions (the policies)
    runner.py         ONE batched forward pass over a flat [1, T] token row, K/V in paged blocks
    core.py           what every run shares: its config, one worker's EngineCore, the clock, the record
    engine.py         the loop in real time: admit arrivals, schedule, run, record
    disaggregated.py  a Prefill worker and a Decode worker in two processes, KV handed over

The plain records it writes live in engine/contract/serving/ (trace.py: the record of a run;
metrics.py: vLLM's TTFT / TPOT / ITL / E2EL, throughput, goodput under SLOs; workloads.py: who
arrives when, with which prompt). `python -m engine serve ...` is engine/cli/serve.py.
"""
