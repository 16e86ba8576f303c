"""Cache on vs off: the same greedy answer twice, timed and costed step by step,
and what the new position of one Decode step reads from the cache.

    1) cache off: step t feeds all prompt_len + t positions again (nothing is kept)
    2) cache on:  Prefill once, then one new position per step at context c
    3) attention: for one chosen Decode step, the new position's weights over every
                  cached position plus itself, per layer (eager attention, that step only)

The cache saves recomputing K and V of old positions; the new query still reads all
of them. Results are frozen dataclasses of plain values (no tensors; engine/contract/results.py).
"""

from __future__ import annotations

import torch

from engine.contract.cost import DEVICE_SPECS, ModelShape, pass_cost
from engine.contract.errors import PhaseError
from engine.contract.results import CacheComparison, DecodeAttention
from engine.runtime import hf
from engine.runtime.generation import GenerationConfig, no_cache_passes, passes, prefill, token_pieces
from engine.runtime.hf import new_cache
from engine.runtime.model import LoadedModel


class TokensDifferError(RuntimeError):
    """Cache off and cache on chose different tokens: one of the two loops is wrong."""


def step_flops(shape: ModelShape, prompt_len: int, num_steps: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(cache off, cache on) FLOPs of each pass, from the cost model (the device does not change FLOPs)."""
    spec = DEVICE_SPECS["h200"]
    off = tuple(pass_cost(shape, spec, new_positions=prompt_len + t, context=0).flops for t in range(num_steps))
    on = (off[0],) + tuple(pass_cost(shape, spec, new_positions=1, context=prompt_len + t - 1).flops
                           for t in range(1, num_steps))
    return off, on


def timed_ids_no_cache(lm: LoadedModel, prompt_ids: list[int], max_new_tokens: int) -> tuple[list[int], list[float]]:
    """Greedy, no cache, fixed length (EOS ignored): (token ids, ms of each pass)."""
    cfg = GenerationConfig(max_new_tokens=max_new_tokens, ignore_eos=True)
    ran = list(no_cache_passes(lm, list(prompt_ids), cfg, record=True))
    return [token for token, _ in ran], [ms for _, ms in ran]


def timed_ids_with_cache(lm: LoadedModel, prompt_ids: list[int], max_new_tokens: int) -> tuple[list[int], list[float]]:
    """The engine's own traced loop (greedy, EOS ignored): (token ids, ms of each pass)."""
    cfg = GenerationConfig(max_new_tokens=max_new_tokens, ignore_eos=True)
    ran = list(passes(lm, list(prompt_ids), cfg, record=True))
    return [p.output_id for p in ran], [(p.end - p.start) * 1e3 for p in ran]


def compare_cache(lm: LoadedModel, prompt_ids: list[int], max_new_tokens: int) -> CacheComparison:
    """Run the same greedy answer with the cache off, then on; raise if the tokens differ."""
    off_ids, off_ms = timed_ids_no_cache(lm, prompt_ids, max_new_tokens)
    on_ids, on_ms = timed_ids_with_cache(lm, prompt_ids, max_new_tokens)
    if off_ids != on_ids:
        first = next(t for t, (a, b) in enumerate(zip(off_ids, on_ids)) if a != b)
        raise TokensDifferError(f"cache off and on differ first at output token {first}: "
                                f"{off_ids[first]} vs {on_ids[first]}")
    n = len(prompt_ids)
    off_flops, on_flops = step_flops(ModelShape.from_config(lm.model.config), n, len(on_ids))
    return CacheComparison(
        prompt_len=n, output_ids=tuple(on_ids), off_ms=tuple(off_ms), on_ms=tuple(on_ms),
        off_flops=off_flops, on_flops=on_flops,
        off_positions=tuple(n + t for t in range(len(on_ids))),
        on_positions=(n,) + (1,) * (len(on_ids) - 1),
    )


# ---------------------------------------------------------------------------
# What one Decode step reads: its attention weights over the cache
# ---------------------------------------------------------------------------

def decode_attention(lm: LoadedModel, prompt_ids: list[int], output_ids: list[int] | tuple[int, ...],
                     decode_index: int) -> DecodeAttention:
    """Rebuild the cache the run had before Decode step `decode_index`, then run that one step
    with eager attention and output_attentions (fused kernels never form the weights).

    The model is switched to eager only for this step, under its lock, and switched back after.
    """
    if not 1 <= decode_index < len(output_ids):
        raise PhaseError(f"decode step {decode_index} is not in this answer (D1 .. D{len(output_ids) - 1})")
    history = list(prompt_ids) + list(output_ids[:decode_index - 1])  # cached before the step
    new_token = output_ids[decode_index - 1]  # the step's input: the token the pass before chose
    model = lm.model
    with lm.lock, torch.inference_mode():
        before = hf.attention_of(model)
        hf.set_attention(model, "eager")
        try:
            _, cache = prefill(model, torch.tensor([history], device=lm.device), new_cache(model))
            attentions = _attend_one(model, new_token, cache, lm.device)
        finally:
            hf.set_attention(model, before)
    num = len(history) + 1
    # layer: (1, heads, 1, read). A sliding-window layer's cache holds only its last positions
    # (read < num): the positions it dropped get weight 0, so every row spans all num positions.
    read = tuple(layer.shape[-1] for layer in attentions)
    per_head = tuple(tuple((0.0,) * (num - r) + tuple(float(w) for w in head)
                           for head in layer[0, :, -1, :].float().cpu())
                     for layer, r in zip(attentions, read))
    mean = tuple(tuple(sum(col) / len(layer) for col in zip(*layer)) for layer in per_head)
    token_ids = tuple(history) + (new_token,)
    return DecodeAttention(decode_index, len(history), token_ids, token_pieces(lm.tokenizer, token_ids),
                           per_head, mean, read)


def _attend_one(model, token: int, cache, device) -> tuple[torch.Tensor, ...]:
    """One Decode pass with output_attentions: per layer (1, heads, 1, context + 1)."""
    x = torch.tensor([[token]], device=device)  # (1, 1): exactly one new position, after the cached ones
    return hf.forward(model, x, cache, output_attentions=True).attentions
