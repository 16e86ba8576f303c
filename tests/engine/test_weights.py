"""Weight formats (engine/runtime/weights.py): int8 / int4 layers run torch's packed kernels, their round trip
stays within each format's bound, the recorded bytes are the bytes held, and every refusal is worded."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from engine.cli import main
from engine.contract.codec import convert
from engine.contract.errors import InputError
from engine.contract.trace import RequestTrace
from engine.contract.weights import check_format
from engine.runtime import hf, weights
from engine.runtime.generation import GenerationConfig, generate
from engine.runtime.model import load_model
from lesson.formats import escape_markdown
from lesson.messages import error_message
from tests.factories import make_trace

FORMATS = [("int8", None), ("int4", 32), ("int4", 64), ("int4", 128)]
KERNELS = {"int8": "_weight_int8pack_mm", "int4": "_weight_int4pack_mm_for_cpu"}


@pytest.fixture
def kernel_calls(monkeypatch):
    """{"int8": n, "int4": n}: how often each packed kernel ran, the real kernel still answering."""
    calls = dict.fromkeys(KERNELS, 0)
    for fmt, name in KERNELS.items():
        real = getattr(torch.ops.aten, name)

        def spy(*args, _real=real, _fmt=fmt):
            calls[_fmt] += 1
            return _real(*args)
        monkeypatch.setattr(torch.ops.aten, name, spy)
    return calls


def answer_of(lm, prompt: str = "法国的首都是", num_tokens: int = 4) -> list[int]:
    trace = generate(lm, prompt, GenerationConfig(max_new_tokens=num_tokens, ignore_eos=True))
    return [s.output_id for s in trace.steps]


# --- every Linear goes through the kernel -----------------------------------------------------------

@pytest.mark.parametrize("kind", ["llama", "qwen2", "gpt2"])
@pytest.mark.parametrize("fmt,group", FORMATS)
def test_every_layer_of_a_tiny_model_runs_the_packed_kernel(tiny_model_dirs, kernel_calls, kind, fmt, group):
    lm = load_model(tiny_model_dirs[kind], device="cpu", weights=fmt, group_size=group, warmup=False)
    layers = [m for m in lm.model.modules() if isinstance(m, weights.PackedLinear)]
    assert not any(isinstance(m, nn.Linear) or hf.is_conv1d(m) for m in lm.model.modules())
    kernel_calls[fmt] = 0
    tokens = answer_of(lm, "Prefill reads the whole prompt", num_tokens=3)
    assert kernel_calls[fmt] == 3 * len(layers)  # one call per layer per pass: Prefill and two Decode steps
    assert len(tokens) == 3 and lm.info.weight_format == fmt and lm.info.weight_group_size == (group or 0)


@pytest.mark.parametrize("fmt,group", FORMATS)
def test_the_default_model_still_answers_paris_through_the_kernel(kernel_calls, fmt, group):
    lm = load_model(device="cpu", weights=fmt, group_size=group, warmup=False)
    trace = generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=4))
    assert kernel_calls[fmt] > 0
    assert "".join(s.output_piece for s in trace.steps).startswith("巴黎")
    assert trace.model.weight_kernel.startswith(weights.INT8_KERNEL if fmt == "int8" else weights.INT4_KERNEL)


def test_a_static_cache_runs_the_packed_layers_to_the_same_answer(kernel_calls):
    lm = load_model(device="cpu", weights="int4", group_size=64, warmup=False)
    eager, static = (generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=4, mode=mode)) for mode in
                     ("eager", "static"))
    assert static.engine_mode == "static" and kernel_calls["int4"] > 0
    assert [s.output_id for s in static.steps] == [s.output_id for s in eager.steps]


@pytest.mark.slow
@pytest.mark.parametrize("fmt,group", [("int8", None), ("int4", 64)])
def test_a_real_size_preset_decodes_through_the_packed_kernel(kernel_calls, fmt, group):
    lm = load_model("preset:qwen2.5-0.5b", device="cpu", weights=fmt, group_size=group, warmup=False,
                    max_context=64)
    num_layers = sum(isinstance(m, weights.PackedLinear) for m in lm.model.modules())
    assert num_layers == 24 * 7 + 1  # q k v o, gate up down per layer, and the (tied) LM head's own copy
    kernel_calls[fmt] = 0
    answer_of(lm, num_tokens=2)
    assert kernel_calls[fmt] == 2 * num_layers


def test_the_packed_logits_are_the_dequantized_matrices_times_the_activations(tiny_model_dirs):
    """The packed model computes what the dense model with the rounded matrices computes (the kernel's
    bf16 activations aside): a wrong layout of scales and zeros would be far off."""
    for fmt, group in FORMATS:
        lm = load_model(tiny_model_dirs["qwen2"], device="cpu", weights=fmt, group_size=group, warmup=False)
        dense = load_model(tiny_model_dirs["qwen2"], device="cpu", warmup=False).model
        for name, packed in packed_layers(lm.model):
            dense.get_submodule(name).weight.data = dequantized(packed)
        ids = torch.tensor([[5, 9, 17, 33, 2]])
        with torch.inference_mode():
            got, want = lm.model(input_ids=ids).logits, dense(input_ids=ids).logits
        assert torch.allclose(got, want, atol=0.05 * want.abs().max().item()), fmt


def packed_layers(model: nn.Module) -> list[tuple[str, weights.PackedLinear]]:
    return [(name, m) for name, m in model.named_modules() if isinstance(m, weights.PackedLinear)]


def dequantized(layer: weights.PackedLinear) -> torch.Tensor:
    """The [N, K] matrix a packed layer stands for, read back from what it holds (unpacking int4 by the
    kernel itself: the identity matrix times the packed weights)."""
    if isinstance(layer, weights.Int8Linear):
        return weights.dequantize_int8(layer.weight_int8, layer.scales)[:, :layer.in_features]
    eye = torch.eye(layer.padded_in, dtype=layer.act_dtype)
    columns = torch.ops.aten._weight_int4pack_mm_for_cpu(eye, layer.weight_int4, layer.group_size,
                                                          layer.scales_and_zeros)  # (K, N): row k is W[:, k]
    return columns.float().t()[:layer.out_features, :layer.in_features]


# --- the round trip --------------------------------------------------------------------------------

@pytest.mark.parametrize("scale_dtype", [torch.bfloat16, torch.float16])
def test_int8_round_trip_is_within_half_a_scale(scale_dtype):
    weight = torch.randn(48, 256) * torch.logspace(-3, 0, 48)[:, None]  # rows of very different ranges
    q, scales = weights.quantize_int8(weight, scale_dtype)
    error = (weights.dequantize_int8(q, scales) - weight).abs()
    bound = scales.float()[:, None] / 2
    assert (error <= bound * (1 + 1e-5)).all()
    assert (error.amax(dim=1) > bound[:, 0] / 4).all()  # the bound is the format's, not a loose one


@pytest.mark.parametrize("group", [32, 64, 128])
def test_int4_round_trip_is_within_half_a_step_and_the_zeros_rounding(group):
    weight = torch.randn(32, 256) * 0.05 + 0.3  # off centre, so the zero matters
    q, scales, zeros = weights.quantize_int4(weight, group, torch.bfloat16)
    assert q.min() >= 0 and q.max() <= 15
    error = (weights.dequantize_int4(q, scales, zeros) - weight).abs().reshape(32, -1, group)
    bound = scales.float() / 2 + zeros.float().abs() * 2**-8
    assert (error <= bound[..., None] * (1 + 1e-5)).all()


@pytest.mark.parametrize("fmt", ["int8", "int4"])
@pytest.mark.parametrize("shape", [(16, 64), (7, 24), (2989, 256), (40, 688)])
def test_a_packed_layer_matches_its_dequantized_matrix_at_awkward_widths(fmt, shape):
    """Widths the kernels cannot read as they are (int8: K not a multiple of 16 gave wrong numbers; int4:
    N not a multiple of 16, K not of the group) are padded, never answered wrong."""
    torch.manual_seed(0)
    weight, x = torch.randn(*shape) * 0.1, torch.randn(3, shape[1])
    layer = weights.build_packed(fmt, weight, None, torch.bfloat16, 32)
    want = x.bfloat16().float() @ dequantized(layer).t()
    assert torch.allclose(layer(x), want, atol=0.02 * want.abs().max().item())


# --- the bytes recorded ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,group", FORMATS)
def test_recorded_bytes_are_the_packed_tensors_and_the_rest(fmt, group):
    """From the shapes: each matrix packed (int8: a byte a weight and a 2-byte scale a row; int4: half a
    byte and a 2-byte scale and zero per group, rows and columns padded), plus the dense parameters
    left (the embedding, which the tied head no longer shares, and the norms)."""
    dense = load_model(device="cpu", warmup=False)
    expected = dense.info.weight_bytes - sum(lin.weight.nbytes for lin in dense.model.modules()
                                             if isinstance(lin, nn.Linear) and lin is not dense.model.lm_head)
    for lin in (m for m in dense.model.modules() if isinstance(m, nn.Linear)):
        n, k = lin.weight.shape
        if fmt == "int8":
            expected += n * (k + -k % 16) + 2 * n
        else:
            n, k = n + -n % 16, k + -k % group
            expected += n * k // 2 + 2 * 2 * n * k // group
    packed = load_model(device="cpu", weights=fmt, group_size=group, warmup=False)
    assert packed.info.weight_bytes == expected == weights.held_bytes(packed.model)
    assert dense.info.weight_bytes == 3_536_384 * 4 and dense.info.weight_format == "fp32"


def test_a_trace_keeps_the_format_and_an_older_trace_still_loads():
    packed = load_model(device="cpu", weights="int4", group_size=64, warmup=False)
    trace = generate(packed, "法国的首都是", GenerationConfig(max_new_tokens=2))
    again = RequestTrace.from_json(trace.to_json())
    assert again.model == packed.info and (again.model.weight_format, again.model.weight_group_size) == ("int4", 64)
    older = json.loads(make_trace().to_json())
    for name in ("weight_format", "weight_group_size", "weight_bytes", "weight_kernel"):
        del older["model"][name]
    assert convert(older, RequestTrace).model == make_trace().model  # a trace written before the formats


# --- refusals, in words ----------------------------------------------------------------------------

def words_of(err: InputError) -> tuple[str, str]:
    zh, en = error_message(err, "zh"), error_message(err, "en")
    assert zh != en and "{" not in zh + en
    return zh, en


def test_an_unknown_format_and_a_group_size_that_does_not_fit_are_refused():
    with pytest.raises(InputError) as unknown:
        check_format("int3", None)
    zh, en = words_of(unknown.value)
    assert "int3" in zh and "int3" in en and "格式" in zh and "format" in en
    for fmt, group in (("int4", 48), ("int8", 64)):
        with pytest.raises(InputError) as bad_group:
            load_model(device="cpu", weights=fmt, group_size=group, warmup=False)
        zh, en = words_of(bad_group.value)
        assert bad_group.value.key == "weights_group_size" and str(group) in zh and "32, 64, 128" in en
        assert "分组" in zh and "group size" in en


def test_a_dense_format_beside_another_dtype_is_refused():
    with pytest.raises(InputError) as err:
        load_model(device="cpu", weights="bf16", dtype="float32", warmup=False)
    zh, en = words_of(err.value)
    assert err.value.key == "weights_dtype" and "float32" in zh and "auto" in en


def test_a_torch_without_the_kernel_on_this_device_is_refused_naming_it(monkeypatch):
    def missing(*args):
        raise NotImplementedError("Could not run 'aten::_weight_int4pack_mm_for_cpu' with arguments from the "
                                  "'CPU' backend.")
    monkeypatch.setattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu", missing)
    with pytest.raises(InputError) as err:
        load_model(device="cpu", weights="int4", group_size=32, warmup=False)
    zh, en = words_of(err.value)
    assert err.value.key == "weights_no_kernel"
    for words in (zh, en):
        assert escape_markdown(weights.INT4_KERNEL) in words and escape_markdown(torch.__version__) in words


def test_a_model_without_linear_layers_is_refused():
    class LookupOnly(nn.Module):  # a language model that is one table: nothing to pack
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(10, 4)

    with pytest.raises(InputError) as err:
        weights.quantize_model(LookupOnly(), "int8", model_id="lookup")
    zh, en = words_of(err.value)
    assert err.value.key == "weights_unsupported" and "lookup" in zh and "Linear" in en


# --- the CLI -----------------------------------------------------------------------------------------

def test_engine_trace_runs_int4_weights_and_says_so(capsys):
    assert main(["trace", "--device", "cpu", "--weights", "int4", "--group-size", "64", "--max-new-tokens", "3"]) == 0
    out = capsys.readouterr().out
    assert "weights int4, groups of 64:" in out and weights.INT4_KERNEL in out and "巴黎" in out


@pytest.mark.parametrize("args, message", [
    (["--weights", "int8", "--group-size", "64"], "a group size applies to int4 only"),
    (["--weights", "int4", "--group-size", "48"], "int4 group size 48 is not one of 32, 64, 128"),
    (["--weights", "int2"], "invalid choice: 'int2'"),
])
def test_engine_trace_refuses_a_bad_format_in_one_line(args, message, capfd):
    try:
        code = main(["trace", *args])
    except SystemExit as parser_exit:  # argparse's own refusal of a choice
        code = parser_exit.code
    assert code == 2
    err = capfd.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_engine_cost_prints_each_formats_decode_floor(capsys):
    assert main(["cost", "--model", "preset:qwen2.5-0.5b", "--device-spec", "h200", "--prompt-len", "8",
                 "--context", "8", "--formats", "--json"]) == 0
    formats = {(f["weights"], f["group_size"]): f for f in json.loads(capsys.readouterr().out)["weight_formats"]}
    assert set(formats) == {("fp32", 0), ("bf16", 0), ("int8", 0), ("int4", 32), ("int4", 64), ("int4", 128)}
    assert formats[("int8", 0)]["bytes_per_weight"] == 1 + 2 / 896  # one bf16 scale per row of d = 896
    assert formats[("int4", 64)]["bytes_per_weight"] == 0.5 + 4 / 64  # a bf16 scale and zero per 64
    floors = [formats[k]["floor_ms"] for k in [("fp32", 0), ("bf16", 0), ("int8", 0), ("int4", 32), ("int4", 128)]]
    assert floors == sorted(floors, reverse=True)  # a memory-bound step: fewer bytes, a lower floor
    assert main(["cost", "--model", "preset:qwen2.5-0.5b", "--device-spec", "h200", "--prompt-len", "8",
                 "--context", "8", "--formats"]) == 0
    rows = capsys.readouterr().out.splitlines()[-6:]
    assert [row.split()[0] for row in rows] == ["fp32", "bf16", "int8", "int4", "int4", "int4"]
