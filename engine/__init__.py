"""prefill-decode's engine: run a real model, Prefill then Decode, and record a trace.

Depends on torch and transformers only. Public surface:

    lm = load_model()                                   # embedded default model
    trace = generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=8))
    for partial in stream_trace(lm, prompt, cfg): ...   # one trace per forward pass

Names are imported lazily, so `from engine.trace import RequestTrace` (what the
renderers need) and `from engine import GenerationConfig` (what a client of the
engine worker sends) do not pull in torch.
"""

import importlib

_EXPORTS = {
    "errors": ("EngineError", "InputError", "ModelLoadError", "PhaseError"),
    "generation": ("decode_step", "generate", "generate_ids", "generate_ids_no_cache", "prefill", "stream_trace"),
    "hf": ("new_cache",),
    "model": ("DEFAULT_MODEL_DIR", "LoadedModel", "load_model"),
    "results": ("MAX_NEW_TOKENS", "GenerationConfig"),  # plain: a client builds a request without torch
    "trace": ("Metrics", "ModelInfo", "RequestTrace", "Sampling", "Step", "compute_metrics"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
