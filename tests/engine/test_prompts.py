"""extend_prompt: the prompt-length slider's real tokenizer arithmetic."""

from __future__ import annotations

import csv

import pytest
from transformers import AutoTokenizer

from engine.contract.prompts import FILLER_EN, FILLER_ZH, count_tokens, extend_prompt, prompt_token_ids
from engine.runtime.model import DEFAULT_MODEL_DIR


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dirs):
    return AutoTokenizer.from_pretrained(tiny_model_dirs["llama"])


@pytest.fixture(scope="module")
def default_tokenizer():
    return AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR)


@pytest.mark.parametrize("prompt", ["法国的首都是", "The capital of France is"])
@pytest.mark.parametrize("target", [12, 64, 300])
def test_reaches_the_target_exactly_and_keeps_the_prompt_last(tokenizer, prompt, target):
    longer = extend_prompt(tokenizer, prompt, target)
    assert longer.endswith(prompt)
    assert count_tokens(tokenizer, longer) == target


@pytest.mark.parametrize("prompt", ["法国的首都是", "The capital of France is"])
def test_every_length_on_the_default_tokenizer_with_few_pad_marks(default_tokenizer, prompt):
    """The slider's whole range is reachable, closed with whole sentences, not runs of marks."""
    natural = count_tokens(default_tokenizer, prompt)
    for target in range(natural + 1, 1025, 37):
        longer = extend_prompt(default_tokenizer, prompt, target)
        assert count_tokens(default_tokenizer, longer) == target, target
        filler = longer[: -len(prompt)]
        assert not filler.endswith(("。。。。", "    ")), (target, filler[-20:])  # at most 2 pad marks


def test_a_long_enough_prompt_is_unchanged(tokenizer):
    assert extend_prompt(tokenizer, "法国的首都是", 1) == "法国的首都是"


def test_filler_is_the_lesson_in_the_prompt_language_in_order(default_tokenizer):
    assert extend_prompt(default_tokenizer, "法国的首都是", 60).startswith(FILLER_ZH[0] + FILLER_ZH[1])
    assert extend_prompt(default_tokenizer, "The capital of France is", 60).startswith(FILLER_EN[0] + FILLER_EN[1])


def test_the_filler_names_no_country_and_no_capital():
    """A capital fact in the filler would be a second answer competing with the question."""
    with (DEFAULT_MODEL_DIR.parent / "data" / "capitals.csv").open(encoding="utf-8", newline="") as f:
        keys = ("country_en", "capital_en", "country_zh", "capital_zh")
        names = [row[key] for row in csv.DictReader(f) for key in keys]
    for sentence in FILLER_ZH + FILLER_EN:
        assert not [n for n in names + ["首都", "capital"] if n in sentence], sentence


@pytest.mark.parametrize("target", [12, 64])
def test_a_bos_counts_toward_the_target(tmp_path, target):
    """With a tokenizer that adds a BOS, N tokens means N ids as the model gets them."""
    from tests.factories import build_bos_tokenizer

    bos_tokenizer = build_bos_tokenizer(tmp_path)
    longer = extend_prompt(bos_tokenizer, "The capital of France is", target)
    ids = prompt_token_ids(bos_tokenizer, longer)
    assert ids[0] == bos_tokenizer.bos_token_id and len(ids) == target
