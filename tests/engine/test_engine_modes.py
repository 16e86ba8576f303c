"""Engine modes and attention kernels (engine/runtime/runners.py, engine/runtime/attention.py) on the CPU.

The GPU half (CUDA graphs, per-length plan builds) is judged by bench/gpu_check.py on
a GPU; here: the same tokens, the kernel choice applied and recorded, clear refusals,
and gpu_check's CPU run finishing with exit 0.
"""

from __future__ import annotations

import json

import pytest

from engine.contract.codec import convert
from engine.contract.errors import InputError
from engine.contract.results import GenerationConfig
from engine.contract.trace import RequestTrace
from engine.runtime.attention import IMPLEMENTATION, PRIORITY
from engine.runtime.generation import generate
from engine.runtime.runners import BUCKET, bucket_length
from lesson.messages import error_message

KERNELS = {name for name, _ in PRIORITY}


@pytest.fixture(scope="module")
def lm():
    from engine.runtime.model import load_model
    from engine.runtime.model import DEFAULT_MODEL_DIR

    if not (DEFAULT_MODEL_DIR / "config.json").is_file():
        pytest.skip("the embedded default model is missing")
    return load_model(None, device="cpu", dtype="float32")


def test_the_kernel_choice_is_installed_and_every_pass_names_its_kernel(lm):
    assert lm.model.config._attn_implementation == IMPLEMENTATION
    trace = generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=6, ignore_eos=True))
    assert all(s.attention_kernel in KERNELS for s in trace.steps), [s.attention_kernel for s in trace.steps]
    assert lm.kernels.chosen and set(lm.kernels.chosen.values()) <= KERNELS
    assert lm.kernels.used == []  # read and cleared after each pass: nothing leaks into the next request


@pytest.mark.parametrize("prompt", ["法国的首都是", "The capital of Japan is"])
def test_static_cache_gives_the_eager_tokens(lm, prompt):
    cfg = dict(max_new_tokens=12, ignore_eos=True)
    eager = generate(lm, prompt, GenerationConfig(**cfg))
    static = generate(lm, prompt, GenerationConfig(**cfg, mode="static"))
    assert static.output_ids == eager.output_ids and static.output_text == eager.output_text
    assert (eager.engine_mode, static.engine_mode) == ("eager", "static")
    reserved = lm.info.kv_bytes_for(bucket_length(len(static.prompt_ids) + 12, lm.info.max_positions))
    assert {s.kv_bytes for s in static.steps} == {reserved}  # preallocated: flat from the first pass
    assert [s.kv_bytes for s in eager.steps] == [lm.info.kv_bytes_for(s.context_after) for s in eager.steps]
    again = generate(lm, prompt, GenerationConfig(**cfg, mode="static"))  # a reused runner starts empty
    assert again.output_ids == eager.output_ids


@pytest.mark.slow
def test_the_compiled_step_gives_the_eager_tokens_and_compiles_once_per_bucket(lm):
    cfg = dict(max_new_tokens=10, ignore_eos=True)
    eager = generate(lm, "法国的首都是", GenerationConfig(**cfg))
    compiled = generate(lm, "法国的首都是", GenerationConfig(**cfg, mode="compiled"))
    assert compiled.engine_mode == "compiled" and compiled.engine_note == ""
    assert compiled.output_ids == eager.output_ids
    runner = lm.runners.free[(BUCKET, "compiled")][-1]
    assert runner.compiled and runner.compile_s > 0 and runner.step is not runner._forward
    # The build (compile) is inside engine_setup_ms (the request's clock skips it: its own fast test in
    # test_setup_is_kept_out_of_the_requests_clock); the first token comes after the Prefill began.
    assert compiled.engine_setup_ms >= runner.compile_s * 1e3
    assert compiled.steps[0].start_ms < compiled.metrics.ttft_ms
    compile_s = runner.compile_s
    again = generate(lm, "日本的首都是", GenerationConfig(**cfg, mode="compiled"))  # same bucket: no new compile
    assert lm.runners.free[(BUCKET, "compiled")][-1] is runner
    assert runner.compile_s == compile_s  # a pooled runner: nothing built again
    assert RequestTrace.from_json(compiled.to_json()).engine_setup_ms == compiled.engine_setup_ms
    assert again.output_ids == generate(lm, "日本的首都是", GenerationConfig(**cfg)).output_ids


