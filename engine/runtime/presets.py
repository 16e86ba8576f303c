"""Real-size model shapes with random weights: `load_model("preset:qwen2.5-0.5b")`.

A 3.5M-parameter model on a CPU is all Python overhead; a real model's shape makes
Prefill and Decode cost what they cost in production. A preset is a published
model's config, written here in code: no download, no weights. The model is built
straight on the target device in the target dtype and filled with cheap random
numbers, so

    random weights: times are real, tokens are meaningless

and every place that shows a preset says so (`ModelInfo.random_weights`).

The tokenizer is the embedded default model's (assets/default_model): its 2,989
ids all fall inside every preset's vocabulary, and the tokens mean nothing anyway.
The model may answer with an id past that tokenizer's vocabulary; it shows as an
empty piece.

Before anything is allocated, the memory a preset needs (weights + a KV cache for
the longest context + the activations of a Prefill that long) is compared with
what the device has free; what does not fit is refused with a ModelLoadError.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.contract.cost import ModelShape
from engine.contract.errors import ModelLoadError
from engine.contract.results import PRESET_PREFIX
from engine.contract.trace import RANDOM_WEIGHTS_NOTE  # noqa: F401  (re-exported: the label belongs with the presets)
from engine.runtime import hf

DEFAULT_CONTEXT = 4096  # positions the memory check reserves K/V for when the caller names none
HEADROOM = 1.10  # allocator slack, the runtime's own buffers: refuse when within 10 % of the limit


@dataclass(frozen=True)
class Preset:
    """A published model's shape, to be filled with random weights."""

    name: str                  # what follows "preset:"
    published_as: str          # the checkpoint whose config this copies
    published_num_params: int  # every weight, norms and biases included, as its model card counts them
    config: dict               # transformers config fields (model_type picks the class)

    @property
    def model_id(self) -> str:
        return PRESET_PREFIX + self.name


_LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}
_LLAMA3_IDS = {"bos_token_id": 128000, "eos_token_id": 128001}

PRESETS = {p.name: p for p in (
    # Qwen/Qwen2.5-0.5B config.json; Qwen2 has q/k/v biases. Sliding window off, as published.
    Preset("qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B", 494_032_768, dict(
        model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True,
        max_position_embeddings=32768, rms_norm_eps=1e-6, use_sliding_window=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        bos_token_id=151643, eos_token_id=151643)),
    # meta-llama/Llama-3.2-1B config.json: tied embeddings, head_dim 64.
    Preset("llama-3.2-1b", "meta-llama/Llama-3.2-1B", 1_235_814_400, dict(
        model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True,
        max_position_embeddings=131072, rms_norm_eps=1e-5, rope_parameters={**_LLAMA3_ROPE, "factor": 32.0},
        **_LLAMA3_IDS)),
    # meta-llama/Llama-3.1-8B config.json.
    Preset("llama-3.1-8b", "meta-llama/Llama-3.1-8B", 8_030_261_248, dict(
        model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False,
        max_position_embeddings=131072, rms_norm_eps=1e-5, rope_parameters={**_LLAMA3_ROPE, "factor": 8.0},
        **_LLAMA3_IDS)),
)}


def preset_name(path: str | Path | None) -> str | None:
    """"qwen2.5-0.5b" for "preset:qwen2.5-0.5b"; None for anything that is not a preset."""
    text = str(path) if path is not None else ""
    return text[len(PRESET_PREFIX):] if text.startswith(PRESET_PREFIX) else None


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ModelLoadError("unknown_preset", f"no preset {name!r}; use one of "
                             + ", ".join(p.model_id for p in PRESETS.values()), name=name)
    return PRESETS[name]


def preset_config(name: str):
    """The transformers config object, built in code."""
    fields = dict(get_preset(name).config)
    return hf.config_for(fields.pop("model_type"), **fields)


def preset_shape(name: str) -> ModelShape:
    """The cost model's shape (weights in matrices only; see `num_params` for every weight)."""
    return ModelShape.from_config(preset_config(name), name=get_preset(name).model_id)


