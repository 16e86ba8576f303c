"""The one seam to transformers: how the engine calls a model, builds its caches and reads its clock.

Everything the engine must know about transformers' calling conventions is here, so a new
transformers version that renames an argument is one edit in one file:

    cache_keyword(type(model))        the forward argument that takes the cache ("cache" or "past_key_values")
    accepts(type(model), name)        whether the model's forward takes `name` (logits_to_keep, cache_position)
    forward(model, ids, cache, ...)   the forward call itself: every pass the engine times goes through it
    new_cache(model)                  an empty growing cache; static_cache(model, n) a preallocated one
    Cache                             the type both are (transformers.Cache), for annotations
    eos_ids(lm)                       the token ids that end an answer
    device_clock(device)              host time once the device has finished its queued work
"""

from __future__ import annotations

import functools
import inspect
import time

import torch
from transformers import Cache, DynamicCache, StaticCache


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
