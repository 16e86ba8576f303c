"""Engine overhead, measured side by side in one run (ratios, not absolute times).

    python -m bench.engine_overhead [--model DIR] [--tokens 64] [--repeats 9]

Three ways to produce the same greedy tokens from the same prompt and model:
    hf        transformers' model.generate(do_sample=False)
    engine    our Prefill/Decode loop with recording off (token ids only)
    traced    our loop with recording on (times, KV bytes, pieces: a full RequestTrace)

Runs are interleaved (hf, engine, traced, hf, ...) so a noisy neighbour hurts all
three alike; each ratio is a ratio of medians. Goals: traced/hf <= 0.95 and
traced/engine <= 1.03.
"""

from __future__ import annotations

import argparse
import statistics
import time


import torch

from engine.contract.results import GenerationConfig
from engine.runtime.generation import generate, generate_ids
from engine.runtime.generation import encode_prompt
from engine.runtime.model import load_model

GOALS = {"traced / hf": 0.95, "engine / hf": 0.95, "traced / engine": 1.03}


def hf_generate(lm, prompt_ids: list[int], num_tokens: int) -> list[int]:
    x = torch.tensor([prompt_ids], device=lm.device)
    with torch.inference_mode():
        out = lm.model.generate(
            x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=num_tokens,
            min_new_tokens=num_tokens, pad_token_id=lm.tokenizer.eos_token_id,
        )
    return out[0, len(prompt_ids):].tolist()


def timed(fn) -> tuple[float, list[int]]:
    start = time.perf_counter()
    tokens = fn()
    return (time.perf_counter() - start) * 1e3, tokens


def measure(lm, prompt: str, num_tokens: int, repeats: int) -> dict[str, list[float]]:
    cfg = GenerationConfig(max_new_tokens=num_tokens, ignore_eos=True)
    prompt_ids = encode_prompt(lm, prompt, cfg)
    runs = {
        "hf": lambda: hf_generate(lm, prompt_ids, num_tokens),
        "engine": lambda: generate_ids(lm, prompt_ids, cfg),
        "traced": lambda: list(generate(lm, prompt, cfg).output_ids),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    outputs: dict[str, list[int]] = {}
    for _ in range(repeats + 1):  # the first round warms caches and is dropped
        for name, fn in runs.items():
            ms, tokens = timed(fn)
            times[name].append(ms)
            outputs[name] = tokens
    # HF's min_new_tokens suppresses EOS (it picks the runner-up there) while ours, like
    # vLLM's ignore_eos, writes EOS and goes on; so the loops part at our first EOS (the
    # default model writes 巴黎 。 </s>) and must agree on every token before it.
    eos, ours = lm.tokenizer.eos_token_id, outputs["engine"]
    shared = ours.index(eos) if eos in ours else len(ours)
    if outputs["hf"][:shared] != ours[:shared] or ours != outputs["traced"] or len(outputs["hf"]) != num_tokens:
        raise SystemExit(f"the loops disagree on tokens: {outputs}")
    return {name: values[1:] for name, values in times.items()}


def report(times: dict[str, list[float]], num_tokens: int) -> list[str]:
    med = {name: statistics.median(values) for name, values in times.items()}
    lines = [f"{'loop':8} {'median ms':>10} {'ms/token':>9}"]
    lines += [f"{name:8} {ms:10.2f} {ms / num_tokens:9.3f}" for name, ms in med.items()]
    lines.append("")
    for label, goal in GOALS.items():
        a, b = label.split(" / ")
        ratio = med[a] / med[b]
        lines.append(f"{label:16} {ratio:6.3f}x  (goal <= {goal:.2f}x: {'ok' if ratio <= goal else 'MISSED'})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--prompt", default="法国的首都是")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    lm = load_model(args.model, device=args.device)
    print(f"model {lm.model_id} on {lm.info.device} ({lm.info.dtype}), threads {torch.get_num_threads()}, "
          f"prompt {args.prompt!r}, {args.tokens} tokens, {args.repeats} interleaved repeats")
    print("\n".join(report(measure(lm, args.prompt, args.tokens, args.repeats), args.tokens)))


if __name__ == "__main__":
    main()
