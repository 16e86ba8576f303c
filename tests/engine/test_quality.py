"""What a weight format loses (engine/runtime/quality.py): the formulas on known logits, the held-out text's
promise (train.py never used it), and the embedded model's numbers per format against its fp32 run."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
import torch

from engine.contract.prompts import prompt_token_ids
from engine.runtime import quality
from engine.runtime.model import DEFAULT_MODEL_DIR, load_model


def load_train_script():
    spec = importlib.util.spec_from_file_location("default_model_train", DEFAULT_MODEL_DIR / "train.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are built
    spec.loader.exec_module(module)
    return module


def test_no_held_out_text_is_a_sentence_the_default_model_trained_on():
    train = load_train_script()
    capitals = train.load_capitals()
    pools = train.prose_pools(capitals)
    facts = {s for c in capitals for s in (*train.fact_sentences_zh(c), *train.fact_sentences_en(c))}
    texts = quality.held_out_texts()
    assert {lang for lang, _ in texts} == {"zh", "en"} and len(texts) == 20
    for lang, text in texts:
        assert text not in facts and not any(text in s or s in text for s in pools[lang]), text


def test_kl_top1_and_perplexity_on_logits_worked_by_hand():
    reference = torch.tensor([[0.0, 0.0], [0.0, 5.0]])  # p = (1/2, 1/2), then mostly token 1
    logits = torch.tensor([[math.log(3.0), 0.0], [0.0, 5.0]])  # q = (3/4, 1/4), then the same
    kl = quality.kl_per_position(reference, logits)
    assert kl[0].item() == pytest.approx(0.5 * math.log(4 / 3), rel=1e-5) and kl[1].item() == pytest.approx(0.0)
    assert quality.top1_agreement(reference, logits) == 1.0  # a tie is read as its first token, as argmax
    assert quality.top1_agreement(reference, logits.flip(-1)) == 0.0
    uniform = torch.zeros(4, 10)
    total, count = quality.nll_sum(uniform, [1, 2, 3, 4])
    assert count == 3 and math.exp(total / count) == pytest.approx(10.0)  # uniform over 10: perplexity 10


def test_first_divergence_names_the_position_and_both_tokens():
    assert quality.first_divergence([5, 6, 7], [5, 6, 7]) is None
    assert quality.first_divergence([5, 6, 7], [5, 9, 7]) == (1, 6, 9)
    assert quality.first_divergence([5, 6], [5, 6, 1]) == (2, None, 1)


def test_the_quiz_asks_twelve_countries_in_both_languages():
    questions = quality.capital_questions()
    assert len(questions) == 24 and len({q.prompt for q in questions}) == 24
    assert questions[0] == quality.Question("zh", "法国的首都是", "巴黎")
    assert questions[1] == quality.Question("en", "The capital of France is", " Paris")


@pytest.fixture(scope="module")
def held_out(default_lm):
    ids = [prompt_token_ids(default_lm.tokenizer, text) for _, text in quality.held_out_texts()]
    return ids, [quality.text_logits(default_lm, i) for i in ids]


def test_fp32_against_itself_loses_nothing_and_int8_little(default_lm, held_out):
    ids, reference = held_out
    same = quality.text_quality(reference, reference, ids)
    assert same.mean_kl == 0.0 and same.top1 == 1.0 and same.num_positions == sum(len(i) for i in ids)
    int8 = load_model(device="cpu", weights="int8", warmup=False)
    moved = quality.text_quality(reference, [quality.text_logits(int8, i) for i in ids], ids)
    assert 0.0 < moved.mean_kl < 0.01 and moved.top1 >= 0.99
    assert moved.perplexity == pytest.approx(same.perplexity, rel=0.05)
    assert all(quality.answers_right(int8, quality.capital_questions()[:4]))


def test_text_logits_are_the_engines_own_next_token_logits(default_lm):
    """Position t's logits in one pass over the text are those the engine chooses the next token from."""
    prompt = "法国的首都是"
    ids = prompt_token_ids(default_lm.tokenizer, prompt)
    answer = quality.greedy_ids(default_lm, prompt)
    logits = quality.text_logits(default_lm, ids + answer[:-1])
    assert logits[len(ids) - 1:].argmax(-1).tolist() == answer
