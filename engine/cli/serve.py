"""`python -m engine serve`: many requests on the real engine, one policy (or all of them).

    python -m engine serve --scenario long-prompt-during-chats --policy chunked
    python -m engine serve --workload requests.jsonl --policy disaggregated --json
    python -m engine serve --scenario burst-16 --policy all          # every policy, side by side
    python -m engine serve --scenario shared-system-prompt --policy chunked --prefix-caching

Without --json: a table per request and the run's metrics. With --json: the
ServingRun (engine/contract/serving/trace.py); with --policy all, {"runs": [...]}.
Bad values print one line and exit 2 (engine/cli/__init__.py catches EngineError).
"""

from __future__ import annotations

import argparse
import json

from engine.cli.common import add_device_arguments, add_slo_arguments, dist, ms, shown, slo_from_args, table
from engine.contract import limits
from engine.contract.serving.config import ServeConfig
from engine.contract.serving.metrics import prefix_cache_totals
from engine.contract.serving.trace import POLICIES, ServingRun
from engine.contract.serving.workloads import SCENARIOS, load_workload_file, scenario

NAME = "serve"
POLICY_CHOICES = (*POLICIES, "all")


def add_parser(sub) -> None:
    scenarios = "; ".join(f"{name}: {what}" for name, (what, _) in SCENARIOS.items())
    serve = sub.add_parser(NAME, help="serve many requests at once (continuous batching, chunked prefill, "
                                      "disaggregation, paged KV)",
                           description=f"Scenarios: {scenarios}.")
    source = serve.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", choices=tuple(SCENARIOS), metavar="NAME",
                        help=f"a named workload: {', '.join(SCENARIOS)}")
    source.add_argument("--workload", metavar="FILE.jsonl",
                        help='JSON Lines, one request a line: {"arrival_ms": 0, "prompt": "法国的首都是", '
                             '"max_new_tokens": 16} (optional: ignore_eos, prompt_tokens, request_id)')
    serve.add_argument("--policy", required=True, choices=POLICY_CHOICES,
                       help="how passes are filled; 'all' runs every policy on the same workload")
    serve.add_argument("--token-budget", type=int, default=None, metavar="N",
                       help="chunked: positions per forward pass, Decodes first (default 64)")
    serve.add_argument("--block-size", type=int, default=16, metavar="N", help="tokens per KV block (default 16)")
    serve.add_argument("--kv-blocks", type=int, default=None, metavar="N",
                       help="KV budget in blocks per worker (default: enough for every request at its longest)")
    serve.add_argument("--on-kv-full", choices=("preempt", "wait"), default="preempt",
                       help="preempt: admit when the prompt fits, preempt and recompute when blocks run out; "
                            "wait: admit only when the whole maximum length fits")
    serve.add_argument("--max-num-seqs", type=int, default=256, metavar="N", help="most requests running at once")
    serve.add_argument("--prefix-caching", action="store_true",
                       help="read full prompt blocks other requests already computed from the KV cache "
                            "(automatic prefix caching; default off)")
    serve.add_argument("--seed", type=int, default=0, help="seed of a scenario's random arrivals (poisson-16)")
    add_slo_arguments(serve)
    serve.add_argument("--model", default=None, help="a local Hugging Face folder (default: the embedded model) "
                                                     "or preset:NAME")
    add_device_arguments(serve)
    serve.add_argument("--json", action="store_true", help="print the run as JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    print(run_serve(args))
    return 0


def run_serve(args: argparse.Namespace) -> str:
    limits.check_count("--seed", args.seed, limits.MAX_SEED)
    workload = scenario(args.scenario, args.seed) if args.scenario else load_workload_file(args.workload)
    slo = slo_from_args(args, "bad_serve_setting")
    policies = POLICIES if args.policy == "all" else (args.policy,)
    configs = [ServeConfig(policy=p, token_budget=args.token_budget, block_size=args.block_size,
                           num_kv_blocks=args.kv_blocks, on_kv_full=args.on_kv_full, max_num_seqs=args.max_num_seqs,
                           slo=slo, prefix_caching=args.prefix_caching)
               for p in policies]  # validated before the model loads
    # torch loads here, once the workload and the settings are read and checked, not when the parser is built
    from engine.runtime.model import load_model
    from engine.runtime.serving.engine import run_workload

    lm = load_model(args.model, device=args.device, dtype=args.dtype)
    name = args.scenario or args.workload
    runs = [run_workload(lm, workload, c, scenario=name) for c in configs]
    if args.json:
        return runs[0].to_json() if len(runs) == 1 else json.dumps({"runs": [r.to_dict() for r in runs]},
                                                                    ensure_ascii=False, indent=2)
    if len(runs) == 1:
        return format_run(runs[0])
    return "\n\n".join([*(format_run(r) for r in runs), format_comparison(runs)])


# --- tables -------------------------------------------------------------------

def format_run(run: ServingRun) -> str:
    s, mem = run.settings, run.memory
    budget = f", token budget {s.token_budget}" if s.token_budget else ""
    lines = [f"policy {s.policy}{budget} | scenario {run.scenario} | model {run.model.model_id} on "
             f"{run.model.device} | {len(run.requests)} requests, {len(run.iterations)} forward passes, "
             f"{run.wall_ms:.0f} ms", ""]
    rows = [(r.request_id, f"{r.arrival_ms:.0f}", str(r.prompt_len), str(r.num_output_tokens), ms(r.ttft_ms),
             ms(r.tpot_ms), ms(max(r.itl_ms) if r.itl_ms else None), ms(r.e2el_ms), str(r.num_preemptions),
             _answer(r.output_pieces)) for r in run.requests]
    lines += table(("request", "arrival ms", "prompt", "output", "TTFT ms", "TPOT ms", "max ITL ms", "E2EL ms",
                    "preempted", "answer"), rows)
    if s.prefix_caching:
        lines += ["", *_prefix_lines(run)]
    lines += ["", *_metric_lines(run)]
    lines.append(f"KV at peak: {mem.peak_used_tokens} tokens in {mem.peak_used_blocks} blocks of {mem.block_size} "
                 f"({mem.paged_utilization:.0%} of reserved slots hold a token); contiguous pre-allocation to each "
                 f"request's maximum would reserve {mem.peak_contiguous_reserved_tokens} "
                 f"({mem.contiguous_utilization:.0%} used); over the run {mem.mean_paged_utilization:.0%} of "
                 f"paged slots held a token, {mem.mean_contiguous_utilization:.0%} of contiguous ones")
    if run.handoffs:
        total = sum(h.num_bytes for h in run.handoffs)
        copy = sum(h.copy_ms for h in run.handoffs)
        links = ", ".join(f"{link.name} {total / link.bytes_per_s * 1e6:.1f} µs" for link in run.links)
        lines.append(f"KV hand-offs: {len(run.handoffs)}, {total:,} bytes, measured copy {copy:.2f} ms in all; "
                     f"over assumed links: {links}")
    lines += [f"note: {n}" for n in run.notes]
    return "\n".join(lines)


def _prefix_lines(run: ServingRun) -> list[str]:
    """Per request: prompt, cached and computed tokens and the miss's reason; then the run's hit rate."""
    rows = []
    for r in run.requests:
        p = r.prefix
        if p is not None:
            rows.append((r.request_id, str(p.num_tokens), str(p.num_cached_tokens), str(p.num_computed_tokens),
                         f"{p.hit_rate:.0%}", miss_words(p)))
    total, cached, rate = prefix_cache_totals(run.requests)
    evictions = sum(len(it.evictions) for it in run.iterations)
    return [*table(("request", "prompt", "cached", "computed", "hit rate", "why not cached"), rows),
            f"prefix cache: {cached} of {total} prompt tokens read from the cache ({rate:.0%}), "
            f"{evictions} blocks evicted"]


def miss_words(p) -> str:
    """A look-up's miss in plain English (the page says it in zh/en: lesson.serving_views)."""
    if p.miss == "diverged":
        return (f"diverged from {p.other_request}'s cached block at position {p.diverged_at}: "
                f"{shown(p.token_piece)!r} here, {shown(p.cached_piece)!r} cached")
    if p.miss == "evicted":
        return f"evicted by {p.other_request} at {p.evicted_at_ms:.0f} ms"
    return {"": "-", "cache_off": "cache off", "too_short": "shorter than one block",
            "first_seen": "first time this prefix was seen",
            "in_flight": f"{p.other_request} was still computing it"}[p.miss]


def _answer(pieces: tuple[str, ...], limit: int = 24) -> str:
    """The pieces as written, EOS (</s>) included, so an answer that goes on past it (ignore_eos) says so."""
    text = shown("".join(pieces))
    return text if len(text) <= limit else text[:limit] + "…"


def _metric_lines(run: ServingRun) -> list[str]:
    m = run.metrics
    slo = m.slo
    set_slos = [f"{k} <= {v:g} ms" for k, v in (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms), ("E2EL", slo.e2el_ms))
                if v is not None]
    return [
        f"throughput: {m.request_throughput_per_s:.2f} req/s, {m.output_throughput_tok_s:.1f} output tok/s, "
        f"{m.total_token_throughput_tok_s:.1f} total tok/s over {m.duration_ms:.0f} ms",
        dist("TTFT", m.ttft), dist("TPOT", m.tpot), dist("ITL ", m.itl), dist("E2EL", m.e2el),
        f"goodput: {m.num_good}/{m.num_completed} requests meet "
        f"{' and '.join(set_slos) if set_slos else 'no SLO set (all count)'} -> {m.goodput_req_per_s:.2f} req/s",
    ]


def format_comparison(runs: list[ServingRun]) -> str:
    rows = [(r.settings.policy, f"{r.metrics.output_throughput_tok_s:.0f}", ms(r.metrics.ttft.p50),
             ms(r.metrics.ttft.p99), ms(r.metrics.tpot.mean), ms(r.metrics.itl.p50), ms(r.metrics.itl.p99),
             ms(r.metrics.e2el.p99), str(r.metrics.num_good)) for r in runs]
    return "\n".join(["side by side:", *table(("policy", "tok/s", "TTFT p50", "TTFT p99", "TPOT mean", "ITL p50",
                                               "ITL p99", "E2EL p99", "good"), rows)])
