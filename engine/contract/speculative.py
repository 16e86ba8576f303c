"""Speculative decoding's drafters, as pure token logic (no torch, no model).

A drafter guesses the next k tokens of an answer cheaply; the target model then checks all k in ONE verify
pass (engine/runtime/speculative.py) and keeps the longest prefix it agrees with, plus one token of its own.

    propose_ngram(tokens, ...)   prompt lookup (vLLM's "ngram" method, HF's prompt_lookup_num_tokens): find the
                                 most recent earlier place where the last n tokens occurred (n from max_n down
                                 to min_n) and propose the k tokens that followed it there. No second model:
                                 it pays off when the answer repeats text of the prompt or of itself.

The other drafter, a draft model, runs a model and lives in engine/runtime/speculative.py.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

# GenerationConfig.speculative: "" (off) or one of these; "draft": a smaller model with the same tokenizer, which
# the caller loads and passes beside the config (engine.runtime.generation.passes(..., draft=)), never a path in it
DRAFTERS = ("ngram", "draft")
MAX_SPECULATIVE_TOKENS = 16  # k: drafts checked in one verify pass (vLLM's num_speculative_tokens)
MAX_LOOKUP_N = 16  # longest n-gram the prompt lookup may match


def propose_ngram(tokens: Sequence[int], *, min_n: int, max_n: int, k: int,
                  stop_ids: Collection[int] = ()) -> tuple[int, ...]:
    """Up to k tokens that followed the latest earlier occurrence of the longest suffix (min_n..max_n tokens)
    of `tokens` (the prompt and the answer so far); () when no suffix occurred before.

    The proposal ends before any of `stop_ids` (the answer's end, EOS): a draft never ends the answer, so an
    accepted draft is always followed by the model's own token, and where plain Decode writes EOS the verify
    pass writes it too (as its bonus token).
    """
    tokens = list(tokens)
    length = len(tokens)
    for n in range(min(max_n, length - 1), min_n - 1, -1):
        suffix = tokens[length - n:]
        for start in range(length - n - 1, -1, -1):  # latest first: recent text predicts best
            # the last token first: a cheap test that rejects almost every start before a slice is made
            if tokens[start + n - 1] == suffix[-1] and tokens[start:start + n] == suffix:
                return _until_stop(tokens[start + n:start + n + k], stop_ids)
    return ()


def _until_stop(proposal: Sequence[int], stop_ids: Collection[int]) -> tuple[int, ...]:
    kept = []
    for token in proposal:
        if token in stop_ids:
            break
        kept.append(token)
    return tuple(kept)
