"""prefill-decode's engine: run a real model, Prefill then Decode, and record a trace.

Two halves, and the seam between them is a folder:

    engine/contract/   no torch, no transformers: any process may import it (the app's replicas, a laptop
                       driving a remote GPU worker, the renderers). The trace and the results, config,
                       limits, errors, the cost model's formulas, sweeps' records, the serving trace and
                       its workloads, the worker's protocol and client, recorded runs, interop's parsing.
    engine/runtime/    torch + transformers: hf.py (the one seam to transformers), the model, the runners,
                       Prefill and Decode, measuring this machine, sweeps, the serving engine and its
                       batched runner, the worker's server and jobs.
    engine/cli/        `python -m engine ...`: the parser and one module per command.

The runtime imports the contract; the contract never imports the runtime (tests/test_structure.py).

    from engine.contract.results import GenerationConfig
    from engine.runtime.generation import generate, stream_trace
    from engine.runtime.model import load_model
    lm = load_model()                                   # embedded default model
    trace = generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=8))
"""