def num_params(name: str) -> int:
    """Every weight: the matrices, plus 2 RMSNorms per layer and the final one, plus Qwen2's q/k/v biases."""
    shape, config = preset_shape(name), get_preset(name).config
    norms = (2 * shape.num_layers + 1) * shape.hidden_size
    qkv_bias = config["model_type"] == "qwen2" or config.get("attention_bias", False)
    biases = shape.num_layers * shape.head_dim * (shape.num_heads + 2 * shape.num_kv_heads) if qkv_bias else 0
    return shape.num_params + norms + biases


# --- will it fit? ---------------------------------------------------------------

def estimate_bytes(name: str, bytes_per_element: int, context: int = DEFAULT_CONTEXT) -> int:
    """Weights, a full KV cache of `context` positions, and a Prefill that long's activations.

    Activations, per position: the residual stream and its norm copies (~4 d), the MLP's
    gate, up and product (3 f), and the attention scores of every head (h_q x context,
    as an unfused kernel on a CPU materialises them).
    """
    shape = preset_shape(name)
    weights = num_params(name) * bytes_per_element
    kv_cache = int(shape.kv_bytes_per_position(bytes_per_element) * context)
    per_position = 4 * shape.hidden_size + 3 * shape.intermediate_size + shape.num_heads * context
    return int(HEADROOM * (weights + kv_cache + context * per_position * bytes_per_element))


def available_memory_bytes(device: torch.device) -> int:
    """Free memory on `device` now: the GPU's free bytes, else the host's available RAM."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type == "mps":
        return int(torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())
    return _host_available_bytes()


def _host_available_bytes() -> int:
    """MemAvailable from /proc/meminfo (Linux: counts reclaimable cache); else free pages."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_fits(name: str, device: torch.device, dtype: torch.dtype, context: int = DEFAULT_CONTEXT) -> None:
    """Raise ModelLoadError("preset_too_large") unless the preset fits on `device` now."""
    element = torch.empty((), dtype=dtype).element_size()
    need, free = estimate_bytes(name, element, context), available_memory_bytes(device)
    if need > free:
        preset = get_preset(name)
        raise ModelLoadError(
            "preset_too_large",
            f"{preset.model_id} needs about {need / 2**30:.1f} GiB on {device.type} in "
            f"{str(dtype).removeprefix('torch.')} ({num_params(name):,} weights, K/V and activations for "
            f"{context} positions); {free / 2**30:.1f} GiB is free. Pick a smaller preset or dtype.",
            model=preset.model_id, need_bytes=need, free_bytes=free, device=device.type)


def presets_that_fit(device: torch.device, dtype: torch.dtype, context: int = DEFAULT_CONTEXT) -> list[str]:
    """The "preset:NAME" ids this device could load now: a server lists only these."""
    fitting = []
    for name, preset in PRESETS.items():
        try:
            check_fits(name, device, dtype, context)
        except ModelLoadError:
            continue
        fitting.append(preset.model_id)
    return fitting


# --- building one -----------------------------------------------------------------

def build_model(name: str, device: torch.device, dtype: torch.dtype, context: int = DEFAULT_CONTEXT):
    """(config, model) with random weights, allocated on `device` in `dtype`, after `check_fits`.

    transformers' own init (a normal draw per matrix through its init hooks) takes ~10 s
    for the 0.5B on two CPU cores; here the weights are allocated uninitialised and
    filled once: matrices ~ N(0, 0.02), norm scales 1, biases 0 (garbage memory could
    hold NaNs or denormals, which change the timings).
    """
    check_fits(name, device, dtype, context)
    config = preset_config(name)
    model = hf.uninitialised_model(config, dtype=dtype, device=device)
    model.tie_weights()  # skipped with the init: the LM head must be the embedding again
    _fill_random(model, std=config.initializer_range)
    return config, model.eval()


@torch.no_grad()
def _fill_random(model: torch.nn.Module, std: float, seed: int = 0) -> None:
    """The same numbers for the same seed and device; torch's global random state is left alone."""
    generator = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    for param_name, param in model.named_parameters():  # tied weights are listed once
        if param.ndim >= 2:
            param.normal_(0.0, std, generator=generator)
        elif param_name.endswith("bias"):
            param.zero_()
        else:
            param.fill_(1.0)
