"""The lesson's speculative-decoding section, in words and numbers: pure (no Streamlit, no torch).

The page (app_support/speculative.py) runs one prompt twice on the engine worker, greedy: plain Decode
and prompt-lookup speculative decoding (GenerationConfig(speculative="ngram")), and keeps both runs.
Everything here reads those two traces: whether their tokens are the same, tokens per target pass, the
verify pass the first exercise quotes, the pass-cost ratio the second grades, and the sentences.
"""

from __future__ import annotations

import math
import statistics

from engine.contract.trace import RequestTrace, Step

from .exercises import Grade
from .formats import escape_markdown, shown_piece
from .text import t

# A prompt whose answer repeats text the prompt holds: the embedded model recites its own lesson, so the
# prompt lookup finds the continuation (measured here: zh 3.3, en 4.6 tokens per target pass at k = 4, 24 tokens).
EXAMPLE_PROMPTS = {
    "zh": "Prefill 负责“读”；Decode 负责“接着写”。它们用的是同一模型，但每次送进模型的 Token 数量不同。Prefill 负责",
    "en": ("An LLM answers a prompt in two phases called Prefill and Decode. Prefill reads the whole prompt in one "
           "forward pass. Prefill also builds the KV cache for every layer. A longer prompt gives Prefill more "
           "positions to process. Decode writes the answer one token at a time. Each Decode step feeds only the "
           "newest token into the model. The new query still reads all earlier keys and values from the KV cache. "
           "The KV cache grows by one position for every generated token. An LLM answers a prompt"),
}
EXAMPLE_NEW_TOKENS = 24
DEFAULT_K = 4


def example_prompt(lang: str) -> str:
    return EXAMPLE_PROMPTS.get(lang, EXAMPLE_PROMPTS["zh"])


def same_tokens(spec: RequestTrace, plain: RequestTrace) -> bool:
    """Whether the speculative run wrote exactly plain Decode's tokens (greedy: it must)."""
    return spec.output_ids == plain.output_ids


def passes_after_prefill(trace: RequestTrace) -> int:
    return sum(1 for s in trace.steps if s.phase != "prefill")


def median_decode_ms(trace: RequestTrace) -> float | None:
    steps = trace.decode_steps
    return statistics.median(s.duration_ms for s in steps) if steps else None


def widest_verify(trace: RequestTrace) -> tuple[Step, ...]:
    """The verify passes over the most positions (k + 1 where the drafter found k tokens)."""
    verify = trace.verify_steps
    if not verify:
        return ()
    widest = max(s.num_positions for s in verify)
    return tuple(s for s in verify if s.num_positions == widest)


def pass_ratio(spec: RequestTrace, plain: RequestTrace) -> tuple[float, int] | None:
    """(the median verify pass over the most positions / plain Decode's median step, those positions), or None
    when either run has no such pass."""
    widest, decode_ms = widest_verify(spec), median_decode_ms(plain)
    if not widest or not decode_ms:
        return None
    return statistics.median(s.duration_ms for s in widest) / decode_ms, widest[0].num_positions


def quoted_pass(spec: RequestTrace) -> Step | None:
    """The verify pass the first exercise quotes: one that guessed 4 and kept 3 if the run has one, else the one
    that kept the most (the earliest of equals)."""
    verify = spec.verify_steps
    exact = [s for s in verify if len(s.draft_ids) == 4 and s.num_accepted == 3]
    if exact:
        return exact[0]
    return max(verify, key=lambda s: s.num_accepted, default=None)


def pieces(trace: RequestTrace) -> str:
    """The answer's tokens, one │ between each, a newline shown as ⏎, safe as Markdown (the model's text, not ours)."""
    return " │ ".join(escape_markdown(shown_piece(p)) for p in trace.output_pieces)


def summary(spec: RequestTrace, plain: RequestTrace, lang: str) -> str:
    """The section's sentence on the two runs: passes, drafts kept, tokens per target pass, same tokens or not."""
    verify = spec.verify_steps
    drafted, kept = sum(len(s.draft_ids) for s in verify), sum(s.num_accepted for s in verify)
    key = "spec_same" if same_tokens(spec, plain) else "spec_differ"
    return t(lang, "spec_summary", tokens=len(spec.output_ids), spec_passes=passes_after_prefill(spec),
             plain_passes=passes_after_prefill(plain), kept=kept, drafted=drafted,
             x=f"{spec.tokens_per_pass or 1.0:.2f}") + ("" if lang == "zh" else " ") + t(lang, key)


def ratio_words(spec: RequestTrace, plain: RequestTrace, lang: str) -> str:
    ratio = pass_ratio(spec, plain)
    if ratio is None:
        return t(lang, "spec_ratio_none")
    widest = widest_verify(spec)
    return t(lang, "spec_ratio", positions=ratio[1], ms=f"{statistics.median(s.duration_ms for s in widest):.2f}",
             decode_ms=f"{median_decode_ms(plain):.2f}", x=f"{ratio[0]:.2f}")


def draft_cost_words(spec: RequestTrace, lang: str) -> str | None:
    """The drafter's own time (Step.draft_ms: in the next token's ITL, and in the run's tokens per second)."""
    verify = spec.verify_steps
    if not verify:
        return None
    return t(lang, "spec_draft_cost", ms=f"{sum(s.draft_ms for s in verify):.2f}", v=len(verify))


# --- the two predict-then-measure exercises, graded from the two runs ----------------------------------

def grade_passes(spec: RequestTrace, guess: float) -> Grade | None:
    """"The drafter guessed 4 tokens and 3 were accepted: how many target passes did these 4 tokens cost?"
    One: the verify pass checks every guess at once, and its own token is the fourth. Quotes the run's pass."""
    step = quoted_pass(spec)
    if step is None:
        return None
    return Grade("spec_ex_passes", float(guess), 1.0, float(guess) == 1.0, low=1.0, high=1.0,
                 params={"n": str(step.index), "drafted": str(len(step.draft_ids)),
                         "kept": str(step.num_accepted), "tokens": str(len(step.emitted_ids))})


def grade_ratio(spec: RequestTrace, plain: RequestTrace, guess: str) -> Grade | None:
    """"Is a pass over k + 1 positions k + 1 times a Decode step here?" Yes where the measured ratio is nearer
    k + 1 than 1 (at or above their geometric mean, sqrt(k + 1)), else no."""
    ratio = pass_ratio(spec, plain)
    if ratio is None:
        return None
    x, positions = ratio
    measured = "yes" if x >= math.sqrt(positions) else "no"
    return Grade("spec_ex_ratio", guess, measured, guess == measured, low=x, high=x,
                 params={"positions": str(positions), "x": f"{x:.2f}", "mid": f"{math.sqrt(positions):.2f}"})


def grade_words(grade: Grade, lang: str) -> str:
    answer = t(lang, f"spec_ex_{grade.measured}") if grade.key == "spec_ex_ratio" else ""  # the measured "yes"/"no"
    words = t(lang, grade.key + ("_right" if grade.correct else "_wrong"), answer=answer, **grade.params)
    joiner = "" if lang == "zh" else " "  # Chinese sentences run on without a space
    if grade.key == "spec_ex_passes" and (grade.params["drafted"], grade.params["kept"]) != ("4", "3"):
        words += joiner + t(lang, "spec_ex_passes_other")  # the run's nearest pass, said so
    if grade.key == "spec_ex_ratio":
        words += joiner + t(lang, f"spec_ex_ratio_why_{grade.measured}")  # why, as measured
    return words
