"""engine/contract/cost.py and `python -m engine cost`: numbers checked by hand, then the shapes of the claims.

- two tiny configs worked out on paper: GQA + tied embeddings + an explicit head_dim (Llama style),
  and plain multi-head + untied + learned positions + a two-matrix MLP (GPT-2 style)
- weight counts equal real checkpoints: the default model's safetensors, tiny random ones,
  and the published sizes of Llama-3.1-8B and Qwen2.5-0.5B
- floors never fall as n, c or b grow; on an H200 the bound flips once, memory -> compute, as n grows
- the CLI: JSON contract, a folder with only config.json, one-line errors with exit 2
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.contract import cost
from engine.contract.cost import DEVICE_SPECS, DeviceSpec, ModelShape, pass_cost
from engine.contract.errors import EngineError
from engine.runtime import machine
from engine.runtime.model import load_shape
from tests.factories import ROOT
from tests.hostile.bounded import CaseRun, each_in_one_child

DEFAULT_DIR = ROOT / "assets" / "default_model"

# Llama style: 4 query heads share 2 K/V heads; head_dim 32 is given, not hidden / heads (= 16).
GQA_TIED = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 100,
            "tie_word_embeddings": True, "max_position_embeddings": 256}
# GPT-2 style: 4 heads of 48 / 4 = 12, no K/V field (one K/V head per query head), MLP 4 x 48 = 192 wide.
MHA_UNTIED = {"model_type": "gpt2", "n_embd": 48, "n_layer": 2, "n_head": 4, "vocab_size": 50,
              "n_positions": 128, "tie_word_embeddings": False}
LLAMA_31_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
               "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
               "tie_word_embeddings": False, "max_position_embeddings": 131072}
QWEN25_05B = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
              "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
              "tie_word_embeddings": True, "max_position_embeddings": 32768}
# Round roofs so floors can be checked by hand: 2 GFLOP/s bf16, 1 GFLOP/s fp32, 100 MB/s.
TOY = DeviceSpec("toy", fp32_flops_per_s=1e9, bf16_flops_per_s=2e9, bandwidth_bytes_per_s=1e8)


def shape(config: dict) -> ModelShape:
    return ModelShape.from_config(config, name="test")


# --- hand-computed numbers -----------------------------------------------------

def test_gqa_tied_pass_by_hand():
    s = shape(GQA_TIED)
    assert (s.head_dim, s.num_kv_heads, s.num_mlp_matrices, s.tied_embeddings) == (32, 2, 3, True)
    # one layer: attention 64*32*(2*4 + 2*2) = 24,576; MLP 3*64*160 = 30,720; together 55,296
    assert s.layer_params == 55_296
    # 2 layers = 110,592, plus one 100 x 64 embedding (= the LM head) = 6,400
    assert s.num_params == 116_992
    p = pass_cost(s, TOY, new_positions=3, context=5, batch=2, weight_dtype="bf16", kv_dtype="bf16")
    assert p.linear_flops == 2 * 6 * 110_592 == 1_327_104         # 2 FLOPs x 6 positions x layer weights
    # pairs per request and layer: 3 new positions see 5+1, 5+2, 5+3 = 21; 4 FLOPs x 4 heads x 32 x 2 layers x 2
    assert p.attention_flops == 43_008
    assert p.lm_head_flops == 2 * 2 * 6_400 == 25_600               # one position per request
    assert p.flops == 1_395_712
    assert p.weight_bytes == 116_992 * 2 == 233_984               # the tied matrix once
    assert p.embedding_bytes == 0                                  # gathered rows lie inside it
    # K/V per position: 2 (K and V) x 2 layers x 2 heads x 32 x 2 bytes = 512
    assert (p.kv_read_bytes, p.kv_write_bytes) == (2 * 5 * 512, 2 * 3 * 512) == (5_120, 3_072)
    assert p.bytes == 242_176
    assert p.intensity == pytest.approx(1_395_712 / 242_176)
    # toy roofs: 1,395,712 / 2e9 = 0.697856 ms of compute, 242,176 / 1e8 = 2.42176 ms of memory
    assert (p.compute_ms, p.memory_ms) == (pytest.approx(0.697856), pytest.approx(2.42176))
    assert (p.floor_ms, p.bound, p.phase) == (pytest.approx(2.42176), "memory", "prefill")


def test_mha_untied_gpt2_pass_by_hand():
    s = shape(MHA_UNTIED)
    assert (s.head_dim, s.num_kv_heads, s.num_mlp_matrices, s.intermediate_size) == (12, 4, 2, 192)
    assert (s.tied_embeddings, s.learned_positions) == (False, True)
    # one layer: attention 4 * 48^2 = 9,216; MLP 2*48*192 = 18,432; together 27,648; 2 layers 55,296
    assert s.layer_params == 27_648
    # + embedding 2,400 + separate LM head 2,400 + position table 128*48 = 6,144
    assert s.num_params == 55_296 + 2_400 + 2_400 + 6_144 == 66_240
    p = pass_cost(s, TOY, new_positions=3, context=5, batch=2, weight_dtype="fp32", kv_dtype="fp32")
    assert p.linear_flops == 12 * 55_296 == 663_552
    assert p.attention_flops == 4 * 4 * 12 * 2 * 2 * 21 == 16_128
    assert p.lm_head_flops == 2 * 2 * 2_400 == 9_600
    assert p.flops == 689_280
    assert p.weight_bytes == (55_296 + 2_400) * 4 == 230_784     # layers + LM head, not the whole embedding
    # gathered: 6 token rows + 3 position rows (shared by the batch), 48 x 4 bytes each
    assert p.embedding_bytes == (6 + 3) * 48 * 4 == 1_728
    # K/V per position: 2 x 2 layers x 4 heads x 12 x 4 bytes = 384
    assert (p.kv_read_bytes, p.kv_write_bytes) == (7_680, 4_608)
    assert p.bytes == 244_800
    # fp32 weights run at the fp32 roof: 689,280 / 1e9 = 0.68928 ms; 244,800 / 1e8 = 2.448 ms
    assert (p.compute_ms, p.floor_ms, p.bound) == (pytest.approx(0.68928), pytest.approx(2.448), "memory")


def test_decode_step_by_hand_and_dtype_knobs():
    s = shape(GQA_TIED)
    p = pass_cost(s, TOY, new_positions=1, context=7, weight_dtype="int4", kv_dtype="int8")
    assert p.phase == "decode"
    assert p.attention_flops == 4 * 4 * 32 * 2 * 8                 # the one new position sees 7 + itself
    assert p.weight_bytes == 116_992 * 0.5                          # int4: half a byte per weight
    assert p.kv_read_bytes == 7 * 2 * 2 * 2 * 32 * 1                # int8 K/V
    assert p.peak_flops_per_s == TOY.bf16_flops_per_s              # quantised weights multiply in bf16
    bf16 = pass_cost(s, TOY, new_positions=1, context=7)
    assert bf16.weight_bytes == 4 * p.weight_bytes and bf16.flops == p.flops


def test_default_model_shape_and_its_h200_numbers():
    s = load_shape(DEFAULT_DIR)
    # 4 x (256*32*(16+4) + 3*256*688) + 2,989*256 = 4 x 692,224 + 765,184
    assert s.num_params == 3_534_080
    prefill, decode = cost.prefill_and_decode(s, DEVICE_SPECS["h200"], prompt_len=512, context=512)
    assert prefill.flops == 2 * 512 * 2_768_896 + 4 * 8 * 32 * 4 * (512 * 513 // 2) + 2 * 765_184
    assert decode.bytes == 3_534_080 * 2 + 2 * 4 * 2 * 32 * 2 * (512 + 1)
    assert (prefill.bound, decode.bound) == ("compute", "memory")


# --- the counts against real checkpoints ---------------------------------------

def safetensors_matrix_params(folder: Path) -> int:
    """Elements in every 2-D tensor of the checkpoint (1-D ones are norms and biases), from its header."""
    total = 0
    for file in folder.glob("*.safetensors"):
        with file.open("rb") as f:
            header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
        total += sum(t["shape"][0] * t["shape"][1] for k, t in header.items()
                     if k != "__metadata__" and len(t["shape"]) == 2)
    return total


def test_weight_count_matches_the_default_checkpoint():
    assert load_shape(DEFAULT_DIR).num_params == safetensors_matrix_params(DEFAULT_DIR)


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_weight_count_matches_tiny_checkpoints(tiny_model_dirs, kind):
    folder = tiny_model_dirs[kind]
    assert load_shape(folder).num_params == safetensors_matrix_params(folder)


def test_weight_count_matches_published_sizes():
    # Llama-3.1-8B: 8,030,261,248 parameters, of which 32 x 2 + 1 RMSNorms of 4,096
    assert shape(LLAMA_31_8B).num_params == 8_030_261_248 - 65 * 4096
    # Qwen2.5-0.5B: 494,032,768, of which 24 x 2 + 1 norms of 896 and q/k/v biases of 896 + 2 x 128 per layer
    assert shape(QWEN25_05B).num_params == 494_032_768 - 49 * 896 - 24 * 1152


def test_transformers_config_objects_read_as_their_dicts():
    from transformers import GPT2Config, LlamaConfig

    llama = {k: v for k, v in GQA_TIED.items() if k != "model_type"}
    gpt2 = {k: v for k, v in MHA_UNTIED.items() if k != "model_type"}
    assert ModelShape.from_config(LlamaConfig(**llama), name="test") == shape(GQA_TIED)
    assert ModelShape.from_config(GPT2Config(**gpt2), name="test") == shape(MHA_UNTIED)


# --- the shape of the claims -----------------------------------------------------

@pytest.mark.parametrize("config", [GQA_TIED, LLAMA_31_8B], ids=["tiny", "llama-8b"])
def test_floors_never_fall_as_n_c_or_b_grow(config):
    s, h200 = shape(config), DEVICE_SPECS["h200"]

    def floors(key: str, values) -> list[float]:
        base = dict(new_positions=1, context=64, batch=1)
        return [pass_cost(s, h200, **{**base, key: v}).floor_ms for v in values]

    for key, values in (("new_positions", [1, 2, 8, 64, 512, 4096]), ("context", [0, 1, 64, 4096, 65536]),
                        ("batch", [1, 2, 8, 64, 256])):
        got = floors(key, values)
        assert got == sorted(got), key
        assert got[-1] > got[0], key


def test_bound_flips_once_from_memory_to_compute_as_n_grows_on_h200():
    s, h200 = shape(LLAMA_31_8B), DEVICE_SPECS["h200"]
    bounds = [pass_cost(s, h200, new_positions=n, context=0).bound for n in (1, 8, 64, 256, 1024, 4096)]
    assert bounds[0] == "memory" and bounds[-1] == "compute"
    assert bounds == sorted(bounds, key=("memory", "compute").index)  # one flip, never back
    # the ridge is 989e12 / 4.8e12 = 206 FLOP/B; for 8B weights intensity ~ n, so the flip is near n = 206
    flip = next(n for n in range(1, 1000) if pass_cost(s, h200, new_positions=n, context=0).bound == "compute")
    assert 150 < flip < 260


def test_batching_raises_decode_intensity():
    s, h200 = shape(LLAMA_31_8B), DEVICE_SPECS["h200"]
    one, many = (pass_cost(s, h200, new_positions=1, context=512, batch=b) for b in (1, 64))
    assert many.intensity > 30 * one.intensity
    assert many.floor_ms < 2 * one.floor_ms  # 64x the tokens for less than twice the time


def test_int4_weights_move_the_decode_floor_down():
    s, h200 = shape(LLAMA_31_8B), DEVICE_SPECS["h200"]
    bf16, int4 = (pass_cost(s, h200, new_positions=1, context=512, weight_dtype=d) for d in ("bf16", "int4"))
    assert bf16.bound == int4.bound == "memory"
    assert int4.floor_ms == pytest.approx(bf16.floor_ms / 4, rel=0.02)  # the bf16 K/V is not quartered: ~1.3 %


def test_bad_shapes_and_values_are_engine_errors():
    with pytest.raises(EngineError, match="mixture-of-experts"):
        shape({**LLAMA_31_8B, "num_local_experts": 8})
    with pytest.raises(EngineError, match="cannot serve"):
        shape({**GQA_TIED, "num_key_value_heads": 3})
    with pytest.raises(EngineError, match="none of hidden_size"):
        shape({"model_type": "llama", "num_attention_heads": 4})
    with pytest.raises(EngineError, match="unknown dtype"):
        pass_cost(shape(GQA_TIED), TOY, new_positions=1, context=0, weight_dtype="int3")
    with pytest.raises(EngineError, match="past the model's 256 positions"):
        cost.prefill_and_decode(shape(GQA_TIED), TOY, prompt_len=257, context=8)


@pytest.mark.parametrize("name, key", [
    ("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA L4", "l4"), ("NVIDIA H100 PCIe", None), ("NVIDIA L40S", None), ("NVIDIA H200 NVL", None),
])
def test_a_measured_gpu_is_shown_next_to_its_datasheet(name, key):
    assert cost.spec_for_device_name(name) is (DEVICE_SPECS[key] if key else None)


def test_measured_vs_spec_line():
    measured = DeviceSpec("this machine: NVIDIA H200 (measured)", 50e12, 700e12, 4.25e12, source="measured",
                          spec=DEVICE_SPECS["h200"])
    s = shape(GQA_TIED)
    text = cost.format_report(s, measured, *cost.prefill_and_decode(s, measured, prompt_len=8, context=8))
    assert "copy 89% of 4.8 TB/s" in text and "bf16 matmul 71% of 989 TFLOP/s" in text


def test_this_machine_is_measured_once_per_process():
    first = machine.measure_this_machine()
    assert first.source == "measured" and first.name.startswith("this machine:")
    assert first.bandwidth_bytes_per_s > 1e8 and first.fp32_flops_per_s > 1e8 and first.bf16_flops_per_s > 0
    assert machine.measure_this_machine() is first


def test_cost_module_needs_no_torch():
    code = (f"import sys, engine.contract.cost as c; s = c.ModelShape.from_config({GQA_TIED!r}); "
            "c.pass_cost(s, c.DEVICE_SPECS['l4'], new_positions=4, context=0); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# --- the CLI ----------------------------------------------------------------------

def run_cost_json(capsys, *args: str) -> dict:
    assert main(["cost", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_json_contract(capsys):
    report = run_cost_json(capsys, "--model", "default", "--device-spec", "h200", "--prompt-len", "512",
                           "--context", "512", "--batch", "2")
    for phase in ("prefill", "decode"):
        entry = report[phase]
        assert {"flops", "bytes", "intensity", "floor_ms", "bound"} <= set(entry)
        assert entry["phase"] == phase and entry["bound"] in ("compute", "memory") and entry["batch"] == 2
        assert entry["floor_ms"] == max(entry["compute_ms"], entry["memory_ms"])
    assert (report["prefill"]["new_positions"], report["decode"]["context"]) == (512, 512)
    assert report["prefill"]["weight_dtype"] == report["decode"]["kv_dtype"] == "bf16"
    assert report["model"]["num_params"] == 3_534_080 and report["device"]["source"] == "spec"


def test_cli_table_names_both_passes(capsys):
    assert main(["cost", "--prompt-len", "64", "--context", "64", "--device-spec", "l4"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA L4 (spec)" in out
    assert [line.split()[0] for line in out.splitlines()[-2:]] == ["prefill", "decode"]


def test_cli_reads_a_folder_with_only_config_json(tmp_path, capsys):
    shutil.copy(DEFAULT_DIR / "config.json", tmp_path / "config.json")
    args = ("--prompt-len", "100", "--context", "300", "--weight-dtype", "int8", "--kv-dtype", "fp32")
    alone, default = run_cost_json(capsys, "--model", str(tmp_path), *args), run_cost_json(capsys, *args)
    for phase in ("prefill", "decode"):
        assert alone[phase] == default[phase]
    assert alone["decode"]["weight_bytes"] == 3_534_080 * 1


def test_cli_this_machine(capsys):
    report = run_cost_json(capsys, "--device-spec", "this", "--prompt-len", "8", "--context", "8")
    assert report["device"]["source"] == "measured"
    on_cpu = report["device"]["device_type"] == "cpu"
    assert report["decode"]["weight_dtype"] == ("fp32" if on_cpu else "bf16")  # as the engine's dtype=auto


@pytest.mark.parametrize("weight, kv", [("fp32", "fp32"), ("fp16", "fp16"), ("int8", "bf16"), ("int4", "bf16")])
def test_cli_kv_dtype_follows_float_weights_else_bf16(weight, kv, capsys):
    report = run_cost_json(capsys, "--prompt-len", "8", "--context", "8", "--weight-dtype", weight)
    assert (report["decode"]["weight_dtype"], report["decode"]["kv_dtype"]) == (weight, kv)


@pytest.mark.parametrize("args, message", [
    (["--prompt-len", "0", "--context", "8"], "--prompt-len must be at least 1"),
    (["--prompt-len", "8", "--context", "0"], "--context must be at least 1"),
    (["--prompt-len", "8", "--context", "8", "--batch", "0"], "--batch must be at least 1"),
    (["--prompt-len", "5000", "--context", "8"], "past the model's 4096 positions"),
    (["--prompt-len", "8", "--context", "8", "--model", "/no/such/folder"], "model folder not found"),
])
def test_cli_bad_values_exit_2_with_one_line(args, message, capsys):
    assert main(["cost", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--prompt-len", "8", "--context", "8", "--device-spec", "tpu"], "invalid choice"),
    (["--prompt-len", "8", "--context", "8", "--weight-dtype", "int3"], "invalid choice"),
    (["--prompt-len", "eight", "--context", "8"], "invalid int value"),
    (["--context", "8"], "required: --prompt-len"),
])
def test_cli_bad_arguments_exit_2_with_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["cost", *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


BAD_FOLDERS = {  # config.json's text (None: none) -> what the one line says
    "no config": (None, "no config.json"),
    "not json": ("{not json", "could not read"),
    "unknown family": (json.dumps({"model_type": "no-such-family"}), "could not read"),
    "heads that do not divide": (json.dumps({**GQA_TIED, "num_key_value_heads": 3}), "cannot serve"),
}


@pytest.fixture(scope="module")
def bad_folder_runs(tmp_path_factory) -> dict[str, CaseRun]:
    """{case: CaseRun} of `engine cost` on each bad folder: `main`, all that `python -m engine` runs, once per folder
    in one real process (tests.hostile.bounded.each_in_one_child)."""
    root = tmp_path_factory.mktemp("bad_folders")
    argvs = {}
    for number, (case, (config_text, _)) in enumerate(BAD_FOLDERS.items()):
        folder = root / f"folder{number}"
        folder.mkdir()
        if config_text is not None:
            (folder / "config.json").write_text(config_text)
        argvs[case] = ["cost", "--model", str(folder), "--prompt-len", "8", "--context", "8"]
    child, runs = each_in_one_child("from engine.cli import main", argvs, root, timeout_s=120)
    assert not child.timed_out, child.describe()
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BAD_FOLDERS))
def test_cli_bad_folders_exit_2_in_a_real_process(bad_folder_runs, case):
    run = bad_folder_runs[case]
    assert run.returncode == 2 and BAD_FOLDERS[case][1] in run.stderr, run.describe()
    assert "Traceback" not in run.stderr and len(run.lines) == 1, run.describe()


# --- every step of a trace against its floor (trace_floors) ---------------------------------------

def test_each_steps_floor_is_pass_cost_of_its_own_positions():
    from engine.contract.cost import trace_floors
    from tests.factories import make_trace

    trace = make_trace(("a", "b", "c", "d", "e"), ("x", "y", "z"), prefill_ms_per_position=0.5, decode_ms=2.0)
    shape = ModelShape.from_config(GQA_TIED, name="gqa")
    floors = trace_floors(trace, shape, DEVICE_SPECS["h200"])
    assert floors.weight_dtype == floors.kv_dtype == "fp32"  # the trace ran in float32
    assert [(s.phase, s.new_positions, s.context) for s in floors.steps] == [
        ("prefill", 5, 0), ("decode", 1, 5), ("decode", 1, 6)]
    for step, recorded in zip(floors.steps, trace.steps):
        expected = pass_cost(shape, DEVICE_SPECS["h200"], new_positions=recorded.num_positions,
                             context=recorded.context_before, weight_dtype="fp32", kv_dtype="fp32")
        assert (step.flops, step.bytes, step.floor_ms, step.bound) == (
            expected.flops, expected.bytes, expected.floor_ms, expected.bound)
        assert step.measured_ms == pytest.approx(recorded.duration_ms)
        assert step.efficiency == pytest.approx(expected.floor_ms / recorded.duration_ms)
        assert step.achieved_flops_per_s == pytest.approx(expected.flops / (recorded.duration_ms / 1e3))
    assert floors.steps[0].measured_ms == pytest.approx(1.0 + 0.5 * 5) and floors.steps[1].measured_ms == 2.0
    assert floors.ridge_intensity == pytest.approx(67e12 / 4.8e12)  # fp32 weights: the fp32 roof
    assert [s.index for s in floors.phase_steps("decode")] == [1, 2]


def test_step_floors_follow_the_dtype_knob_and_serialise():
    from engine.contract.cost import trace_floors
    from tests.factories import make_trace

    trace = make_trace()
    shape = ModelShape.from_config(LLAMA_31_8B, name="8b")
    bf16 = trace_floors(trace, shape, DEVICE_SPECS["h200"], weight_dtype="bf16")
    int4 = trace_floors(trace, shape, DEVICE_SPECS["h200"], weight_dtype="int4")
    assert bf16.kv_dtype == "bf16" and int4.kv_dtype == "bf16"  # quantised weights keep a bf16 cache
    decode_bf16, decode_int4 = bf16.phase_steps("decode")[0], int4.phase_steps("decode")[0]
    assert decode_bf16.bound == "memory" and decode_int4.floor_ms < decode_bf16.floor_ms / 3
    data = json.loads(json.dumps(int4.to_dict()))
    assert data["weight_dtype"] == "int4" and len(data["steps"]) == len(trace.steps)
    assert data["steps"][1]["efficiency"] == pytest.approx(decode_int4.efficiency)
