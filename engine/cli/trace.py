"""`python -m engine trace --prompt 法国的首都是 --max-new-tokens 8`: run one request, print its steps.

`--speculative ngram --num-speculative-tokens 4`: speculative decoding with prompt lookup
(engine/runtime/speculative.py): each pass after Prefill checks up to 4 guessed tokens at once (a
"verify" row, with how many of its drafts it kept), and the answer is the one plain Decode writes.
`--draft-model PATH`: the guesses come from a smaller model with the same tokenizer (a local folder).

`--model` is a local folder; a hub id (`org/name`) that names no local folder is fetched from the
Hugging Face Hub, after a note on stderr saying so. Offline, that fails within a few seconds
(engine.runtime.model.hub_reachable) instead of retrying. `--model preset:NAME`: a published shape with random
weights (engine/runtime/presets.py): times are real, tokens are meaningless.
"""

from __future__ import annotations

import argparse
import sys

from engine.cli.common import add_device_arguments, shown, table, width
from engine.contract import limits
from engine.contract.errors import InputError
from engine.contract.prompts import DEFAULT_MAX_PROMPT_TOKENS, extend_prompt
from engine.contract.speculative import DRAFTERS
from engine.contract.trace import ENGINE_MODES, RANDOM_WEIGHTS_NOTE, ModelInfo, RequestTrace, attention_kernels
from engine.contract.weights import DEFAULT_GROUP_SIZE, GROUP_SIZES, WEIGHT_FORMATS, check_format

NAME = "trace"
MAX_SHOWN_CHARS = 48  # a long prompt's Prefill row is cut here, with its token count


