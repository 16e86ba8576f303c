"""Does the engine tell the lesson's story on this machine? One short run, one table, a verdict.

    python -m bench.gpu_check                 # CUDA: default model + 0.5B and 8B shapes (random weights)
    python -m bench.gpu_check --device cpu    # the same checks on a CPU, with small shapes (CI runs this)

Needs only torch and transformers (the GPU machine has no streamlit). Sections:

1. Timing defects (engine/runtime/attention.py): a Decode step at context lengths never seen
   before must cost about what it costs at a repeated length (cuDNN attention built a
   plan per new length: 54 ms vs 18.8 ms on an H200), and bf16 Decode of the default
   model must not be slower than 2x fp32. Every pass must name its attention kernel,
   and none may be cuDNN.
2. Same tokens: the static cache, the compiled step (and, on CUDA, the captured graph)
   give eager's greedy tokens in fp32.
3. Against the floor (engine/contract/cost.py): per shape, the operator calls of one eager Decode
   step (engine/runtime/overhead.py), then an eager, a graph and a compiled (torch.compile +
   graph) Decode step at context 512 against the memory floor, and a Prefill of 2048
   positions against dense bf16 peak. Goals (CUDA): a graph-captured Decode of the 8B
   shape (the better of graph and compiled) within 1.4x of its floor; Prefill 2048 at
   >= 60 % of peak.

Exit 1 when a check or a goal fails. Timing goals are judged on CUDA only: a CPU
prints its ratios (a shared CPU is too noisy to fail a build on) and judges the
token and kernel checks. The whole run keeps to --budget-s (300 s): a compile that would
not fit is skipped and its row says so.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass


import torch

from engine.contract.cost import ModelShape, pass_cost, spec_for_device_name
from engine.contract.prompts import extend_prompt
from engine.contract.results import GenerationConfig
from engine.contract.trace import attention_kernels
from engine.runtime.generation import generate
from engine.runtime.machine import measure_this_machine
from engine.runtime.model import load_model
from engine.runtime.overhead import count_decode_ops, per_op_host_us
from engine.runtime.presets import preset_shape

PROMPT = "法国的首都是"
FRESH_LIMIT = 1.5  # a Decode step at new lengths vs the same lengths again
BF16_LIMIT = 2.0  # bf16 Decode vs fp32 Decode, default model
GRAPH_FLOOR_GOAL = 1.4  # graph Decode of the 8B shape vs its memory floor
PREFILL_PEAK_GOAL = 0.60  # Prefill 2048 FLOP/s vs dense bf16 peak
COMPILE_RESERVE_S = 90  # what a compile of a real-size shape may take: not started with less budget left


@dataclass
class Row:
    check: str
    model: str
    value: str
    goal: str
    ok: bool | None  # None: printed, not judged here


def decode_ms(lm, prompt_tokens: int, steps: int, mode: str = "eager") -> tuple[float, object]:
    """Median Decode step of one request whose prompt is stretched to `prompt_tokens`."""
    prompt = extend_prompt(lm.tokenizer, PROMPT, prompt_tokens) if prompt_tokens > 8 else PROMPT
    trace = generate(lm, prompt, GenerationConfig(max_new_tokens=steps + 1, ignore_eos=True, mode=mode))
    return statistics.median(s.duration_ms for s in trace.decode_steps), trace


def prefill_ms(lm, prompt_tokens: int, repeats: int = 3) -> float:
    prompt = extend_prompt(lm.tokenizer, PROMPT, prompt_tokens)
    times = [generate(lm, prompt, GenerationConfig(max_new_tokens=1)).steps[0].duration_ms for _ in range(repeats)]
    return min(times)  # a floor comparison wants the machine at its fastest


def kernels(trace) -> str:
    """The attention kernels that ran, Prefill's beside Decode's (both are reported)."""
    def named(steps) -> str:
        return "/".join(attention_kernels(steps)) or "none recorded"
    return f"Prefill {named(trace.steps[:1])}, Decode {named(trace.decode_steps)}"


def defect_rows(model: str | None, device: str, judge: bool, steps: int) -> list[Row]:
    rows = []
    dtypes = ("float32", "bfloat16") if device == "cuda" else ("float32",)
    decode_by_dtype = {}
    for dtype in dtypes:
        lm = load_model(model, device=device, dtype=dtype)
        name = f"{lm.model_id} {dtype}"
        decode_ms(lm, 96, steps)  # warm-up at other lengths: only per-length costs remain below
        fresh, trace = decode_ms(lm, 32, steps)
        repeated, _ = decode_ms(lm, 32, steps)
        decode_by_dtype[dtype] = repeated
        ratio = fresh / repeated
        rows.append(Row("Decode at new lengths / repeated", name, f"{fresh:.2f} / {repeated:.2f} ms = {ratio:.2f}x",
                        f"<= {FRESH_LIMIT}x", ratio <= FRESH_LIMIT if judge else None))
        named = kernels(trace)
        good = all(s.attention_kernel and "cudnn" not in s.attention_kernel for s in trace.steps)
        rows.append(Row("attention kernel (Prefill/Decode)", name, named, "named, never cuDNN", good))
        if dtype != "float32":  # tokens are compared in fp32 only (bf16 rounding may flip a near tie)
            continue
        eager = generate(lm, PROMPT, GenerationConfig(max_new_tokens=steps, ignore_eos=True))
        for mode in ("static", "graph", "compiled") if device == "cuda" else ("static", "compiled"):
            other = generate(lm, PROMPT, GenerationConfig(max_new_tokens=steps, ignore_eos=True, mode=mode))
            same = other.output_ids == eager.output_ids
            ran = other.engine_mode + (f": {other.engine_note}" if other.engine_note else "")
            rows.append(Row(f"{mode} tokens == eager tokens", name, f"{same} (ran {ran})", "equal in fp32", same))
            if other.engine_mode != mode:  # a fallback is not the mode asked for
                # A capture that fails is the engine's bug; a compile can also fail for want of a C compiler
                # (Triton and Inductor need one): printed, and the goals below judge what did run.
                rows.append(Row(f"{mode} ran as asked", name, ran, mode, None if mode == "compiled" else False))
    if "bfloat16" in decode_by_dtype:
        ratio = decode_by_dtype["bfloat16"] / decode_by_dtype["float32"]
        rows.append(Row("bf16 Decode / fp32 Decode", "default", f"{ratio:.2f}x", f"<= {BF16_LIMIT}x",
                        ratio <= BF16_LIMIT if judge else None))
    return rows


def shape_rows(name: str, device: str, judge: bool, context: int, prefill_len: int, steps: int,
               deadline: float) -> list[Row]:
    dtype = "bfloat16" if device == "cuda" else "float32"
    lm = load_model(name, device=device, dtype=dtype, max_context=max(context, prefill_len) + steps + 8)
    shape: ModelShape = preset_shape(name.removeprefix("preset:"))
    spec = spec_for_device_name(torch.cuda.get_device_name()) if device == "cuda" else None
    spec = spec or measure_this_machine(device)
    wdt = "bf16" if dtype == "bfloat16" else "fp32"
    floor = pass_cost(shape, spec, new_positions=1, context=context, weight_dtype=wdt, kv_dtype=wdt).floor_ms
    ops = count_decode_ops(lm)
    us = per_op_host_us(device)
    rows = [Row("operator calls, one eager Decode step", name,
                f"{ops.kernels} kernels ({ops.per_layer:.0f}/layer) x {us:.1f} us = {ops.kernels * us / 1e3:.2f} ms",
                "printed", None)]
    modes = ("eager", "graph", "compiled") if device == "cuda" else ("eager", "static")
    captured = {}
    for mode in modes:
        if mode == "compiled" and time.perf_counter() + COMPILE_RESERVE_S > deadline:
            rows.append(Row(f"Decode ctx {context}, compiled", name, "skipped: not enough of --budget-s left",
                            "printed", None))
            continue
        _, first = decode_ms(lm, context, 2, mode)  # builds (compiles, captures) the runner for this length
        step, trace = decode_ms(lm, context, steps, mode)
        if trace.engine_mode in ("graph", "compiled") and device == "cuda":
            captured[trace.engine_mode] = step
        setup = f"; built in {first.engine_setup_ms / 1e3:.0f} s" if mode != "eager" else ""
        note = f" ({trace.engine_note})" if trace.engine_note else ""
        rows.append(Row(f"Decode ctx {context}, {trace.engine_mode}{note}", name,
                        f"{step:.2f} ms = {step / floor:.2f}x floor {floor:.2f} ms{setup}", "printed", None))
    if device == "cuda" and "8b" in name:
        best = min(captured.items(), key=lambda kv: kv[1]) if captured else None
        value = f"{best[1] / floor:.2f}x floor ({best[0]})" if best else "no graph-captured mode ran"
        rows.append(Row("best graph-captured Decode vs floor", name, value, f"<= {GRAPH_FLOOR_GOAL}x",
                        (best is not None and best[1] / floor <= GRAPH_FLOOR_GOAL) if judge else None))
    prefill = prefill_ms(lm, prefill_len)
    cost = pass_cost(shape, spec, new_positions=prefill_len, context=0, weight_dtype=wdt, kv_dtype=wdt)
    share = cost.flops / (prefill / 1e3) / cost.peak_flops_per_s
    rows.append(Row(f"Prefill {prefill_len} vs peak", name,
                    f"{prefill:.1f} ms = {share:.0%} of {_tflops(cost.peak_flops_per_s)}",
                    f">= {PREFILL_PEAK_GOAL:.0%}" if judge else "printed",
                    share >= PREFILL_PEAK_GOAL if judge else None))
    del lm
    if device == "cuda":
        torch.cuda.empty_cache()
    return rows


def _tflops(flops_per_s: float) -> str:
    return f"{flops_per_s / 1e12:.0f} TFLOP/s" if flops_per_s >= 1e12 else f"{flops_per_s / 1e9:.0f} GFLOP/s"


def print_table(rows: list[Row]) -> None:
    cols = ("check", "model", "value", "goal", "verdict")
    cells = [(r.check, r.model, r.value, r.goal, {True: "ok", False: "FAIL", None: "-"}[r.ok]) for r in rows]
    widths = [max(len(c[i]) for c in cells + [cols]) for i in range(len(cols))]
    for line in [cols, tuple("-" * w for w in widths), *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=("cuda", "cpu"))
    parser.add_argument("--model", default=None, help="the model for section 1 (default: the embedded one)")
    parser.add_argument("--shapes", default=None,
                        help="comma-separated presets for section 3 (CUDA default: preset:llama-3.1-8b,"
                             "preset:qwen2.5-0.5b; CPU default: preset:qwen2.5-0.5b at small lengths)")
    parser.add_argument("--steps", type=int, default=16, help="Decode steps per measured request")
    parser.add_argument("--budget-s", type=float, default=300.0,
                        help="the whole run's time budget: a compile that would not fit is skipped (default 300)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device here (use --device cpu)", file=sys.stderr)
        return 2
    gpu = args.device == "cuda"
    where = torch.cuda.get_device_name() if gpu else "CPU"
    print(f"{where}, torch {torch.__version__}; timing goals judged: {'yes' if gpu else 'no (CPU: printed only)'}")
    started = time.perf_counter()
    rows = defect_rows(args.model, args.device, gpu, args.steps)
    shapes = args.shapes.split(",") if args.shapes else (
        ["preset:llama-3.1-8b", "preset:qwen2.5-0.5b"] if gpu else ["preset:qwen2.5-0.5b"])  # the judged one first
    context, prefill_len = (512, 2048) if gpu else (64, 64)
    steps = args.steps if gpu else 4
    for name in shapes:
        rows += shape_rows(name, args.device, gpu, context, prefill_len, steps, started + args.budget_s)
    print_table(rows)
    failed = [r for r in rows if r.ok is False]
    judged = sum(r.ok is not None for r in rows)
    print(f"{len(failed)} failed of {judged} judged; {time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
