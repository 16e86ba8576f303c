"""Weight formats measured side by side on one model, in the engine: what bench/quantization.py measures,
as a function the engine worker's `weight_formats` call runs for the lesson's last section (live).

    runs = measure_formats(None, device="cpu", steps=8, rounds=3, unit=lambda phase: ...)   # a FormatRuns

Every format of `formats` is loaded (packed by engine/runtime/weights.py), then timed interleaved: each round
runs one greedy answer of `steps` Decode steps per format, so a neighbour slowing the machine slows every format
alike; the rows are the engine's own Decode step times. On a model with trained weights, each format is then
compared with the first (fp32) on the held-out text (mean KL, top-1 agreement, the KL at each position), the
capitals quiz and the lesson's question, by engine/runtime/quality.py. Where a Decode step's time goes: each
format's matrices multiplied alone (`matmul_ms`) and the memory floor of its weights at this machine's measured
bandwidth (engine.runtime.machine, measured once per process). `unit(phase)` is called after each unit of
work ("load", "round", "quality"), where a cancelled call raises and other visitors' short runs may go (none is
timed across it).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from engine.contract.errors import InputError
from engine.contract.format_runs import LIVE_FORMATS, MAX_KL_POSITIONS, FormatRow, FormatRuns, ModelFormats
from engine.contract.prompts import prompt_token_ids
from engine.runtime import hf, machine, quality
from engine.runtime.generation import GenerationConfig, generate
from engine.runtime.model import LoadedModel, load_model
from engine.runtime.provenance import cpu_name, utc_now
from engine.runtime.weights import PackedLinear, decode_read_bytes

MAX_STEPS, MAX_ROUNDS = 32, 8  # a call's bounds: a few seconds of Decode steps per format
TIMED_PROMPT = "法国的首都是"
MATMUL_REPS = 5  # timed sets of one Decode step's matmuls alone, per format
MAX_CONTEXT = 256  # positions each format's KV cache is sized for: the answers and the held-out lines fit


def check_run(steps: int, rounds: int) -> None:
    for name, value, top in (("steps", steps, MAX_STEPS), ("rounds", rounds, MAX_ROUNDS)):
        if type(value) is not int or not 1 <= value <= top:
            raise InputError("format_run_bounds", f"a weight-formats run takes 1 to {top} {name}, not {value!r}",
                             name=name, value=str(value), limit=top)


def label(weights: str, group: int) -> str:
    return f"{weights} g{group}" if group else weights


def time_decode(models: dict[str, LoadedModel], steps: int, rounds: int,
                unit: Callable[[str], None] = lambda phase: None) -> dict[str, list[float]]:
    """Each format's Decode step times (ms, the engine's own), `rounds` answers each, interleaved."""
    cfg = GenerationConfig(max_new_tokens=steps + 1, ignore_eos=True)
    times: dict[str, list[float]] = {name: [] for name in models}
    for lm in models.values():  # one untimed answer each: every kernel set up before any is timed
        generate(lm, TIMED_PROMPT, cfg)
    for _ in range(rounds):
        for name, lm in models.items():
            times[name] += [s.duration_ms for s in generate(lm, TIMED_PROMPT, cfg).decode_steps]
        unit("round")
    return times


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def quality_fields(models: dict[str, LoadedModel], unit: Callable[[str], None] = lambda phase: None) -> dict[str, dict]:
    """Per format, against the first (fp32): FormatRow's quality fields (mean KL and top-1 on the held-out text,
    capitals right, the lesson's answers)."""
    reference = next(iter(models.values()))
    texts = [prompt_token_ids(reference.tokenizer, text) for _, text in quality.held_out_texts()]
    ref_logits = [quality.text_logits(reference, ids) for ids in texts]
    questions = quality.capital_questions()
    found = {}
    for name, lm in models.items():
        logits = [quality.text_logits(lm, ids) for ids in texts]
        text = quality.text_quality(ref_logits, logits, texts)
        along = quality.kl_per_position(torch.cat(ref_logits), torch.cat(logits))[:MAX_KL_POSITIONS]
        answers = {lang: lm.tokenizer.decode(quality.greedy_ids(lm, prompt))
                   for lang, (prompt, _) in quality.LESSON_QUESTION.items()}
        right = sum(quality.answers_right(lm, questions))
        found[name] = dict(mean_kl=text.mean_kl, top1=text.top1, capitals_right=right, answer_zh=answers["zh"],
                           answer_en=answers["en"], kl_positions=tuple(float(f"{v:.4g}") for v in along.tolist()))
        unit("quality")
    return found