def add_parser(sub) -> None:
    trace = sub.add_parser(NAME, help="run one prompt and print every forward pass")
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
    add_device_arguments(trace)
    trace.add_argument("--weights", default=None, choices=WEIGHT_FORMATS,
                       help="how the weights are held: fp32 / bf16 dense (the dtype), or int8 / int4 weight-only "
                            "on torch's packed kernels, the rest of the model in --dtype (default: dense in --dtype)."
                            " engine/runtime/weights.py")
    trace.add_argument("--group-size", type=int, default=None, metavar="G",
                       help=f"int4 only: weights per scale and zero, one of {', '.join(map(str, GROUP_SIZES))} "
                            f"(default {DEFAULT_GROUP_SIZE})")
    trace.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    trace.add_argument("--top-k", type=int, default=0)
    trace.add_argument("--top-p", type=float, default=1.0)
    trace.add_argument("--seed", type=int, default=0)
    trace.add_argument("--ignore-eos", action="store_true", help="always write max-new-tokens tokens")
    trace.add_argument("--mode", default="eager", choices=ENGINE_MODES,
                       help="eager: a growing KV cache (default); static: a preallocated one; graph: static with "
                            "each Decode step replayed as one CUDA graph (CUDA only); compiled: static with the "
                            "Decode step fused by torch.compile (and captured on CUDA; the first run compiles, "
                            "about 20 s on a small CPU). engine/runtime/runners.py")
    trace.add_argument("--speculative", default=None, choices=DRAFTERS,
                       help="speculative decoding: ngram = prompt lookup (guess the next tokens from where the "
                            "last few occurred before in the prompt or answer; eager mode only)")
    trace.add_argument("--num-speculative-tokens", type=int, default=4, metavar="K",
                       help="drafts checked in one verify pass (default 4)")
    trace.add_argument("--prompt-lookup-min", type=int, default=1, metavar="N",
                       help="shortest n-gram the prompt lookup matches (default 1)")
    trace.add_argument("--prompt-lookup-max", type=int, default=4, metavar="N",
                       help="longest n-gram the prompt lookup matches (default 4)")
    trace.add_argument("--draft-model", default=None, metavar="PATH",
                       help="speculative decoding with a draft model: a smaller local model with the same tokenizer "
                            "guesses the next tokens (implies --speculative draft)")
    trace.add_argument("--json", action="store_true", help="print the trace as JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    trace = run_trace(args)
    print(trace.to_json() if args.json else format_trace(trace))
    return 0


def run_trace(args: argparse.Namespace) -> RequestTrace:
    for name, value, low in (("prompt-tokens", args.prompt_tokens, 0),
                             ("max-prompt-tokens", args.max_prompt_tokens, 1)):
        if value < low:
            raise InputError("length_range", f"--{name} must be at least {low}, got {value}", name=name, value=value)
        limits.check_count(f"--{name}", value, limits.MAX_STRETCH_TOKENS, low=low)
    limits.check_count("--seed", args.seed, limits.MAX_SEED)
    check_stretch(args.prompt_tokens, args.max_prompt_tokens)  # the sizes first, before torch is imported
    if args.weights is not None or args.group_size is not None:
        check_format(args.weights or "fp32", args.group_size)
    # torch and transformers load here, when a trace runs, not when the parser is built
    from engine.runtime.generation import GenerationConfig, check_prompt_text, generate
    from engine.runtime.model import hub_id_for, load_model

    check_prompt_text(args.prompt)  # before the model loads: bad input should fail fast
    cfg = GenerationConfig(
        max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
        top_p=args.top_p, seed=args.seed, ignore_eos=args.ignore_eos, mode=args.mode,
        speculative=_drafter(args), num_speculative_tokens=args.num_speculative_tokens,
        prompt_lookup_min=args.prompt_lookup_min, prompt_lookup_max=args.prompt_lookup_max,
    )
    hub_id = hub_id_for(args.model)
    if hub_id:  # say so before any network traffic: a typo in a folder name must not look like a download
        print(f"note: no local folder {args.model!r}; fetching {hub_id} from the Hugging Face Hub", file=sys.stderr)
    longest = max(args.prompt_tokens, args.max_prompt_tokens) + args.max_new_tokens  # a preset's memory check
    lm = load_model(args.model, device=args.device, dtype=args.dtype, allow_hub=True, max_context=longest,
                    weights=args.weights, group_size=args.group_size)
    check_stretch(args.prompt_tokens, lm.info.max_positions - args.max_new_tokens)  # before any filler is tokenized
    prompt = extend_prompt(lm.tokenizer, args.prompt, args.prompt_tokens) if args.prompt_tokens else args.prompt
    draft = load_model(args.draft_model, device=args.device, dtype=args.dtype) if args.draft_model else None
    return generate(lm, prompt, cfg, max_prompt_tokens=args.max_prompt_tokens, draft=draft)


def _drafter(args: argparse.Namespace) -> str:
    """GenerationConfig.speculative from --speculative and --draft-model (which implies "draft")."""
    if args.draft_model and args.speculative not in (None, "draft"):
        raise InputError("speculative_unknown", f"--draft-model drafts with a model; leave out --speculative "
                         f"{args.speculative}", value=args.speculative, choices="draft")
    return "draft" if args.draft_model else args.speculative or ""


def check_stretch(prompt_tokens: int, limit: int) -> None:
    """--prompt-tokens beyond `limit` (--max-prompt-tokens, or the model's context less the answer) is
    refused before the prompt is stretched: tokenizing a million tokens of filler took minutes."""
    if prompt_tokens > limit:
        raise InputError("prompt_too_long", f"--prompt-tokens asks for {prompt_tokens} tokens; at most "
                         f"{max(limit, 0)} fit (--max-prompt-tokens, or the model's context less the answer)",
                         num_tokens=prompt_tokens, limit=max(limit, 0))


# --- the readable table ------------------------------------------------------

def _inputs(pieces: tuple[str, ...]) -> str:
    text = "|".join(shown(p) for p in pieces)
    if width(text) <= MAX_SHOWN_CHARS:
        return text
    cut = ""
    for c in text:
        if width(cut + c) > MAX_SHOWN_CHARS - 12:
            break
        cut += c
    return f"{cut}… ({len(pieces)} tokens)"


def format_trace(trace: RequestTrace) -> str:
    m = trace.model
    header = [
        f"model {m.model_id} ({m.architecture}, {m.num_params:,} params) on {m.device}, {m.dtype}",
        *([f"note: {RANDOM_WEIGHTS_NOTE}"] if m.random_weights else []),
        *([_weights_line(m)] if m.weight_format else []),
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
         _inputs(s.input_pieces), _output(s), f"{s.duration_ms:.2f}", f"{s.kv_bytes:,}")
        for s in trace.steps
    ]
    return "\n".join(header + table(columns, rows) + [""] + _summary(trace) + _speculative(trace))


