"""The engine's central claims, checked on real forward passes.

- cached greedy decoding == full recomputation without a cache == model.generate
- the first output token is the argmax of Prefill's last position
- Prefill processes every prompt position in one pass; each Decode step exactly one
- KV bytes after each step == 2 x layers x kv_heads x head_dim x bytes x context,
  except past a sliding window (Mistral), where the measured cache stops growing
- phase checks are real errors (they survive python -O)
- the prompt gets the tokenizer's own special tokens (a BOS where it adds one), shown in the split
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import warnings

import pytest
import torch

from engine.contract.errors import EngineError, InputError, ModelLoadError, PhaseError
from engine.contract.results import GenerationConfig
from engine.runtime.generation import decode_step, generate, generate_ids, prefill, stream_trace
from engine.runtime.generation import encode_prompt, token_pieces
from engine.runtime.hf import new_cache
from engine.runtime.model import load_model
from engine.runtime.model import describe
from tests.engine.reference import hf_greedy, recomputed_ids
from tests.factories import build_bos_tokenizer

FAMILIES = ("llama", "qwen2", "gpt2", "mistral")  # mistral: a sliding window of 8 positions (conftest)
EN_PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def tiny(tiny_model_dirs):
    return {kind: load_model(path, device="cpu") for kind, path in tiny_model_dirs.items()}


@pytest.mark.parametrize("kind", FAMILIES)
def test_cached_greedy_equals_recompute_and_hf_generate(tiny, kind):
    lm = tiny[kind]
    for cfg in (GenerationConfig(max_new_tokens=12, ignore_eos=True), GenerationConfig(max_new_tokens=12)):
        trace = generate(lm, EN_PROMPT, cfg)
        ids = list(trace.prompt_ids)
        assert cfg.ignore_eos is False or len(trace.output_ids) == 12
        assert len(set(trace.output_ids)) > 1, "random model should not repeat one token (initializer_range)"
        assert list(trace.output_ids) == recomputed_ids(lm, ids, cfg)
        assert list(trace.output_ids) == generate_ids(lm, ids, cfg)
    assert list(trace.output_ids) == hf_greedy(lm, ids, 12)  # the second cfg stops at EOS, as HF does


@pytest.mark.parametrize("kind", FAMILIES)
def test_steps_are_one_prefill_then_single_position_decodes(tiny, kind):
    lm = tiny[kind]
    trace = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=6, ignore_eos=True))
    prefill_step, *decodes = trace.steps
    assert prefill_step.phase == "prefill"
    assert prefill_step.input_ids == trace.prompt_ids
    assert prefill_step.num_positions == trace.prompt_len and prefill_step.context_before == 0
    for prev, step in zip(trace.steps, decodes):
        assert step.phase == "decode"
        assert step.num_positions == 1
        assert step.input_ids == (prev.output_id,)  # the chain: each step feeds the token chosen before
        assert step.context_before == prev.context_after
        assert step.start_ms >= prev.end_ms


@pytest.mark.parametrize("kind", FAMILIES)
def test_kv_bytes_follow_the_formula(tiny, kind):
    lm = tiny[kind]
    info = lm.info
    trace = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=16, ignore_eos=True))  # past the window
    per_position = 2 * info.num_layers * info.num_kv_heads * info.head_dim * info.bytes_per_element
    for step in trace.steps:
        # A sliding-window layer never holds more than its window; a full cache holds every position.
        held = min(step.context_after, info.sliding_window) if info.sliding_window else step.context_after
        assert step.kv_bytes % per_position == 0 and step.kv_bytes // per_position in range(held - 1, held + 1)
        assert len(step.kv_bytes_per_layer) == info.num_layers
        assert len(set(step.kv_bytes_per_layer)) == 1 and sum(step.kv_bytes_per_layer) == step.kv_bytes
        if not info.sliding_window:
            assert step.kv_bytes == per_position * step.context_after
    assert (info.sliding_window, info.num_sliding_layers) == ((8, 2) if kind == "mistral" else (None, 0))
    if kind == "mistral":  # the window is full: the last passes add nothing, far below the formula
        assert trace.steps[-1].kv_bytes == trace.steps[-2].kv_bytes < info.kv_bytes_for(trace.steps[-1].context_after)
    if kind == "gpt2":
        assert info.num_kv_heads == info.num_heads  # no GQA
    else:
        assert info.num_kv_heads < info.num_heads


# --- the model's shape: every number from a config field that exists ---------

def _describe(config):
    return describe(torch.nn.Linear(1, 1), config, "m", torch.float32, torch.device("cpu"))


def _shape_configs():
    from transformers import FalconConfig, Gemma2Config, GPT2Config, GPTBigCodeConfig, LlamaConfig, Qwen2Config

    falcon = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4)
    return {
        "gpt2: no K/V field, one K/V head per query head": (GPT2Config(n_layer=2, n_embd=64, n_head=4),
                                                             (4, 4, 16, None, 0)),
        "gpt_bigcode: multi_query": (GPTBigCodeConfig(n_layer=2, n_embd=64, n_head=4, multi_query=True),
                                     (4, 1, 16, None, 0)),
        # Falcon-7B: num_kv_heads still says 4, multi_query says the layer keeps 1
        "falcon: multi_query": (FalconConfig(multi_query=True, **falcon), (4, 1, 16, None, 0)),
        "falcon: new architecture": (FalconConfig(new_decoder_architecture=True, num_kv_heads=2, **falcon),
                                     (4, 2, 16, None, 0)),
        "llama: explicit head_dim": (LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                 num_key_value_heads=2, head_dim=32), (4, 2, 32, None, 0)),
        "qwen2: window off by default": (Qwen2Config(hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                                                     num_key_value_heads=2), (4, 2, 16, None, 0)),
        "qwen2: window above max_window_layers": (Qwen2Config(
            hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True,
            sliding_window=16, max_window_layers=1), (4, 2, 16, 16, 2)),
        "gemma2: every other layer local": (Gemma2Config(hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                                                         num_key_value_heads=2, head_dim=16, sliding_window=16),
                                            (4, 2, 16, 16, 2)),
    }


@pytest.mark.parametrize("case", list(_shape_configs()))
def test_describe_reads_the_fields_each_family_uses(case):
    config, expected = _shape_configs()[case]
    info = _describe(config)
    assert (info.num_heads, info.num_kv_heads, info.head_dim, info.sliding_window, info.num_sliding_layers) == expected


@pytest.mark.parametrize("fields, reason", [
    (dict(hidden_size=64), "none of num_attention_heads, n_head, num_heads"),
    (dict(hidden_size=65, num_attention_heads=4), "hidden size 65 does not split into 4 heads"),
    (dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=3), "3 K/V heads cannot serve 4 query heads"),
])
def test_describe_refuses_a_shape_it_cannot_read(fields, reason):
    from transformers import PretrainedConfig

    config = PretrainedConfig(num_hidden_layers=2, vocab_size=10, max_position_embeddings=8, **fields)
    with pytest.raises(ModelLoadError) as err:
        _describe(config)
    assert err.value.key == "model_load_failed" and err.value.params["path"] == "m"
    assert reason in err.value.params["reason"] and reason in str(err.value)


def test_first_token_is_argmax_of_prefill_last_position(tiny):
    lm = tiny["llama"]
    trace = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=2, ignore_eos=True))
    with torch.inference_mode():
        full = lm.model(input_ids=torch.tensor([list(trace.prompt_ids)]), use_cache=False).logits
    assert trace.output_ids[0] == int(full[0, -1].argmax())


def test_prefill_and_decode_step_pass_the_cache_explicitly(tiny):
    lm = tiny["llama"]
    ids = lm.tokenizer.encode(EN_PROMPT, add_special_tokens=False)
    with torch.inference_mode():
        cache = new_cache(lm.model)
        logits, cache = prefill(lm.model, torch.tensor([ids]), cache)
        assert logits.shape == (1, lm.info.vocab_size) and cache.get_seq_length() == len(ids)
        token = torch.tensor([[int(logits.argmax())]])
        logits, cache = decode_step(lm.model, token, cache)
        assert cache.get_seq_length() == len(ids) + 1


def test_each_phase_refuses_the_other_phases_input(tiny):
    model = tiny["llama"].model
    ids = torch.tensor([tiny["llama"].tokenizer.encode(EN_PROMPT, add_special_tokens=False)])  # (1, 5)
    with torch.inference_mode():
        with pytest.raises(PhaseError, match="exactly one new token"):
            decode_step(model, ids, new_cache(model))
        with pytest.raises(PhaseError, match="cache is empty"):
            decode_step(model, ids[:, :1], new_cache(model))
        _, cache = prefill(model, ids, new_cache(model))
        with pytest.raises(PhaseError, match="exactly one new token"):
            decode_step(model, ids, cache)
        with pytest.raises(PhaseError, match="empty cache"):
            prefill(model, ids, cache)


@pytest.mark.slow
def test_phase_checks_survive_python_O():
    """`assert` vanishes under -O; these checks must not. They run before the model is touched."""
    code = (
        "import torch\n"
        "from transformers import DynamicCache\n"
        "from engine.contract.errors import PhaseError\n"
        "from engine.runtime.generation import decode_step, prefill\n"
        "filled = DynamicCache()\n"
        "filled.update(torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4), 0)  # 2 positions cached\n"
        "ids = lambda n: torch.zeros((1, n), dtype=torch.long)\n"
        "for phase, n, cache in ((decode_step, 3, filled), (decode_step, 1, DynamicCache()), (prefill, 3, filled)):\n"
        "    try:\n"
        "        phase(None, ids(n), cache)\n"
        "    except PhaseError:\n"
        "        print('refused')\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["refused"] * 3, out.stderr[-2000:]


def test_stream_yields_one_growing_trace_per_forward_pass(tiny):
    partials = list(stream_trace(tiny["llama"], EN_PROMPT, GenerationConfig(max_new_tokens=4, ignore_eos=True)))
    assert [len(p.steps) for p in partials] == [1, 2, 3, 4]
    assert [p.finished for p in partials] == [False, False, False, True]
    assert partials[-1].stop_reason == "length"


def test_sampling_repeats_with_a_seed_and_differs_from_greedy(tiny):
    lm = tiny["llama"]
    cfg = GenerationConfig(max_new_tokens=10, temperature=1.5, top_k=50, top_p=0.95, seed=7, ignore_eos=True)
    first, second = generate(lm, EN_PROMPT, cfg), generate(lm, EN_PROMPT, cfg)
    assert first.output_ids == second.output_ids
    other = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=10, temperature=1.5, seed=8, ignore_eos=True))
    greedy = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=10, ignore_eos=True))
    assert first.output_ids != greedy.output_ids or other.output_ids != greedy.output_ids


def test_top_k_one_is_greedy(tiny):
    lm = tiny["qwen2"]
    sampled = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=6, temperature=1.0, top_k=1, ignore_eos=True))
    greedy = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=6, ignore_eos=True))
    assert sampled.output_ids == greedy.output_ids


def test_stops_at_eos(tiny_model_dirs):
    # Our own copy of the model: the shared fixture's generation_config is never touched.
    lm = load_model(tiny_model_dirs["llama"], device="cpu", warmup=False)
    greedy = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=8, ignore_eos=True))
    third = greedy.output_ids[2]
    assert third not in greedy.output_ids[:2]  # else the loop would rightly stop earlier
    # Make the 3rd greedy token count as EOS for this run, and check the loop stops right there.
    lm.model.generation_config.eos_token_id = third
    trace = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=8))
    assert trace.stop_reason == "eos" and trace.output_ids == greedy.output_ids[:3]


PASS_SLEEP_MS = 20.0  # every forward pass made at least this slow, so measured times have a known floor


def test_times_are_measured_from_real_passes(tiny_model_dirs):
    """Pass times and metrics against two clocks the engine does not control: a forward
    hook that makes every pass take >= 20 ms, and the wall time around the whole run."""
    lm = load_model(tiny_model_dirs["llama"], device="cpu", warmup=False)  # our own copy: it gets a hook
    lm.model.register_forward_hook(lambda *_: time.sleep(PASS_SLEEP_MS / 1e3))
    start = time.perf_counter()
    trace = generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=5, ignore_eos=True))
    wall_ms = (time.perf_counter() - start) * 1e3
    assert 0 < trace.tokenize_ms <= trace.steps[0].start_ms
    for prev, step in zip(trace.steps, trace.steps[1:]):
        assert step.start_ms >= prev.end_ms
    assert all(step.duration_ms >= PASS_SLEEP_MS for step in trace.steps), [s.duration_ms for s in trace.steps]
    metrics = trace.metrics
    assert PASS_SLEEP_MS <= metrics.ttft_ms < metrics.e2el_ms <= wall_ms
    assert metrics.e2el_ms >= 5 * PASS_SLEEP_MS and metrics.tpot_ms >= PASS_SLEEP_MS


def test_no_warnings_from_transformers(tiny_model_dirs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm = load_model(tiny_model_dirs["gpt2"], device="cpu")
        generate(lm, EN_PROMPT, GenerationConfig(max_new_tokens=3))


# --- bad input: each gets its specific error ---------------------------------

@pytest.mark.parametrize("prompt", ["", "   \n\t"])
def test_empty_prompt(tiny, prompt):
    with pytest.raises(InputError) as err:
        generate(tiny["llama"], prompt)
    assert err.value.key == "empty_prompt"


def test_prompt_longer_than_context(tiny):
    lm = tiny["gpt2"]  # 256 positions
    with pytest.raises(InputError) as err:
        generate(lm, "capital " * 400, GenerationConfig(max_new_tokens=4))
    assert err.value.key == "prompt_too_long" and err.value.params["limit"] == 256 - 4


def test_prompt_over_an_app_cap(tiny):
    lm = tiny["llama"]
    num_tokens = len(lm.tokenizer("capital " * 50)["input_ids"])
    assert num_tokens > 10
    with pytest.raises(InputError) as err:
        generate(lm, "capital " * 50, GenerationConfig(max_new_tokens=4), max_prompt_tokens=10)
    assert err.value.params == {"num_tokens": num_tokens, "limit": 10}


@pytest.mark.parametrize("kwargs, key", [
    ({"max_new_tokens": 0}, "max_new_tokens_range"),
    ({"max_new_tokens": 100_000}, "max_new_tokens_range"),
    ({"temperature": -1.0}, "sampling_range"),
    ({"top_p": 0.0}, "sampling_range"),
    ({"top_k": -3}, "sampling_range"),
])
def test_generation_config_ranges(kwargs, key):
    with pytest.raises(InputError) as err:
        GenerationConfig(**kwargs)
    assert err.value.key == key


def test_missing_model_folder(tmp_path):
    with pytest.raises(ModelLoadError) as err:
        load_model(tmp_path / "nope")
    assert err.value.key == "model_not_found"


def test_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ModelLoadError) as err:
        load_model(tmp_path)
    assert err.value.key == "not_a_model"


def test_pickle_only_weights_are_refused(tmp_path, tiny_model_dirs):
    (tmp_path / "config.json").write_text((tiny_model_dirs["llama"] / "config.json").read_text())
    (tmp_path / "pytorch_model.bin").write_bytes(b"not loaded, ever")
    with pytest.raises(ModelLoadError) as err:
        load_model(tmp_path)
    assert err.value.key == "pickle_weights_only"


def test_broken_weights_give_a_load_error(tmp_path, tiny_model_dirs):
    (tmp_path / "config.json").write_text((tiny_model_dirs["llama"] / "config.json").read_text())
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(ModelLoadError) as err:
        load_model(tmp_path)
    assert err.value.key == "model_load_failed"


@pytest.mark.parametrize("kwargs, key", [({"device": "tpu"}, "device_unavailable"), ({"dtype": "int3"}, "bad_dtype")])
def test_bad_device_and_dtype(tiny_model_dirs, kwargs, key):
    with pytest.raises(EngineError) as err:
        load_model(tiny_model_dirs["llama"], **kwargs)
    assert err.value.key == key


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_requested_without_cuda(tiny_model_dirs):
    with pytest.raises(ModelLoadError) as err:
        load_model(tiny_model_dirs["llama"], device="cuda")
    assert err.value.key == "device_unavailable"


def test_token_pieces_are_readable(tiny):
    tok = tiny["llama"].tokenizer
    ids = tok.encode("The capital 法国 😀", add_special_tokens=False)
    pieces = token_pieces(tok, ids)
    assert len(pieces) == len(ids)
    assert pieces[0].strip() == "The" and pieces[1] == " capital"  # the word marker shows as a space
    assert any(p.startswith("<0x") for p in pieces)  # the emoji falls back to raw bytes, shown as such
    assert token_pieces(tok, [len(tok) + 7]) == (f"<id {len(tok) + 7}>",)  # an id this tokenizer lacks


# --- special tokens: the tokenizer's own BOS, shown in the token split --------

@pytest.fixture(scope="module")
def bos_lm(tiny_model_dirs, tmp_path_factory):
    """The tiny random Llama with a tokenizer that adds a BOS, as Llama and Gemma checkpoints do."""
    folder = tmp_path_factory.mktemp("llama_bos")
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(tiny_model_dirs["llama"] / name, folder / name)
    build_bos_tokenizer(folder)
    return load_model(folder, device="cpu")


def test_the_prompt_starts_with_the_tokenizers_bos_and_shows_it(bos_lm):
    bos = bos_lm.tokenizer.bos_token_id
    cfg = GenerationConfig(max_new_tokens=6, ignore_eos=True)
    trace = generate(bos_lm, EN_PROMPT, cfg)
    words = bos_lm.tokenizer.encode(EN_PROMPT, add_special_tokens=False)
    assert trace.prompt_ids == (bos, *words)
    assert trace.prompt_pieces[0] == "<s>" and len(trace.prompt_pieces) == len(trace.prompt_ids)
    assert trace.steps[0].input_ids == trace.prompt_ids and trace.steps[0].num_positions == len(words) + 1
    assert "<s>" not in trace.output_text
    # the BOS is a real position: the answer is the one a full recompute gives for the same ids
    assert list(trace.output_ids) == recomputed_ids(bos_lm, list(trace.prompt_ids), cfg)


def test_the_bos_counts_toward_the_prompt_limit(bos_lm):
    words = bos_lm.tokenizer.encode(EN_PROMPT, add_special_tokens=False)
    with pytest.raises(InputError) as err:
        encode_prompt(bos_lm, EN_PROMPT, GenerationConfig(max_new_tokens=1), max_prompt_tokens=len(words))
    assert err.value.params == {"num_tokens": len(words) + 1, "limit": len(words)}


def test_the_default_model_gets_no_special_tokens(default_lm):
    """Its tokenizer adds nothing (no BOS), so its prompts are exactly the text's tokens, as trained."""
    tok = default_lm.tokenizer
    assert tok.bos_token_id is None
    for prompt in ("法国的首都是", "The capital of France is"):
        ids = encode_prompt(default_lm, prompt, GenerationConfig())
        assert ids == tok.encode(prompt, add_special_tokens=False) and not set(ids) & set(tok.all_special_ids)
