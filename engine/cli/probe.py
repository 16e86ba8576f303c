"""`python -m engine probe --endpoint URL --model NAME --scenario burst-16`: measure a real server
from the client (engine/contract/interop/probe.py). Standard library only: it runs wherever Python does.

Exit status 0: every request measured; 1: some failed (the others are kept, each failure is one
`error:` line on stderr); 2: bad settings, or the whole probe failed.
"""

from __future__ import annotations

import argparse
import sys

from engine.cli.common import add_slo_arguments, check_positive, dist, ms, shown, slo_from_args, table
from engine.contract.interop.observed import OBSERVED_NOTE
from engine.contract.interop.endpoint import APIS, ProbeConfig
from engine.contract.interop.probe import ProbeResult, run_probe
from engine.contract.limits import PROBE_SECONDS_PER_TOKEN
from engine.contract.prompts import extend_prompt
from engine.contract.serving.workloads import SCENARIOS, load_workload_file, scenario

NAME = "probe"


def add_parser(sub) -> None:
    probe = sub.add_parser(NAME, help="measure an OpenAI-compatible streaming server (vLLM, SGLang, transformers "
                                      "serve) from the client: TTFT, ITL, TPOT, E2EL, goodput")
    probe.add_argument("--endpoint", required=True, metavar="URL", help="e.g. http://127.0.0.1:8000 (/v1 is added)")
    probe.add_argument("--model", required=True, help="the model name the server serves")
    source = probe.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", choices=tuple(SCENARIOS), metavar="NAME", help=", ".join(SCENARIOS))
    source.add_argument("--workload", metavar="FILE.jsonl", help="JSON Lines, one request a line (see engine serve)")
    probe.add_argument("--seed", type=int, default=0, help="seed of a scenario's random arrivals")
    probe.add_argument("--api", choices=APIS, default="completions",
                       help="/v1/completions (default) or /v1/chat/completions")
    probe.add_argument("--concurrency", type=int, default=None, metavar="N", help="most requests in flight")
    probe.add_argument("--api-key-env", default=None, metavar="VAR",
                       help="the NAME of an environment variable holding the API key (never the key itself)")
    probe.add_argument("--timeout", type=float, default=60.0, metavar="S",
                       help="seconds without a byte from the server before a request fails (default 60); each "
                            f"request also ends at this plus {PROBE_SECONDS_PER_TOKEN:g} s per max_tokens, however "
                            "the server trickles")
    probe.add_argument("--no-ignore-eos", action="store_true",
                       help="do not send vLLM's ignore_eos field (transformers serve refuses unknown fields)")
    probe.add_argument("--metrics-interval", type=float, default=0.25, metavar="S",
                       help="how often to sample the server's /metrics when it has one")
    add_slo_arguments(probe)
    probe.add_argument("--json", action="store_true", help="print the result as JSON")


def config_from_args(args: argparse.Namespace) -> ProbeConfig:
    slo = slo_from_args(args, "bad_probe_setting")
    check_positive(args, ("metrics_interval",), "bad_probe_setting")
    return ProbeConfig(endpoint=args.endpoint, model=args.model, api=args.api, concurrency=args.concurrency,
                       timeout_s=args.timeout, api_key_env=args.api_key_env, send_ignore_eos=not args.no_ignore_eos,
                       metrics_interval_s=args.metrics_interval, slo=slo)


def run(args: argparse.Namespace) -> int:
    """Print the result (stdout) and one `error:` line per failed request (stderr); 1 when any failed."""
    cfg = config_from_args(args)  # bad settings fail before anything is sent
    workload = scenario(args.scenario, args.seed) if args.scenario else load_workload_file(args.workload)
    result = run_probe(cfg, workload, scenario=args.scenario or args.workload, stretch=default_stretch(workload),
                       progress=lambda done, total: print(f"  {done}/{total} requests", file=sys.stderr))
    print(result.to_json() if args.json else format_probe(result))
    print("".join(f"error: {f.message}\n" for f in result.failures), end="", file=sys.stderr)
    return 1 if result.failures else 0


def default_stretch(workload):
    """Prompts stretched with the embedded model's tokenizer (loaded here, torch and all, only when a
    request asks for prompt_tokens)."""
    if not any(r.prompt_tokens for r in workload):
        return None
    from engine.runtime.model import load_tokenizer

    tokenizer = load_tokenizer()
    return lambda prompt, target: extend_prompt(tokenizer, prompt, target)


def format_probe(result: ProbeResult) -> str:
    run, m = result.run, result.run.metrics
    extra = {p.request_id: p for p in result.requests}
    rows = [(r.request_id, ms(r.arrival_ms), str(len(r.output_pieces)), str(extra[r.request_id].completion_tokens
                                                                           or "-"),
             ms(r.ttft_ms), ms(r.tpot_ms), ms(max(r.itl_ms) if r.itl_ms else None), ms(r.e2el_ms),
             shown(r.output_text[:24]) + ("…" if len(r.output_text) > 24 else "")) for r in run.requests]
    cols = ("request", "sent ms", "pieces", "tokens", "TTFT ms", "TPOT ms", "max ITL ms", "E2EL ms", "answer")
    lines = [f"{result.endpoint} ({result.api}) model {result.model} | {run.scenario} | {len(run.requests)} measured, "
             f"{len(result.failures)} failed, {run.wall_ms:.0f} ms", f"note: {OBSERVED_NOTE}", "",
             *table(cols, rows), "",
             f"throughput: {m.request_throughput_per_s:.2f} req/s, {m.output_throughput_tok_s:.1f} pieces/s over "
             f"{m.duration_ms:.0f} ms", dist("TTFT", m.ttft), dist("TPOT", m.tpot), dist("ITL ", m.itl),
             dist("E2EL", m.e2el),
             f"goodput: {m.num_good}/{m.num_completed} requests -> {m.goodput_req_per_s:.2f} req/s"]
    sm = result.server_metrics
    if sm.available:
        peak = {k: max((s.values.get(k) or 0) for s in sm.samples) for k in sm.names}
        lines.append(f"server /metrics: {len(sm.samples)} samples; peak " +
                     ", ".join(f"{k} {v:g} ({sm.names[k]})" for k, v in peak.items()))
    else:
        lines.append(f"server /metrics: not sampled ({sm.reason})")
    lines.append(result.prefix_cache.sentence)  # the usage's cached tokens against /metrics' prefix-cache hits
    lines += [f"failed: {fl.message}" for fl in result.failures]
    return "\n".join(lines)
