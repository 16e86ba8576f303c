"""Lower-bit weights, measured side by side: what a Decode step gains and what the answer loses.

    python -m bench.quantization [--steps 8] [--rounds 3] [--groups 64] [--preset qwen2.5-0.5b] [--no-preset]
        [--record assets/gallery/cpu/weight-formats.json]

For the embedded model and one real-size preset (random weights, its matrices ~2 GB in fp32: far past this
machine's caches), every format (fp32, bf16, int8, int4 at each --groups size) is loaded once (one CPU
thread, as the engine's timed runs), then timed interleaved: each round runs one greedy answer of --steps
Decode steps per format, so a noisy neighbour slows every format alike. Printed per format: the weight bytes
held and read per Decode step, the step's median and p90 (the engine's own step times), the speed-up over
fp32 and that speed-up as a share of the bytes' ratio. On the embedded model, against its fp32 run: KL and
top-1 agreement of the next-token distributions on the held-out text (assets/data/held_out.txt), perplexity,
the capitals quiz (12 countries x 2 languages), the lesson's answer and where a greedy answer first
parts from fp32's. Ends with the goals on this CPU, PASS or FAIL from the measured numbers; exits 1 on a FAIL.
--record writes the same numbers as a file the lesson's last section reads (engine/contract/format_runs.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import torch

from engine.contract.format_runs import MAX_KL_POSITIONS, FormatRow, FormatRuns, ModelFormats
from engine.contract.prompts import prompt_token_ids
from engine.runtime.format_run import p90, time_decode  # the lesson's live run times formats the same way
from engine.runtime import quality
from engine.runtime.model import load_model
from engine.runtime.provenance import cpu_name, utc_now
from engine.runtime.weights import decode_read_bytes

SPEED_GOAL = 1.3  # preset: int8 and int4 Decode steps at least this much faster than fp32
KL_GOAL, TOP1_GOAL = 0.01, 0.99  # embedded model, int8: mean KL below, top-1 agreement at least


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="Decode steps per answer")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every format")
    parser.add_argument("--groups", default="64", help="int4 group sizes, comma-separated (32,64,128)")
    parser.add_argument("--preset", default="qwen2.5-0.5b", help="the real-size shape (engine/runtime/presets.py)")
    parser.add_argument("--no-preset", action="store_true", help="the embedded model only")
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads")
    parser.add_argument("--record", type=Path, default=None, metavar="FILE",
                        help="also write the numbers as a weight-formats file (the lesson's last section reads it)")
    return parser.parse_args(argv)


def formats(groups: str) -> list[tuple[str, int | None]]:
    return [("fp32", None), ("bf16", None), ("int8", None), *(("int4", int(g)) for g in groups.split(","))]


def label(weights: str, group: int | None) -> str:
    return f"{weights} g{group}" if group else weights


def load_all(path: str | None, chosen, threads: int) -> dict[str, object]:
    """Every format of one model, loaded and warmed."""
    return {label(w, g): load_model(path, device="cpu", weights=w, group_size=g, num_threads=threads, max_context=256)
            for w, g in chosen}


def speed_rows(models: dict, times: dict[str, list[float]]) -> list[dict]:
    """Per format: bytes held and read per step, step median / p90, speed-up and bytes ratio against fp32."""
    base_ms, base_read = statistics.median(times["fp32"]), decode_read_bytes(models["fp32"].model)
    rows = []
    for name, lm in models.items():
        read, median = decode_read_bytes(lm.model), statistics.median(times[name])
        speedup, bytes_ratio = base_ms / median, base_read / read
        rows.append(dict(format=name, info=lm.info, held=lm.info.weight_bytes, read=read, median=median,
                         p90=p90(times[name]), speedup=speedup, bytes_ratio=bytes_ratio, share=speedup / bytes_ratio))
    return rows


def quality_rows(models: dict) -> list[dict]:
    """Per format, against fp32: the held-out text's KL, top-1, perplexity; the quiz; the lesson's answers."""
    reference = models["fp32"]
    texts = [prompt_token_ids(reference.tokenizer, text) for _, text in quality.held_out_texts()]
    ref_logits = [quality.text_logits(reference, ids) for ids in texts]
    questions = quality.capital_questions()
    ref_answers = {lang: quality.greedy_ids(reference, prompt) for lang, (prompt, _) in quality.LESSON_QUESTION.items()}
    rows = []
    for name, lm in models.items():
        logits = [quality.text_logits(lm, ids) for ids in texts]
        text = quality.text_quality(ref_logits, logits, texts)
        along = quality.kl_per_position(torch.cat(ref_logits), torch.cat(logits))[:MAX_KL_POSITIONS]
        answers = {lang: quality.greedy_ids(lm, prompt) for lang, (prompt, _) in quality.LESSON_QUESTION.items()}
        parted = {lang: quality.first_divergence(ref_answers[lang], answers[lang]) for lang in answers}
        kept = tuple(float(f"{v:.4g}") for v in along.tolist())
        rows.append(dict(format=name, text=text, along=kept, quiz=sum(quality.answers_right(lm, questions)),
                         num=len(questions),
                         answers={lang: lm.tokenizer.decode(ids) for lang, ids in answers.items()},
                         parted={lang: describe_parting(lm.tokenizer, p) for lang, p in parted.items()}))
    return rows


def describe_parting(tokenizer, parted) -> str:
    if parted is None:
        return "same as fp32"
    position, ref, got = parted
    piece = {None: "(end)"}
    return (f"token {position}: fp32 {piece.get(ref) or repr(tokenizer.decode([ref]))}, "
            f"this {piece.get(got) or repr(tokenizer.decode([got]))}")


def print_speed(title: str, rows: list[dict]) -> None:
    print(f"\n## {title}: Decode step, one thread\n")
    print("| format | weights held | read per step | step median ms | p90 ms | x fp32 (time) | x fp32 (bytes) |"
          " time / bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['format']} | {r['held'] / 1e6:,.1f} MB | {r['read'] / 1e6:,.1f} MB | {r['median']:.2f} | "
              f"{r['p90']:.2f} | {r['speedup']:.2f} | {r['bytes_ratio']:.2f} | {r['share']:.0%} |")


def print_quality(rows: list[dict]) -> None:
    print("\n## embedded model: what is lost, against fp32\n")
    print("| format | mean KL (nats) | max KL | top-1 agreement | perplexity | capitals right | 法国的首都是 |"
          " The capital of France is | first parting (zh / en) |")
    print("|---|---:|---:|---:|---:|---:|---|---|---|")
    for r in rows:
        t = r["text"]
        print(f"| {r['format']} | {t.mean_kl:.5f} | {t.max_kl:.4f} | {t.top1:.2%} | {t.perplexity:,.0f} | "
              f"{r['quiz']}/{r['num']} | {r['answers']['zh']!r} | {r['answers']['en']!r} | "
              f"{r['parted']['zh']} / {r['parted']['en']} |")
    print(f"\n(KL and top-1 over {rows[0]['text'].num_positions} positions of the held-out text)")


def goals(preset_rows: list[dict] | None, quality: list[dict]) -> list[tuple[str, bool]]:
    """The issue's goals on this CPU, each with whether the measured numbers meet it."""
    int8 = next(r for r in quality if r["format"] == "int8")["text"]
    found = [(f"embedded int8 mean KL {int8.mean_kl:.5f} < {KL_GOAL}", int8.mean_kl < KL_GOAL),
             (f"embedded int8 top-1 agreement {int8.top1:.2%} >= {TOP1_GOAL:.0%}", int8.top1 >= TOP1_GOAL)]
    for r in preset_rows or []:
        if r["format"].startswith(("int8", "int4")):
            found.append((f"preset {r['format']} Decode step {r['speedup']:.2f}x fp32 >= {SPEED_GOAL}x",
                          r["speedup"] >= SPEED_GOAL))
    return found


