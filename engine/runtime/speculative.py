"""Speculative decoding's verify pass: check k drafted tokens in ONE forward pass of the target model.

A Decode step is bound by reading the weights, so a pass over k+1 positions costs about what a pass over
one does (bench/speculative.py measures how far that holds). The Decode loop (engine/runtime/generation.py)
does, after Prefill, for every pass:

    1) draft:   a drafter guesses the next k tokens: `NgramDrafter` (prompt lookup, no model:
                engine/contract/speculative.py) or `ModelDrafter` (a smaller model with the same tokenizer,
                k cheap Decode steps of its own on a cache of its own)
    2) verify:  feed [token chosen before, d1..dk] after the cache: k+1 positions, k+1 rows of logits;
                row j is the model's distribution for the token after position j
    3) accept:  keep the longest prefix of drafts the model agrees with (`accept`), then one token of its
                own from the row after the last kept draft (the bonus token)
    4) rollback: drop the rejected drafts' K and V from the cache (`EagerRunner.drop`)

so every pass writes 1..k+1 tokens, and exactly the ones plain Decode writes (greedy: the same tokens;
sampling: the same distribution).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.contract.errors import InputError
from engine.contract.results import GenerationConfig
from engine.contract.speculative import propose_ngram
from engine.runtime.runners import EagerRunner
from engine.runtime.sampling import token_probs


@dataclass(frozen=True)
class Draft:
    """A drafter's guesses, and the distribution each was drawn from (q, (k, vocab)); None: each guess was
    certain (a prompt lookup proposes one token, q is a point mass)."""

    ids: tuple[int, ...]
    probs: torch.Tensor | None = None


NO_DRAFT = Draft(())


def draft_length(cfg: GenerationConfig, num_left: int) -> int:
    """At most num_speculative_tokens, and at most num_left - 1, so the pass's own token still fits."""
    return min(cfg.num_speculative_tokens, num_left - 1) if cfg.speculative else 0


class NgramDrafter:
    """Prompt lookup: the tokens that followed the latest earlier occurrence of the last n tokens."""

    name = "ngram"

    def __init__(self, cfg: GenerationConfig) -> None:
        self.cfg = cfg

    def propose(self, history: list[int], num_left: int, stop_ids: frozenset[int], generator=None) -> Draft:
        k = draft_length(self.cfg, num_left)
        if k < 1:
            return NO_DRAFT
        cfg = self.cfg
        return Draft(propose_ngram(history, min_n=cfg.prompt_lookup_min, max_n=cfg.prompt_lookup_max, k=k,
                                   stop_ids=stop_ids))


class ModelDrafter:
    """A smaller model with the same tokenizer writes k tokens ahead, one Decode step each, on a cache of its
    own. Between proposals the cache is rolled back to what the target kept, and the tokens after are fed in
    one pass. Greedy at temperature 0; else it samples from its own token_probs, and says q."""

    def __init__(self, draft, cfg: GenerationConfig) -> None:
        self.lm, self.cfg = draft, cfg
        self.name = f"draft:{draft.info.model_id}"
        self.runner = EagerRunner(draft.model, draft.kernels)
        self.fed: list[int] = []  # the tokens the draft's cache holds, in order

    def propose(self, history: list[int], num_left: int, stop_ids: frozenset[int], generator=None) -> Draft:
        k = draft_length(self.cfg, num_left)
        if k < 1:
            return NO_DRAFT
        with torch.inference_mode():
            logits = self._catch_up(history)  # (vocab,): the draft's next-token logits after `history`
            ids, rows = [], []
            for _ in range(k):
                probs = token_probs(logits, self.cfg) if self.cfg.temperature > 0 else None
                token = int(logits.argmax()) if probs is None else int(torch.multinomial(probs, 1, generator=generator))
                if token in stop_ids:
                    break
                ids.append(token)
                rows.append(probs)
                if len(ids) < k:
                    logits = self._feed([token])
        q = torch.stack(rows) if rows and rows[0] is not None else None
        return Draft(tuple(ids), q)

    def _catch_up(self, history: list[int]) -> torch.Tensor:
        """Roll the draft's cache back to its common prefix with `history` (keeping at least one token to feed),
        then feed the rest in one pass."""
        common = 0
        limit = min(len(self.fed), len(history) - 1)
        while common < limit and self.fed[common] == history[common]:
            common += 1
        self.runner.drop(len(self.fed) - common)
        self.fed = self.fed[:common]
        return self._feed(history[common:])

    def _feed(self, ids: list[int]) -> torch.Tensor:
        logits = self.runner.verify(ids)[-1]  # (vocab,)
        self.fed += ids
        return logits


