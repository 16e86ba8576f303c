"""Serving runs measured outside this engine, read into the lesson's ServingRun:

    probe.py        measure any OpenAI-compatible streaming server from the client (standard library only)
    vllm_import.py  read a `vllm bench serve --save-result --save-detailed` file
    observed.py     what both make: a ServingRun with no iterations, its policy "observed"

Nothing is imported here, so `engine.contract.interop.vllm_import` does not load the probe, nor the probe numpy.
"""
