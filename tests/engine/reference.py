"""The reference the engine's tokens are checked against: transformers' own `generate`."""

from __future__ import annotations

import torch


def hf_greedy(lm, prompt_ids, max_new_tokens):
    """The reference: transformers' own generate, greedy, stopping at EOS as ours does."""
    x = torch.tensor([prompt_ids])
    out = lm.model.generate(
        x, attention_mask=torch.ones_like(x), max_new_tokens=max_new_tokens, do_sample=False,
        pad_token_id=lm.tokenizer.eos_token_id,
    )[0, len(prompt_ids):].tolist()
    eos = lm.tokenizer.eos_token_id
    return out[: out.index(eos) + 1] if eos in out else out