def test_a_failed_compile_runs_the_plain_step_and_the_trace_says_why(lm, monkeypatch):
    import torch

    from engine.runtime.runners import StaticRunner

    def no_compiler(fn, **_):
        def fails(*args, **kwargs):
            raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found\nmore detail")
        return fails

    monkeypatch.setattr(torch, "compile", no_compiler)
    runner = StaticRunner(lm.model, BUCKET, "compiled", lm.kernels)
    assert (runner.mode, runner.compiled, runner.step == runner._forward) == ("static", False, True)
    assert runner.note == "torch.compile failed: InvalidCxxCompiler: No working C++ compiler found"
    monkeypatch.setattr(lm.runners, "free", {})  # the next request builds its runner under the broken compiler
    trace = generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=4, ignore_eos=True, mode="compiled"))
    assert trace.engine_mode == "static" and "No working C++ compiler" in trace.engine_note
    assert RequestTrace.from_json(trace.to_json()).engine_note == trace.engine_note
    eager = generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=4, ignore_eos=True))
    assert trace.output_ids == eager.output_ids


def test_runners_are_reused_per_bucket_and_lengths_round_up(lm):
    assert bucket_length(1, 10_000) == BUCKET and bucket_length(BUCKET + 1, 10_000) == 2 * BUCKET
    assert bucket_length(5000, 1024) == 1024  # never past the model's context
    generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=3, mode="static"))
    held = {key: len(v) for key, v in lm.runners.free.items()}
    generate(lm, "日本的首都是", GenerationConfig(max_new_tokens=3, mode="static"))
    assert {key: len(v) for key, v in lm.runners.free.items()} == held  # taken and given back, not rebuilt


def test_graph_mode_on_a_cpu_and_unknown_modes_are_refused_clearly(lm):
    with pytest.raises(InputError) as err:
        generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=2, mode="graph"))
    assert err.value.key == "graph_needs_cuda"
    assert "cpu" in error_message(err.value, "en") and "GPU" in error_message(err.value, "zh")
    with pytest.raises(InputError) as err:
        GenerationConfig(mode="turbo")
    assert err.value.key == "mode_unknown" and "turbo" in error_message(err.value, "en")


def test_mode_and_kernels_survive_json_and_old_traces_load_as_eager(lm):
    trace = generate(lm, "法国的首都是", GenerationConfig(max_new_tokens=3, mode="static"))
    back = RequestTrace.from_json(trace.to_json())
    assert back.engine_mode == "static" and [s.attention_kernel for s in back.steps] == \
        [s.attention_kernel for s in trace.steps]
    old = json.loads(trace.to_json())
    del old["engine_mode"], old["engine_note"]
    for step in old["steps"]:
        del step["attention_kernel"]
    legacy = convert(old, RequestTrace)
    assert legacy.engine_mode == "eager" and legacy.engine_note == ""
    assert {s.attention_kernel for s in legacy.steps} == {""}


def test_the_cli_names_the_mode_and_the_kernels(capsys):
    from engine.cli import main

    assert main(["trace", "--max-new-tokens", "3", "--mode", "static", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "engine mode static" in out and "reserves 256 positions up front" in out
    assert any(f"Prefill {k}" in out for k in KERNELS)
    assert main(["trace", "--mode", "graph", "--device", "cpu"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.slow
def test_gpu_check_runs_on_a_cpu_and_passes(capsys):
    from bench.gpu_check import main

    assert main(["--device", "cpu", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "static tokens == eager tokens" in out and "FAIL" not in out and "0 failed" in out


# Calls that make the host wait for the device (or copy host data to it): each one breaks a CUDA graph
# capture ("operation not permitted when stream is capturing"). A CPU cannot capture, but it can list them.
SYNCING_CALLS = {"_local_scalar_dense", "item", "nonzero", "is_nonzero", "equal", "lift_fresh", "_assert_async"}


def test_the_static_decode_step_never_waits_for_the_device(lm):
    import torch

    from engine.runtime.overhead import OpCounter
    from engine.runtime.runners import StaticRunner

    with torch.inference_mode(), OpCounter() as probe:
        (torch.ones(2).sum() > 0).item()  # the probe sees a sync when there is one
    assert SYNCING_CALLS & set(probe.calls)
    runner = StaticRunner(lm.model, BUCKET, "static", lm.kernels)
    with torch.inference_mode():
        runner.prefill([1, 2, 3, 4])
        with OpCounter() as step:
            runner.decode(5, 4)
    assert step.calls and not SYNCING_CALLS & set(step.calls), sorted(SYNCING_CALLS & set(step.calls))
    assert "index_copy_" in step.calls  # the new K/V are written in place at a position held on the device
