"""Real-size shapes with random weights (engine/runtime/presets.py): published sizes, the memory
check that refuses before allocating, and one real 0.5B run on the CPU."""

from __future__ import annotations

import json
import time

import pytest
import torch

from engine.contract.codec import convert
from engine.cli import main
from engine.cli.trace import format_trace
from engine.contract.errors import ModelLoadError
from engine.contract.trace import RANDOM_WEIGHTS_NOTE, RequestTrace
from engine.runtime import presets
from engine.runtime.model import load_model

GiB = 2**30
# Every weight, norms and biases included, as the model cards and safetensors headers count them.
PUBLISHED = {"qwen2.5-0.5b": 494_032_768, "llama-3.2-1b": 1_235_814_400, "llama-3.1-8b": 8_030_261_248}


@pytest.mark.parametrize("name", PUBLISHED)
def test_shapes_give_the_published_parameter_counts(name):
    assert presets.num_params(name) == PUBLISHED[name]  # the count the memory check uses, without torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):  # shapes only, no memory: the model transformers would build
        model = AutoModelForCausalLM.from_config(presets.preset_config(name))
    model.tie_weights()
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[name]


def test_the_cost_model_reads_the_same_shape():
    shape = presets.preset_shape("llama-3.1-8b")
    assert shape.name == "preset:llama-3.1-8b"
    assert shape.num_params == 8_030_261_248 - 65 * 4096  # the cost model counts matrices: no RMSNorms
    assert (shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.tied_embeddings) == (32, 8, 128, False)


@pytest.fixture
def little_memory(monkeypatch):
    """Pretend the device has 1 GiB free, and record every model that still gets built."""
    from transformers import AutoModelForCausalLM

    built = []
    monkeypatch.setattr(presets, "available_memory_bytes", lambda device: 1 * GiB)
    monkeypatch.setattr(AutoModelForCausalLM, "from_config", lambda *a, **k: built.append(a) or pytest.fail("built"))
    return built


@pytest.mark.parametrize("name", ["qwen2.5-0.5b", "llama-3.1-8b"])
def test_too_large_is_refused_before_anything_is_allocated(little_memory, name):
    start = time.perf_counter()
    with pytest.raises(ModelLoadError) as err:
        load_model(f"preset:{name}", device="cpu", dtype="float32")
    assert time.perf_counter() - start < 60  # an 8B allocation and fill would take minutes (a busy CPU: seconds)
    assert little_memory == []
    assert err.value.key == "preset_too_large"
    assert f"preset:{name} needs about" in str(err.value) and "1.0 GiB is free" in str(err.value)


