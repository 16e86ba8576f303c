"""`python -m engine trace --prompt 法国的首都是 --max-new-tokens 8`: run one request, print its steps.
`python -m engine cost --prompt-len 512 --context 512`: FLOPs, bytes and device floors (engine/cost.py).
`--model preset:qwen2.5-0.5b` (or llama-3.2-1b, llama-3.1-8b): a published shape with random
weights, built in code (engine/presets.py): times are real, tokens are meaningless.

Errors (bad folder, empty prompt, lengths out of range) print one line and exit 2.
`--model` is a local folder; a hub id (`org/name`) that names no local folder is
fetched from the Hugging Face Hub, after a note on stderr saying so. Offline, that
fails within a few seconds (engine.model.hub_reachable) instead of retrying.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata

from .errors import EngineError, InputError
from .prompts import DEFAULT_MAX_PROMPT_TOKENS, extend_prompt
from .trace import ENGINE_MODES, RANDOM_WEIGHTS_NOTE, RequestTrace, attention_kernels

MAX_SHOWN_CHARS = 48  # a long prompt's Prefill row is cut here, with its token count


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not a usage block
        self.exit(2, f"error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="Trace Prefill and Decode on a real model.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    trace = sub.add_parser("trace", help="run one prompt and print every forward pass")
    trace.add_argument("--prompt", default="法国的首都是")
    trace.add_argument("--max-new-tokens", type=int, default=8)
    trace.add_argument("--prompt-tokens", type=int, default=0, metavar="N",
                       help="stretch the prompt to N tokens with the lesson's filler before it, as the app's "
                            "slider does (0 = as typed)")
    trace.add_argument("--max-prompt-tokens", type=int, default=DEFAULT_MAX_PROMPT_TOKENS, metavar="N",
                       help=f"refuse longer prompts (default {DEFAULT_MAX_PROMPT_TOKENS}: the longest the default "
                            "model was trained to answer after; the model's context is the hard limit)")
    trace.add_argument("--model", default=None,
                       help="a local Hugging Face folder (default: the embedded model), a hub id to fetch, or "
                            "preset:NAME (qwen2.5-0.5b, llama-3.2-1b, llama-3.1-8b: random weights)")
    trace.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "mps"))
    trace.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    trace.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    trace.add_argument("--top-k", type=int, default=0)
    trace.add_argument("--top-p", type=float, default=1.0)
    trace.add_argument("--seed", type=int, default=0)
    trace.add_argument("--ignore-eos", action="store_true", help="always write max-new-tokens tokens")
    trace.add_argument("--mode", default="eager", choices=ENGINE_MODES,
                       help="eager: a growing KV cache (default); static: a preallocated one; graph: static with "
                            "each Decode step replayed as one CUDA graph (CUDA only); compiled: static with the "
                            "Decode step fused by torch.compile (and captured on CUDA; the first run compiles, "
                            "about 20 s on a small CPU). engine/static.py")
    trace.add_argument("--json", action="store_true", help="print the trace as JSON instead of a table")
    _add_cost_parser(sub)
    _add_sweep_parser(sub)
    _add_serve_parser(sub)
    _add_probe_parser(sub)
    return parser


def _add_probe_parser(sub) -> None:
    from .probe import add_probe_parser  # standard library only: nothing loads

    add_probe_parser(sub)


def _add_serve_parser(sub) -> None:
    from .serving.cli import add_serve_parser  # no torch: the parser is built before anything loads

    add_serve_parser(sub)


def _add_cost_parser(sub) -> None:
    from .cost import DTYPE_BYTES  # pure Python: no torch

    cost = sub.add_parser("cost", help="FLOPs, bytes and device floor of a Prefill and of one Decode step "
                                       "(reads config.json only)")
    cost.add_argument("--model", default="default",
                      help="a local folder with a config.json (default: the embedded model), or preset:NAME")
    cost.add_argument("--device-spec", default="h200", choices=("h200", "h100", "a100", "l4", "this"),
                      help="a datasheet, or 'this': measure this machine once (copy and matmul)")
    cost.add_argument("--prompt-len", type=int, required=True, metavar="N", help="positions in the Prefill")
    cost.add_argument("--context", type=int, required=True, metavar="C",
                      help="positions cached before the Decode step")
    cost.add_argument("--batch", type=int, default=1, metavar="B", help="requests in each pass")
    dtypes = ("auto", *DTYPE_BYTES)
    cost.add_argument("--weight-dtype", default="auto", choices=dtypes,
                      help="auto: fp32 when 'this' is a CPU (as the engine runs there), else bf16")
    cost.add_argument("--kv-dtype", default="auto", choices=dtypes,
                      help="auto: the weights' dtype, bf16 for int8/int4")
    cost.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _add_sweep_parser(sub) -> None:
    """`python -m engine sweep --kind prefill`: measure one phase across a range (engine/sweep.py)."""
    from .sweep import KINDS, MAX_BATCH

    sweep = sub.add_parser("sweep", help="measure Prefill vs prompt length, a Decode step vs context, or a "
                                         "batched Decode step vs batch size, each beside the cost model's floor")
    sweep.add_argument("--kind", required=True, choices=KINDS)
    sweep.add_argument("--model", default=None,
                       help="a local folder (default: the embedded model) or preset:NAME (random weights)")
    sweep.add_argument("--points", default=None, metavar="A,B,...",
                       help="the values to measure, comma-separated (default: prefill and decode-context 8..8192 "
                            f"in powers of two, as far as the model allows; decode-batch 1..{MAX_BATCH})")
    sweep.add_argument("--repeats", type=int, default=3, help="timed passes per point (median kept), after a warm-up")
    sweep.add_argument("--context", type=int, default=128, metavar="C",
                       help="decode-batch: positions cached in every row")
    sweep.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "mps"))
    sweep.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    sweep.add_argument("--device-spec", default="auto", choices=("auto", "h200", "h100", "a100", "l4", "this"),
                       help="the roofs of the floors (auto: h200 on a GPU, this machine measured on a CPU)")
    sweep.add_argument("--json", action="store_true", help="print the sweep as JSON")


def run_sweep_command(args: argparse.Namespace) -> str:
    from . import cost
    from .model import load_model, resolve_device
    from .sweep import check_points, format_sweep, run_sweep

    try:
        points = None if args.points is None else tuple(int(v) for v in args.points.split(",") if v.strip())
    except ValueError:
        raise InputError("length_range", f"--points must be whole numbers separated by commas, got {args.points!r}",
                         name="points", value=args.points) from None
    check_points(args.kind, points)  # before the model loads: bad input fails fast
    if args.device_spec == "this":
        spec = cost.measure_this_machine(resolve_device(args.device).type)
    else:
        spec = None if args.device_spec == "auto" else cost.DEVICE_SPECS[args.device_spec]
    longest = (max(points or (8192,)) + 1 if args.kind != "decode-batch"
               else (args.context + 1) * max(points or (64,)))  # a preset's memory check: every row's cache
    lm = load_model(args.model, device=args.device, dtype=args.dtype, max_context=longest)
    done = (lambda i, total, p: print(f"  {i}/{total}: {p.value} -> {p.median_ms:.3f} ms", file=sys.stderr))
    sweep = run_sweep(lm, args.kind, points, repeats=args.repeats, batch_context=args.context, device_spec=spec,
                      progress=done)
    return sweep.to_json() if args.json else format_sweep(sweep)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "probe":  # engine/probe.py: a real server, measured from the client
            from .probe import run_probe_command

            out, errors, status = run_probe_command(args)
            print(out)
            print(errors, end="", file=sys.stderr)
            return status
        if args.command == "serve":  # engine/serving/cli.py: many requests at once
            from .serving.cli import run_serve

            print(run_serve(args))
            return 0
        if args.command == "cost":
            print(run_cost(args))
            return 0
        if args.command == "sweep":
            print(run_sweep_command(args))
            return 0
        trace = run_trace(args)
    except EngineError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(trace.to_json() if args.json else format_trace(trace))
    return 0


def run_trace(args: argparse.Namespace) -> RequestTrace:
    from .generation import GenerationConfig, check_prompt_text, generate
    from .model import hub_id_for, load_model

    check_prompt_text(args.prompt)  # before the model loads: bad input should fail fast
    for name, value, low in (("prompt-tokens", args.prompt_tokens, 0), ("max-prompt-tokens", args.max_prompt_tokens, 1)):
        if value < low:
            raise InputError("length_range", f"--{name} must be at least {low}, got {value}", name=name, value=value)
    cfg = GenerationConfig(
        max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
        top_p=args.top_p, seed=args.seed, ignore_eos=args.ignore_eos, mode=args.mode,
    )
    hub_id = hub_id_for(args.model)
    if hub_id:  # say so before any network traffic: a typo in a folder name must not look like a download
        print(f"note: no local folder {args.model!r}; fetching {hub_id} from the Hugging Face Hub", file=sys.stderr)
    longest = max(args.prompt_tokens, args.max_prompt_tokens) + args.max_new_tokens  # a preset's memory check
    lm = load_model(args.model, device=args.device, dtype=args.dtype, allow_hub=True, max_context=longest)
    prompt = extend_prompt(lm.tokenizer, args.prompt, args.prompt_tokens) if args.prompt_tokens else args.prompt
    return generate(lm, prompt, cfg, max_prompt_tokens=args.max_prompt_tokens)


def run_cost(args: argparse.Namespace) -> str:
    """The cost table (or JSON) of the Prefill of --prompt-len positions and one Decode step at --context."""
    import json

    from . import cost, presets
    from .model import DEFAULT_MODEL_DIR, DEFAULT_MODEL_ID, set_num_threads

    default, preset = args.model == DEFAULT_MODEL_ID, presets.preset_name(args.model)
    if preset is not None:  # the shape only: the cost model reads no weights, random or not
        shape = presets.preset_shape(preset)
    else:
        shape = cost.load_shape(DEFAULT_MODEL_DIR if default else args.model,
                                name=DEFAULT_MODEL_ID if default else None)
    if args.device_spec == "this":
        set_num_threads()  # measure with the threads a traced run uses
        device = cost.measure_this_machine()
    else:
        device = cost.DEVICE_SPECS[args.device_spec]
    on_cpu = device.device_type == "cpu"  # as the engine's dtype=auto: fp32 on a CPU, else bf16
    weight = args.weight_dtype if args.weight_dtype != "auto" else ("fp32" if on_cpu else "bf16")
    kv = args.kv_dtype if args.kv_dtype != "auto" else (weight if weight in ("fp32", "bf16", "fp16") else "bf16")
    prefill, decode = cost.prefill_and_decode(shape, device, prompt_len=args.prompt_len, context=args.context,
                                              batch=args.batch, weight_dtype=weight, kv_dtype=kv)
    if args.json:
        return json.dumps(cost.cost_report(shape, device, prefill, decode), indent=2)
    return cost.format_report(shape, device, prefill, decode)


# --- the readable table ------------------------------------------------------

def shown(text: str) -> str:
    """Control characters made visible, so one token cannot break the table."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c).startswith("C") else c for c in text)


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cell(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _inputs(pieces: tuple[str, ...]) -> str:
    text = "|".join(shown(p) for p in pieces)
    if _width(text) <= MAX_SHOWN_CHARS:
        return text
    cut = ""
    for c in text:
        if _width(cut + c) > MAX_SHOWN_CHARS - 12:
            break
        cut += c
    return f"{cut}… ({len(pieces)} tokens)"


def format_trace(trace: RequestTrace) -> str:
    m = trace.model
    header = [
        f"model {m.model_id} ({m.architecture}, {m.num_params:,} params) on {m.device}, {m.dtype}",
        *([f"note: {RANDOM_WEIGHTS_NOTE}"] if m.random_weights else []),
        f"KV per token = 2 x {m.num_layers} layers x {m.num_kv_heads} kv heads x {m.head_dim} head_dim"
        f" x {m.bytes_per_element} bytes = {m.kv_bytes_per_token:,} bytes (formula)",
        _kv_measured(trace),
        f"prompt: {len(trace.prompt_ids)} tokens  {_inputs(trace.prompt_pieces)}",
        _kernels(trace),
        "",
    ]
    columns = ("step", "phase", "positions", "input tokens", "output", "ms", "KV bytes")
    rows = [
        (str(s.index), s.phase, f"{s.context_before}..{s.context_after - 1} ({s.num_positions})",
         _inputs(s.input_pieces), shown(s.output_piece), f"{s.duration_ms:.2f}", f"{s.kv_bytes:,}")
        for s in trace.steps
    ]
    widths = [max(_width(r[i]) for r in rows + [columns]) for i in range(len(columns))]
    lines = ["  ".join(_cell(c, w) for c, w in zip(row, widths)).rstrip() for row in [columns, *rows]]
    return "\n".join(header + lines + [""] + _summary(trace))


def _kernels(trace: RequestTrace) -> str:
    """Which engine mode and attention kernels ran (engine/attention.py, engine/static.py)."""
    def kernel(steps) -> str:
        return "/".join(attention_kernels(steps)) or "n/a"
    prefill = [s for s in trace.steps if s.phase == "prefill"]
    note = f" ({trace.engine_note})" if trace.engine_note else ""
    if trace.engine_setup_ms >= 1:
        note += f"; runner built in {trace.engine_setup_ms / 1e3:.2f} s before the request (once per cache bucket, not in TTFT)"
    return (f"engine mode {trace.engine_mode}{note}; attention kernel: Prefill {kernel(prefill)}, "
            f"Decode {kernel(trace.decode_steps)}")


def _summary(trace: RequestTrace) -> list[str]:
    mt = trace.metrics
    tpot = f"{mt.tpot_ms:.2f} ms" if mt.tpot_ms is not None else "n/a (one token)"
    # For one request mean ITL is TPOT by definition; the spread is what ITL adds.
    itl = (f"ITL p50 {mt.p50_itl_ms:.2f} / p90 {mt.p90_itl_ms:.2f} / p99 {mt.p99_itl_ms:.2f} / "
           f"max {mt.max_itl_ms:.2f} ms") if mt.itl_ms else "ITL n/a (one token)"
    return [
        f"output ({len(trace.steps)} tokens, stop: {trace.stop_reason}): {shown(trace.output_text)}",
        f"TTFT {mt.ttft_ms:.2f} ms (incl. tokenize {trace.tokenize_ms:.2f} ms) | TPOT {tpot} | "
        f"{itl} | E2EL {mt.e2el_ms:.2f} ms",
    ]


def _kv_measured(trace: RequestTrace) -> str:
    """The cache as measured after the last pass, next to the formula (they differ when a
    sliding window or a compressed cache keeps fewer positions than the request has)."""
    m, last = trace.model, trace.steps[-1]
    formula = m.kv_bytes_for(last.context_after)
    if trace.engine_mode != "eager" and last.kv_bytes > formula:
        reserved = last.kv_bytes // m.kv_bytes_per_token if m.kv_bytes_per_token else 0
        verdict = f"not the formula's {formula:,}: a {trace.engine_mode} cache reserves {reserved:,} positions up front"
    elif last.kv_bytes == formula:
        verdict = "as the formula says"
    else:
        verdict = f"not the formula's {formula:,}: " + (
            f"a sliding window of {m.sliding_window} positions drops older K/V"
            if m.sliding_window else "this cache drops or compresses positions")
    return f"KV measured after the last pass: {last.kv_bytes:,} bytes for {last.context_after} positions, {verdict}"


if __name__ == "__main__":
    sys.exit(main())
