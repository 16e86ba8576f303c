"""The engine's contract: plain values and rules any process may import without torch or transformers.

A page, a replica or a laptop client builds requests and reads results with these types alone; the
runtime (engine/runtime/) produces them. Nothing here imports engine.runtime, torch or transformers,
not even inside a function (tests/test_structure.py checks).

    trace.py, results.py     what a run is: frozen dataclasses of plain values, JSON in and out
    config.py, limits.py     every PREFILL_DECODE_* variable; every limit and the bounded JSON loader
    errors.py                the keyed errors a learner is told about
    prompts.py               stretching a prompt with the lesson's filler, given a tokenizer
    shape.py, cost.py        a config's shape; FLOPs, bytes and roofline floors (formulas only)
    sweep.py                 a sweep's record and its points' checks
    recorded.py              reading recorded runs (gallery, uploads), bounded and checked
    serving/                 the serving run's record, its metrics, its workloads
    worker/                  the engine worker's protocol, client, codec, errors, and the local worker's launcher
    interop/                 runs measured outside this engine: the probe, the vLLM import
"""
