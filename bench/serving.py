"""Serving many requests, measured side by side in one run (ratios of medians).

    python -m bench.serving [--model DIR] [--repeats 3]

1) 8 chats at once (64 tokens each, scenario eight-chats): continuous batching
   (chunked) vs the same 8 one at a time: output tokens/s ratio.      goal >= 4x
2) 4 chats decoding when a 1024-token prompt arrives (scenario long-prompt-during-chats):
   p99 ITL of the four running chats, chunked (budget 64) / prefill-first.   goal <= 0.5
   (disaggregated is printed alongside, for the lesson; it has no goal here)
3) the same 8 chats through transformers' continuous-batching manager
   (`model.generate_batch`, its own paged cache and scheduler): our tokens/s / HF's.  goal >= 1.0x
4) 8 chats after one 512-token system prompt (scenario shared-system-prompt), chunked:
   TTFT p50 with the prefix cache / without it.                        goal <= 0.3x
   (tokens must be identical; the hit rate is printed)

    python -m bench.serving --prefix-only     # just 4)

Runs are interleaved so a noisy neighbour hurts all alike. Greedy tokens must agree
across all of them (ours vs one-at-a-time vs HF), or the bench stops.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


from engine.contract.serving.config import ServeConfig
from engine.contract.serving.metrics import prefix_cache_totals
from engine.contract.serving.workloads import scenario
from engine.runtime.model import load_model
from engine.runtime.serving.engine import run_workload

GOALS = {"batching speed-up": (">=", 4.0), "chunked / prefill-first p99 ITL": ("<=", 0.5),
         "ours / HF continuous batching": (">=", 1.0), "prefix cache / none TTFT p50": ("<=", 0.3)}
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


def prefix_rounds(lm, repeats: int) -> dict[str, float] | None:
    """4): the shared-system-prompt scenario, the cache off and on, interleaved; None when tokens differ."""
    work, off_ms, on_ms, rates = scenario("shared-system-prompt"), [], [], []
    for round_ in range(repeats + 1):  # round 0 warms up and is dropped
        off = run_workload(lm, work, ServeConfig(policy="chunked"))
        on = run_workload(lm, work, ServeConfig(policy="chunked", prefix_caching=True))
        if [r.output_ids for r in off.requests] != [r.output_ids for r in on.requests]:
            return None
        if round_:
            off_ms.append(off.metrics.ttft.p50)
            on_ms.append(on.metrics.ttft.p50)
            rates.append(prefix_cache_totals(on.requests)[2])
    return {"off": statistics.median(off_ms), "on": statistics.median(on_ms), "rate": statistics.median(rates),
            "cached": prefix_cache_totals(on.requests)[1], "total": prefix_cache_totals(on.requests)[0]}


def report_prefix(lm, repeats: int) -> tuple[float, str] | None:
    """4) measured and said: (the ratio, its line); None when the tokens differ."""
    m = prefix_rounds(lm, repeats)
    if m is None:
        return None
    return m["on"] / m["off"], (f"8 chats after a 512-token system prompt, chunked: TTFT p50 without the prefix "
                                f"cache {m['off']:.1f} ms, with it {m['on']:.1f} ms; {m['cached']:,} of "
                                f"{m['total']:,} prompt tokens read from the cache (hit rate {m['rate']:.0%}); "
                                "tokens identical")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prefix-only", action="store_true", help="only 4): prefix caching")
    args = parser.parse_args()
    lm = load_model(args.model)
    prefix = report_prefix(lm, args.repeats)
    if prefix is None:
        print("tokens differ with the prefix cache on and off: stopping", file=sys.stderr)
        return 1
    if args.prefix_only:
        print(f"model {lm.model_id} on {lm.device}, {lm.info.dtype}; medians of {args.repeats} interleaved "
              f"rounds{load_words()}\n\n{prefix[1]}\n")
        return judge({"prefix cache / none TTFT p50": prefix[0]})
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
    print(f"model {lm.model_id} on {lm.device}, {lm.info.dtype}; medians of {args.repeats} interleaved "
          f"rounds{load_words()}\n")
    print(f"8 chats x {num_tokens} tokens   continuous batching {med['cb']:8.1f} tok/s   one at a time "
          f"{med['solo']:8.1f} tok/s   HF continuous batching {med['hf']:8.1f} tok/s")
    print(f"1024-token prompt during 4 chats, p99 ITL of the chats:  prefill-first {med['pf_itl']:.1f} ms   "
          f"chunked (budget 64) {med['ch_itl']:.1f} ms   disaggregated (one run) {chat_itl_p99(dis):.1f} ms")
    long_handoff = max(dis.handoffs, key=lambda h: h.num_bytes)
    print(f"disaggregated hand-off of the 1024-token prompt: {long_handoff.num_bytes:,} bytes, copy "
          f"{long_handoff.copy_ms:.2f} ms measured; "
          + ", ".join(f"{e.name} {e.ms * 1e3:.1f} us" for e in long_handoff.link_estimates))
    print(prefix[1] + "\n")
    return judge({"batching speed-up": med["cb"] / med["solo"],
                  "chunked / prefill-first p99 ITL": med["ch_itl"] / med["pf_itl"],
                  "ours / HF continuous batching": med["cb"] / med["hf"], "prefix cache / none TTFT p50": prefix[0]})


def load_words() -> str:
    if not hasattr(os, "getloadavg"):
        return ""
    one, five, fifteen = os.getloadavg()
    return f", load average {one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count() or 0} cores"


def judge(ratios: dict[str, float]) -> int:
    """Each ratio against its goal, printed; 1 when one missed."""
    failed = False
    for name, value in ratios.items():
        op, goal = GOALS[name]
        ok = value >= goal if op == ">=" else value <= goal
        failed |= not ok
        print(f"{name:34s} {value:7.2f}x  (goal {op} {goal}x: {'ok' if ok else 'MISSED'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