def drafter_for(lm, cfg: GenerationConfig, draft=None):
    """The drafter cfg.speculative names, checked against the target before any pass; None when off."""
    if cfg.speculative == "ngram":
        return NgramDrafter(cfg)
    if cfg.speculative == "draft":
        check_draft(lm, draft)
        return ModelDrafter(draft, cfg)
    return None


def check_draft(lm, draft) -> None:
    """A draft model must exist, share the target's tokenizer and vocabulary, and be smaller."""
    if draft is None:
        raise InputError("speculative_draft_missing", "speculative decoding with a draft model needs one")
    if draft.info.vocab_size != lm.info.vocab_size or draft.tokenizer.get_vocab() != lm.tokenizer.get_vocab():
        raise InputError("draft_vocabulary", f"the draft model {draft.info.model_id} has another tokenizer or "
                         f"vocabulary than the target {lm.info.model_id}", draft=draft.info.model_id,
                         target=lm.info.model_id)
    if draft.info.num_params >= lm.info.num_params:
        raise InputError("draft_larger", f"the draft model ({draft.info.num_params:,} parameters) is not smaller "
                         f"than the target ({lm.info.num_params:,})", draft=f"{draft.info.num_params:,}",
                         target=f"{lm.info.num_params:,}")


def accept(logits: torch.Tensor, draft: Draft, cfg: GenerationConfig,
           generator: torch.Generator | None) -> tuple[int, int]:
    """(number of drafts kept, the pass's own token) from a verify pass's logits (k+1, vocab).

    Greedy: a draft is kept while it is the argmax of its row; the token is the argmax of the next row.
    Sampling, the standard rule (Leviathan et al. 2023; Chen et al. 2023): keep draft d with probability
    min(1, p(d)/q(d)), where p is the target's distribution (token_probs, as plain Decode samples) and q the
    drafter's; on a rejection the token is drawn from max(0, p - q) normalised. A prompt lookup proposes one
    token for sure (q a point mass at d): kept with probability p(d), else drawn from p without d.
    Either way each written token has exactly the target's distribution.
    """
    drafts = draft.ids
    if cfg.temperature == 0.0:
        return _accept_greedy(logits, drafts)
    for j, token in enumerate(drafts):
        p = token_probs(logits[j], cfg)  # (vocab,)
        q = _point_mass(token, p) if draft.probs is None else draft.probs[j]
        if float(torch.rand(1, generator=generator)) * float(q[token]) < float(p[token]):  # u < p/q, no division
            continue
        residual = torch.clamp(p - q, min=0.0)
        return j, int(torch.multinomial(residual / residual.sum(), 1, generator=generator))
    return len(drafts), int(torch.multinomial(token_probs(logits[len(drafts)], cfg), 1, generator=generator))


def _point_mass(token: int, like: torch.Tensor) -> torch.Tensor:
    q = torch.zeros_like(like)
    q[token] = 1.0
    return q


def _accept_greedy(logits: torch.Tensor, drafts: tuple[int, ...]) -> tuple[int, int]:
    targets = logits.argmax(dim=-1).tolist()  # (k+1,): the model's own token after each position
    kept = 0
    while kept < len(drafts) and drafts[kept] == targets[kept]:
        kept += 1
    return kept, targets[kept]