def _output(step) -> str:
    """The token a pass wrote; a verify pass: every token it wrote, and how many of its drafts it kept."""
    if step.phase != "verify":
        return shown(step.output_piece)
    return f"{_inputs(step.emitted_pieces)} (kept {step.num_accepted} of {len(step.draft_ids)} drafts)"


def _speculative(trace: RequestTrace) -> list[str]:
    """Speculative decoding's result: tokens per target pass, and the drafts' acceptance rate."""
    verify = trace.verify_steps
    if not verify:
        return []
    drafted, accepted = sum(len(s.draft_ids) for s in verify), sum(s.num_accepted for s in verify)
    return [f"speculative ({verify[0].drafter}): {len(verify)} verify passes kept {accepted} of {drafted} drafts "
            f"({accepted / drafted:.0%}); {trace.tokens_per_pass:.2f} tokens per target pass after Prefill "
            f"(plain Decode: 1.00)"]


def _weights_line(m: ModelInfo) -> str:
    group = f", groups of {m.weight_group_size}" if m.weight_group_size else ""
    return f"weights {m.weight_format}{group}: {m.weight_bytes:,} bytes held, matmuls by {m.weight_kernel}"


def _kernels(trace: RequestTrace) -> str:
    """Which engine mode and attention kernels ran (engine/runtime/attention.py, engine/runtime/runners.py)."""
    def kernel(steps) -> str:
        return "/".join(attention_kernels(steps)) or "n/a"
    prefill = [s for s in trace.steps if s.phase == "prefill"]
    note = f" ({trace.engine_note})" if trace.engine_note else ""
    if trace.engine_setup_ms >= 1:
        note += (f"; runner built in {trace.engine_setup_ms / 1e3:.2f} s before the request "
                 "(once per cache bucket, not in TTFT)")
    return (f"engine mode {trace.engine_mode}{note}; attention kernel: Prefill {kernel(prefill)}, "
            f"Decode {kernel(trace.decode_steps)}")


def _summary(trace: RequestTrace) -> list[str]:
    mt = trace.metrics
    tpot = f"{mt.tpot_ms:.2f} ms" if mt.tpot_ms is not None else "n/a (one token)"
    # For one request with one token per pass mean ITL is TPOT; the spread is what ITL adds. A verify pass
    # brings several tokens at once: one ITL gap per pass, TPOT over every token (vLLM's rule, trace.py).
    itl = (f"ITL p50 {mt.p50_itl_ms:.2f} / p90 {mt.p90_itl_ms:.2f} / p99 {mt.p99_itl_ms:.2f} / "
           f"max {mt.max_itl_ms:.2f} ms") if mt.itl_ms else "ITL n/a (one token)"
    return [
        f"output ({len(trace.output_ids)} tokens in {len(trace.steps)} passes, stop: {trace.stop_reason}): "
        f"{shown(trace.output_text)}",
        f"TTFT {mt.ttft_ms:.2f} ms (incl. tokenize {trace.tokenize_ms:.2f} ms) | TPOT {tpot} | "
        f"{itl} | E2EL {mt.e2el_ms:.2f} ms",
    ]


def _kv_measured(trace: RequestTrace) -> str:
    """The cache as measured after the last pass, next to the formula (they differ when a
    sliding window or a compressed cache keeps fewer positions than the request has)."""
    m, last = trace.model, trace.steps[-1]
    formula = m.kv_bytes_for(last.context_kept)
    if trace.engine_mode != "eager" and last.kv_bytes > formula:
        reserved = last.kv_bytes // m.kv_bytes_per_token if m.kv_bytes_per_token else 0
        verdict = f"not the formula's {formula:,}: a {trace.engine_mode} cache reserves {reserved:,} positions up front"
    elif last.kv_bytes == formula:
        verdict = "as the formula says"
    else:
        verdict = f"not the formula's {formula:,}: " + (
            f"a sliding window of {m.sliding_window} positions drops older K/V"
            if m.sliding_window else "this cache drops or compresses positions")
    return f"KV measured after the last pass: {last.kv_bytes:,} bytes for {last.context_kept} positions, {verdict}"
