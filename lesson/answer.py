"""A run's answer as the page shows it: a run cut after k passes (classroom stepping), the special
tokens its decoding skipped, and an answer written on past its end of sequence.
"""

from __future__ import annotations

import dataclasses
import re

from engine.contract.trace import RequestTrace

from .inputs import DEFAULT_MODEL_CHOICE, clamp
from .text import t

# A special token's piece as tokenizers spell it: </s>, <|endoftext|>, <eos> (one "word" in angle brackets);
# a raw byte's piece (<0xE5>) is part of a character, never skipped.
SPECIAL_PIECE = re.compile(r"<(?!0x[0-9A-Fa-f]{2}>)[^\s<>]+>")


def truncate_trace(trace: RequestTrace, num_steps: int) -> RequestTrace:
    """The trace as it stood after `num_steps` forward passes (classroom stepping). Its answer is
    the pieces so far without the special tokens the finished answer's decoding skipped (an </s>
    that ended the run, or the many a run past the end of sequence writes), as normal mode shows it."""
    num_steps = clamp(num_steps, 1, len(trace.steps))
    if num_steps == len(trace.steps):
        return trace
    steps = trace.steps[:num_steps]
    text = "".join(s.output_piece for s in steps
                   if not (SPECIAL_PIECE.fullmatch(s.output_piece) and s.output_piece not in trace.output_text))
    return dataclasses.replace(trace, steps=steps, stop_reason=None, output_text=text)


def first_end_of_sequence(trace: RequestTrace) -> int | None:
    """The index of the first pass, before the last one, whose token the finished answer's decoding
    skipped (an end of sequence): the model had ended its answer there and wrote on past it
    (ignore_eos). None while streaming, or when the run stopped at its first end of sequence."""
    if not trace.finished:
        return None
    return next((s.index for s in trace.steps[:-1]
                 if SPECIAL_PIECE.fullmatch(s.output_piece) and s.output_piece not in trace.output_text), None)


def past_eos_note(trace: RequestTrace, lang: str) -> str | None:
    """Why an answer written past its end of sequence reads as unrelated text (the default model's
    training data: one fact per document, then </s>); None when it was not."""
    index = first_end_of_sequence(trace)
    if index is None:
        return None
    key = "past_eos_default" if trace.model.model_id == DEFAULT_MODEL_CHOICE else "past_eos_other"
    return t(lang, key, n=index + 1, ignore_eos=t(lang, "ignore_eos"))


def answer_text(trace: RequestTrace) -> str:
    """The answer as the page shows it: the decoded text of a finished run or of a prefix of one
    (truncate_trace: special tokens left out), else (still streaming) the pieces so far."""
    return trace.output_text if trace.finished or trace.output_text else "".join(trace.output_pieces)
