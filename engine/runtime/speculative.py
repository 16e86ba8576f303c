"""Speculative decoding's verify pass: check k drafted tokens in ONE forward pass of the target model.

A Decode step is bound by reading the weights, so a pass over k+1 positions costs about what a pass over
one does (bench/speculative.py measures it). The Decode loop (engine/runtime/generation.py) does, after
Prefill, for every pass:

    1) draft:   the drafter guesses the next k tokens (engine/contract/speculative.py, no model)
    2) verify:  feed [token chosen before, d1..dk] after the cache: k+1 positions, k+1 rows of logits;
                row j is the model's distribution for the token after position j
    3) accept:  keep the longest prefix of drafts the model agrees with (`accept`), then one token of its
                own from the row after the last kept draft (the bonus token)
    4) rollback: drop the rejected drafts' K and V from the cache (`EagerRunner.drop`)

so every pass writes 1..k+1 tokens, and exactly the ones plain Decode writes (greedy: the same tokens;
sampling: the same distribution).
"""

from __future__ import annotations

import torch

from engine.contract.results import GenerationConfig
from engine.contract.speculative import propose_ngram
from engine.runtime.sampling import token_probs


def propose(cfg: GenerationConfig, history: list[int], num_left: int, stop_ids: frozenset[int]) -> tuple[int, ...]:
    """The drafts for the next verify pass: at most num_speculative_tokens, and at most num_left - 1 so the
    pass's own token still fits in the answer. () means a plain Decode step (nothing to guess from)."""
    k = min(cfg.num_speculative_tokens, num_left - 1)
    if not cfg.speculative or k < 1:
        return ()
    return propose_ngram(history, min_n=cfg.prompt_lookup_min, max_n=cfg.prompt_lookup_max, k=k, stop_ids=stop_ids)


def accept(logits: torch.Tensor, drafts: tuple[int, ...], cfg: GenerationConfig,
           generator: torch.Generator | None) -> tuple[int, int]:
    """(number of drafts kept, the pass's own token) from a verify pass's logits (k+1, vocab).

    Greedy: a draft is kept while it is the argmax of its row; the token is the argmax of the next row.
    Sampling, the standard rule (Leviathan et al. 2023; Chen et al. 2023): keep draft d with probability
    min(1, p(d)/q(d)), where p is the target's distribution (token_probs, as plain Decode samples) and q the
    drafter's. A prompt lookup proposes one token for sure (q a point mass at d), so the draft is kept with
    probability p(d); on a rejection the token is drawn from max(0, p - q) normalised, which is p without d.
    Either way each written token has exactly the target's distribution.
    """
    if cfg.temperature == 0.0:
        return _accept_greedy(logits, drafts)
    for j, draft in enumerate(drafts):
        probs = token_probs(logits[j], cfg)  # (vocab,)
        if float(torch.rand(1, generator=generator)) < float(probs[draft]):
            continue
        residual = probs.clone()
        residual[draft] = 0.0  # max(0, p - q) with q the point mass at the draft
        return j, int(torch.multinomial(residual / residual.sum(), 1, generator=generator))
    return len(drafts), int(torch.multinomial(token_probs(logits[len(drafts)], cfg), 1, generator=generator))


def _accept_greedy(logits: torch.Tensor, drafts: tuple[int, ...]) -> tuple[int, int]:
    targets = logits.argmax(dim=-1).tolist()  # (k+1,): the model's own token after each position
    kept = 0
    while kept < len(drafts) and drafts[kept] == targets[kept]:
        kept += 1
    return kept, targets[kept]
