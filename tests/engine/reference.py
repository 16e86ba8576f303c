"""The references the engine's tokens are checked against: transformers' own `generate`, and the engine's
own cache-off loop (the lab's "cache off" run, engine.runtime.compare)."""

from __future__ import annotations

import torch

from engine.runtime.generation import no_cache_passes


def hf_greedy(lm, prompt_ids, max_new_tokens):
    """The reference: transformers' own generate, greedy, stopping at EOS as ours does."""
    x = torch.tensor([prompt_ids])
    out = lm.model.generate(
        x, attention_mask=torch.ones_like(x), max_new_tokens=max_new_tokens, do_sample=False,
        pad_token_id=lm.tokenizer.eos_token_id,
    )[0, len(prompt_ids):].tolist()
    eos = lm.tokenizer.eos_token_id
    return out[: out.index(eos) + 1] if eos in out else out


def recomputed_ids(lm, prompt_ids, cfg):
    """Every position recomputed at every step, no KV cache: the "before" picture, token ids only."""
    return [token for token, _ in no_cache_passes(lm, list(prompt_ids), cfg, record=False)]