def matmul_ms(lm: LoadedModel, reps: int = MATMUL_REPS) -> float:
    """One Decode step's matrices multiplied alone (every Linear, packed or dense, the LM head included), one
    token each, in the model's activation dtype: the median over `reps` of the whole set, ms."""
    layers = [m for m in lm.model.modules() if isinstance(m, (nn.Linear, PackedLinear)) or hf.is_conv1d(m)]
    dtype = lm.model.get_input_embeddings().weight.dtype
    inputs = [torch.randn(1, 1, m.weight.shape[0] if hf.is_conv1d(m) else m.in_features, dtype=dtype,
                          device=lm.device) for m in layers]
    sync = torch.cuda.synchronize if lm.device.type == "cuda" else (lambda: None)
    times = []
    with torch.inference_mode():
        for rep in range(reps + 1):  # the first set untimed: kernels set up
            sync()
            started = time.perf_counter()
            for layer, x in zip(layers, inputs, strict=True):
                layer(x)
            sync()
            if rep:
                times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def model_formats(models: dict[str, LoadedModel], times: dict[str, list[float]],
                  lost: dict[str, dict] | None, bandwidth: float | None = None) -> ModelFormats:
    """One model's rows as a weight-formats file holds them (quality only where it was measured; with the
    measured `bandwidth`, bytes/s: the matmuls timed alone and the weights' memory floor)."""
    rows = []
    for name, lm in models.items():
        read = decode_read_bytes(lm.model)
        parts = {} if bandwidth is None else {"matmul_ms": matmul_ms(lm), "floor_ms": read / bandwidth * 1e3}
        rows.append(FormatRow(lm.info.weight_format, lm.info.weight_group_size, lm.info.weight_bytes, read,
                              statistics.median(times[name]), p90(times[name]), **(lost or {}).get(name, {}),
                              **parts))
    rows = tuple(rows)
    first = next(iter(models.values())).info
    return ModelFormats(first.model_id, first.random_weights, rows)


def measure_formats(path: str | None = None, *, device: str = "cpu", formats=LIVE_FORMATS, steps: int = 8,
                    rounds: int = 3, within=None, unit: Callable[[str], None] = lambda phase: None) -> FormatRuns:
    """Every format of `formats` (fp32 first) of the model at `path` (None: the embedded one), loaded, timed
    interleaved and (trained weights only) compared with fp32: a FormatRuns like the recorded file's, its
    `embedded` the model measured, no preset. The models are this call's: dropped when it returns."""
    check_run(steps, rounds)
    models = {}
    for weights, group in formats:
        models[label(weights, group)] = load_model(path, device=device, weights=weights, group_size=group or None,
                                                   within=within, max_context=MAX_CONTEXT)
        unit("load")
    times = time_decode(models, steps, rounds, unit)
    random_weights = next(iter(models.values())).info.random_weights
    lost = None if random_weights else quality_fields(models, unit)
    bandwidth = machine.measure_this_machine(str(next(iter(models.values())).device)).bandwidth_bytes_per_s
    return FormatRuns(model_formats(models, times, lost, bandwidth), None, len(quality.capital_questions()), steps,
                      rounds, torch.get_num_threads(), cpu_name(), torch.__version__, utc_now(),
                      round(os.getloadavg()[0], 2))

