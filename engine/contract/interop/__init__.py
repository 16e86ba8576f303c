"""Serving runs measured outside this engine, read into the lesson's ServingRun:

    probe.py        measure any OpenAI-compatible streaming server from the client (standard library only):
                    run_probe and its results; by concern beside it endpoint.py (the URL, ProbeConfig),
                    transport.py (bounded HTTP, the watchdog), keymask.py, sse.py (one request's stream),
                    fields.py (a chunk's typed fields), prometheus.py (the /metrics sampler), errors.py
    vllm_import.py  read a `vllm bench serve --save-result --save-detailed` file
    observed.py     what both make: a ServingRun with no iterations, its policy "observed"

Nothing is imported here, so `engine.contract.interop.vllm_import` does not load the probe, nor the probe numpy.
"""
