"""The engine's runtime: everything that needs torch and transformers.

    hf.py                    the one seam to transformers: how the engine calls a model, builds caches, reads clocks
    model.py, presets.py     load the default model, a folder or a real-size preset with random weights
    attention.py, runners.py the attention kernel chosen on purpose; eager, static, graph and compiled passes
    generation.py            `prefill()`, `decode_step()`, `stream_trace()`: the lesson's two phases
    repeats.py, compare.py   the same request N times; the KV cache on vs off
    machine.py, sweep.py     measuring this machine's roofs; measured sweeps
    overhead.py, provenance.py  operator calls per Decode step; where a run was measured
    record.py                `python -m engine record`: the gallery
    serving/                 many requests at once: scheduler, block manager, batched runner, engine
    worker/                  the engine worker: its server, its jobs, its models

It imports engine.contract for every plain type; the contract never imports it.
"""
