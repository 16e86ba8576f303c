"""Serving many requests, measured side by side in one run (ratios of medians).

    python bench/serving.py [--model DIR] [--repeats 3]

1) 8 chats at once (64 tokens each, scenario eight-chats): continuous batching
   (chunked) vs the same 8 one at a time: output tokens/s ratio.      goal >= 4x
2) 4 chats decoding when a 1024-token prompt arrives (scenario long-prompt-during-chats):
   p99 ITL of the four running chats, chunked (budget 64) / prefill-first.   goal <= 0.5
   (disaggregated is printed alongside, for the lesson; it has no goal here)
3) the same 8 chats through transformers' continuous-batching manager
   (`model.generate_batch`, its own paged cache and scheduler): our tokens/s / HF's.  goal >= 1.0x

Runs are interleaved so a noisy neighbour hurts all alike. Greedy tokens must agree
across all of them (ours vs one-at-a-time vs HF), or the bench stops.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.contract.serving.config import ServeConfig
from engine.contract.serving.workloads import scenario  # noqa: E402
from engine.runtime.model import load_model  # noqa: E402
from engine.runtime.serving.engine import run_workload  # noqa: E402

GOALS = {"batching speed-up": (">=", 4.0), "chunked / prefill-first p99 ITL": ("<=", 0.5),
         "ours / HF continuous batching": (">=", 1.0)}
CHATS = ("r0", "r1", "r2", "r3")  # the running Decodes of long-prompt-during-chats


def chat_itl_p99(run) -> float:
    import numpy as np

    gaps = [g for r in run.requests if r.request_id in CHATS for g in r.itl_ms]
    return float(np.percentile(gaps, 99))


def hf_manager(lm):
    """HF's manager needs plain sdpa (our engine swaps in its own kernel chooser): a second instance."""
    from transformers import AutoModelForCausalLM

    dtype = next(lm.model.parameters()).dtype
    return AutoModelForCausalLM.from_pretrained(lm.path, attn_implementation="sdpa", dtype=dtype).eval().to(lm.device)


def hf_tokens_per_s(model, prompts: list[list[int]], num_tokens: int) -> tuple[float, list[list[int]]]:
    from transformers import GenerationConfig

    cfg = GenerationConfig(max_new_tokens=num_tokens, do_sample=False, eos_token_id=-1, pad_token_id=1)
    start = time.perf_counter()
    out = model.generate_batch(inputs=prompts, generation_config=cfg, progress_bar=False)
    seconds = time.perf_counter() - start
    ordered = [list(o.generated_tokens) for _, o in sorted(out.items(), key=lambda kv: int(kv[0].split("_")[-1]))]
    return sum(map(len, ordered)) / seconds, ordered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    lm = load_model(args.model)
    chats, long = scenario("eight-chats"), scenario("long-prompt-during-chats")
    hf = hf_manager(lm)
    num_tokens = chats[0].max_new_tokens
    m: dict[str, list[float]] = {k: [] for k in ("cb", "solo", "hf", "pf_itl", "ch_itl", "dis_itl")}
    reference = None
    for round_ in range(args.repeats + 1):  # round 0 warms up and is dropped
        cb = run_workload(lm, chats, ServeConfig(policy="chunked"))
        solo = run_workload(lm, chats, ServeConfig(policy="one-at-a-time"))
        hf_rate, hf_ids = hf_tokens_per_s(hf, [list(r.prompt_ids) for r in cb.requests], num_tokens)
        pf = run_workload(lm, long, ServeConfig(policy="prefill-first"))
        ch = run_workload(lm, long, ServeConfig(policy="chunked"))
        ids = [list(r.output_ids) for r in cb.requests]
        if ids != [list(r.output_ids) for r in solo.requests] or ids != hf_ids:
            print("tokens differ between continuous batching, one at a time and HF: stopping", file=sys.stderr)
            return 1
        reference = reference or ids
        if round_ == 0:
            continue
        m["cb"].append(cb.metrics.output_throughput_tok_s)
        m["solo"].append(solo.metrics.output_throughput_tok_s)
        m["hf"].append(hf_rate)
        m["pf_itl"].append(chat_itl_p99(pf))
        m["ch_itl"].append(chat_itl_p99(ch))
    dis = run_workload(lm, long, ServeConfig(policy="disaggregated"))  # once: two processes, slow to start
    med = {k: statistics.median(v) for k, v in m.items() if v}
    load = ""
    if hasattr(os, "getloadavg"):
        one, five, fifteen = os.getloadavg()
        load = f", load average {one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count() or 0} cores"
    print(f"model {lm.model_id} on {lm.device}, {lm.info.dtype}; medians of {args.repeats} interleaved rounds{load}\n")
    print(f"8 chats x {num_tokens} tokens   continuous batching {med['cb']:8.1f} tok/s   one at a time "
          f"{med['solo']:8.1f} tok/s   HF continuous batching {med['hf']:8.1f} tok/s")
    print(f"1024-token prompt during 4 chats, p99 ITL of the chats:  prefill-first {med['pf_itl']:.1f} ms   "
          f"chunked (budget 64) {med['ch_itl']:.1f} ms   disaggregated (one run) {chat_itl_p99(dis):.1f} ms")
    long_handoff = max(dis.handoffs, key=lambda h: h.num_bytes)
    print(f"disaggregated hand-off of the 1024-token prompt: {long_handoff.num_bytes:,} bytes, copy "
          f"{long_handoff.copy_ms:.2f} ms measured; "
          + ", ".join(f"{e.name} {e.ms * 1e3:.1f} us" for e in long_handoff.link_estimates) + "\n")
    ratios = {"batching speed-up": med["cb"] / med["solo"],
              "chunked / prefill-first p99 ITL": med["ch_itl"] / med["pf_itl"],
              "ours / HF continuous batching": med["cb"] / med["hf"]}
    failed = False
    for name, value in ratios.items():
        op, goal = GOALS[name]
        ok = value >= goal if op == ">=" else value <= goal
        failed |= not ok
        print(f"{name:34s} {value:7.2f}x  (goal {op} {goal}x: {'ok' if ok else 'MISSED'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