def test_refusal_on_the_cli_is_one_line(little_memory, capsys):
    assert main(["trace", "--model", "preset:llama-3.1-8b", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "needs about" in err and little_memory == []


def test_unknown_preset_names_the_known_ones(capsys):
    assert main(["trace", "--model", "preset:gpt-5"]) == 2
    assert "no preset 'gpt-5'; use one of preset:qwen2.5-0.5b" in capsys.readouterr().err


def test_presets_that_fit_lists_only_those_under_the_free_memory(monkeypatch):
    monkeypatch.setattr(presets, "available_memory_bytes", lambda device: 5 * GiB)
    cpu = torch.device("cpu")
    assert presets.presets_that_fit(cpu, torch.float32) == ["preset:qwen2.5-0.5b"]  # the 1B needs ~8 GiB in fp32
    assert presets.presets_that_fit(cpu, torch.bfloat16) == ["preset:qwen2.5-0.5b", "preset:llama-3.2-1b"]
    # a longer context needs more: the 1B's 32 heads of 8K x 8K attention scores alone are 4 GiB in bf16
    assert presets.presets_that_fit(cpu, torch.bfloat16, context=8 * 1024) == ["preset:qwen2.5-0.5b"]


def test_estimate_by_hand_for_the_8b_in_bf16_at_1024_positions():
    weights = 8_030_261_248 * 2
    kv_cache = (2 * 32 * 8 * 128 * 2) * 1024  # K and V x layers x K/V heads x head_dim x bf16, per position
    activations = 1024 * (4 * 4096 + 3 * 14336 + 32 * 1024) * 2  # residual copies, MLP, 32 heads of scores
    assert presets.estimate_bytes("llama-3.1-8b", 2, context=1024) == pytest.approx(
        1.10 * (weights + kv_cache + activations), rel=1e-9)


def test_cost_cli_takes_a_preset(capsys):
    assert main(["cost", "--model", "preset:qwen2.5-0.5b", "--prompt-len", "512", "--context", "512",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"]["name"] == "preset:qwen2.5-0.5b"
    assert report["model"]["num_params"] == 494_032_768 - 49 * 896 - 24 * 1152  # matrices: no norms, no biases


def test_old_traces_without_the_flag_still_load(tiny_model_dirs):
    from engine.runtime.generation import GenerationConfig, generate

    lm = load_model(tiny_model_dirs["llama"], device="cpu", warmup=False)
    data = generate(lm, "The capital", GenerationConfig(max_new_tokens=2, ignore_eos=True)).to_dict()
    assert data["model"].pop("random_weights") is False
    assert convert(data, RequestTrace).model.random_weights is False
    assert RANDOM_WEIGHTS_NOTE not in format_trace(convert(data, RequestTrace))


def test_build_fills_every_weight_the_same_way_each_time(monkeypatch):
    tiny = presets.Preset("tiny-qwen", "none", 0, dict(
        model_type="qwen2", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=300, tie_word_embeddings=True, max_position_embeddings=64))
    monkeypatch.setitem(presets.PRESETS, tiny.name, tiny)
    (_, first), (_, second) = (presets.build_model(tiny.name, torch.device("cpu"), torch.float32) for _ in range(2))
    weights = dict(first.named_parameters())
    assert first.lm_head.weight is first.model.embed_tokens.weight  # tied again after the skipped init
    assert all(torch.equal(w, second.get_parameter(n)) for n, w in weights.items())  # seeded: reproducible
    assert all(torch.isfinite(w).all() for w in weights.values())  # no uninitialised memory left
    assert all((w == 1).all() for n, w in weights.items() if n.endswith("norm.weight"))
    assert all((w == 0).all() for n, w in weights.items() if n.endswith("bias"))
    assert 0.015 < weights["model.layers.0.mlp.up_proj.weight"].std() < 0.025


@pytest.mark.slow
def test_the_half_billion_preset_runs_a_two_token_trace_on_cpu(capsys):
    if presets.available_memory_bytes(torch.device("cpu")) < presets.estimate_bytes("qwen2.5-0.5b", 4, 1024 + 2):
        pytest.skip("not enough free RAM for the 0.5B preset in fp32")
    assert main(["trace", "--model", "preset:qwen2.5-0.5b", "--device", "cpu", "--dtype", "float32",
                 "--max-new-tokens", "2", "--ignore-eos", "--json"]) == 0
    trace = RequestTrace.from_json(capsys.readouterr().out)
    m = trace.model
    assert (m.model_id, m.random_weights, m.num_params) == ("preset:qwen2.5-0.5b", True, 494_032_768)
    assert (m.num_layers, m.num_kv_heads, m.head_dim, m.vocab_size, m.sliding_window) == (24, 2, 64, 151936, None)
    assert [s.phase for s in trace.steps] == ["prefill", "decode"]
    assert all(0 <= s.output_id < 151936 for s in trace.steps)
    assert trace.steps[-1].kv_bytes == m.kv_bytes_for(trace.steps[-1].context_after)
    header = format_trace(trace).splitlines()[:2]  # what the table prints above its rows
    assert header[0].startswith("model preset:qwen2.5-0.5b") and header[1] == f"note: {RANDOM_WEIGHTS_NOTE}"
