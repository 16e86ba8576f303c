"""The embedded default model: small, offline, safe, and it knows the lesson's answer,
also after the app stretches the prompt to the longest length it allows."""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest

from engine.contract.prompts import DEFAULT_MAX_PROMPT_TOKENS, extend_prompt
from engine.contract.results import GenerationConfig
from engine.runtime.generation import generate
from engine.runtime.model import DEFAULT_MODEL_DIR
from engine.runtime.prefix_store import PrefixStore
from tests.engine.reference import hf_greedy, recomputed_ids

CAPITALS_CSV = DEFAULT_MODEL_DIR.parent / "data" / "capitals.csv"
STRETCHED_LENGTHS = (64, 512, DEFAULT_MAX_PROMPT_TOKENS)


def capitals() -> list[dict]:
    with CAPITALS_CSV.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_files_are_small_safetensors_and_offline_loadable():
    files = {p.name: p.stat().st_size for p in DEFAULT_MODEL_DIR.iterdir() if p.is_file()}
    for name in ("config.json", "model.safetensors", "tokenizer.json", "README.md", "train.py"):
        assert name in files, name
    assert not any(n.endswith((".bin", ".pt", ".pth")) for n in files)
    shipped = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
    assert sum(files[name] for name in shipped) <= 20 * 1024 * 1024


def test_shape_teaches_gqa_rope_and_long_context(default_lm):
    info = default_lm.info
    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())
    assert info.architecture == "LlamaForCausalLM" and config["model_type"] == "llama"
    assert info.num_kv_heads < info.num_heads  # grouped-query attention
    assert info.max_positions >= 2048
    assert "rope_theta" in json.dumps(config) or "rope_parameters" in config


def test_paris_in_chinese_then_end_of_sequence(default_lm):
    trace = generate(default_lm, "法国的首都是", GenerationConfig(max_new_tokens=8))
    assert trace.output_text == "巴黎。", trace.output_text
    assert trace.stop_reason == "eos" and trace.output_ids[-1] == default_lm.tokenizer.eos_token_id
    assert trace.steps[0].phase == "prefill" and trace.steps[0].num_positions == trace.prompt_len
    assert trace.output_pieces[:2] == ("巴黎", "。")  # the lesson's table, token for token


def test_paris_in_english_then_end_of_sequence(default_lm):
    trace = generate(default_lm, "The capital of France is", GenerationConfig(max_new_tokens=8))
    assert trace.output_text == " Paris.", trace.output_text
    assert trace.stop_reason == "eos"


def test_ignore_eos_keeps_writing_to_the_asked_length(default_lm):
    cfg = GenerationConfig(max_new_tokens=12, ignore_eos=True)
    trace = generate(default_lm, "法国的首都是", cfg)
    assert len(trace.steps) == 12 and trace.stop_reason == "length"
    assert trace.output_text.startswith("巴黎。")


def test_prompt_splits_without_a_bos_token(default_lm):
    trace = generate(default_lm, "法国的首都是", GenerationConfig(max_new_tokens=1))
    assert trace.prompt_pieces == ("法国", "的", "首都", "是")


def test_the_lesson_example_at_the_slider_maximum(default_lm):
    prompt = extend_prompt(default_lm.tokenizer, "法国的首都是", DEFAULT_MAX_PROMPT_TOKENS)
    trace = generate(default_lm, prompt, GenerationConfig(max_new_tokens=8))
    assert trace.prompt_len == DEFAULT_MAX_PROMPT_TOKENS
    assert trace.output_text == "巴黎。" and trace.stop_reason == "eos", trace.output_text


@pytest.mark.slow
@pytest.mark.parametrize("num_tokens", STRETCHED_LENGTHS)
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_capital_survives_the_stretch(default_lm, lang, num_tokens):
    """Runs the model (not the stored eval): >= 95 % right at each stretched length. The filler before each
    question is the same, so its positions are computed once and kept (the engine's prefix cache, a store
    of this test's own): a third of the CPU, the same answers as a full Prefill each."""
    cfg = GenerationConfig(max_new_tokens=8, prefix_cache=True, prefix_scope=f"stretch-{lang}-{num_tokens}")
    lm = dataclasses.replace(default_lm, prefixes=PrefixStore())
    wrong = []
    for row in capitals():
        question, answer = (
            (f"{row['country_zh']}的首都是", f"{row['capital_zh']}。") if lang == "zh"
            else (f"The capital of {row['country_en']} is", f" {row['capital_en']}.")
        )
        prompt = extend_prompt(lm.tokenizer, question, num_tokens)
        trace = generate(lm, prompt, cfg)
        assert trace.prompt_len == num_tokens
        if not trace.output_text.startswith(answer):
            wrong.append((question, trace.output_text))
    assert len(wrong) <= 0.05 * len(capitals()), wrong


def test_cached_equals_recompute_and_hf_on_the_default_model(default_lm):
    for prompt in ("德国的首都是", "The capital of Japan is", "Prefill"):
        cfg = GenerationConfig(max_new_tokens=24, ignore_eos=True)
        trace = generate(default_lm, prompt, cfg)
        ids = list(trace.prompt_ids)
        assert list(trace.output_ids) == recomputed_ids(default_lm, ids, cfg)
        assert list(trace.output_ids)[: len(hf_greedy(default_lm, ids, 24))] == hf_greedy(default_lm, ids, 24)


def test_a_long_prompt_runs(default_lm):
    prompt = "法国的首都是巴黎。" * 200
    trace = generate(default_lm, prompt, GenerationConfig(max_new_tokens=2))
    assert trace.prompt_len > 1000 and trace.steps[0].num_positions == trace.prompt_len


def test_model_card_matches_the_stored_eval():
    """A documentation check: the card prints what eval.json holds (the model itself is
    checked by the tests above, which run it)."""
    card = (DEFAULT_MODEL_DIR / "README.md").read_text()
    accuracy = json.loads((DEFAULT_MODEL_DIR / "eval.json").read_text())["accuracy"]
    for lang in ("zh", "en"):
        for num_tokens, row in accuracy[lang].items():
            assert f"{row['correct']}/{row['total']} right, {row['stops']} stop" in card, (lang, num_tokens)
    assert f"up to **{DEFAULT_MAX_PROMPT_TOKENS} tokens**" in card


@pytest.mark.parametrize("prompt", ["<script>alert(1)</script>", "😀🎉", "مرحبا", "a\x00b\x07c"])
def test_any_text_tokenizes(default_lm, prompt):
    trace = generate(default_lm, prompt, GenerationConfig(max_new_tokens=2))
    assert trace.prompt_len >= 1
