"""The embedded default model: small, offline, safe, and it knows the lesson's answer."""

from __future__ import annotations

import json

import pytest

from engine import DEFAULT_MODEL_DIR, GenerationConfig, generate, generate_ids_no_cache


def test_files_are_small_safetensors_and_offline_loadable():
    files = {p.name: p.stat().st_size for p in DEFAULT_MODEL_DIR.iterdir() if p.is_file()}
    for name in ("config.json", "model.safetensors", "tokenizer.json", "README.md", "train.py"):
        assert name in files, name
    assert not any(n.endswith((".bin", ".pt", ".pth")) for n in files)
    model_bytes = sum(size for name, size in files.items() if name not in ("train.py", "corpus.txt", "README.md"))
    assert model_bytes <= 20 * 1024 * 1024


def test_shape_teaches_gqa_rope_and_long_context(default_lm):
    info = default_lm.info
    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())
    assert info.architecture == "LlamaForCausalLM" and config["model_type"] == "llama"
    assert info.num_kv_heads < info.num_heads  # grouped-query attention
    assert info.max_positions >= 2048
    assert "rope_theta" in json.dumps(config) or "rope_parameters" in config


def test_paris_in_chinese(default_lm):
    trace = generate(default_lm, "法国的首都是", GenerationConfig(max_new_tokens=8))
    assert trace.output_text.startswith("巴黎。"), trace.output_text
    assert trace.steps[0].phase == "prefill" and trace.steps[0].num_positions == trace.prompt_len
    assert "巴黎" in "".join(trace.output_pieces[:2])


def test_paris_in_english(default_lm):
    trace = generate(default_lm, "The capital of France is", GenerationConfig(max_new_tokens=4))
    assert trace.output_text.strip().startswith("Paris."), trace.output_text


def test_prompt_splits_without_a_bos_token(default_lm):
    trace = generate(default_lm, "法国的首都是", GenerationConfig(max_new_tokens=1))
    assert "".join(trace.prompt_pieces).strip() == "法国的首都是"


def test_cached_equals_recompute_and_hf_on_the_default_model(default_lm):
    from tests.test_engine import hf_greedy

    for prompt in ("德国的首都是", "The capital of Japan is", "Prefill"):
        cfg = GenerationConfig(max_new_tokens=24)
        trace = generate(default_lm, prompt, cfg)
        ids = list(trace.prompt_ids)
        assert list(trace.output_ids) == generate_ids_no_cache(default_lm, ids, cfg)
        assert list(trace.output_ids) == hf_greedy(default_lm, ids, 24)


def test_a_long_prompt_runs(default_lm):
    prompt = "法国的首都是巴黎。" * 200
    trace = generate(default_lm, prompt, GenerationConfig(max_new_tokens=2))
    assert trace.prompt_len > 1000 and trace.steps[0].num_positions == trace.prompt_len


def test_model_card_reports_the_measured_accuracy():
    card = (DEFAULT_MODEL_DIR / "README.md").read_text()
    accuracy = json.loads((DEFAULT_MODEL_DIR / "eval.json").read_text())["accuracy"]
    for lang in ("zh", "en"):
        assert f"{accuracy[lang]['correct']}/{accuracy[lang]['total']}" in card
        assert accuracy[lang]["total"] == 71 and accuracy[lang]["correct"] >= 64  # "most" countries


@pytest.mark.parametrize("prompt", ["<script>alert(1)</script>", "😀🎉", "مرحبا", "a\x00b\x07c"])
def test_any_text_tokenizes(default_lm, prompt):
    trace = generate(default_lm, prompt, GenerationConfig(max_new_tokens=2))
    assert trace.prompt_len >= 1
