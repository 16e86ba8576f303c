"""extend_prompt: the prompt-length slider's real tokenizer arithmetic."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from engine.prompts import count_tokens, extend_prompt


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dirs):
    return AutoTokenizer.from_pretrained(tiny_model_dirs["llama"])


@pytest.mark.parametrize("prompt", ["法国的首都是", "The capital of France is"])
@pytest.mark.parametrize("target", [12, 64, 300])
def test_reaches_the_target_exactly_and_keeps_the_prompt_last(tokenizer, prompt, target):
    longer = extend_prompt(tokenizer, prompt, target)
    assert longer.endswith(prompt)
    assert count_tokens(tokenizer, longer) == target


def test_a_long_enough_prompt_is_unchanged(tokenizer):
    assert extend_prompt(tokenizer, "法国的首都是", 1) == "法国的首都是"


def test_filler_matches_the_prompt_language(tokenizer):
    assert "首都" in extend_prompt(tokenizer, "法国的首都是", 40)[:-6]
    assert "capital of" in extend_prompt(tokenizer, "The capital of France is", 40)[:-24]
