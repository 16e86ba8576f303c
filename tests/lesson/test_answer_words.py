"""What the page says about an answer written past its end of sequence (lesson.answer)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lesson.answer import first_end_of_sequence, past_eos_note
from lesson.text import t
from tests.factories import TINY_MODEL, make_trace

PAST_END = ("巴黎", "。", "</s>", "The", "▁capital", "</s>", "Laos")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_an_answer_written_past_its_end_of_sequence_says_why_it_turned_into_other_text(lang):
    """Past </s> the default model writes English in a Chinese lesson: the page says it is its training data."""
    trace = replace(make_trace(output_pieces=PAST_END, model=replace(TINY_MODEL, model_id="default")),
                    output_text="巴黎。The capital Laos")
    assert first_end_of_sequence(trace) == 2
    note = past_eos_note(trace, lang)
    assert note == t(lang, "past_eos_default", n=3, ignore_eos=t(lang, "ignore_eos"))
    assert "71" in note and "`</s>`" in note and "assets/default_model/README.md" in note
    other = past_eos_note(replace(trace, model=TINY_MODEL), lang)  # another model: no word on its data
    assert other == t(lang, "past_eos_other", n=3, ignore_eos=t(lang, "ignore_eos"))


def test_an_answer_that_stopped_at_its_end_of_sequence_or_is_still_streaming_needs_no_note():
    stopped = replace(make_trace(output_pieces=("巴黎", "。", "</s>")), output_text="巴黎。", stop_reason="eos")
    assert first_end_of_sequence(stopped) is None and past_eos_note(stopped, "zh") is None
    streaming = replace(make_trace(output_pieces=PAST_END), stop_reason=None, output_text="")
    assert past_eos_note(streaming, "en") is None
    assert past_eos_note(make_trace(), "zh") is None  # 巴黎。 at the length limit