def model_formats(speed: list[dict], lost: list[dict] | None) -> ModelFormats:
    """One model's rows as the recorded file holds them (quality only where it was measured)."""
    rows = []
    for i, r in enumerate(speed):
        quality_row = lost[i] if lost else None
        extra = {} if quality_row is None else dict(
            mean_kl=quality_row["text"].mean_kl, top1=quality_row["text"].top1, capitals_right=quality_row["quiz"],
            answer_zh=quality_row["answers"]["zh"], answer_en=quality_row["answers"]["en"],
            kl_positions=quality_row["along"])
        rows.append(FormatRow(r["info"].weight_format, r["info"].weight_group_size, r["held"], r["read"],
                              r["median"], r["p90"], **extra))
    return ModelFormats(speed[0]["info"].model_id, speed[0]["info"].random_weights, tuple(rows))


def record(path: Path, args, embedded: ModelFormats, preset: ModelFormats | None) -> None:
    runs = FormatRuns(embedded, preset, len(quality.capital_questions()), args.steps, args.rounds, args.threads,
                      cpu_name(), torch.__version__, utc_now(), round(os.getloadavg()[0], 2))
    path.write_text(runs.to_json() + "\n", encoding="utf-8")
    print(f"\nwrote {path}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = formats(args.groups)
    embedded = load_all(None, chosen, args.threads)
    embedded_rows = speed_rows(embedded, time_decode(embedded, args.steps, args.rounds))
    print_speed("embedded model (3.5M weights)", embedded_rows)
    lost = quality_rows(embedded)
    print_quality(lost)
    del embedded
    preset_rows = None
    if not args.no_preset:
        preset = load_all(f"preset:{args.preset}", chosen, args.threads)
        preset_rows = speed_rows(preset, time_decode(preset, args.steps, args.rounds))
        print_speed(f"preset:{args.preset} (random weights)", preset_rows)
    if args.record:
        record(args.record, args, model_formats(embedded_rows, lost),
               model_formats(preset_rows, None) if preset_rows else None)
    print("\n## goals on this CPU\n")
    results = goals(preset_rows, lost)
    for text, passed in results:
        print(f"- {'PASS' if passed else 'FAIL'}: {text}")
    return 0 if all(passed for _, passed in results) else 1


if __name__ == "__main__":
    sys.exit(main())
