"""What a weight format loses, measured against the same model in fp32: the next-token distributions along a
held-out text, perplexity on it, and the greedy answers of the lesson's questions.

    logits = text_logits(lm, ids)                        # (T, V) fp32: one pass over the text, no cache
    kl = kl_per_position(reference, logits)               # (T,) nats: KL(P_fp32 || P_format) at each position
    top1_agreement(reference, logits), nll_sum(logits, ids)   # perplexity = exp(sum / count)
    first_divergence(fp32_answer, answer)                 # where two greedy answers part, with both tokens

The functions on logits and ids are pure (tensors in, numbers out); only `text_logits` and `greedy_ids` run
the model. The held-out text is assets/data/held_out.txt (text train.py never used); the capitals quiz is
assets/data/capitals.csv, facts the model did train on (every country of the table is in its training, so no
capital is held out: the quiz asks whether a format still recalls what fp32 recalls).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.contract.prompts import prompt_token_ids
from engine.runtime import hf
from engine.runtime.generation import GenerationConfig, generate_ids

DATA_DIR = Path(__file__).resolve().parents[2] / "assets" / "data"
HELD_OUT = DATA_DIR / "held_out.txt"
CAPITALS = DATA_DIR / "capitals.csv"
NUM_QUIZ_COUNTRIES = 12  # countries of the capitals quiz, each asked in Chinese and in English
LESSON_QUESTION = {"zh": ("法国的首都是", "巴黎"), "en": ("The capital of France is", " Paris")}


@dataclass(frozen=True)
class Question:
    lang: str
    prompt: str  # "法国的首都是" / "The capital of France is"
    answer: str  # what a right answer starts with: "巴黎" / " Paris"


def held_out_texts(path: Path = HELD_OUT) -> list[tuple[str, str]]:
    """(lang, text) of every line of the held-out file, comments left out."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split(": ", 1)) for line in lines if line.strip() and not line.startswith("#")]


def capital_questions(num_countries: int = NUM_QUIZ_COUNTRIES, path: Path = CAPITALS) -> list[Question]:
    """The quiz: every (71 // num_countries)-th country of the table, asked in both languages, as train.py
    and the lesson ask it (X的首都是 -> Y, The capital of X is -> Y)."""
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    chosen = rows[::len(rows) // num_countries][:num_countries]
    return [q for r in chosen for q in (Question("zh", f"{r['country_zh']}的首都是", r["capital_zh"]),
                                        Question("en", f"The capital of {r['country_en']} is", f" {r['capital_en']}"))]


# --- running the model -------------------------------------------------------------------------------

@torch.inference_mode()
def text_logits(lm, ids: list[int]) -> torch.Tensor:
    """(T, V) fp32 logits of every position of `ids`: one forward pass, no cache (position t predicts t+1)."""
    tensor = torch.tensor([ids], device=lm.device)
    return hf.forward(lm.model, tensor, None, logits_to_keep=None).logits[0].float()


def greedy_ids(lm, prompt: str, max_new_tokens: int = 8) -> list[int]:
    """The greedy answer's ids, stopping at the end of sequence, as the engine's eager run chooses them."""
    return generate_ids(lm, prompt_token_ids(lm.tokenizer, prompt), GenerationConfig(max_new_tokens=max_new_tokens))


def answers_right(lm, questions: list[Question]) -> list[bool]:
    """Whether each question's greedy answer starts with its right answer."""
    return [lm.tokenizer.decode(greedy_ids(lm, q.prompt, 6)).startswith(q.answer) for q in questions]


# --- comparing with the fp32 run (pure) --------------------------------------------------------------

def kl_per_position(reference: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """(T,) KL(P_ref || P) in nats at each position, from (T, V) logits: how far the format's next-token
    distribution moved from fp32's, weighted by what fp32 finds likely."""
    ref_log, log = reference.float().log_softmax(-1), logits.float().log_softmax(-1)
    return (ref_log.exp() * (ref_log - log)).sum(-1).clamp(min=0.0)


def top1_agreement(reference: torch.Tensor, logits: torch.Tensor) -> float:
    """The share of positions whose most likely next token is the same as fp32's."""
    return (reference.argmax(-1) == logits.argmax(-1)).float().mean().item()


def nll_sum(logits: torch.Tensor, ids: list[int]) -> tuple[float, int]:
    """(sum of -log p(next token), number of predictions) of a text: position t predicts ids[t + 1]."""
    targets = torch.tensor(ids[1:], device=logits.device)
    log_probs = logits[:-1].float().log_softmax(-1)
    return -log_probs.gather(1, targets[:, None]).sum().item(), len(targets)


def first_divergence(reference: list[int], ids: list[int]) -> tuple[int, int | None, int | None] | None:
    """(position, fp32's token, this format's token) where two greedy answers first differ (None for a
    token past the shorter answer's end); None when they are the same."""
    for position in range(max(len(reference), len(ids))):
        ref = reference[position] if position < len(reference) else None
        got = ids[position] if position < len(ids) else None
        if ref != got:
            return position, ref, got
    return None


# --- one format against fp32 -------------------------------------------------------------------------

@dataclass(frozen=True)
class TextQuality:
    """A format's next-token distributions along the held-out texts, against fp32's, over every position."""

    mean_kl: float       # nats, averaged over positions
    max_kl: float        # the position that moved most
    top1: float          # share of positions with fp32's most likely token
    perplexity: float    # of the held-out texts, this format's own
    num_positions: int


def text_quality(references: list[torch.Tensor], logits: list[torch.Tensor], texts: list[list[int]]) -> TextQuality:
    """Compare a format's logits with fp32's, text by text (the same ids), pooled over every position."""
    reference, pooled = torch.cat(references), torch.cat(logits)  # (sum of T, V)
    kl = kl_per_position(reference, pooled)
    nll, count = (sum(part) for part in zip(*(nll_sum(g, ids) for g, ids in zip(logits, texts, strict=True))))
    return TextQuality(kl.mean().item(), kl.max().item(), top1_agreement(reference, pooled), math.exp(nll / count),
                       len(kl))
