"""Choosing a token from a pass's logits: the one rule plain Decode and a verify pass share.

    token_probs(logits, cfg)             the distribution sampling draws from: temperature, then top-k, then top-p
    choose_token(logits, cfg, gen)       greedy argmax at temperature 0, else one draw from token_probs

A verify pass (engine/runtime/speculative.py) accepts or rejects drafts against the same token_probs, so
speculative decoding writes from exactly the distribution plain Decode writes from.
"""

from __future__ import annotations

import torch

from engine.contract.results import GenerationConfig


def token_probs(logits: torch.Tensor, cfg: GenerationConfig) -> torch.Tensor:
    """(vocab,) logits of one position -> (vocab,) probabilities after temperature / top-k / top-p, on the CPU
    in float32 (the same numbers on any device)."""
    logits = logits.float().cpu() / cfg.temperature
    if cfg.top_k:
        kth = torch.topk(logits, min(cfg.top_k, logits.numel())).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if cfg.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True)
        cumulative = torch.softmax(sorted_logits, dim=-1).cumsum(-1)
        drop = cumulative - torch.softmax(sorted_logits, dim=-1) >= cfg.top_p  # keep the first token always
        logits = logits.masked_fill(drop.scatter(0, order, drop), float("-inf"))
    return torch.softmax(logits, dim=-1)


def choose_token(logits: torch.Tensor, cfg: GenerationConfig, generator: torch.Generator | None) -> int:
    """Greedy argmax at temperature 0, else temperature / top-k / top-p sampling.  logits: (1, vocab)."""
    if cfg.temperature == 0.0:
        return int(logits[0].argmax())
    return int(torch.multinomial(token_probs(logits[0], cfg), 1, generator=generator))
