"""The one seam to transformers: how the engine calls a model, builds its caches and reads its clock.

Everything the engine must know about transformers' calling conventions is here, so a new
transformers version that renames an argument is one edit in one file:

    cache_keyword(type(model))        the forward argument that takes the cache ("cache" or "past_key_values")
    accepts(type(model), name)        whether the model's forward takes `name` (logits_to_keep, cache_position)
    forward(model, ids, cache, ...)   the forward call itself: every pass the engine times goes through it
    new_cache(model)                  an empty growing cache; static_cache(model, n) a preallocated one
    drop_last_positions(cache, n)     take back a growing cache's last n positions (rejected drafts)
    Cache                             the type both are (transformers.Cache), for annotations
    eos_ids(lm)                       the token ids that end an answer
    device_clock(device)              host time once the device has finished its queued work

and how a model is loaded and which attention it runs (no other module imports transformers or
touches a config's `_attn_implementation`; tests/test_structure.py holds both):

    load_pretrained(source, ...)      a model's weights from a folder; pretrained_config / pretrained_tokenizer
    config_for(model_type, ...)       a config built in code; uninitialised_model(config, ...) its model, unfilled
    quiet_progress()                  no "Loading weights" progress bars
    is_conv1d(module)                 GPT-2's Conv1D (a Linear whose matrix is stored [in, out]), for weights.py
    register_attention(name, fn)      an attention function (and sdpa's masks) under `name`, for set_attention
    set_attention(model, name)        the model's attention implementation; attention_of(model) reads it
    attention_for_pass(model, name)   a context manager: `name` for one forward pass, the old one after
    sdpa_attention(...)               transformers' own SDPA attention, for a function that wraps it
    VERSION                           transformers' version, for a run's provenance
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time

import torch
import transformers
from transformers import (AttentionInterface, AutoConfig, AutoModelForCausalLM, AutoTokenizer, Cache, DynamicCache,
                          StaticCache)
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
from transformers.pytorch_utils import Conv1D
from transformers.utils import logging as hf_logging

try:
    from transformers.initialization import no_init_weights
except ImportError:  # older transformers (the GPU machine's 5.17 may be one) keep it here
    from transformers.modeling_utils import no_init_weights

# transformers' own SDPA attention (module, query, key, value, attention_mask, **kwargs) -> (out, None):
# what engine/runtime/attention.py runs inside the kernel it chose
sdpa_attention = sdpa_attention_forward
VERSION = transformers.__version__  # for a run's provenance


@functools.cache
def accepts(model_cls, name: str) -> bool:
    """Whether `model_cls.forward` takes an argument called `name` (read once per class)."""
    return name in inspect.signature(model_cls.forward).parameters


@functools.cache
def cache_keyword(model_cls) -> str:
    """transformers >= 5.24 names the forward argument `cache` (and warns on the old name)."""
    return "cache" if accepts(model_cls, "cache") else "past_key_values"


@torch.compiler.assume_constant_result
def _call_names(model_cls) -> tuple[str, bool]:
    """(the cache keyword, whether forward takes logits_to_keep). Marked constant so that a compiled
    Decode step (engine/runtime/runners.py) bakes the answer in: tracing the cached signature lookups instead
    makes torch.compile warn about functools.cache on every new compile."""
    return cache_keyword(model_cls), accepts(model_cls, "logits_to_keep")


def forward(model, input_ids: torch.Tensor, cache: Cache | None = None, *, position_ids: torch.Tensor | None = None,
            logits_to_keep: int | torch.Tensor | None = 1, **options):
    """One forward pass of `input_ids` (B, S), written into `cache` after what it holds; the model's output.

    cache: None runs without one (nothing is kept: the "before" picture of the lesson).
    position_ids: (B, S); by default the S positions after the cache's length, the same in every row.
    logits_to_keep: 1 keeps only the last position's logits (all that choosing a token needs), a tensor
    keeps those positions, None keeps every position. A model whose forward does not take it computes
    every position, and `.logits` is cut to the kept ones here, so callers see the same shape either way.
    options: further keyword arguments for the model's forward (attention_mask, output_attentions, ...).
    """
    if position_ids is None:
        start = 0 if cache is None else cache.get_seq_length()
        batch, num_new = input_ids.shape
        position_ids = torch.arange(start, start + num_new, device=input_ids.device).unsqueeze(0)  # (1, S)
        if batch > 1:  # one operator call more, so only when there are rows to share it
            position_ids = position_ids.expand(batch, -1)  # (B, S)
    keyword, keeps_logits = _call_names(type(model))
    kwargs = {"use_cache": cache is not None, "position_ids": position_ids, **options}
    if cache is not None:
        kwargs[keyword] = cache
    takes_keep = logits_to_keep is not None and keeps_logits
    if takes_keep:
        kwargs["logits_to_keep"] = logits_to_keep
    out = model(input_ids=input_ids, **kwargs)
    if logits_to_keep is not None and not takes_keep:
        out.logits = _kept(out.logits, logits_to_keep)
    return out


def _kept(logits: torch.Tensor, logits_to_keep: int | torch.Tensor) -> torch.Tensor:
    """(B, S, vocab) -> the positions logits_to_keep names, as transformers keeps them."""
    if isinstance(logits_to_keep, int):
        return logits[:, -logits_to_keep:, :]
    return logits[:, logits_to_keep, :]


def next_cache(out, cache: Cache) -> Cache:
    """The cache a forward pass hands back (transformers >= 5.24 calls it `cache`), else the one passed in."""
    return getattr(out, "cache", None) or getattr(out, "past_key_values", None) or cache


def new_cache(model) -> DynamicCache:
    """An empty KV cache for one request; it grows by one entry per position."""
    return DynamicCache(config=model.config)


def drop_last_positions(cache: DynamicCache, num_positions: int) -> None:
    """Remove the last `num_positions` positions' K and V from every layer of a growing cache, in place
    (a verify pass's rejected drafts). transformers' crop takes a negative count for "this many from the end"."""
    if num_positions:
        cache.crop(-num_positions)


def cache_tensors(cache: Cache) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
    """Each layer's (K, V) of a growing cache, (1, kv_heads, positions, head_dim): kept as they are (a later
    pass of that cache makes new tensors, it never writes into these)."""
    return tuple((layer.keys, layer.values) for layer in cache.layers)


def cache_from(model, tensors: tuple[tuple[torch.Tensor, torch.Tensor], ...], num_positions: int) -> DynamicCache:
    """A new growing cache holding the first `num_positions` positions of `tensors` (cache_tensors' result):
    copied, so the request that grows it never changes the kept ones."""
    cache = new_cache(model)
    for index, (keys, values) in enumerate(tensors):
        cache.update(keys[:, :, :num_positions].clone(), values[:, :, :num_positions].clone(), index)
    return cache


def static_cache(model, max_len: int) -> StaticCache:
    """A KV cache of `max_len` positions, every tensor allocated at its full length up front."""
    return StaticCache(config=model.config, max_cache_len=max_len)


def eos_ids(lm) -> frozenset[int]:
    """The ids that end an answer: the tokenizer's EOS and the model's generation config's (either may be a list).

    `lm` is an engine.runtime.model.LoadedModel (anything with `.tokenizer` and `.model`)."""
    ids = set()
    for value in (lm.tokenizer.eos_token_id, getattr(lm.model.generation_config, "eos_token_id", None)):
        ids.update(value if isinstance(value, (list, tuple)) else [value] if value is not None else [])
    return frozenset(ids)


def device_clock(device: torch.device) -> float:
    """Host time (perf_counter seconds) after the device finished its queued work (CUDA runs asynchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
    return time.perf_counter()


# --- loading ------------------------------------------------------------------

def load_pretrained(source: str, **options):
    """A causal LM's weights from `source` (a folder); `options` go to from_pretrained (dtype, local_files_only...)."""
    return AutoModelForCausalLM.from_pretrained(source, **options)


def pretrained_config(source: str, **options):
    """The config of `source` (a folder's config.json), no weights."""
    return AutoConfig.from_pretrained(source, **options)


def pretrained_tokenizer(source: str, **options):
    """The tokenizer of `source` (a folder)."""
    return AutoTokenizer.from_pretrained(source, **options)


def config_for(model_type: str, **fields):
    """A config of `model_type` ("qwen2", "llama", ...) built in code from its fields."""
    return AutoConfig.for_model(model_type, **fields)


def uninitialised_model(config, *, dtype: torch.dtype, device: torch.device):
    """A causal LM of `config` allocated on `device` in `dtype` with its weights NOT initialised (the caller
    fills them: transformers' own init takes ~10 s for a 0.5B model on two CPU cores)."""
    with no_init_weights(), device:
        return AutoModelForCausalLM.from_config(config, dtype=dtype)


def is_conv1d(module) -> bool:
    return isinstance(module, Conv1D)


def quiet_progress() -> None:
    """No "Loading weights" progress bars (in a CLI table or a server log)."""
    hf_logging.disable_progress_bar()


# --- which attention runs ---------------------------------------------------------

def register_attention(name: str, function) -> None:
    """Register `function` as the attention implementation `name`, with the masks plain sdpa gets
    (registering the same pair again changes nothing)."""
    AttentionInterface.register(name, function)
    AttentionMaskInterface.register(name, sdpa_mask)


def attention_of(model) -> str | None:
    """The attention implementation the model's config names ("sdpa", "eager", a registered name)."""
    return getattr(model.config, "_attn_implementation", None)


def set_attention(model, name: str) -> None:
    """Switch the model (and its sub-configs) to the attention implementation `name`, checked by transformers."""
    model.set_attn_implementation(name)


@contextlib.contextmanager
def attention_for_pass(model, name: str):
    """The config names `name` for the with-block and its old implementation after: a plain field swap,
    cheap enough for every pass (the caller holds the model's lock, so no other pass runs meanwhile)."""
    config = model.config
    before = config._attn_implementation_internal
    config._attn_implementation_internal = name
    try:
        yield
    finally:
        config._attn_implementation_internal = before
