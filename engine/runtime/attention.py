"""Which attention kernel runs, chosen on purpose and recorded.

PyTorch's scaled_dot_product_attention (SDPA) dispatches to one of several
kernels. Left to itself on a CUDA GPU in bf16 it picks cuDNN attention, which
builds an execution plan for every new key/value length: measured on an H200,
about 33 ms per new length. Every Decode step has a new length, so every step
paid it, and a Decode step looked slower than a whole Prefill (the opposite of
the lesson). So the engine picks the kernel itself, never cuDNN:

    flash      FlashAttention (fp16/bf16 on CUDA; the CPU has its own flash kernel)
    efficient  memory-efficient attention (fp32 on CUDA, arbitrary masks)
    math       the plain matmul-softmax-matmul reference (always works)

The first of these that accepts a call's inputs runs, and its name is written in
the trace next to each forward pass (Step.attention_kernel). No kernel here
builds a per-shape plan.

`install(model)` swaps the model's "sdpa" attention for this one (same maths,
same masks: transformers' own sdpa code runs inside the chosen kernel) and
returns a `KernelLog` that the engine reads after each pass. Models loaded with
another attention implementation ("eager", "flash_attention_2") are left alone
and their passes record that name.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from engine.runtime import hf

IMPLEMENTATION = "prefill_decode_sdpa"
PRIORITY = (
    ("flash", SDPBackend.FLASH_ATTENTION),
    ("efficient", SDPBackend.EFFICIENT_ATTENTION),
    ("math", SDPBackend.MATH),
)
_BACKENDS = dict(PRIORITY)


@dataclass
class KernelLog:
    """Per model: the kernel chosen for each input signature, and the kernels the
    current pass used. Read and cleared by the engine after each forward pass
    (under the model lock, so passes never mix)."""

    chosen: dict[tuple, str] = field(default_factory=dict)
    used: list[str] = field(default_factory=list)
    fixed: str | None = None  # the model runs a non-SDPA implementation: always this name

    def take(self) -> str:
        """The kernel(s) the last pass ran, e.g. "flash" (several layers, one kernel) or "flash+math"."""
        if self.fixed is not None:
            return self.fixed
        names = list(dict.fromkeys(self.used))
        self.used.clear()
        return "+".join(names)


def _signature(query: torch.Tensor, key: torch.Tensor, attention_mask, kwargs: dict) -> tuple:
    """What decides which kernel can run: device, dtype, head size, one query or many, a mask or not."""
    # Plain ints and bools: under torch.compile with dynamic lengths a shape is symbolic, and a symbolic
    # key would miss the kernel already chosen (and break the graph to choose again).
    return (query.device.type, query.dtype, int(query.shape[-1]), bool(query.shape[-2] > 1),
            bool(query.shape[1] != key.shape[1]), attention_mask is None, bool(kwargs.get("is_causal", True)))


def chosen_kernel_attention(module, query, key, value, attention_mask, **kwargs):
    """transformers' sdpa attention, run inside the kernel chosen for these inputs (and logged)."""
    log: KernelLog | None = getattr(module, "_prefill_decode_kernels", None)
    if log is None:  # a module install() did not see: behave exactly like plain sdpa
        return hf.sdpa_attention(module, query, key, value, attention_mask, **kwargs)
    sig = _signature(query, key, attention_mask, kwargs)
    name = log.chosen.get(sig)
    if name is not None:
        with sdpa_kernel([_BACKENDS[name]]):
            out = hf.sdpa_attention(module, query, key, value, attention_mask, **kwargs)
        if not torch.compiler.is_compiling():  # a compiled step would guard on the list's length and recompile
            log.used.append(name)
        return out
    error: Exception | None = None
    for name, backend in PRIORITY:  # first call with this signature: the first kernel that accepts it
        try:
            with warnings.catch_warnings():  # "kernel not used because ..." for each one that declines
                warnings.simplefilter("ignore")
                with sdpa_kernel([backend]):
                    out = hf.sdpa_attention(module, query, key, value, attention_mask, **kwargs)
        except RuntimeError as err:
            error = err
            continue
        log.chosen[sig] = name
        log.used.append(name)
        return out
    raise RuntimeError(f"no attention kernel accepted these inputs: {error}")


def install(model: torch.nn.Module) -> KernelLog:
    """Route the model's SDPA attention through the kernel choice above; return its log."""
    current = hf.attention_of(model)
    log = KernelLog()
    if current != "sdpa":
        log.fixed = str(current or "eager")
        return log
    hf.register_attention(IMPLEMENTATION, chosen_kernel_attention)
    hf.set_attention(model, IMPLEMENTATION)
    for module in model.modules():
        if type(module).__name__.endswith("Attention"):
            module._prefill_decode_kernels = log
    return log
